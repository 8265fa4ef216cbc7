/* test_history.c -- cmocka tests of a job's history and notifier outside
 * the loop: the bounded, evenly thinned samples in the store (also through
 * the kept-writes path of a failing database), the table, sparkline and
 * SVG views (the SVG parsed by python3's xml.etree), and the config and
 * protocol fields they add.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"
#include "history.h"
#include "history_view.h"
#include "proto.h"
#include "store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static int setup_dir(void **state) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/aegis-history-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp_path(const char *name) {
    static char path[300];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    return path;
}

/* A store at name holding one job (id 1). */
static store *store_with_job(const char *name) {
    char err[256];
    store *st = store_open(tmp_path(name), err, sizeof(err));
    assert_non_null(st);
    const char *line = "{\"op\":\"submit\",\"cwd\":\"/tmp\","
                       "\"jobs\":[{\"cmd\":[\"a\"],\"notify\":\"echo hi\"}]}";
    proto_request req;
    assert_int_equal(proto_parse(line, strlen(line), &req, err, sizeof(err)), 0);
    store_owner owner = {.uid = 1000, .gid = 1000, .user = "alice"};
    int64_t first;
    assert_int_equal(store_submit(st, &owner, &req, 1.0, &first, err,
                                  sizeof(err)), 0);
    assert_int_equal(first, 1);
    proto_request_free(&req);
    return st;
}

/* Runs periods 0..last of job 1 with at most max samples, a sample at
 * period k being taken at time k. */
static void run_periods(store *st, history_track *h, int max, int last) {
    history_track_init(h, max, 0, 1);
    for (int k = 0; k <= last; k++) {
        if (!history_due(h)) continue;
        store_sample s = {.t = k, .mem_mib = 100 + k, .gpu_used_mib = 200 + k,
                          .gpu_total_mib = 1000, .sm_pct = k % 3 ? 50 : -1};
        history_add(st, 1, h, &s);
    }
}

/* The samples' times, checked evenly spaced from 0 by step: how many. */
static size_t check_even(json_t *rows, int step) {
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, i);
        double t = json_number_value(json_array_get(row, 0));
        assert_true(t == (double)i * step);
        assert_true(json_number_value(json_array_get(row, 1)) == 100 + t);
        /* an unknown SM share stays unknown */
        assert_true(json_is_null(json_array_get(row, 4)) == ((int)t % 3 == 0));
    }
    return n;
}

/* Past its maximum, a job's samples are halved, every other one dropped,
 * and it is sampled half as often: always at most max, evenly spaced, from
 * its first period to its last, and so after a reopen. */
static void test_history_thinning(void **state) {
    store *st = store_with_job("thin.db");
    history_track h;
    run_periods(st, &h, 8, 7); /* exactly full */
    json_t *rows = store_history(st, 1);
    assert_int_equal(check_even(rows, 1), 8);
    json_decref(rows);
    run_periods(st, &h, 8, 0); /* starts over: t=0 replaced */
    store_close(st);

    st = store_with_job("thin2.db");
    run_periods(st, &h, 8, 100);
    /* 0..7 by 1, 0..14 by 2, 0..30 by 4, 0..62 by 8, then 0..96 by 16 */
    assert_int_equal(h.step, 16);
    rows = store_history(st, 1);
    size_t n = check_even(rows, 16);
    assert_int_equal(n, (size_t)h.count);
    assert_true(n <= 8 && n >= 4);
    double last = json_number_value(json_array_get(json_array_get(rows, n - 1), 0));
    assert_true(last > 100 - 16); /* the run's end is covered */
    json_decref(rows);
    store_close(st);

    char err[256];
    st = store_open(tmp_path("thin2.db"), err, sizeof(err));
    int count, step;
    store_history_state(st, 1, &count, &step);
    assert_int_equal(count, h.count);
    assert_int_equal(step, 16);
    store_history_state(st, 99, &count, &step); /* no such job */
    assert_int_equal(count, 0);
    assert_int_equal(step, 1);
    store_close(st);
}

/* While the database cannot be written, samples and a thinning are kept
 * in order and saved by the retry, like any other write. */
static void test_history_kept_writes(void **state) {
    store *st = store_with_job("kept.db");
    store_fail_because(st, "test: the disk is full");
    history_track h;
    run_periods(st, &h, 4, 9);
    json_t *rows = store_history(st, 1);
    assert_int_equal(json_array_size(rows), 0);
    json_decref(rows);
    assert_int_equal(store_retry(st, 2.0), 0);
    rows = store_history(st, 1);
    assert_int_equal(check_even(rows, h.step), (size_t)h.count);
    assert_int_equal(h.step, 4);
    json_decref(rows);
    store_close(st);
}

/* A history as the daemon answers it: two GPUs, a null figure. */
static json_t *sample_history(size_t n) {
    json_t *samples = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(samples, json_pack("[f, f, f, f, o]",
            1700000000.0 + 10.0 * i, 100.0 * i, 150.0 * i + 50, 81920.0,
            i == 1 ? json_null() : json_real(42)));
    return json_pack("{s:f, s:o, s:[{s:i, s:s}, {s:i, s:s}]}", "period_s", 10.0,
                     "samples", samples, "gpus", "index", 0, "name",
                     "Test <GPU> & co", "index", 2, "name", "H200");
}

/* Parses the SVG at path with python3's xml.etree and checks its title
 * and plot: 0 when well-formed and as expected. */
static int check_svg(const char *path, const char *title, int points) {
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "python3 -c \"import sys, xml.etree.ElementTree as E\n"
             "r = E.parse(sys.argv[1]).getroot(); n = '{http://www.w3.org/2000/svg}'\n"
             "assert r.tag == n + 'svg', r.tag\n"
             "texts = [''.join(t.itertext()) for t in r.iter(n + 'text')]\n"
             "assert sys.argv[2] in texts, texts\n"
             "lines = r.findall(n + 'polyline')\n"
             "assert len(lines) == 3, lines\n"
             "pts = [len(l.get('points').split()) for l in lines]\n"
             "assert pts == [int(sys.argv[3])] * 3, pts\n"
             "assert any('GPU memory (MiB)' == t for t in texts)\n"
             "\" %s '%s' %d", path, title, points);
    return system(cmd);
}

static void test_history_svg(void **state) {
    json_t *hist = sample_history(5);
    const char *path = tmp_path("plot.svg");
    FILE *f = fopen(path, "w");
    assert_int_equal(history_svg(f, 7, "a \"b\" & <c>", hist), 0);
    fclose(f);
    assert_int_equal(check_svg(path, "job 7 (a \"b\" & <c>) on GPU 0 Test <GPU> "
                               "& co, GPU 2 H200", 5), 0);
    json_decref(hist);
    /* no samples yet: still a well-formed plot, saying so */
    hist = sample_history(0);
    f = fopen(path, "w");
    assert_int_equal(history_svg(f, 8, "", hist), 0);
    fclose(f);
    assert_int_equal(check_svg(path, "job 8 on GPU 0 Test <GPU> & co, GPU 2 "
                               "H200", 0), 0);
    json_decref(hist);
}

/* Reads what fn wrote about hist into buf. */
static void render(void (*fn)(FILE *, json_t *), json_t *hist, char *buf,
                   size_t len) {
    FILE *f = fmemopen(buf, len, "w");
    fn(f, hist);
    fclose(f);
}

static void test_history_text(void **state) {
    json_t *hist = sample_history(3);
    char buf[4096];
    render(history_table, hist, buf, sizeof(buf));
    assert_non_null(strstr(buf, "TIME"));
    assert_non_null(strstr(buf, "       200           350          81920     42\n"));
    assert_non_null(strstr(buf, "       100           200          81920      -\n"));
    render(history_spark, hist, buf, sizeof(buf));
    assert_string_equal(buf, "\u2581\u2584\u2588 peak 200 MiB of 81920 MiB "
                             "(3 samples)\n");
    json_decref(hist);
    hist = sample_history(200); /* a character a run of samples */
    render(history_spark, hist, buf, sizeof(buf));
    char *peak = strstr(buf, "\u2588 peak 19900 MiB of 81920 MiB (200 samples)\n");
    assert_non_null(peak);
    assert_true(peak + 3 - buf == 72 * 3); /* 72 characters of 3 bytes */
    assert_true(strncmp(buf, "\u2581", 3) == 0);
    json_decref(hist);
}

/* history_period_s, notify_timeout_s and notify in aegis.yaml. */
static void test_history_config(void **state) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[256];
    assert_int_equal(config_load_daemon("/nonexistent.yaml", true, &cfg, &acct,
                                        &share, &keys, err, sizeof(err)), 0);
    assert_true(keys.history_period_s == 10 && keys.notify_timeout_s == 30);
    assert_string_equal(keys.notify, "");
    FILE *f = fopen(tmp_path("n.yaml"), "w");
    fputs("history_period_s: 2\nnotify_timeout_s: 5\n"
          "notify: 'mail -s \"$AEGIS_JOB_ID\" me'\n", f);
    fclose(f);
    assert_int_equal(config_load_daemon(tmp_path("n.yaml"), false, &cfg, &acct,
                                        &share, &keys, err, sizeof(err)), 0);
    assert_true(keys.history_period_s == 2 && keys.notify_timeout_s == 5);
    assert_string_equal(keys.notify, "mail -s \"$AEGIS_JOB_ID\" me");
    static const char *const bad[][2] = {
        {"history_period_s: 0.5\n", "n.yaml:1: history_period_s"},
        {"notify_timeout_s: forever\n", "n.yaml:1: notify_timeout_s"},
        {"notify: [a, b]\n", "n.yaml:1: notify: expected a single value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        f = fopen(tmp_path("n.yaml"), "w");
        fputs(bad[i][0], f);
        fclose(f);
        assert_int_equal(config_load_daemon(tmp_path("n.yaml"), false, &cfg,
                                            &acct, &share, &keys, err,
                                            sizeof(err)), -1);
        assert_non_null(strstr(err, bad[i][1]));
    }
}

/* show's history flag and a job's notifier on the wire. */
static void test_history_proto(void **state) {
    proto_request req;
    char err[256], line[PROTO_MAX_NOTIFY + 200];
    const char *show = "{\"op\":\"show\",\"id\":3,\"history\":true}";
    assert_int_equal(proto_parse(show, strlen(show), &req, err, sizeof(err)), 0);
    assert_true(req.history);
    proto_request_free(&req);
    show = "{\"op\":\"show\",\"id\":3,\"history\":1}";
    assert_int_equal(proto_parse(show, strlen(show), &req, err, sizeof(err)), -1);
    assert_string_equal(err, "history: expected true or false");
    proto_request_free(&req);
    int n = snprintf(line, sizeof(line), "{\"op\":\"submit\",\"cwd\":\"/\","
                     "\"jobs\":[{\"cmd\":[\"a\"],\"notify\":\"%0*d\"}]}",
                     PROTO_MAX_NOTIFY + 1, 0);
    assert_int_equal(proto_parse(line, (size_t)n, &req, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "jobs[0].notify: expected a shell command"));
    proto_request_free(&req);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_thinning),
        cmocka_unit_test(test_history_kept_writes),
        cmocka_unit_test(test_history_svg),
        cmocka_unit_test(test_history_text),
        cmocka_unit_test(test_history_config),
        cmocka_unit_test(test_history_proto),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
