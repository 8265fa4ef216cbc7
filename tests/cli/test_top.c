/* test_top.c -- the layout of `aegis top` (top_view.c): given GPUs, jobs
 * and a terminal size, the lines it shows; what it cuts when they do not
 * fit, and how (a "+ N more" line per list, then rows at the bottom).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "top_view.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2026-12-01 12:34:56 UTC */
#define NOON 1796128496

static top_gpu gpu(int index, double used, double util) {
    top_gpu g = {.index = index, .used_mib = used, .total_mib = 40960,
                 .util = util, .power_w = 120, .ok = true};
    snprintf(g.name, sizeof(g.name), "NVIDIA A100-SXM4-40GB");
    snprintf(g.sharing, sizeof(g.sharing), "naive");
    return g;
}

static top_job running(long long id, const char *user, const char *label,
                       int on_gpu) {
    top_job j = {.id = id, .gpus = 1ull << on_gpu, .mem_mib = 30000,
                 .used_mib = 29500, .sm_pct = 50, .running = true};
    snprintf(j.user, sizeof(j.user), "%s", user);
    snprintf(j.label, sizeof(j.label), "%s", label);
    return j;
}

static top_job queued(long long id, const char *user, const char *label,
                      const char *reason) {
    top_job j = {.id = id};
    snprintf(j.user, sizeof(j.user), "%s", user);
    snprintf(j.label, sizeof(j.label), "%s", label);
    snprintf(j.reason, sizeof(j.reason), "%s", reason);
    return j;
}

/* Characters (not bytes) of a UTF-8 line. */
static int width_of(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Lays the screen out and checks every line fits cols. */
static top_lines lay_out(const top_screen *s, int rows, int cols) {
    top_lines out = {0};
    assert_int_equal(top_layout(s, rows, cols, &out), 0);
    assert_true(out.n <= (size_t)rows);
    for (size_t i = 0; i < out.n; i++)
        assert_true(width_of(out.line[i]) <= cols);
    return out;
}

/* The first line holding text, or -1. */
static int find(const top_lines *out, const char *text) {
    for (size_t i = 0; i < out->n; i++)
        if (strstr(out->line[i], text)) return (int)i;
    return -1;
}

static size_t count(const top_lines *out, const char *prefix) {
    size_t n = 0;
    for (size_t i = 0; i < out->n; i++)
        n += strncmp(out->line[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* Three GPUs, a job on each, two waiting: all of it in 80x24. */
static void test_fits_80x24(void **state) {
    (void)state;
    top_gpu gpus[] = {gpu(0, 30000, 0.5), gpu(1, 0, 0), gpu(2, 30000, 1)};
    top_job jobs[] = {
        running(1, "alice", "resnet50", 0), running(2, "bob", "bert-base", 1),
        running(3, "alice", "python train.py --lr 0.1", 2),
        queued(4, "carol", "waits-mem", "no GPU with 32048 MiB free"),
        queued(5, "bob", "waits-hold", "held")};
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = gpus, .ngpus = 3,
                    .jobs = jobs, .njobs = 5};
    top_lines out = lay_out(&s, 24, 80);
    assert_int_equal(count(&out, "aegis top  12:34:56  GPUs 3  running 3  "
                                 "queued 2"), 1);
    assert_int_equal(count(&out, "GPU "), 3);
    int bars = find(&out, "MEM[");
    assert_true(bars == 2);
    assert_int_equal(width_of(out.line[bars]), 80);
    assert_non_null(strstr(out.line[bars], "30000/40960 MiB]"));
    assert_non_null(strstr(out.line[bars], "UTIL["));
    assert_true(find(&out, "bob        29500/30000 MiB  SM  50%  bert-base") >
                0);
    assert_true(find(&out, "alice      29500/30000 MiB  SM  50%  python "
                           "train.py") > 0);
    int queue = find(&out, "QUEUED  USER       NAME                 REASON");
    assert_true(queue > bars);
    assert_true(find(&out, "carol      waits-mem            no GPU with") >
                queue);
    assert_true(find(&out, "waits-hold           held") > queue);
    assert_int_equal(find(&out, "more"), -1);
    assert_int_equal(out.n, 1 + 3 * 3 + 1 + 2);
    top_lines_free(&out);
}

/* The bars fill as the fraction says; what is unknown shows as "-". */
static void test_bars(void **state) {
    (void)state;
    top_gpu g = gpu(0, 20480, -1);
    top_screen s = {.now = NOON, .delay_s = 2, .gpus = &g, .ngpus = 1};
    top_lines out = lay_out(&s, 24, 80);
    const char *mem = strstr(out.line[2], "MEM[") + 4;
    const char *end = strchr(mem, ']');
    size_t inner = (size_t)(end - mem), fill = strspn(mem, "|");
    assert_true(fill * 2 >= inner - 1 && fill * 2 <= inner + 1);
    assert_non_null(strstr(out.line[2], "UTIL[") );
    assert_non_null(strstr(out.line[2], "-]"));
    assert_null(strstr(strstr(out.line[2], "UTIL["), "|"));
    assert_non_null(strstr(out.line[0], "every 2s"));
    top_lines_free(&out);
    /* narrow: the percentage instead of the MiB, which do not fit */
    out = lay_out(&s, 24, 36);
    assert_non_null(strstr(out.line[2], "50%]"));
    top_lines_free(&out);
}

/* A running job's line: the memory aegisd measured of it, over what it
 * declared (--mem) when it did, and its SM share; "-" for what is not
 * known (NVML without per-process figures, an aegisd that does not say). */
static void test_job_measures(void **state) {
    (void)state;
    top_gpu g = gpu(0, 30000, 0.5);
    top_job jobs[] = {running(1, "alice", "declared", 0),
                      running(2, "bob", "undeclared", 0),
                      running(3, "carol", "unseen", 0),
                      running(4, "dave", "unseen-undeclared", 0)};
    jobs[1].mem_mib = 0;
    jobs[1].used_mib = 812.4;
    jobs[1].sm_pct = 99.6;
    jobs[2].used_mib = jobs[2].sm_pct = -1;
    jobs[3].mem_mib = 0;
    jobs[3].used_mib = jobs[3].sm_pct = -1;
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = &g, .ngpus = 1,
                    .jobs = jobs, .njobs = 4};
    top_lines out = lay_out(&s, 24, 80);
    assert_string_equal(out.line[3], "      1 alice      29500/30000 MiB  "
                                     "SM  50%  declared");
    assert_string_equal(out.line[4], "      2 bob                812 MiB  "
                                     "SM 100%  undeclared");
    assert_string_equal(out.line[5], "      3 carol          -/30000 MiB  "
                                     "SM    -  unseen");
    assert_string_equal(out.line[6], "      4 dave                     -  "
                                     "SM    -  unseen-undeclared");
    top_lines_free(&out);
}

/* Too many jobs: the longest list is cut first, to a "+ N more" line;
 * the others keep theirs. */
static void test_cut_longest_first(void **state) {
    (void)state;
    top_gpu g = gpu(0, 0, 0);
    top_job jobs[32];
    jobs[0] = running(1, "alice", "a", 0);
    jobs[1] = running(2, "alice", "b", 0);
    for (int i = 2; i < 32; i++) jobs[i] = queued(i + 1, "bob", "q", "held");
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = &g, .ngpus = 1,
                    .jobs = jobs, .njobs = 32};
    top_lines out = lay_out(&s, 12, 80);
    assert_int_equal(out.n, 12);
    assert_true(find(&out, " a") > 0 && find(&out, " b") > 0);
    /* title, GPU, bars, 2 jobs, QUEUED: 6 rows; 5 queued, then 25 more */
    assert_int_equal(count(&out, "      "), 2 + 5 + 1);
    assert_string_equal(out.line[11], "        + 25 more");
    top_lines_free(&out);
    /* unlimited rows, as the plain snapshot asks: nothing cut */
    out = lay_out(&s, INT_MAX, 80);
    assert_int_equal(out.n, 6 + 30);
    top_lines_free(&out);
}

/* More GPUs than rows: the last row says how many rows were cut. */
static void test_cut_rows(void **state) {
    (void)state;
    top_gpu gpus[16];
    for (int i = 0; i < 16; i++) gpus[i] = gpu(i, 100, 0.1);
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = gpus, .ngpus = 16};
    top_lines out = lay_out(&s, 24, 80);
    assert_int_equal(out.n, 24);
    assert_string_equal(out.line[23], "+ 10 more rows: enlarge the terminal");
    top_lines_free(&out);
    out = lay_out(&s, 0, 80);
    assert_int_equal(out.n, 0);
    top_lines_free(&out);
}

/* A name or command cannot drive the terminal: control characters (C0,
 * DEL, C1, bidirectional overrides) show as '?'; other UTF-8 passes, cut
 * by characters. */
static void test_control_chars(void **state) {
    (void)state;
    top_gpu g = gpu(0, 0, 0);
    char long_name[256] = "";
    for (int i = 0; i < 60; i++) strcat(long_name, "é");
    top_job jobs[] = {running(1, "eve", "x\033[2Jy\x7f\xc2\x9bz\xe2\x80\xaeq", 0),
                      running(2, "zoé", long_name, 0)};
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = &g, .ngpus = 1,
                    .jobs = jobs, .njobs = 2};
    top_lines out = lay_out(&s, 24, 60);
    assert_true(find(&out, "x?[2Jy??z?q") > 0);
    for (size_t i = 0; i < out.n; i++)
        for (const char *c = out.line[i]; *c; c++)
            assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
    int zoe = find(&out, "zoé");
    assert_true(zoe > 0);
    assert_int_equal(width_of(out.line[zoe]), 60);
    top_lines_free(&out);
}

/* aegisd unreachable: its error, wrapped to the width, and the retry. */
static void test_error(void **state) {
    (void)state;
    top_screen s = {.now = NOON, .delay_s = 1,
                    .error = "cannot reach aegisd at /run/aegis/aegis.sock: "
                             "No such file or directory"};
    top_lines out = lay_out(&s, 24, 30);
    assert_true(find(&out, "cannot reach") > 0);
    assert_true(find(&out, "file or directory") > find(&out, "cannot reach"));
    assert_true(find(&out, "retrying every 1s") > 0);
    assert_int_equal(find(&out, "GPUs"), -1);
    top_lines_free(&out);
    out = lay_out(&s, 2, 30);
    assert_int_equal(out.n, 2);
    top_lines_free(&out);
}

/* Tiny terminals get what fits, and nothing breaks. */
static void test_tiny(void **state) {
    (void)state;
    top_gpu g = gpu(0, 100, 0.5);
    top_job j = queued(1, "alice", "a", "held");
    top_screen s = {.now = NOON, .delay_s = 1, .gpus = &g, .ngpus = 1,
                    .jobs = &j, .njobs = 1};
    for (int cols = 1; cols < 12; cols++)
        for (int rows = 1; rows < 6; rows++) {
            top_lines out = lay_out(&s, rows, cols);
            top_lines_free(&out);
        }
}

int main(void) {
    setenv("TZ", "UTC", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_80x24),
        cmocka_unit_test(test_bars),
        cmocka_unit_test(test_job_measures),
        cmocka_unit_test(test_cut_longest_first),
        cmocka_unit_test(test_cut_rows),
        cmocka_unit_test(test_control_chars),
        cmocka_unit_test(test_error),
        cmocka_unit_test(test_tiny),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
