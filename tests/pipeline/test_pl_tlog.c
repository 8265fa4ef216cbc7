/* test_pl_tlog.c -- the trigger log (pl_tlog.h): records read back, a
 * torn last line cut at the next open, a corrupt record refused with its
 * line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "pl_tlog.h"

static char path[64];

static int setup(void **state) {
    (void)state;
    strcpy(path, "/tmp/aegis-tlog-XXXXXX");
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    return 0;
}

static void test_round_trip(void **state) {
    (void)state;
    pl_tlog log;
    char err[512];
    assert_int_equal(pl_tlog_open(path, true, &log, err, sizeof(err)), 0);
    assert_true(log.started > 0);
    assert_int_equal(pl_tlog_fire(&log, 0, 2, false, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_job(&log, 0, 7, -1, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_end(&log, 0, "done", err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_fire(&log, 1, 4, true, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_fire(&log, 2, 6, false, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_job(&log, 2, 9, 0, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_drop(&log, 0, err, sizeof(err)), 0);
    pl_tlog_close(&log);
    assert_int_equal(pl_tlog_open(path, false, &log, err, sizeof(err)), 0);
    assert_int_equal(log.ntrigs, 3);
    assert_int_equal(log.trigs[0].job, 7);
    assert_string_equal(log.trigs[0].state, "done");
    assert_true(log.trigs[0].dropped);
    assert_true(log.trigs[1].skipped);
    assert_int_equal(log.trigs[2].end, 6);
    assert_int_equal(log.trigs[2].parent, 0);
    assert_string_equal(log.trigs[2].state, "");
    pl_tlog_close(&log);
}

/* A crash in the middle of a record's write leaves a line without its
 * newline: it never happened, and the next record follows the last whole
 * one. */
static void test_torn_tail(void **state) {
    (void)state;
    pl_tlog log;
    char err[512];
    assert_int_equal(pl_tlog_open(path, true, &log, err, sizeof(err)), 0);
    assert_int_equal(pl_tlog_fire(&log, 0, 2, false, err, sizeof(err)), 0);
    pl_tlog_close(&log);
    FILE *f = fopen(path, "a");
    fputs("job 0 1", f);
    fclose(f);
    assert_int_equal(pl_tlog_open(path, true, &log, err, sizeof(err)), 0);
    assert_int_equal(log.trigs[0].job, 0);
    assert_int_equal(pl_tlog_job(&log, 0, 5, -1, err, sizeof(err)), 0);
    pl_tlog_close(&log);
    assert_int_equal(pl_tlog_open(path, false, &log, err, sizeof(err)), 0);
    assert_int_equal(log.trigs[0].job, 5);
    pl_tlog_close(&log);
}

/* Writes len bytes of text as the log, and expects it refused with want
 * at line by a writer's open, the file left as it was. */
static void assert_refused_bytes(const char *text, size_t len, int line,
                                 const char *want) {
    FILE *f = fopen(path, "w");
    fwrite(text, 1, len, f);
    fclose(f);
    pl_tlog log;
    char err[512], where[128];
    assert_int_equal(pl_tlog_open(path, true, &log, err, sizeof(err)), -1);
    snprintf(where, sizeof(where), "%s:%d: %s", path, line, want);
    assert_non_null(strstr(err, where));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, len);
}

static void assert_refused(const char *text, int line, const char *want) {
    assert_refused_bytes(text, strlen(text), line, want);
}

static void test_corrupt(void **state) {
    (void)state;
    assert_refused("start 1.0\nfire 0 2\nbanana\n", 3,
                   "not a trigger log record");
}

/* A trigger number past the next (a flipped digit, -1 read as 2^32 - 1)
 * is refused by its line, not grown into a table of that size. */
static void test_trigger_out_of_order(void **state) {
    (void)state;
    const char *out_of_order = "names a trigger out of order";
    assert_refused("start 1.0\nfire 4294967295 10\n", 2, out_of_order);
    assert_refused("start 1.0\nfire -1 10\n", 2, out_of_order);
    assert_refused("start 1.0\nfire 0 2\nfire 2 4\n", 3, out_of_order);
    assert_refused("start 1.0\nfire 0 2\njob 1 7 -1\n", 3, out_of_order);
    assert_refused("start 1.0\nend 0 done\n", 2, out_of_order);
}

/* A long line or one holding a NUL byte, with whole records after it, is
 * damage, not a crash's torn last line: refused, and the log not cut
 * there (its fire and job records would be lost, a trigger trained
 * twice). */
static void test_long_or_nul_line(void **state) {
    (void)state;
    char text[512];
    int n = snprintf(text, sizeof(text), "start 1.0\nfire 0 2\nfire 1 %0300d"
                     "\njob 0 5 -1\n", 4);
    assert_refused_bytes(text, (size_t)n, 3, "longer than any record");
    static const char nul[] = "start 1.0\nfire 0 2\nfi\0re 1 4\njob 0 5 -1\n";
    assert_refused_bytes(nul, sizeof(nul) - 1, 3, "holds a NUL byte");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_or_nul_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_trigger_out_of_order, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
