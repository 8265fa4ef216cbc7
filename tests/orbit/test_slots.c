/* test_slots.c -- slots survive an interrupted write: a writer killed at
 * each step of replacing a slot (half the data written, before fsync,
 * before rename, before the folder's fsync) leaves the old content or the
 * new, never a torn one; a torn or corrupted file is reported, not used. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "platform.h"
#include "slots.h"

static char dir[64];
static const uint8_t old_v[40] = "the old definition, forty bytes long...";
static uint8_t new_v[180];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/dipp-slots-XXXXXX");
    for (size_t k = 0; k < sizeof new_v; k++)
        new_v[k] = (uint8_t)(k * 31 + 7);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static int read_slot(unsigned n, uint8_t *buf, size_t *len) {
    char err[256];
    int rc = slot_read(dir, SLOT_PIPELINE, n, buf, len, err, sizeof err);
    if (rc < 0)
        print_message("%s\n", err);
    return rc;
}

static void write_killed_at(unsigned n, int step) {
    pid_t pid = fork();
    if (pid == 0) {
        char err[256];
        plat_crash_step = step;
        slot_write(dir, SLOT_PIPELINE, n, new_v, sizeof new_v, err, sizeof err);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_interrupted_writes(void **s) {
    (void)s;
    char err[256];
    for (int step = 1; step <= 4; step++) {
        uint8_t buf[SLOT_MAX_BYTES];
        size_t len = 0;
        assert_int_equal(slot_write(dir, SLOT_PIPELINE, 2, old_v, sizeof old_v,
                                    err, sizeof err), 0);
        write_killed_at(2, step);
        assert_int_equal(read_slot(2, buf, &len), 0);
        if (step < 4) { /* not renamed yet: the old content */
            assert_int_equal(len, sizeof old_v);
            assert_memory_equal(buf, old_v, len);
        } else { /* renamed, the folder not yet synced: the new */
            assert_int_equal(len, sizeof new_v);
            assert_memory_equal(buf, new_v, len);
        }
    }
}

static void test_empty_bad_number_and_torn_file(void **s) {
    (void)s;
    uint8_t buf[SLOT_MAX_BYTES];
    size_t len;
    char err[256], path[128];
    assert_int_equal(read_slot(5, buf, &len), 1);
    assert_int_equal(read_slot(7, buf, &len), -1);
    assert_int_equal(slot_write(dir, SLOT_CONFIG, 21, old_v, 4, err, sizeof err), -1);
    assert_int_equal(slot_write(dir, SLOT_CONFIG, 20, new_v, sizeof new_v, err,
                                sizeof err), 0);
    snprintf(path, sizeof path, "%s/config-20", dir);
    assert_int_equal(truncate(path, 100), 0); /* a torn file, as by a bad disk */
    assert_int_equal(slot_read(dir, SLOT_CONFIG, 20, buf, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "torn"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interrupted_writes),
        cmocka_unit_test(test_empty_bad_number_and_torn_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
