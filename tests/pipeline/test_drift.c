/* test_drift.c -- the drift metrics (MMD, KS), the decision criteria and
 * the DataDriftTrigger on streams whose drift point is known: it fires at
 * its first detection point, then right after the drift and not before,
 * the same way whatever the batching; warm-up and time windows; and on a
 * model's embeddings of the samples, from a stand-in embedder. */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drift.h"
#include "pl_rng.h"
#include "trigger.h"

static double normal(pl_rng *r)
{
    double u = pl_rng_unit(r), v = pl_rng_unit(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* n rows of dim features, N(mean, 1) in feature 0 and N(0, 1) elsewhere. */
static float *gaussian_rows(size_t n, size_t dim, double mean, uint64_t seed)
{
    pl_rng r;
    pl_rng_seed(&r, seed, 0);
    float *x = malloc(n * dim * sizeof *x);
    for (size_t i = 0; i < n * dim; i++)
        x[i] = (float)(normal(&r) + (i % dim == 0 ? mean : 0));
    return x;
}

static void mmd_separates(void **state)
{
    float *a = gaussian_rows(300, 3, 0, 1), *b = gaussian_rows(300, 3, 0, 2);
    float *c = gaussian_rows(300, 3, 1.5, 3);
    double sigma = drift_median_sigma(a, 300, 3), same, shifted, p_same, p_shift;
    assert_int_equal(drift_mmd(a, 300, b, 300, 3, sigma, 50, 7, &same, &p_same), 0);
    assert_int_equal(drift_mmd(a, 300, c, 300, 3, sigma, 50, 7, &shifted, &p_shift), 0);
    assert_true(fabs(same) < 0.005);
    assert_true(shifted > 0.03);
    assert_true(p_same > 0.05);
    assert_true(p_shift < 0.05);
    double again, p_again;
    drift_mmd(a, 300, b, 300, 3, sigma, 50, 7, &again, &p_again);
    assert_true(again == same && p_again == p_same);  /* seeded */
    free(a), free(b), free(c);
}

static void ks_separates(void **state)
{
    float *a = gaussian_rows(400, 4, 0, 1), *b = gaussian_rows(400, 4, 0, 2);
    float *c = gaussian_rows(400, 4, 0.8, 3);
    double d, p;
    assert_int_equal(drift_ks(a, 400, b, 400, 4, false, &d, &p), 0);
    assert_true(p > 0.05 && d < 0.1);
    assert_int_equal(drift_ks(a, 400, c, 400, 4, true, &d, &p), 0);
    assert_true(p < 1e-6 && d > 0.2);
    assert_true(drift_ks_pvalue(0, 100, 100) == 1.0);
    free(a), free(b), free(c);
}

static drift_criterion parse_criterion(const char *text)
{
    json_t *obj = json_loads(text, 0, NULL);
    drift_criterion c;
    char err[256];
    assert_int_equal(drift_criterion_parse(obj, "c", &c, err, sizeof err), 0);
    json_decref(obj);
    return c;
}

static void criteria(void **state)
{
    drift_criterion q = parse_criterion(
        "{\"id\": \"DynamicQuantileThresholdCriterion\", \"window_size\": 5, "
        "\"quantile\": 0.25}");
    /* no history yet: drift, as Modyn's (decision_policy.py) */
    assert_true(drift_criterion_decide(&q, 9, 1, 0.05));
    for (int i = 1; i <= 4; i++)
        drift_criterion_observe(&q, i);
    /* history 9, 1, 2, 3, 4: the 75th percentile is 4 */
    assert_true(drift_criterion_decide(&q, 4.5, 1, 0.05));
    assert_false(drift_criterion_decide(&q, 3.9, 1, 0.05));
    drift_criterion_free(&q);

    drift_criterion r = parse_criterion(
        "{\"id\": \"DynamicRollingAverageThresholdCriterion\", "
        "\"window_size\": 2, \"deviation\": 0.5}");
    drift_criterion_observe(&r, 1);
    drift_criterion_observe(&r, 1);
    assert_true(drift_criterion_decide(&r, 1.6, 1, 0.05));  /* +60% */
    assert_false(drift_criterion_decide(&r, 1.9, 1, 0.05)); /* avg 1.3: +46% */
    drift_criterion_free(&r);
    /* Modyn's >=: exactly the deviation is drift (avg 1, +0.5) */
    r = parse_criterion("{\"id\": \"DynamicRollingAverageThresholdCriterion\", "
                        "\"window_size\": 2, \"deviation\": 0.5}");
    assert_true(drift_criterion_decide(&r, 1, 1, 0.05)); /* no history */
    assert_true(drift_criterion_decide(&r, 1.5, 1, 0.05));
    drift_criterion_free(&r);
    r = parse_criterion("{\"id\": \"DynamicRollingAverageThresholdCriterion\", "
                        "\"window_size\": 3, \"deviation\": 0.25, \"absolute\": true}");
    drift_criterion_observe(&r, 2);
    assert_true(drift_criterion_decide(&r, 2.25, 1, 0.05));
    assert_false(drift_criterion_decide(&r, 2.2, 1, 0.05));
    drift_criterion_free(&r);
    drift_criterion t = parse_criterion(
        "{\"id\": \"ThresholdDecisionCriterion\", \"threshold\": 0.5}");
    assert_true(drift_criterion_decide(&t, 0.5, 1, 0.05));
    assert_false(drift_criterion_decide(&t, 0.49, 1, 0.05));

    drift_criterion h = parse_criterion("{\"id\": \"HypothesisTestDecisionCriterion\"}");
    assert_true(drift_criterion_decide(&h, 0, 0.01, 0.05));
    assert_false(drift_criterion_decide(&h, 0, 0.2, 0.05));
}

/* A 2-feature stream, N(0,1) before key `drift_at`, N(3,1) from it;
 * timestamps equal keys. */
static void make_stream(size_t n, size_t drift_at, pl_sample *s, float *f)
{
    pl_rng r;
    pl_rng_seed(&r, 11, 0);
    for (size_t i = 0; i < n; i++) {
        s[i] = (pl_sample){.key = i, .ts = (int64_t)i};
        f[2 * i] = (float)(normal(&r) + (i >= drift_at ? 3 : 0));
        f[2 * i + 1] = (float)normal(&r);
    }
}

/* Where CONFIG fires on the stream, fed in batches of `batch`. */
static size_t drift_fires(const char *config, size_t batch, uint64_t *keys)
{
    enum { N = 6000, DRIFT = 3000 };
    static pl_sample s[N];
    static float f[2 * N];
    make_stream(N, DRIFT, s, f);
    json_t *section = json_loads(config, 0, NULL);
    char err[256] = "";
    pl_trigger *t = pl_trigger_new(section, err, sizeof err);
    if (!t)
        fail_msg("%s", err);
    assert_true(pl_trigger_needs_features(t));
    size_t fires[N], nf, total = 0;
    for (size_t at = 0; at < N; at += batch) {
        size_t len = N - at < batch ? N - at : batch;
        assert_int_equal(pl_trigger_inform(t, s + at, f + 2 * at, 2, len, fires,
                                           &nf, err, sizeof err), 0);
        for (size_t j = 0; j < nf; j++)
            keys[total++] = at + fires[j];
    }
    pl_trigger_free(t);
    json_decref(section);
    return total;
}

static void expect_drift_fires(const char *config, const uint64_t *want,
                               size_t nwant)
{
    const size_t batches[] = {6000, 1, 777};
    for (size_t b = 0; b < 3; b++) {
        uint64_t got[100];
        size_t n = drift_fires(config, batches[b], got);
        if (n != nwant)
            fail_msg("batch %zu: %zu fires, first at %llu", batches[b], n,
                     n ? (unsigned long long)got[0] : 0ULL);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], want[i]);
    }
}

static void fires_after_drift(void **state)
{
    const uint64_t want[] = {499, 3499};
    expect_drift_fires("{\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"AmountWindowingStrategy\", \"amount_ref\": 500, "
        "\"amount_cur\": 500}, \"metrics\": {\"mmd\": "
        "{\"id\": \"AlibiDetectMmdDriftMetric\", \"threshold\": 0.1}}}",
        want, 2);
    expect_drift_fires("{\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"TimeWindowingStrategy\", \"limit_ref\": \"500s\", "
        "\"limit_cur\": \"500s\"}, \"metrics\": {\"ks\": "
        "{\"id\": \"AlibiDetectKSDriftMetric\", \"p_val\": 0.001}}}",
        want, 2);
}

static void default_config(void **state)
{
    /* Windows of 1,000, one MMD with the default threshold. */
    const uint64_t want[] = {999, 3999};
    expect_drift_fires("{\"id\": \"DataDriftTrigger\"}", want, 2);
}

static void warmup_policy_decides(void **state)
{
    /* The first three detection points (499, 999, 1499) are the warm-up's,
     * as in Modyn: the first fires, and so do the others, the policy
     * having fired (at 699 and 1399) since the one before. Then the
     * rolling average decides: the drift at 3000 fires at 3499. */
    uint64_t got[100];
    size_t n = drift_fires("{\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"AmountWindowingStrategy\", \"amount_ref\": 500, "
        "\"amount_cur\": 500}, \"metrics\": {\"mmd\": "
        "{\"id\": \"AlibiDetectMmdDriftMetric\", \"decision_criterion\": "
        "{\"id\": \"DynamicRollingAverageThresholdCriterion\", "
        "\"window_size\": 3, \"deviation\": 0.2, \"absolute\": true}}}, "
        "\"warmup_intervals\": 3, \"warmup_policy\": "
        "{\"id\": \"DataAmountTrigger\", \"num_samples\": 700}}", 500, got);
    assert_true(n >= 4);
    assert_int_equal(got[0], 499);
    assert_int_equal(got[1], 999);
    assert_int_equal(got[2], 1499);
    size_t i = 3;
    while (i < n && got[i] < 3000)
        i++;
    assert_true(i < n);
    assert_int_equal(got[i], 3499);
}

static void first_fires_in_warmup(void **state)
{
    /* Modyn's first detection point fires even while a warm-up lasts
     * (the review's driftnodev.yaml): a policy that never fires, 20
     * warm-up detection points, and no drift before 3000 fire once. */
    const uint64_t want[] = {499};
    expect_drift_fires("{\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"AmountWindowingStrategy\", \"amount_ref\": 500, "
        "\"amount_cur\": 500}, \"metrics\": {\"mmd\": "
        "{\"id\": \"AlibiDetectMmdDriftMetric\", \"decision_criterion\": "
        "{\"id\": \"ThresholdDecisionCriterion\", \"threshold\": 0.1}}}, "
        "\"warmup_intervals\": 20, \"warmup_policy\": "
        "{\"id\": \"TimeTrigger\", \"every\": \"3d\"}}", want, 1);
}

static void warmup_intervals_default(void **state)
{
    /* Unset, warmup_intervals is 0 as Modyn's (review's driftA.yaml):
     * the policy (every 700) decides nothing, so every fire is at a
     * detection point (499, 999, ...), the first one's included. */
    uint64_t got[100];
    size_t n = drift_fires("{\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"AmountWindowingStrategy\", \"amount_ref\": 500, "
        "\"amount_cur\": 500}, \"metrics\": {\"mmd\": "
        "{\"id\": \"AlibiDetectMmdDriftMetric\", \"decision_criterion\": "
        "{\"id\": \"DynamicQuantileThresholdCriterion\", "
        "\"window_size\": 5, \"quantile\": 0.1}}}, \"warmup_policy\": "
        "{\"id\": \"DataAmountTrigger\", \"num_samples\": 700}}", 500, got);
    assert_true(n >= 1);
    assert_int_equal(got[0], 499);
    for (size_t i = 0; i < n; i++)
        if ((got[i] + 1) % 500 != 0)
            fail_msg("fire %zu at %llu, not a detection point", i,
                     (unsigned long long)got[i]);
}

static void ensemble_of_drift(void **state)
{
    /* An ensemble needs features when a sub-trigger does, and hands them
     * on: drift (fires at 499 and 3499) AND every 500 samples. */
    const uint64_t want[] = {499, 3499};
    expect_drift_fires("{\"id\": \"EnsembleTrigger\", "
        "\"subtriggers\": {"
        "\"drift\": {\"id\": \"DataDriftTrigger\", "
        "\"evaluation_interval_data_points\": 500, \"windowing_strategy\": "
        "{\"id\": \"AmountWindowingStrategy\", \"amount_ref\": 500, "
        "\"amount_cur\": 500}}, \"amount\": {\"id\": \"DataAmountTrigger\", "
        "\"num_samples\": 500}}, \"ensemble_strategy\": {\"id\": \"AtLeastN\", "
        "\"n\": 2}}", want, 2);
}

static void feature_errors(void **state)
{
    json_t *section = json_loads("{\"id\": \"DataDriftTrigger\"}", 0, NULL);
    char err[256];
    pl_trigger *t = pl_trigger_new(section, err, sizeof err);
    pl_sample s[2] = {{.key = 0}, {.key = 1}};
    float f[6] = {0};
    size_t fires[2], nf;
    assert_int_equal(pl_trigger_inform(t, s, NULL, 0, 2, fires, &nf, err,
                                       sizeof err), -1);
    assert_non_null(strstr(err, "features"));
    assert_int_equal(pl_trigger_inform(t, s, f, 2, 1, fires, &nf, err,
                                       sizeof err), 0);
    assert_int_equal(pl_trigger_inform(t, s + 1, f, 3, 1, fires, &nf, err,
                                       sizeof err), -1);
    assert_non_null(strstr(err, "3 features"));
    pl_trigger_free(t);
    json_decref(section);
}

/* A stand-in embedding command: key k's embedding is N(0,1) in 2
 * dimensions, N(3,1) in the first from key 3000 on (the stream's own
 * features are never read). Its first answer is "no model yet". */
typedef struct fake_embedder {
    size_t calls;
    uint64_t first_keys[2];   /* the first call's first reference and
                                 current key */
    size_t first_n;
    bool fail;                /* answer an error */
} fake_embedder;

static int fake_embed(void *ctx, const uint64_t *keys, size_t n, float **out,
                      size_t *dim, char *err, size_t errlen)
{
    fake_embedder *e = ctx;
    if (e->fail) {
        snprintf(err, errlen, "embedding 0: aegisd took no job");
        return -1;
    }
    if (e->calls++ == 0) {
        e->first_keys[0] = keys[0];
        e->first_keys[1] = keys[n / 2];
        e->first_n = n;
        return 1;
    }
    *dim = 2;
    *out = malloc(n * 2 * sizeof **out);
    for (size_t i = 0; i < n; i++) {
        pl_rng r;
        pl_rng_seed(&r, keys[i], 5);
        (*out)[2 * i] = (float)(normal(&r) + (keys[i] >= 3000 ? 3 : 0));
        (*out)[2 * i + 1] = (float)normal(&r);
    }
    return 0;
}

/* Where CONFIG fires, measuring on fake embeddings, fed in batches. */
static size_t embedded_fires(const char *config, fake_embedder *e,
                             size_t batch, uint64_t *keys, char *err,
                             size_t errlen)
{
    enum { N = 6000 };
    static pl_sample s[N];
    for (size_t i = 0; i < N; i++)
        s[i] = (pl_sample){.key = i, .ts = (int64_t)i};
    json_t *section = json_loads(config, 0, NULL);
    pl_trigger *t = pl_trigger_new(section, err, errlen);
    if (!t)
        fail_msg("%s", err);
    assert_int_equal(pl_trigger_set_embedder(t, fake_embed, e), 1);
    assert_false(pl_trigger_needs_features(t));
    size_t fires[N], nf, total = 0;
    for (size_t at = 0; at < N; at += batch) {
        size_t len = N - at < batch ? N - at : batch;
        if (pl_trigger_inform(t, s + at, NULL, 0, len, fires, &nf, err,
                              errlen) != 0)
            break;
        for (size_t j = 0; j < nf; j++)
            keys[total++] = at + fires[j];
    }
    pl_trigger_free(t);
    json_decref(section);
    return total;
}

static const char embedded_config[] = "{\"id\": \"EnsembleTrigger\", "
    "\"subtriggers\": {\"drift\": "
    "{\"id\": \"DataDriftTrigger\", \"evaluation_interval_data_points\": "
    "500, \"windowing_strategy\": {\"id\": \"AmountWindowingStrategy\", "
    "\"amount_ref\": 500, \"amount_cur\": 500}, \"metrics\": {\"mmd\": "
    "{\"id\": \"AlibiDetectMmdDriftMetric\", \"threshold\": 0.1}}}}, "
    "\"ensemble_strategy\": {\"id\": \"AtLeastN\", \"n\": 1}}";

static void drift_on_embeddings(void **state)
{
    /* The first detection point (499) fires with no embedding; the second
     * (999) gets "no model yet" and votes no; the drift in the embeddings
     * at 3000 fires at 3499, whatever the batching. */
    const size_t batches[] = {6000, 1, 777};
    for (size_t b = 0; b < 3; b++) {
        fake_embedder e = {0};
        uint64_t got[100];
        char err[256] = "";
        size_t n = embedded_fires(embedded_config, &e, batches[b], got, err,
                                  sizeof err);
        assert_string_equal(err, "");
        assert_int_equal(n, 2);
        assert_int_equal(got[0], 499);
        assert_int_equal(got[1], 3499);
        /* asked for the reference's keys, then the current window's */
        assert_int_equal(e.first_n, 1000);
        assert_int_equal(e.first_keys[0], 0);
        assert_int_equal(e.first_keys[1], 500);
        assert_int_equal(e.calls, 11); /* 999, 1499, ..., 5999 */
    }
}

static void embedder_errors(void **state)
{
    fake_embedder e = {.fail = true};
    uint64_t got[100];
    char err[256] = "";
    embedded_fires(embedded_config, &e, 6000, got, err, sizeof err);
    assert_string_equal(err, "embedding 0: aegisd took no job");
    json_t *amount = json_loads("{\"id\": \"DataAmountTrigger\", "
                                "\"num_samples\": 5}", 0, NULL);
    pl_trigger *t = pl_trigger_new(amount, err, sizeof err);
    assert_int_equal(pl_trigger_set_embedder(t, fake_embed, &e), 0);
    pl_trigger_free(t);
    json_decref(amount);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mmd_separates), cmocka_unit_test(ks_separates),
        cmocka_unit_test(criteria), cmocka_unit_test(fires_after_drift),
        cmocka_unit_test(default_config), cmocka_unit_test(warmup_policy_decides),
        cmocka_unit_test(first_fires_in_warmup),
        cmocka_unit_test(warmup_intervals_default),
        cmocka_unit_test(ensemble_of_drift),
        cmocka_unit_test(feature_errors),
        cmocka_unit_test(drift_on_embeddings),
        cmocka_unit_test(embedder_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
