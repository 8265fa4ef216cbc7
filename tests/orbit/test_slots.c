/* test_slots.c -- slots survive an interrupted write: a writer killed at
 * each step of replacing a slot (half the data written, before fsync,
 * before rename, before the folder's fsync) leaves the old content or the
 * new, never a torn one; a torn or corrupted file is reported, not used;
 * a slot keeps its version, the floors theirs and the signed commands'
 * counter its own; a signed slot write (slot_msg.h) is refused
 * when any signed byte changed, when another key signed it, and when it
 * is malformed. */
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
#include <sodium.h>

#include "errors.h"
#include "platform.h"
#include "slot_msg.h"
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
        slot_write(dir, SLOT_PIPELINE, n, new_v, sizeof new_v, 2, err, sizeof err);
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
        assert_int_equal(slot_write(dir, SLOT_PIPELINE, 2, old_v, sizeof old_v, 1,
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
    assert_int_equal(slot_write(dir, SLOT_CONFIG, 21, old_v, 4, 1, err, sizeof err), -1);
    assert_int_equal(slot_write(dir, SLOT_CONFIG, 20, new_v, sizeof new_v, 1, err,
                                sizeof err), 0);
    snprintf(path, sizeof path, "%s/config-20", dir);
    assert_int_equal(truncate(path, 100), 0); /* a torn file, as by a bad disk */
    assert_int_equal(slot_read(dir, SLOT_CONFIG, 20, buf, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "torn"));
}

static void test_version_kept(void **s) {
    (void)s;
    char err[256];
    uint32_t v = 9;
    assert_int_equal(slot_version(dir, SLOT_PIPELINE, 6, &v, err, sizeof err), 0);
    assert_int_equal(v, 0); /* empty */
    assert_int_equal(slot_write(dir, SLOT_PIPELINE, 6, old_v, sizeof old_v, 1700000000u,
                                err, sizeof err), 0);
    assert_int_equal(slot_version(dir, SLOT_PIPELINE, 6, &v, err, sizeof err), 0);
    assert_int_equal(v, 1700000000u);
}

static void test_floors(void **s) {
    (void)s;
    char err[256];
    uint32_t v = 9;
    assert_int_equal(slot_floor(dir, SLOT_CONFIG, 3, &v, err, sizeof err), 0);
    assert_int_equal(v, 0);
    assert_int_equal(slot_raise_floor(dir, SLOT_CONFIG, 3, 50, err, sizeof err), 0);
    assert_int_equal(slot_raise_floor(dir, SLOT_CONFIG, 3, 40, err, sizeof err), 0);
    assert_int_equal(slot_raise_floor(dir, SLOT_PIPELINE, 3, 7, err, sizeof err), 0);
    assert_int_equal(slot_floor(dir, SLOT_CONFIG, 3, &v, err, sizeof err), 0);
    assert_int_equal(v, 50); /* never lowered */
    assert_int_equal(slot_floor(dir, SLOT_PIPELINE, 3, &v, err, sizeof err), 0);
    assert_int_equal(v, 7);
    assert_int_equal(slot_floor(dir, SLOT_PIPELINE, 7, &v, err, sizeof err), -1);
    char path[128];
    snprintf(path, sizeof path, "%s/floors", dir);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 20, SEEK_SET), fputc(0x55, f), fclose(f); /* a flipped byte */
    assert_int_equal(slot_floor(dir, SLOT_CONFIG, 3, &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "CRC"));
    assert_int_equal(slot_raise_floor(dir, SLOT_CONFIG, 3, 60, err, sizeof err), -1);
}

/* The signed commands' counter (cmd_sig.h): taken only above the highest
 * taken, kept apart from the floors (a corrupt floors file leaves it),
 * refused when its own record is corrupt. Run after test_floors. */
static void test_command_counter(void **s) {
    (void)s;
    char err[256], path[128];
    uint64_t floor = 9;
    uint64_t big = (uint64_t)1 << 40 | 5; /* both halves of the record */
    assert_int_equal(slot_take_counter(dir, big, &floor, err, sizeof err), 0);
    assert_int_equal(floor, 0);
    assert_int_equal(slot_take_counter(dir, big, &floor, err, sizeof err), 1);
    assert_true(floor == big);
    assert_int_equal(slot_take_counter(dir, big - 1, &floor, err, sizeof err), 1);
    assert_int_equal(slot_take_counter(dir, big + 1, &floor, err, sizeof err), 0);
    assert_int_equal(slot_take_counter(dir, big + 1, &floor, err, sizeof err), 1);
    assert_true(floor == big + 1);
    snprintf(path, sizeof path, "%s/commands", dir);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 17, SEEK_SET), fputc(0x55, f), fclose(f); /* a flipped byte */
    assert_int_equal(slot_take_counter(dir, big + 9, &floor, err, sizeof err), -1);
    assert_non_null(strstr(err, "commands: CRC mismatch"));
}

static int check_msg(const uint8_t *msg, size_t len, const uint8_t *pk) {
    slot_msg m;
    char detail[256];
    return slot_msg_check(msg, len, pk, &m, detail, sizeof detail);
}

static void test_signed_writes(void **s) {
    (void)s;
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES], pk2[UP_PK_BYTES], sk2[UP_SK_BYTES];
    uint8_t msg[SLOT_MSG_MAX];
    assert_true(sodium_init() >= 0);
    crypto_sign_keypair(pk, sk);
    crypto_sign_keypair(pk2, sk2);
    slot_msg m = {7, SLOT_CONFIG, 5, 42, new_v, sizeof new_v}, got;
    char detail[256];
    size_t n = slot_msg_build(&m, sk, msg);
    assert_int_equal(n, SLOT_MSG_HEAD + sizeof new_v);
    assert_int_equal(slot_msg_check(msg, n, pk, &got, detail, sizeof detail), 0);
    assert_int_equal(got.seq, 7);
    assert_int_equal(got.kind, SLOT_CONFIG);
    assert_int_equal(got.slot, 5);
    assert_int_equal(got.version, 42);
    assert_int_equal(got.len, sizeof new_v);
    assert_memory_equal(got.def, new_v, sizeof new_v);
    assert_int_equal(check_msg(msg, n, pk2), DIPP_E_UP_SIGNATURE);
    /* every byte after the sequence number is signed (the kind is
     * flipped to the other one: a third kind is malformed, below) */
    for (size_t k = 3; k < n; k++) {
        msg[k] ^= k == 3 ? 3 : 1;
        assert_int_equal(check_msg(msg, n, pk), DIPP_E_UP_SIGNATURE);
        msg[k] ^= k == 3 ? 3 : 1;
    }
    msg[3] = 3;
    assert_int_equal(check_msg(msg, n, pk), DIPP_E_UP_MESSAGE);
    msg[3] = 2;
    msg[4] = 21; /* config slots are 1-20, pipelines 1-6 */
    assert_int_equal(check_msg(msg, n, pk), DIPP_E_UP_MESSAGE);
    msg[3] = 1, msg[4] = 7;
    assert_int_equal(check_msg(msg, n, pk), DIPP_E_UP_MESSAGE);
    msg[3] = 2, msg[4] = 5;
    assert_int_equal(check_msg(msg, SLOT_MSG_HEAD - 1, pk), DIPP_E_UP_MESSAGE);
    assert_int_equal(check_msg(msg, n - 1, pk), DIPP_E_UP_SIGNATURE);
    m.len = SLOT_MAX_BYTES;
    uint8_t big[SLOT_MAX_BYTES + 1];
    memset(big, 1, sizeof big);
    m.def = big;
    n = slot_msg_build(&m, sk, msg);
    assert_int_equal(check_msg(msg, n, pk), 0);
    uint8_t longer[SLOT_MSG_MAX + 1];
    memcpy(longer, msg, n);
    longer[n] = 0;
    assert_int_equal(check_msg(longer, n + 1, pk), DIPP_E_UP_MESSAGE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interrupted_writes),
        cmocka_unit_test(test_empty_bad_number_and_torn_file),
        cmocka_unit_test(test_version_kept),
        cmocka_unit_test(test_floors),
        cmocka_unit_test(test_command_counter),
        cmocka_unit_test(test_signed_writes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
