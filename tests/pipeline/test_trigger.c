/* test_trigger.c -- the simple triggers and the ensemble on hand-built
 * streams: where each fires, that batching does not change it, and that a
 * bad key is refused with its path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trigger.h"

/* Keys where trigger CONFIG fires on n samples with these timestamps, fed
 * in batches of `batch`; returns how many. */
static size_t fire_keys(const char *config, const int64_t *ts, size_t n,
                        size_t batch, uint64_t *keys)
{
    json_t *section = json_loads(config, 0, NULL);
    assert_non_null(section);
    char err[256] = "";
    pl_trigger *t = pl_trigger_new(section, err, sizeof err);
    assert_non_null(t);
    assert_false(pl_trigger_needs_features(t));
    pl_sample *s = calloc(n, sizeof *s);
    size_t *fires = calloc(n, sizeof *fires), total = 0;
    for (size_t i = 0; i < n; i++)
        s[i] = (pl_sample){.key = i, .ts = ts ? ts[i] : (int64_t)i};
    for (size_t at = 0; at < n; at += batch) {
        size_t len = n - at < batch ? n - at : batch, nf;
        assert_int_equal(pl_trigger_inform(t, s + at, NULL, 0, len, fires, &nf,
                                           err, sizeof err), 0);
        for (size_t j = 0; j < nf; j++)
            keys[total++] = s[at + fires[j]].key;
    }
    free(s);
    free(fires);
    pl_trigger_free(t);
    json_decref(section);
    return total;
}

static void expect_fires(const char *config, const int64_t *ts, size_t n,
                         const uint64_t *want, size_t nwant)
{
    uint64_t got[64];
    for (size_t batch = 1; batch <= n; batch += 3) {
        size_t count = fire_keys(config, ts, n, batch, got);
        assert_int_equal(count, nwant);
        for (size_t i = 0; i < nwant; i++)
            assert_int_equal(got[i], want[i]);
    }
}

static void data_amount(void **state)
{
    const uint64_t want[] = {2, 5, 8};
    expect_fires("{\"id\": \"DataAmountTrigger\", \"num_samples\": 3}", NULL,
                 10, want, 3);
}

static void time_every(void **state)
{
    /* Boundaries at 10, 20, 30, 40: the first sample at or past each fires;
     * the gap from 25 to 41 crosses two boundaries and fires once. */
    const int64_t ts[] = {0, 3, 6, 9, 10, 12, 25, 41, 45};
    const uint64_t want[] = {4, 6, 7};
    expect_fires("{\"id\": \"TimeTrigger\", \"every\": \"10s\"}", ts, 9, want, 3);
}

static void time_start(void **state)
{
    const int64_t ts[] = {100, 3700, 7199, 7200, 10000};
    const uint64_t want[] = {3};
    expect_fires("{\"id\": \"TimeTrigger\", \"every\": \"2h\", "
                 "\"start_timestamp\": 0}", ts, 5, want, 1);
}

static void ensemble(void **state)
{
    /* Modyn's current EnsembleTrigger: a vote stands from a sub-trigger's
     * fire until the ensemble fires. a fires after 1, 3, 5, ...; b after
     * 4, 9, 14, 19; c never: a's vote waits for b's each time. */
    const char *subs = "\"subtriggers\": {"
        "\"a\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 2},"
        "\"b\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 5},"
        "\"c\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 100}}";
    char config[512];
    const uint64_t want[] = {4, 9, 14, 19};
    snprintf(config, sizeof config, "{\"id\": \"EnsembleTrigger\", %s, "
             "\"ensemble_strategy\": {\"id\": \"MajorityVote\"}}", subs);
    expect_fires(config, NULL, 20, want, 4);
    snprintf(config, sizeof config, "{\"id\": \"EnsembleTrigger\", %s, "
             "\"ensemble_strategy\": {\"id\": \"AtLeastN\", \"n\": 3}}", subs);
    expect_fires(config, NULL, 20, want, 0);
}

static void ensemble_votes_stand(void **state)
{
    /* The review's ensemble.yaml scaled down (300 and 500 samples: Modyn
     * fires at 500, 1000, 1500, 2000): every 3 and every 5, AtLeastN 2. */
    const uint64_t want[] = {4, 9, 14, 19};
    expect_fires("{\"id\": \"EnsembleTrigger\", \"subtriggers\": {"
                 "\"a\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 3},"
                 "\"b\": {\"id\": \"DataAmountTrigger\", \"num_samples\": 5}}, "
                 "\"ensemble_strategy\": {\"id\": \"AtLeastN\", \"n\": 2}}",
                 NULL, 20, want, 4);
}

static void expect_error(const char *config, const char *message)
{
    json_t *section = json_loads(config, 0, NULL);
    assert_non_null(section);
    char err[256] = "";
    assert_null(pl_trigger_new(section, err, sizeof err));
    if (!strstr(err, message))
        fail_msg("error '%s' lacks '%s'", err, message);
    json_decref(section);
}

static void bad_keys(void **state)
{
    expect_error("{\"id\": \"DataAmountTrigger\", \"num_sample\": 3}",
                 "trigger.num_sample: unknown key");
    expect_error("{\"id\": \"DataAmountTrigger\"}", "trigger.num_samples: missing");
    expect_error("{\"id\": \"DataAmountTrigger\", \"num_samples\": 0}",
                 "trigger.num_samples: must be at least 1");
    expect_error("{\"id\": \"TimeTrigger\", \"every\": \"3x\"}",
                 "trigger.every: '3x' is not <integer><unit>");
    /* it wrapped past int64 to a negative interval, firing at once */
    expect_error("{\"id\": \"TimeTrigger\", \"every\": \"999999999999y\"}",
                 "trigger.every: '999999999999y' is longer than 10000 years");
    expect_error("{\"every\": \"1d\"}", "trigger.id: missing");
    expect_error("{\"id\": \"CostTrigger\"}", "trigger.id: 'CostTrigger'");
    expect_error("{\"id\": \"EnsembleTrigger\", \"subtriggers\": {\"a\": "
                 "{\"id\": \"TimeTrigger\", \"every\": \"1d\", \"x\": 1}}, "
                 "\"ensemble_strategy\": {\"id\": \"MajorityVote\"}}",
                 "trigger.subtriggers.a.x: unknown key");
    expect_error("{\"id\": \"EnsembleTrigger\", \"subtriggers\": {\"a\": "
                 "{\"id\": \"TimeTrigger\", \"every\": \"1d\"}}, "
                 "\"ensemble_strategy\": {\"id\": \"AtLeastN\", \"n\": 2}}",
                 "trigger.ensemble_strategy.n: must be between 1 and 1");
    /* an older Modyn's key: its current schema has none */
    expect_error("{\"id\": \"EnsembleTrigger\", "
                 "\"detection_interval_data_points\": 5, \"subtriggers\": "
                 "{\"a\": {\"id\": \"TimeTrigger\", \"every\": \"1d\"}}, "
                 "\"ensemble_strategy\": {\"id\": \"MajorityVote\"}}",
                 "trigger.detection_interval_data_points: not a key of Modyn's "
                 "EnsembleTrigger");
    expect_error("{\"id\": \"DataDriftTrigger\", \"metrics\": {\"m\": "
                 "{\"id\": \"AlibiDetectMmdDriftMetric\", \"thresh\": 1}}}",
                 "trigger.metrics.m.thresh: unknown key");
    expect_error("{\"id\": \"DataDriftTrigger\", \"metrics\": {\"m\": "
                 "{\"id\": \"AlibiDetectMmdDriftMetric\", \"threshold\": 0.1, "
                 "\"num_permutations\": 10}}}",
                 "trigger.metrics.m.threshold: threshold and num_permutations");
    expect_error("{\"id\": \"DataDriftTrigger\", \"metrics\": {\"m\": "
                 "{\"id\": \"AlibiDetectKSDriftMetric\", \"decision_criterion\": "
                 "{\"id\": \"DynamicQuantileThresholdCriterion\"}}}}",
                 "trigger.warmup_policy: required");
    expect_error("{\"id\": \"DataDriftTrigger\", \"windowing_strategy\": "
                 "{\"id\": \"TimeWindowingStrategy\", \"limit_ref\": \"1d\"}}",
                 "trigger.windowing_strategy.limit_cur: missing");
    expect_error("{\"id\": \"DataDriftTrigger\", \"warmup_intervals\": 2, "
                 "\"warmup_policy\": {\"id\": \"DataDriftTrigger\"}}",
                 "trigger.warmup_policy.id: 'DataDriftTrigger' is not "
                 "DataAmountTrigger or TimeTrigger");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(data_amount), cmocka_unit_test(time_every),
        cmocka_unit_test(time_start), cmocka_unit_test(ensemble),
        cmocka_unit_test(ensemble_votes_stand),
        cmocka_unit_test(bad_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
