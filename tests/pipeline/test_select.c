/* test_select.c -- each selection strategy's exact set on small streams:
 * tail_triggers 0, k and all; limit with lastX and sampleUAR; freshness
 * (also after a restart); the presampling strategies; determinism; and
 * bad keys named by their path.
 *
 * The stream: 20 samples, trigger 0 took keys 0-4, trigger 1 keys 5-9,
 * trigger 2 (the one built) keys 10-19. Labels: 0 below key 16, else 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "select.h"

enum { N = 20 };
static pl_sample samples[N];
static const uint64_t bounds[] = {5, 10};
static char dir[] = "/tmp/aegis-select-XXXXXX";
static char path[256];

static int setup(void **state)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/set.bin", dir);
    for (int i = 0; i < N; i++)
        samples[i] = (pl_sample){.key = (uint64_t)i, .ts = i, .label = i >= 16};
    return 0;
}

static int teardown(void **state)
{
    unlink(path);
    rmdir(dir);
    return 0;
}

static pl_selector *selector(const char *config, uint64_t seed)
{
    json_t *section = json_loads(config, 0, NULL);
    assert_non_null(section);
    char err[256] = "";
    pl_selector *sel = pl_selector_new(section, seed, err, sizeof err);
    if (!sel)
        fail_msg("%s", err);
    json_decref(section);
    return sel;
}

/* Builds TRIGGER's set (end: one past its last key) and reads its keys. */
static size_t build(pl_selector *sel, uint32_t trigger, uint64_t end,
                    uint64_t *keys)
{
    char err[256];
    if (pl_selector_build(sel, samples, end, bounds, trigger, path, err,
                          sizeof err) < 0)
        fail_msg("%s", err);
    pl_trainset_item *items;
    size_t count;
    uint64_t seed;
    uint32_t got_trigger;
    assert_int_equal(pl_trainset_read(path, &items, &count, &seed, &got_trigger,
                                      err, sizeof err), 0);
    assert_int_equal(got_trigger, trigger);
    for (size_t i = 0; i < count; i++) {
        keys[i] = items[i].key;
        assert_true(items[i].weight == 1.0f);
        if (i > 0)
            assert_true(keys[i] > keys[i - 1]);  /* key order, no repeat */
    }
    free(items);
    return count;
}

static void expect_range(const char *config, uint64_t lo, uint64_t hi)
{
    pl_selector *sel = selector(config, 1);
    uint64_t keys[N];
    size_t n = build(sel, 2, N, keys);
    assert_int_equal(n, hi - lo);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(keys[i], lo + i);
    pl_selector_free(sel);
}

static void new_data_tail(void **state)
{
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 0}", 10, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 1}", 5, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 7}", 0, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": null}", 0, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"maximum_keys_in_memory\": 1000}",
                 0, 20);
}

/* Whether the sets of CONFIG under seeds 1..20 ever hold a key outside
 * [lo, hi) and ever one inside: a uniform choice over the pool. */
static void expect_uniform(const char *config, size_t want, uint64_t lo,
                           uint64_t hi, uint64_t pool_lo)
{
    bool outside = false, inside = false;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        uint64_t keys[N];
        pl_selector *sel = selector(config, seed);
        assert_int_equal(build(sel, 2, N, keys), want);
        for (size_t i = 0; i < want; i++) {
            assert_true(keys[i] >= pool_lo);
            outside = outside || keys[i] < lo || keys[i] >= hi;
            inside = inside || (keys[i] >= lo && keys[i] < hi);
        }
        pl_selector_free(sel);
    }
    assert_true(outside && inside);
}

static void new_data_limit(void **state)
{
    /* Modyn's code (new_data_strategy.py): limit_reset applies only with
     * tail_triggers null (all data): lastX the newest, sampleUAR uniform
     * over all; with tail_triggers 0 or k the pool is sampled uniformly
     * whatever limit_reset says. */
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": null, "
                 "\"limit\": 3}", 17, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"limit\": 3, "
                 "\"limit_reset\": \"lastX\"}", 17, 20);
    expect_uniform("{\"name\": \"NewDataStrategy\", \"tail_triggers\": null, "
                   "\"limit\": 3, \"limit_reset\": \"sampleUAR\"}", 3, 10, 20, 0);
    expect_uniform("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 0, "
                   "\"limit\": 3, \"limit_reset\": \"lastX\"}", 3, 17, 20, 10);
    expect_uniform("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 1, "
                   "\"limit\": 3}", 3, 10, 20, 5);
    uint64_t a[N], b[N];
    pl_selector *sel = selector("{\"name\": \"NewDataStrategy\", "
        "\"tail_triggers\": 0, \"limit\": 3, \"limit_reset\": \"sampleUAR\"}", 5);
    assert_int_equal(build(sel, 2, N, a), 3);
    assert_int_equal(build(sel, 2, N, b), 3);
    for (int i = 0; i < 3; i++) {
        assert_true(a[i] >= 10 && a[i] < 20);
        assert_int_equal(a[i], b[i]);  /* same seed and trigger, same set */
    }
    pl_selector_free(sel);
}

static void limit_zero_is_none(void **state)
{
    /* Modyn: has_limit = limit > 0; 0 and negative limits keep all. */
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 0, "
                 "\"limit\": 0}", 10, 20);
    expect_range("{\"name\": \"NewDataStrategy\", \"tail_triggers\": 0, "
                 "\"limit\": -5}", 10, 20);
    expect_range("{\"name\": \"CoresetStrategy\", \"tail_triggers\": null, "
                 "\"limit\": 0}", 0, 20);
}

static bool contains(const uint64_t *keys, size_t n, uint64_t key)
{
    for (size_t i = 0; i < n; i++)
        if (keys[i] == key)
            return true;
    return false;
}

static void freshness(void **state)
{
    const char *config = "{\"name\": \"FreshnessSamplingStrategy\", "
                         "\"unused_data_ratio\": 80, \"tail_triggers\": null}";
    pl_selector *sel = selector(config, 3);
    uint64_t first[N], second[N], again[N];
    assert_int_equal(build(sel, 0, 5, first), 5);   /* all unused */
    /* Trigger 1: the 5 unused keys 5-9 are 80%, so one used key joins. */
    size_t n = build(sel, 1, 10, second);
    assert_int_equal(n, 6);
    for (uint64_t k = 5; k < 10; k++)
        assert_true(contains(second, n, k));
    assert_true(second[0] < 5);
    pl_selector_free(sel);
    /* After a restart the sets on disk are replayed: the same set. */
    sel = selector(config, 3);
    pl_trainset_item used[5];
    for (int i = 0; i < 5; i++)
        used[i] = (pl_trainset_item){first[i], 1.0f, 0};
    pl_selector_note_used(sel, used, 5);
    assert_int_equal(build(sel, 1, 10, again), 6);
    assert_memory_equal(again, second, 6 * sizeof again[0]);
    pl_selector_free(sel);
}

static size_t count_if(const uint64_t *keys, size_t n, uint64_t lo, uint64_t hi)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += keys[i] >= lo && keys[i] < hi;
    return c;
}

static void freshness_limit(void **state)
{
    /* A limit of 4 at 50%: trigger 0 has no used keys, so unused ones
     * fill all 4; trigger 1 takes 2 of those 4 and 2 never used. */
    pl_selector *sel = selector("{\"name\": \"FreshnessSamplingStrategy\", "
        "\"unused_data_ratio\": 50, \"limit\": 4}", 3);
    uint64_t first[N], keys[N];
    assert_int_equal(build(sel, 0, 5, first), 4);
    assert_int_equal(build(sel, 1, 10, keys), 4);
    size_t reused = 0;
    for (int i = 0; i < 4; i++)
        reused += contains(first, 4, keys[i]);
    assert_int_equal(reused, 2);
    pl_selector_free(sel);
}

/* Modyn's freshness_sampling_strategy.py keeps unused_data_ratio when
 * the used samples run short, taking fewer unused ones (the total is
 * what the scarcer kind allows), and only cuts to `limit` when that
 * total exceeds it. Trigger 0 takes keys 0-4; trigger 1 then has 15
 * unused (5-19) and 5 used: at 50% Modyn takes 5 and 5. */
static void freshness_ratio_kept(void **state)
{
    static const char *const configs[] = {
        "{\"name\": \"FreshnessSamplingStrategy\", \"unused_data_ratio\": 50}",
        "{\"name\": \"FreshnessSamplingStrategy\", \"unused_data_ratio\": 50, "
        "\"limit\": 16}"};
    for (size_t c = 0; c < 2; c++) {
        pl_selector *sel = selector(configs[c], 3);
        uint64_t first[N], keys[N];
        assert_int_equal(build(sel, 0, 5, first), 5);
        size_t n = build(sel, 1, N, keys);
        assert_int_equal(n, 10);
        assert_int_equal(count_if(keys, n, 0, 5), 5);
        pl_selector_free(sel);
    }
    /* 20% unused: 5 used allow a set of 6 (int(5 / 0.8)), 1 unused. */
    pl_selector *sel = selector("{\"name\": \"FreshnessSamplingStrategy\", "
        "\"unused_data_ratio\": 20}", 3);
    uint64_t first[N], keys[N];
    assert_int_equal(build(sel, 0, 5, first), 5);
    assert_int_equal(build(sel, 1, N, keys), 6);
    assert_int_equal(count_if(keys, 6, 0, 5), 5);
    pl_selector_free(sel);
}

/* Modyn's NoPresamplingStrategy (also what a CoresetStrategy's warm-up
 * triggers use) cuts to `limit` with ORDER BY timestamp LIMIT: the
 * oldest samples of the pool, not a random choice. */
static void presample_no_limit_oldest(void **state)
{
    expect_range("{\"name\": \"CoresetStrategy\", \"tail_triggers\": null, "
                 "\"limit\": 3}", 0, 3);
    expect_range("{\"name\": \"CoresetStrategy\", \"tail_triggers\": 1, "
                 "\"limit\": 3, \"presampling_config\": "
                 "{\"strategy\": \"No\", \"ratio\": 100}}", 5, 8);
    expect_range("{\"name\": \"CoresetStrategy\", \"tail_triggers\": 0, "
                 "\"limit\": 4, \"warmup_triggers\": 3, \"presampling_config\": "
                 "{\"strategy\": \"Random\", \"ratio\": 50}}", 10, 14);
}

static void presample_random(void **state)
{
    pl_selector *sel = selector("{\"name\": \"CoresetStrategy\", "
        "\"tail_triggers\": null, \"presampling_config\": "
        "{\"strategy\": \"Random\", \"ratio\": 50}}", 9);
    uint64_t a[N], b[N];
    assert_int_equal(build(sel, 2, N, a), 10);
    assert_int_equal(build(sel, 2, N, b), 10);
    assert_memory_equal(a, b, 10 * sizeof a[0]);
    pl_selector_free(sel);
}

static void presample_no_replacement(void **state)
{
    pl_selector *sel = selector("{\"name\": \"CoresetStrategy\", "
        "\"tail_triggers\": null, \"presampling_config\": "
        "{\"strategy\": \"RandomNoReplacement\", \"ratio\": 50}}", 9);
    uint64_t seen[N], keys[N];
    size_t nseen = build(sel, 0, 5, seen);     /* 2 of keys 0-4 */
    assert_int_equal(nseen, 2);
    size_t n = build(sel, 1, 10, keys);        /* 5 of the 8 unused */
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_false(contains(seen, nseen, keys[i]));
    memcpy(seen + nseen, keys, n * sizeof keys[0]);
    nseen += n;
    n = build(sel, 2, N, keys);                /* 10 of the 13 unused */
    assert_int_equal(n, 10);
    for (size_t i = 0; i < n; i++)
        assert_false(contains(seen, nseen, keys[i]));
    pl_selector_free(sel);
}


static void presample_balanced(void **state)
{
    /* Labels: 16 of label 0, 4 of label 1; half of 20 is 10: label 1
     * gives all 4 it has, label 0 the other 6. */
    pl_selector *sel = selector("{\"name\": \"CoresetStrategy\", "
        "\"presampling_config\": {\"strategy\": \"LabelBalanced\", \"ratio\": 50}}", 2);
    uint64_t keys[N];
    assert_int_equal(build(sel, 2, N, keys), 10);
    assert_int_equal(count_if(keys, 10, 16, 20), 4);
    pl_selector_free(sel);
    /* Triggers of 5, 5 and 10 samples; 30% of 20 is 6: two from each. */
    sel = selector("{\"name\": \"CoresetStrategy\", \"presampling_config\": "
                   "{\"strategy\": \"TriggerBalanced\", \"ratio\": 30}}", 2);
    assert_int_equal(build(sel, 2, N, keys), 6);
    assert_int_equal(count_if(keys, 6, 0, 5), 2);
    assert_int_equal(count_if(keys, 6, 5, 10), 2);
    assert_int_equal(count_if(keys, 6, 10, 20), 2);
    pl_selector_free(sel);
    /* force_column_balancing: label 1 could not give its share (4 of 5),
     * so label 0 gives 4 too, as Modyn's; false is the default's 10. */
    sel = selector("{\"name\": \"CoresetStrategy\", \"presampling_config\": "
                   "{\"strategy\": \"LabelBalanced\", \"ratio\": 50, "
                   "\"force_column_balancing\": true}}", 2);
    assert_int_equal(build(sel, 2, N, keys), 8);
    assert_int_equal(count_if(keys, 8, 16, 20), 4);
    pl_selector_free(sel);
    sel = selector("{\"name\": \"CoresetStrategy\", \"presampling_config\": "
                   "{\"strategy\": \"LabelBalanced\", \"ratio\": 50, "
                   "\"force_column_balancing\": false}}", 2);
    assert_int_equal(build(sel, 2, N, keys), 10);
    pl_selector_free(sel);
    /* warmup_triggers: trigger 0 trains on its whole pool. */
    sel = selector("{\"name\": \"CoresetStrategy\", \"warmup_triggers\": 1, "
                   "\"presampling_config\": {\"strategy\": \"Random\", "
                   "\"ratio\": 10}}", 2);
    assert_int_equal(build(sel, 0, 5, keys), 5);
    assert_int_equal(build(sel, 1, 10, keys), 1);
    pl_selector_free(sel);
}

static void expect_error(const char *config, const char *message)
{
    json_t *section = json_loads(config, 0, NULL);
    assert_non_null(section);
    char err[256] = "";
    assert_null(pl_selector_new(section, 1, err, sizeof err));
    if (!strstr(err, message))
        fail_msg("error '%s' lacks '%s'", err, message);
    json_decref(section);
}

static void bad_config(void **state)
{
    expect_error("{\"name\": \"NewDataStrategy\", \"tail_trigger\": 0}",
                 "selection_strategy.tail_trigger: unknown key");
    expect_error("{\"tail_triggers\": 0}", "selection_strategy.name: missing");
    expect_error("{\"name\": \"NewDataStrategy\", \"limit_reset\": \"first\"}",
                 "selection_strategy.limit_reset: 'first' is not one of lastX, sampleUAR");
    expect_error("{\"name\": \"FreshnessSamplingStrategy\", \"unused_data_ratio\": 0}",
                 "selection_strategy.unused_data_ratio: must be between 1 and 99");
    /* Modyn asserts tail_triggers is None for freshness (0 resets the
     * used samples away; k is "not supported"). */
    expect_error("{\"name\": \"FreshnessSamplingStrategy\", \"unused_data_ratio\": 50, "
                 "\"tail_triggers\": 0}",
                 "selection_strategy.tail_triggers: must be null");
    expect_error("{\"name\": \"FreshnessSamplingStrategy\", \"unused_data_ratio\": 50, "
                 "\"tail_triggers\": 2}",
                 "selection_strategy.tail_triggers: must be null");
    /* Modyn's NoPresamplingStrategy refuses a ratio other than 100. */
    expect_error("{\"name\": \"CoresetStrategy\", \"presampling_config\": "
                 "{\"strategy\": \"No\", \"ratio\": 50}}",
                 "selection_strategy.presampling_config.ratio: must be 100");
    expect_error("{\"name\": \"CoresetStrategy\", \"presampling_config\": "
                 "{\"strategy\": \"Random\", \"ratio\": 150}}",
                 "selection_strategy.presampling_config.ratio: must be between 1 and 100");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"Craig\", \"ratio\": 10}}",
                 "selection_strategy.downsampling_config.strategy: Craig is not supported");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"Loss\"}}",
                 "selection_strategy.downsampling_config.ratio: missing");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"Uncertainty\", \"ratio\": 50}}",
                 "downsampling_config.score_metric: missing");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"RHOLoss\", \"ratio\": 50, "
                 "\"sample_then_batch\": true}}",
                 "downsampling_config.sample_then_batch: RHOLoss selects");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"RHOLoss\", \"ratio\": 50, "
                 "\"holdout_set_ratio\": 150, "
                 "\"il_training_config\": {\"command\": \"x\"}}}",
                 "downsampling_config.holdout_set_ratio: must be between 1 "
                 "and 99");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"RHOLoss\", \"ratio\": 50, "
                 "\"holdout_set_ratio\": 0}}",
                 "downsampling_config.holdout_set_ratio: must be between 1");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"downsampling_list\": [{\"strategy\": \"RS2\", \"ratio\": 50, "
                 "\"with_replacement\": true}, "
                 "{\"strategy\": \"Loss\", \"ratio\": 20, \"period\": -1}], "
                 "\"downsampling_thresholds\": [3]}}",
                 "downsampling_config.downsampling_list[1].period: must be between 0");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"strategy\": \"RS2\", \"ratio\": 50}}",
                 "downsampling_config.with_replacement: RS2 needs");
    expect_error("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                 "{\"downsampling_list\": [{\"strategy\": \"Loss\", \"ratio\": 50}], "
                 "\"downsampling_thresholds\": [3]}}",
                 "downsampling_thresholds: must hold one threshold fewer");
    expect_error("{\"name\": \"CoresetStrategy\", \"limit_reset\": \"lastX\"}",
                 "selection_strategy.limit_reset: unknown key");

    pl_selector *sel = selector("{\"name\": \"NewDataStrategy\"}", 1);
    const uint64_t backwards[] = {10, 5};
    char err[256] = "";
    assert_int_equal(pl_selector_build(sel, samples, N, backwards, 2, path, err,
                                       sizeof err), -1);
    assert_non_null(strstr(err, "trigger 1 ends at key 5"));
    pl_selector_free(sel);
}

/* Which downsampling config each trigger's training gets: none in the
 * 2 warm-up triggers; then, counting after them, "No" (none) for one,
 * RS2 from the first and Loss from the fourth: triggers 3 and 6. */
static void downsampling_by_trigger(void **state)
{
    (void)state;
    pl_selector *sel = selector(
        "{\"name\": \"CoresetStrategy\", \"warmup_triggers\": 2, "
        "\"downsampling_config\": {\"downsampling_list\": ["
        "{\"strategy\": \"No\"}, {\"strategy\": \"RS2\", \"ratio\": 50, "
        "\"with_replacement\": false}, "
        "{\"strategy\": \"Loss\", \"ratio\": 25}], "
        "\"downsampling_thresholds\": [1, 4]}}", 1);
    const char *want[] = {NULL, NULL, NULL, "RS2", "RS2", "RS2", "Loss"};
    for (uint32_t t = 0; t < 7; t++) {
        const json_t *d = pl_selector_downsampling(sel, t);
        const char *got = json_string_value(json_object_get(d, "strategy"));
        if (!want[t]) assert_null(d);
        else assert_string_equal(got, want[t]);
    }
    pl_selector_free(sel);
    sel = selector("{\"name\": \"CoresetStrategy\", \"downsampling_config\": "
                   "{\"strategy\": \"No\"}}", 1);
    assert_null(pl_selector_downsampling(sel, 0));
    pl_selector_free(sel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_data_tail), cmocka_unit_test(new_data_limit),
        cmocka_unit_test(limit_zero_is_none),
        cmocka_unit_test(freshness), cmocka_unit_test(freshness_limit),
        cmocka_unit_test(freshness_ratio_kept),
        cmocka_unit_test(presample_no_limit_oldest),
        cmocka_unit_test(presample_random),
        cmocka_unit_test(presample_no_replacement),
        cmocka_unit_test(presample_balanced), cmocka_unit_test(bad_config),
        cmocka_unit_test(downsampling_by_trigger),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
