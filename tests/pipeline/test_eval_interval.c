/* test_eval_interval.c -- the evaluation strategies' intervals on
 * hand-worked cases, and the evaluation section's errors naming the key
 * that is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eval.h"

/* The intervals of the strategy in JSON text, given trigger ends. */
static size_t intervals_of(const char *json, const int64_t *ends,
                           size_t nends, pl_interval **out) {
    json_error_t jerr;
    json_t *obj = json_loads(json, 0, &jerr);
    pl_eval_strategy st;
    char err[256];
    size_t n;
    assert_non_null(obj);
    assert_int_equal(pl_eval_strategy_parse(obj, "s", &st, err, sizeof err),
                     0);
    assert_int_equal(pl_eval_intervals(&st, ends, nends, out, &n), 0);
    pl_eval_strategy_free(&st);
    json_decref(obj);
    return n;
}

static void assert_interval(pl_interval got, int64_t start, int64_t end) {
    assert_true(got.start == start);
    assert_true(got.end == end);
}

/* 0..250 in slices of 100: the last slice is cut at eval_end_at. */
static void slicing_cuts_the_last(void **state) {
    (void)state;
    pl_interval *iv;
    size_t n = intervals_of("{\"type\": \"SlicingEvalStrategy\", "
                            "\"eval_every\": \"100s\", \"eval_start_from\": 0,"
                            " \"eval_end_at\": 250}", NULL, 0, &iv);
    assert_int_equal(n, 3);
    assert_interval(iv[0], 0, 100);
    assert_interval(iv[1], 100, 200);
    assert_interval(iv[2], 200, 250);
    free(iv);
}

/* The widest window at the latest start_timestamp (INT64_MAX / 2) ends
 * within int64. */
static void periodic_widest_window(void **state) {
    (void)state;
    pl_interval *iv;
    size_t n = intervals_of("{\"type\": \"PeriodicEvalStrategy\", "
                            "\"every\": \"1d\", \"start_timestamp\": "
                            "4611686018427387903, \"end_timestamp\": "
                            "4611686018427387903, "
                            "\"interval\": \"[-10000y;+10000y]\"}", NULL, 0,
                            &iv);
    assert_int_equal(n, 1);
    assert_interval(iv[0], INT64_MAX / 2 - 315360000000LL,
                    INT64_MAX / 2 + 315360000000LL + 1);
    free(iv);
}

/* Points 0, 1d, 2d; "[-1d;+1d]" includes both ends: [p-1d, p+1d+1). */
static void periodic_windows_overlap(void **state) {
    (void)state;
    pl_interval *iv;
    size_t n = intervals_of("{\"type\": \"PeriodicEvalStrategy\", "
                            "\"every\": \"1d\", \"start_timestamp\": 0, "
                            "\"end_timestamp\": 172800, "
                            "\"interval\": \"[-1d; +1d]\"}", NULL, 0, &iv);
    assert_int_equal(n, 3);
    assert_interval(iv[0], -86400, 86401);
    assert_interval(iv[1], 0, 172801);
    assert_interval(iv[2], 86400, 259201);
    free(iv);
}

/* "(-inf,+0d)": everything before the point; "(" on a finite bound moves
 * it one second on. */
static void periodic_open_bounds(void **state) {
    (void)state;
    pl_interval *iv;
    size_t n = intervals_of("{\"type\": \"PeriodicEvalStrategy\", "
                            "\"every\": \"10s\", \"start_timestamp\": 100, "
                            "\"end_timestamp\": 105, "
                            "\"interval\": \"(-inf,+0d)\"}", NULL, 0, &iv);
    assert_int_equal(n, 1);
    assert_interval(iv[0], INT64_MIN, 100);
    free(iv);
    n = intervals_of("{\"type\": \"PeriodicEvalStrategy\", \"every\": \"10s\","
                     " \"start_timestamp\": 100, \"end_timestamp\": 100, "
                     "\"interval\": \"(-5s;inf]\"}", NULL, 0, &iv);
    assert_int_equal(n, 1);
    assert_interval(iv[0], 96, INT64_MAX);
    free(iv);
}

/* Trigger ends 100 and 250: before the first model, while model 0
 * served, and from model 1 on. */
static void between_two_triggers(void **state) {
    (void)state;
    pl_interval *iv;
    int64_t ends[] = {100, 250};
    size_t n = intervals_of("{\"type\": \"BetweenTwoTriggersEvalStrategy\"}",
                            ends, 2, &iv);
    assert_int_equal(n, 3);
    assert_interval(iv[0], INT64_MIN, 101);
    assert_interval(iv[1], 101, 251);
    assert_interval(iv[2], 251, INT64_MAX);
    free(iv);
}

static void static_intervals(void **state) {
    (void)state;
    pl_interval *iv;
    size_t n = intervals_of("{\"type\": \"StaticEvalStrategy\", "
                            "\"intervals\": [[0, 10], [5, null]]}", NULL, 0,
                            &iv);
    assert_int_equal(n, 2);
    assert_interval(iv[0], 0, 10);
    assert_interval(iv[1], 5, INT64_MAX);
    free(iv);
}

/* A strategy that is refused, and the text its error must hold. */
static void assert_refused(const char *json, const char *says) {
    json_error_t jerr;
    json_t *obj = json_loads(json, 0, &jerr);
    pl_eval_strategy st;
    char err[256] = "";
    assert_non_null(obj);
    assert_int_equal(pl_eval_strategy_parse(obj, "s", &st, err, sizeof err),
                     -1);
    if (!strstr(err, says)) fail_msg("'%s' lacks '%s'", err, says);
    json_decref(obj);
}

static void bad_strategies_named(void **state) {
    (void)state;
    assert_refused("{}", "s: missing key type");
    assert_refused("{\"type\": \"OffsetEvalStrategy\"}", "s.type: ");
    assert_refused("{\"type\": \"SlicingEvalStrategy\", \"eval_every\": "
                   "\"1d\", \"eval_start_from\": 5, \"eval_end_at\": 5}",
                   "s.eval_end_at: must be after");
    assert_refused("{\"type\": \"SlicingEvalStrategy\", \"eval_every\": "
                   "\"1s\", \"eval_start_from\": 0, \"eval_end_at\": "
                   "1000000}", "more than 100000");
    assert_refused("{\"type\": \"SlicingEvalStrategy\", \"eval_every\": "
                   "\"1d\", \"eval_start_from\": 0}", "needs eval_every");
    assert_refused("{\"type\": \"SlicingEvalStrategy\", \"every\": \"1d\"}",
                   "s.every: unknown key");
    const char *windows[] = {"[-1d;+1d", "[+1d;-1d]", "[+inf;1d]",
                             "[-1d;-inf]", "[-1x;+1d]", "[1d]", "[-1d;;1d]",
                             /* past 10,000 years: 12 digits of years
                              * overflowed int64 */
                             "[-0d;+10001y]", "[-999999999999y;+0d]"};
    for (size_t i = 0; i < sizeof windows / sizeof *windows; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"type\": \"PeriodicEvalStrategy\", "
                 "\"every\": \"1d\", \"start_timestamp\": 0, "
                 "\"end_timestamp\": 10, \"interval\": \"%s\"}", windows[i]);
        assert_refused(json, "s.interval: ");
    }
    assert_refused("{\"type\": \"StaticEvalStrategy\", \"intervals\": "
                   "[[10, 5]]}", "s.intervals[0]: end must be after start");
    assert_refused("{\"type\": \"StaticEvalStrategy\", \"intervals\": "
                   "[[1]]}", "s.intervals[0]: expected [start, end]");
}

/* An evaluation section (YAML as JSON) around the given handler. */
static int parse_section(const char *handler, const char *datasets,
                         char *err, size_t errlen) {
    char json[1024];
    snprintf(json, sizeof json, "{\"command\": \"x\", \"handlers\": [%s], "
             "\"datasets\": %s}", handler, datasets);
    json_error_t jerr;
    json_t *sec = json_loads(json, 0, &jerr);
    pl_eval_config c;
    assert_non_null(sec);
    int rc = pl_eval_config_parse(sec, &c, err, errlen);
    if (rc == 0) {
        assert_string_equal(c.dataset, "stream");
        assert_int_equal(c.nhandlers, 1);
        assert_int_equal(c.nmetrics, 2);
        pl_eval_config_free(&c);
    }
    json_decref(sec);
    return rc;
}

static const char one_dataset[] =
    "[{\"dataset_id\": \"stream\", \"batch_size\": 64, \"metrics\": "
    "[{\"name\": \"Accuracy\"}, {\"name\": \"F1Score\", \"num_classes\": 4}]}]";
static const char slicing[] =
    "\"strategy\": {\"type\": \"SlicingEvalStrategy\", \"eval_every\": "
    "\"1d\", \"eval_start_from\": 0, \"eval_end_at\": 864000}";

static void section_read(void **state) {
    (void)state;
    char handler[512], err[256] = "";
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_training\", \"datasets\": [\"stream\"], %s}", slicing);
    assert_int_equal(parse_section(handler, one_dataset, err, sizeof err), 0);
}

static void assert_section_refused(const char *handler, const char *datasets,
                                   const char *says) {
    char err[256] = "";
    assert_int_equal(parse_section(handler, datasets, err, sizeof err), -1);
    if (!strstr(err, says)) fail_msg("'%s' lacks '%s'", err, says);
}

static void section_errors_named(void **state) {
    (void)state;
    char handler[512];
    snprintf(handler, sizeof handler, "{%s}", slicing);
    assert_section_refused(handler, one_dataset, "evaluation.handlers[0]: "
                           "missing key execution_time");
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_training\", \"datasets\": [\"other\"], %s}", slicing);
    assert_section_refused(handler, one_dataset,
                           "evaluation.handlers[0].datasets: [0] is not");
    assert_section_refused("{\"execution_time\": \"after_training\", "
                           "\"strategy\": {\"type\": "
                           "\"BetweenTwoTriggersEvalStrategy\"}}", one_dataset,
                           "handlers[0].execution_time: must be "
                           "after_pipeline");
    snprintf(handler, sizeof handler, "{\"execution_time\": \"later\", %s}",
             slicing);
    assert_section_refused(handler, one_dataset,
                           "evaluation.handlers[0].execution_time: 'later'");
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_pipeline\", %s}", slicing);
    assert_section_refused(handler, "[]", "evaluation.datasets: expected a "
                           "list of one");
    assert_section_refused(handler, "[{\"dataset_id\": \"stream\"}]",
                           "evaluation.datasets[0].metrics: expected");
}

/* models: Modyn's active (the newest model whose data ended before the
 * interval) and aegis's most_recent (that one and the one in training). */
static void models_serving(void **state) {
    (void)state;
    const int64_t ends[] = {10, 20, 30};
    bool want_active[] = {false, true, false};
    bool want_recent[] = {false, true, true};
    for (size_t i = 0; i < 3; i++) {
        assert_true(pl_eval_serves(PL_EVAL_MATRIX, ends, 3, i, true, 25));
        assert_int_equal(pl_eval_serves(PL_EVAL_ACTIVE, ends, 3, i, true, 25),
                         want_active[i]);
        assert_int_equal(pl_eval_serves(PL_EVAL_MOST_RECENT, ends, 3, i,
                                        true, 25), want_recent[i]);
    }
    /* before any model's data ended, none is active; the first trains */
    assert_false(pl_eval_serves(PL_EVAL_ACTIVE, ends, 3, 0, true, 5));
    assert_true(pl_eval_serves(PL_EVAL_MOST_RECENT, ends, 3, 0, true, 5));
    /* an interval starting at a model's last sample: it is not active yet */
    assert_false(pl_eval_serves(PL_EVAL_ACTIVE, ends, 3, 1, true, 20));
    assert_true(pl_eval_serves(PL_EVAL_ACTIVE, ends, 3, 0, true, 20));
}

/* models: active, training and execution_time: manual (they were refused
 * as not one of matrix, most_recent / after_training, after_pipeline). */
static void section_models(void **state) {
    (void)state;
    char handler[512], json[1024], err[512] = "";
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_pipeline\", \"models\": \"active\", %s}", slicing);
    assert_int_equal(parse_section(handler, one_dataset, err, sizeof err), 0);
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_training\", \"models\": \"active\", %s}", slicing);
    assert_section_refused(handler, one_dataset, "evaluation.handlers[0]."
                           "models: 'active' needs execution_time "
                           "after_pipeline");
    snprintf(handler, sizeof handler, "{\"execution_time\": "
             "\"after_pipeline\", \"models\": \"training\", %s}",
             slicing);
    assert_section_refused(handler, one_dataset, "evaluation.handlers[0]."
                           "models: 'training' is not supported");
    snprintf(json, sizeof json, "{\"command\": \"x\", \"handlers\": "
             "[{\"execution_time\": \"manual\", \"models\": \"active\", "
             "%s}], \"datasets\": %s}", slicing, one_dataset);
    json_t *sec = json_loads(json, 0, NULL);
    pl_eval_config c;
    assert_int_equal(pl_eval_config_parse(sec, &c, err, sizeof err), 0);
    assert_true(c.handlers[0].manual);
    assert_false(c.handlers[0].after_pipeline);
    assert_int_equal(c.handlers[0].models, PL_EVAL_ACTIVE);
    pl_eval_config_free(&c);
    json_decref(sec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slicing_cuts_the_last),
        cmocka_unit_test(periodic_windows_overlap),
        cmocka_unit_test(periodic_widest_window),
        cmocka_unit_test(periodic_open_bounds),
        cmocka_unit_test(between_two_triggers),
        cmocka_unit_test(static_intervals),
        cmocka_unit_test(bad_strategies_named),
        cmocka_unit_test(section_read),
        cmocka_unit_test(section_errors_named),
        cmocka_unit_test(models_serving),
        cmocka_unit_test(section_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
