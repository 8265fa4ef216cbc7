/* select_config.c -- a selector from its `selection_strategy` section,
 * read with Modyn's keys (docs/pipelines.md, Selection); errors name the
 * key's path. */
#include <stdlib.h>

#include "pl_config.h"
#include "select_impl.h"

#define SEL_PATH "selection_strategy"

static const char *const strategy_names[] = {
    "NewDataStrategy", "FreshnessSamplingStrategy", "CoresetStrategy", NULL};
/* Modyn's keys every strategy takes; maximum_keys_in_memory and
 * storage_backend bound Modyn's own memory and database, and are
 * accepted and ignored (aegis streams the set to a file). */
#define COMMON_KEYS "name", "maximum_keys_in_memory", "limit", \
    "tail_triggers", "storage_backend", "uses_weights"
static const char *const strategy_keys[][10] = {
    {COMMON_KEYS, "limit_reset", NULL},
    {COMMON_KEYS, "unused_data_ratio", NULL},
    {COMMON_KEYS, "presampling_config", "warmup_triggers",
     "downsampling_config", NULL},
};
static const char *const presample_names[] = {
    "Random", "RandomNoReplacement", "LabelBalanced", "TriggerBalanced",
    "No", NULL};

static int parse_common(pl_selector *sel, const json_t *s, char *err,
                        size_t errlen)
{
    static const char *const resets[] = {"lastX", "sampleUAR", NULL};
    static const char *const backends[] = {"database", "local", NULL};
    int reset, backend;
    bool present, weights;
    int64_t max_keys;
    if (plcfg_int(s, SEL_PATH, "limit", -1, INT64_MIN, INT64_MAX, &sel->limit,
                  err, errlen) < 0 ||
        plcfg_opt_int(s, SEL_PATH, "tail_triggers", 0, UINT32_MAX,
                      &sel->tail_triggers, &present, err, errlen) < 0 ||
        plcfg_enum(s, SEL_PATH, "limit_reset", resets, 0, &reset, err,
                   errlen) < 0 ||
        plcfg_enum(s, SEL_PATH, "storage_backend", backends, 0, &backend, err,
                   errlen) < 0 ||
        plcfg_int(s, SEL_PATH, "maximum_keys_in_memory", 1, 1, INT64_MAX,
                  &max_keys, err, errlen) < 0 ||
        plcfg_bool(s, SEL_PATH, "uses_weights", false, &weights, err,
                   errlen) < 0)
        return -1;
    sel->all_data = !present;
    sel->limit_uar = reset == 1;
    if (sel->limit <= 0)  /* Modyn's has_limit is limit > 0 */
        sel->limit = -1;
    return 0;
}

static int parse_presampling(pl_selector *sel, const json_t *p, char *err,
                             size_t errlen)
{
    static const char *const keys[] = {"strategy", "ratio", "ratio_max",
                                       "force_column_balancing", NULL};
    const char *path = SEL_PATH ".presampling_config";
    int strategy;
    sel->presample = PRE_NONE;
    sel->ratio = sel->ratio_max = 100;
    if (!p)
        return 0;
    if (plcfg_check_keys(p, path, keys, err, errlen) < 0)
        return -1;
    if (!json_object_get(p, "strategy") || !json_object_get(p, "ratio"))
        return plcfg_fail(err, errlen, path,
                          json_object_get(p, "strategy") ? "ratio" : "strategy",
                          "missing");
    if (plcfg_enum(p, path, "strategy", presample_names, 0, &strategy, err,
                   errlen) < 0 ||
        plcfg_int(p, path, "ratio_max", 100, 1, 1000000, &sel->ratio_max, err,
                  errlen) < 0 ||
        plcfg_int(p, path, "ratio", 100, 1, sel->ratio_max, &sel->ratio, err,
                  errlen) < 0 ||
        plcfg_bool(p, path, "force_column_balancing", false,
                   &sel->force_balance, err, errlen) < 0)
        return -1;
    /* Modyn's NoPresamplingStrategy raises on any other ratio; here it
     * would be ignored silently (found by an audit). */
    if (strategy == PRE_NONE && sel->ratio != 100)
        return plcfg_fail(err, errlen, path, "ratio",
                          "must be 100 with strategy No (it keeps the whole "
                          "pool), as Modyn requires");
    sel->presample = (sel_presample_kind)strategy;
    return 0;
}

static int parse_kind(pl_selector *sel, const json_t *s, char *err,
                      size_t errlen)
{
    switch (sel->kind) {
    case SEL_NEW_DATA:
        return 0;
    case SEL_FRESHNESS:
        /* Modyn's strategy asserts tail_triggers is None (0 would reset
         * the used samples away, k it does not support): a pool of
         * triggers here would silently mix other samples than Modyn's. */
        if (!sel->all_data)
            return plcfg_fail(err, errlen, SEL_PATH, "tail_triggers",
                              "must be null (or left out) for "
                              "FreshnessSamplingStrategy, as in Modyn: it "
                              "draws from all samples, used and unused");
        if (!json_object_get(s, "unused_data_ratio"))
            return plcfg_fail(err, errlen, SEL_PATH, "unused_data_ratio",
                              "missing (a percent, 1 to 99)");
        return plcfg_int(s, SEL_PATH, "unused_data_ratio", 50, 1, 99,
                         &sel->unused_ratio, err, errlen);
    case SEL_CORESET:
        return plcfg_int(s, SEL_PATH, "warmup_triggers", 0, 0, UINT32_MAX,
                         &sel->warmup_triggers, err, errlen) < 0 ||
                       parse_presampling(sel, json_object_get(s, "presampling_config"),
                                         err, errlen) < 0 ||
                       sel_parse_downsampling(sel, json_object_get(s, "downsampling_config"),
                                              err, errlen) < 0
                   ? -1 : 0;
    }
    return 0;
}

static int parse_selector(pl_selector *sel, const json_t *s, char *err,
                          size_t errlen)
{
    int kind;
    if (!json_is_object(s))
        return plcfg_fail(err, errlen, SEL_PATH, NULL, "must be a mapping with a name");
    if (!json_object_get(s, "name"))
        return plcfg_fail(err, errlen, SEL_PATH, "name", "missing");
    if (plcfg_enum(s, SEL_PATH, "name", strategy_names, 0, &kind, err, errlen) < 0)
        return -1;
    sel->kind = (sel_kind)kind;
    if (plcfg_check_keys(s, SEL_PATH, strategy_keys[kind], err, errlen) < 0 ||
        parse_common(sel, s, err, errlen) < 0)
        return -1;
    if (sel->kind != SEL_NEW_DATA && json_object_get(s, "limit_reset"))
        return plcfg_fail(err, errlen, SEL_PATH, "limit_reset",
                          "only for NewDataStrategy");
    return parse_kind(sel, s, err, errlen);
}

pl_selector *pl_selector_new(const json_t *section, uint64_t seed, char *err,
                             size_t errlen)
{
    pl_selector *sel = calloc(1, sizeof *sel);
    if (!sel) {
        plcfg_fail(err, errlen, SEL_PATH, NULL, "out of memory");
        return NULL;
    }
    sel->seed = seed;
    if (parse_selector(sel, section, err, errlen) < 0) {
        pl_selector_free(sel);
        return NULL;
    }
    return sel;
}

