/* test_perf.c -- the performance and cost triggers. Performance: Modyn's
 * forecast and decision
 * criteria on hand-worked cases, and the trigger fed a stream whose
 * model's accuracy drops at key 50: it fires at its first detection point
 * (no model yet) and after the drop, never before it; the check after a
 * fire also measures the new model on the samples that made it fire.
 * Cost: the training-time model, and the regret that makes it fire. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "perf.h"
#include "trigger.h"
#include "trigger_perf.h"

static void forecasts(void **state) {
    (void)state;
    double two[] = {0.8, 0.9}, five[] = {1, 2, 3, 4, 5};
    assert_float_equal(perf_forecast(two, 2, true), 0.85, 1e-12);
    /* five points: ridge on x = 0..4, mean 3, x-bar 2, Sxy = Sxx = 10,
     * slope 10 / (10 + 0.5) = 0.952381; at x = 5: 3 + 3 * 0.952381 */
    assert_float_equal(perf_forecast(five, 5, true), 3 + 30 / 10.5, 1e-12);
    assert_float_equal(perf_forecast(five, 5, false), 3, 1e-12);
    assert_true(isnan(perf_forecast(five, 0, true)));
}

static perf_obs obs(size_t samples, size_t wrong, double value) {
    perf_obs o = {.samples = samples, .misclassified = wrong};
    o.values[0] = value;
    return o;
}

static void static_and_dynamic(void **state) {
    (void)state;
    perf_tracker t = {.window = 10};
    /* Modyn's static threshold fires at or below it */
    perf_criterion st = {.kind = PERF_STATIC, .threshold = 0.8};
    perf_obs low = obs(10, 3, 0.79), at = obs(10, 2, 0.8);
    perf_obs above = obs(10, 2, 0.81);
    assert_true(perf_decide(&st, &t, &low));
    assert_true(perf_decide(&st, &t, &at));
    assert_false(perf_decide(&st, &t, &above));
    perf_tracker_free(&t);
}

/* Expected accuracy 0.9 of 100 samples allows 10 wrong: 15 wrong adds
 * 5, 16 adds 6: 11 >= 10 fires. 5 wrong adds nothing unless reduction is
 * allowed (-5). */
static void avoidable_misclassifications(void **state) {
    (void)state;
    perf_tracker t = {.window = 10};
    perf_criterion c = {.kind = PERF_MISCLASSIFICATION, .max_avoidable = 10,
                        .expected_accuracy = 0.9};
    perf_obs o15 = obs(100, 15, 0), o16 = obs(100, 16, 0), o5 = obs(100, 5, 0);
    assert_false(perf_decide(&c, &t, &o15));
    assert_int_equal(c.avoidable, 5);
    assert_false(perf_decide(&c, &t, &o5));
    assert_int_equal(c.avoidable, 5);
    assert_true(perf_decide(&c, &t, &o16));
    perf_reset(&c);
    assert_int_equal(c.avoidable, 0);
    c.allow_reduction = true;
    assert_false(perf_decide(&c, &t, &o5));
    assert_int_equal(c.avoidable, -5);
    /* no expected_accuracy: the after-training accuracy, 90 of 100 */
    perf_criterion f = {.kind = PERF_MISCLASSIFICATION, .max_avoidable = 5,
                        .expected_accuracy = NAN};
    assert_false(perf_decide(&f, &t, &o16)); /* nothing expected yet */
    perf_obs after = obs(100, 10, 0.9);
    assert_int_equal(perf_after_training(&t, &after), 0);
    assert_true(perf_decide(&f, &t, &o16));
    perf_tracker_free(&t);
}

/* A stand-in for the supervisor's checks: the model trained after the
 * second fire is good everywhere; the earlier one gets 5 of 10 wrong on
 * keys from 50 on, 1 of 10 before. */
typedef struct fake {
    int fires;
    int asks, windows[16];
    uint64_t drop_at;   /* the first key the old model gets wrong */
} fake;

/* The supervisor's trainings after the first fire: one of 10 samples
 * that ran 20 s (ctx a fake). */
static int one_training(void *ctx, const double **samples,
                        const double **seconds, size_t *n, char *err,
                        size_t errlen) {
    (void)err;
    (void)errlen;
    static const double size[] = {10}, secs[] = {20};
    *samples = size;
    *seconds = secs;
    *n = ((const fake *)ctx)->fires > 0;
    return 0;
}

static int fake_evaluate(void *ctx, const pl_perf_ask *ask, perf_obs *out,
                         char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    fake *f = ctx;
    if (f->fires == 0) return 1;
    f->windows[f->asks++] = (int)ask->nwindows;
    for (size_t w = 0; w < ask->nwindows; w++) {
        bool drifted = ask->keys[w][0] >= f->drop_at && f->fires < 2;
        out[w] = obs(ask->n[w], drifted ? 5 : 1, drifted ? 0.5 : 0.9);
    }
    return 0;
}

/* The trigger of a section in JSON text; fails the test when refused. */
static pl_trigger *trigger_of(const char *json) {
    json_error_t jerr;
    json_t *sec = json_loads(json, 0, &jerr);
    char err[256] = "";
    assert_non_null(sec);
    pl_trigger *t = pl_trigger_new(sec, err, sizeof err);
    json_decref(sec);
    if (!t) fail_msg("%s", err);
    return t;
}

/* Feeds samples 0..n-1 one at a time (key k at time k * step), counting
 * fires in f; the samples it fired after into at (room for 8). Their
 * number. */
static size_t feed(pl_trigger *t, uint64_t n, int64_t step, fake *f,
                   size_t *at) {
    size_t nat = 0;
    char err[256];
    for (uint64_t k = 0; k < n; k++) {
        pl_sample s = {.key = k, .ts = (int64_t)k * step};
        size_t fires[1], got;
        assert_int_equal(pl_trigger_inform(t, &s, NULL, 0, 1, fires, &got,
                                           err, sizeof err), 0);
        if (got && nat < 8) at[nat++] = k;
        f->fires += (int)got;
    }
    return nat;
}

static void fires_after_the_drop(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"PerformanceTrigger\", \"evaluation_interval_data_points\":"
        " 10, \"evaluation\": {\"device\": \"cpu\", \"dataset\": "
        "{\"dataset_id\": \"d\", \"metrics\": [{\"name\": \"Accuracy\"}]}},"
        " \"decision_criteria\": {\"acc\": {\"id\": "
        "\"StaticPerformanceThresholdCriterion\", \"metric\": \"Accuracy\", "
        "\"metric_threshold\": 0.7}}}");
    fake f = {.drop_at = 50};
    assert_int_equal(pl_trigger_set_evaluator(t, fake_evaluate, &f), 1);
    size_t fired_at[8], nfired = feed(t, 100, 1, &f, fired_at);
    assert_int_equal(nfired, 2);
    assert_int_equal(fired_at[0], 9);   /* the first: no model yet */
    assert_int_equal(fired_at[1], 59);  /* the first check after the drop */
    /* checks at 19..99; those after a fire (19, 69) also ask for the
     * batch that fired, measured on the new model */
    assert_int_equal(f.asks, 9);
    assert_int_equal(f.windows[0], 2);
    assert_int_equal(f.windows[1], 1);
    assert_int_equal(f.windows[4], 1);
    assert_int_equal(f.windows[5], 2);
    assert_int_equal(f.windows[6], 1);
    pl_trigger_free(t);
}

/* AvoidableMisclassificationCostTrigger: a check every 10 samples, one a
 * second; the warm-up policy fires at sample 9 (the first model), whose
 * check at 19 calibrates nothing beyond the given expected accuracy 0.9.
 * 1 of 10 wrong is as expected (0 avoidable); from key 20 the old model
 * gets 5 of 10 wrong: 4 avoidable, new in the interval 19-29, so they
 * count for half of its 10 s: 20 misclassification-seconds, which
 * reach the one training's 20 s: it fires at 29. */
static void avoidable_cost_fires(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"AvoidableMisclassificationCostTrigger\", "
        "\"evaluation_interval_data_points\": 10, \"warmup_intervals\": 1, "
        "\"warmup_policy\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 10}, "
        "\"expected_accuracy\": 0.9, "
        "\"avoidable_misclassification_latency_per_training_second\": 1, "
        "\"evaluation\": {\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}}");
    fake f = {.drop_at = 20};
    assert_int_equal(pl_trigger_set_evaluator(t, fake_evaluate, &f), 1);
    assert_int_equal(pl_trigger_set_coster(t, one_training, &f), 1);
    size_t at[8], nat = feed(t, 40, 1, &f, at);
    assert_int_equal(nat, 2);
    assert_int_equal(at[0], 9);
    assert_int_equal(at[1], 29);
    pl_trigger_free(t);
}

/* The cost model: x 100, 200 samples took y 10, 20 s. Ridge (alpha 1):
 * x-bar 150, y-bar 15, Sxy 500, Sxx 5000: slope 500/5001; at 4 samples
 * 15 + 500/5001 * (4 - 150). One training: its time. */
static void cost_model(void **state) {
    (void)state;
    double x[] = {100, 200}, y[] = {10, 20}, one[] = {50};
    assert_float_equal(cost_forecast(x, y, 2, 4), 15 + 500.0 / 5001 * -146,
                       1e-9);
    assert_float_equal(cost_forecast(x, one, 1, 7), 50, 1e-12);
}

/* The supervisor's trainings for the cost trigger: after the first fire,
 * one training of 2 samples that ran 50 s. */
static int fake_trainings(void *ctx, const double **samples,
                          const double **seconds, size_t *n, char *err,
                          size_t errlen) {
    (void)err;
    (void)errlen;
    static const double size[] = {2}, secs[] = {50};
    *samples = size;
    *seconds = secs;
    *n = ((const fake *)ctx)->fires > 0;
    return 0;
}

/* Detection every 2 samples, one every 10 s, a second of waiting worth a
 * second of training. At ts 10 the first detection fires. At 30: the
 * samples at 20 and 30 waited 10 and 0 s: 10 < 50. At 50: those two
 * waited 20 s more (40) and the new ones 10 and 0: 60 >= 50, it fires. */
static void cost_fires_when_regret_outweighs(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"DataIncorporationLatencyCostTrigger\", "
                             "\"evaluation_interval_data_points\": 2, "
                             "\"incorporation_delay_per_training_second\": 1}");
    fake f = {0};
    assert_int_equal(pl_trigger_set_coster(t, fake_trainings, &f), 1);
    size_t at[8], nat = feed(t, 6, 10, &f, at);
    assert_int_equal(nat, 2);
    assert_int_equal(at[0], 1);
    assert_int_equal(at[1], 5);
    pl_trigger_free(t);
}

/* Modyn's current dynamic criteria (trigger/performance/criterion.py),
 * read from a section: the quantile (below the quantile of the last
 * window_size scores) and the rolling average (below the average by
 * deviation times it), each firing with no history yet. */
static void dynamic_criteria(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"PerformanceTrigger\", "
        "\"evaluation\": {\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
        "\"warmup_policy\": {\"id\": \"TimeTrigger\", \"every\": \"3d\"}, "
        "\"warmup_intervals\": 5, \"decision_criteria\": {"
        "\"q\": {\"id\": \"DynamicQuantilePerformanceThresholdCriterion\", "
        "\"metric\": \"Accuracy\", \"window_size\": 4, \"quantile\": 0.5}, "
        "\"r\": {\"id\": \"DynamicRollingAveragePerformanceThresholdCriterion\", "
        "\"metric\": \"Accuracy\", \"window_size\": 2, \"deviation\": 0.25}}}");
    trig_perf *p = (trig_perf *)t;
    assert_int_equal(p->ncriteria, 2);
    perf_criterion *q = &p->criteria[0], *r = &p->criteria[1];
    assert_int_equal(q->kind, PERF_QUANTILE);
    perf_tracker tr = {.window = 10};
    perf_obs o9 = obs(10, 1, 0.9), o8 = obs(10, 2, 0.8), o86 = obs(10, 1, 0.86);
    assert_true(perf_decide(q, &tr, &o9));   /* no history */
    assert_true(perf_decide(q, &tr, &o8));   /* below 0.9 */
    assert_false(perf_decide(q, &tr, &o86)); /* median 0.85 */
    assert_false(perf_decide(q, &tr, &o86)); /* median 0.86: not below */
    perf_obs one = obs(4, 0, 1.0), q3 = obs(4, 1, 0.75), o80 = obs(10, 2, 0.8);
    assert_true(perf_decide(r, &tr, &one));  /* no history */
    assert_true(perf_decide(r, &tr, &q3));   /* 1 - 0.75 >= 0.25 * 1 */
    assert_false(perf_decide(r, &tr, &o80)); /* avg 0.875: 0.075 */
    pl_trigger_free(t);
}

/* Modyn's warm-up: the first check fires even during it, and the
 * policy's fires count at the next check. DataAmountTrigger 15 fires
 * after 14 and 29: the warm-up's checks 9, 19 and 29 fire; 39 is the
 * threshold's (accuracy 0.9 > 0.7). */
static void warmup_decides_at_checks(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"PerformanceTrigger\", "
        "\"evaluation_interval_data_points\": 10, \"warmup_intervals\": 3, "
        "\"warmup_policy\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 15}, "
        "\"evaluation\": {\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}},"
        " \"decision_criteria\": {\"acc\": {\"id\": "
        "\"StaticPerformanceThresholdCriterion\", \"metric_threshold\": 0.7}}}");
    fake f = {.drop_at = 1000};
    assert_int_equal(pl_trigger_set_evaluator(t, fake_evaluate, &f), 1);
    size_t at[8], nat = feed(t, 40, 1, &f, at);
    assert_int_equal(nat, 3);
    assert_int_equal(at[0], 9);
    assert_int_equal(at[1], 19);
    assert_int_equal(at[2], 29);
    pl_trigger_free(t);
}

/* The cost trigger takes Modyn's warm-up too: the first detection (1)
 * fires, the policy's fire after 2 counts at 3, and then the regret,
 * worth 0 here, never outweighs the 50 s training. */
static void cost_warmup(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"DataIncorporationLatencyCostTrigger\", "
        "\"evaluation_interval_data_points\": 2, \"warmup_intervals\": 2, "
        "\"warmup_policy\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 3}, "
        "\"incorporation_delay_per_training_second\": 0}");
    fake f = {0};
    assert_int_equal(pl_trigger_set_coster(t, fake_trainings, &f), 1);
    size_t at[8], nat = feed(t, 12, 10, &f, at);
    assert_int_equal(nat, 2);
    assert_int_equal(at[0], 1);
    assert_int_equal(at[1], 3);
    pl_trigger_free(t);
}

/* Both join an EnsembleTrigger: each subtrigger gets what it asks of
 * the supervisor, and the ensemble votes on its fires. */
static void in_an_ensemble(void **state) {
    (void)state;
    pl_trigger *t = trigger_of("{\"id\": \"EnsembleTrigger\", "
        "\"ensemble_strategy\": {\"id\": \"AtLeastN\", \"n\": 1}, "
        "\"subtriggers\": {\"perf\": {\"id\": \"PerformanceTrigger\", "
        "\"evaluation_interval_data_points\": 10, \"evaluation\": "
        "{\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
        "\"decision_criteria\": {\"a\": {\"id\": "
        "\"StaticPerformanceThresholdCriterion\", \"metric_threshold\": 0.7}}}, "
        "\"cost\": {\"id\": \"DataIncorporationLatencyCostTrigger\", "
        "\"evaluation_interval_data_points\": 10, "
        "\"incorporation_delay_per_training_second\": 0}}}");
    fake f = {.drop_at = 50};
    assert_int_equal(pl_trigger_set_evaluator(t, fake_evaluate, &f), 1);
    assert_int_equal(pl_trigger_set_coster(t, one_training, &f), 1);
    size_t at[8], nat = feed(t, 100, 1, &f, at);
    /* both fire at their first detection; then only the performance
     * trigger, at the drop (the cost trigger's regret is worth 0) */
    assert_int_equal(nat, 2);
    assert_int_equal(at[0], 9);
    assert_int_equal(at[1], 59);
    pl_trigger_free(t);
}

static void assert_refused(const char *json, const char *says) {
    json_error_t jerr;
    json_t *sec = json_loads(json, 0, &jerr);
    char err[256] = "";
    assert_non_null(sec);
    assert_null(pl_trigger_new(sec, err, sizeof err));
    if (!strstr(err, says)) fail_msg("'%s' lacks '%s'", err, says);
    json_decref(sec);
}

static void bad_sections_named(void **state) {
    (void)state;
    assert_refused("{\"id\": \"PerformanceTrigger\", \"decision_criteria\": "
                   "{}}", "trigger.evaluation: missing key");
    const char *ev = "\"evaluation\": {\"dataset\": {\"metrics\": "
                     "[{\"name\": \"F1Score\", \"num_classes\": 2}]}}";
    char json[512];
    snprintf(json, sizeof json, "{\"id\": \"PerformanceTrigger\", %s}", ev);
    assert_refused(json, "trigger.evaluation.dataset.metrics: must hold "
                   "Accuracy");
    assert_refused("{\"id\": \"PerformanceTrigger\", \"evaluation\": "
                   "{\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
                   "\"decision_criteria\": {\"x\": {\"id\": "
                   "\"StaticPerformanceThresholdCriterion\", \"metric\": "
                   "\"RocAuc\"}}}", "trigger.decision_criteria.x.metric: "
                   "'RocAuc' is not one of");
    assert_refused("{\"id\": \"PerformanceTrigger\", \"mode\": \"lookahead\", "
                   "\"evaluation\": {\"dataset\": {\"metrics\": [{\"name\": "
                   "\"Accuracy\"}]}}, \"decision_criteria\": {\"x\": {\"id\": "
                   "\"StaticNumberMisclassificationCriterion\", "
                   "\"avoidable_misclassification_threshold\": 5}}}",
                   "trigger.mode: only hindsight");
    assert_refused("{\"id\": \"PerformanceTrigger\", \"evaluation\": "
                   "{\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
                   "\"decision_criteria\": {\"x\": {\"id\": "
                   "\"StaticNumberMisclassificationCriterion\"}}}",
                   "missing key avoidable_misclassification_threshold");
    /* Modyn's criterion before #626: refused, naming what replaced it */
    assert_refused("{\"id\": \"PerformanceTrigger\", \"evaluation\": "
                   "{\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
                   "\"decision_criteria\": {\"x\": {\"id\": "
                   "\"DynamicPerformanceThresholdCriterion\", \"metric\": "
                   "\"Accuracy\"}}}", "trigger.decision_criteria.x.id: "
                   "DynamicPerformanceThresholdCriterion was removed from Modyn: "
                   "use DynamicQuantilePerformanceThresholdCriterion");
    /* a criterion that calibrates needs a warm-up policy, as Modyn's */
    assert_refused("{\"id\": \"PerformanceTrigger\", \"evaluation\": "
                   "{\"dataset\": {\"metrics\": [{\"name\": \"Accuracy\"}]}}, "
                   "\"decision_criteria\": {\"x\": {\"id\": "
                   "\"DynamicRollingAveragePerformanceThresholdCriterion\", "
                   "\"metric\": \"Accuracy\"}}}", "trigger.warmup_policy: required");
    assert_refused("{\"id\": \"DataIncorporationLatencyCostTrigger\"}",
                   "trigger: missing key incorporation_delay_per_training_second");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forecasts),
        cmocka_unit_test(static_and_dynamic),
        cmocka_unit_test(dynamic_criteria),
        cmocka_unit_test(avoidable_misclassifications),
        cmocka_unit_test(fires_after_the_drop),
        cmocka_unit_test(bad_sections_named),
        cmocka_unit_test(cost_model),
        cmocka_unit_test(avoidable_cost_fires),
        cmocka_unit_test(warmup_decides_at_checks),
        cmocka_unit_test(cost_warmup),
        cmocka_unit_test(in_an_ensemble),
        cmocka_unit_test(cost_fires_when_regret_outweighs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
