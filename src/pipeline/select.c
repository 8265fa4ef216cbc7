/* select.c -- a selector from its `selection_strategy` section, and the
 * building of each trigger's training set (select.h).
 *
 * Every strategy first takes its pool: the samples of this trigger and
 * the tail_triggers before it (all samples when tail_triggers is null or
 * absent). Then
 *   NewDataStrategy            the pool, cut to `limit`: with
 *                              tail_triggers 0 by limit_reset (lastX: the
 *                              newest; sampleUAR: uniformly), otherwise
 *                              uniformly, as Modyn does;
 *   FreshnessSamplingStrategy  unused_data_ratio percent never-used
 *                              samples, the rest used ones;
 *   CoresetStrategy            presampling (select_presample.c) after
 *                              warmup_triggers whole pools.
 * Random choices draw from a generator seeded by (seed, trigger), so a set
 * is rebuilt byte for byte. Strategies that prefer unused samples record
 * the keys each set takes; the others stream theirs to the file.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (plcfg_int(s, SEL_PATH, "limit", -1, -1, INT64_MAX, &sel->limit, err,
                  errlen) < 0 ||
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
    return 0;
}

static int parse_presampling(pl_selector *sel, const json_t *p, char *err,
                             size_t errlen)
{
    static const char *const keys[] = {"strategy", "ratio", "ratio_max", NULL};
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
        plcfg_int(p, path, "ratio", 100, 0, sel->ratio_max, &sel->ratio, err,
                  errlen) < 0)
        return -1;
    sel->presample = (sel_presample_kind)strategy;
    return 0;
}

/* Downsampling needs per-sample model outputs from the trainer: only its
 * "No" form is accepted. */
static int check_downsampling(const json_t *d, char *err, size_t errlen)
{
    static const char *const keys[] = {"strategy", "ratio", NULL};
    static const char *const none[] = {"No", NULL};
    const char *path = SEL_PATH ".downsampling_config";
    int strategy;
    if (!d)
        return 0;
    if (plcfg_check_keys(d, path, keys, err, errlen) < 0)
        return -1;
    if (plcfg_enum(d, path, "strategy", none, 0, &strategy, err, errlen) < 0) {
        plcfg_fail(err, errlen, path, "strategy", "not supported: only \"No\" "
                   "(downsampling needs the trainer's per-sample outputs)");
        return -1;
    }
    return 0;
}

static int parse_kind(pl_selector *sel, const json_t *s, char *err,
                      size_t errlen)
{
    switch (sel->kind) {
    case SEL_NEW_DATA:
        return 0;
    case SEL_FRESHNESS:
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
                       check_downsampling(json_object_get(s, "downsampling_config"),
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

void pl_selector_free(pl_selector *sel)
{
    if (!sel)
        return;
    free(sel->used);
    free(sel);
}

void pl_selector_note_used(pl_selector *sel, const pl_trainset_item *items,
                           size_t count)
{
    /* Out of memory here only forgets that keys were used: freshness
     * then prefers them again, which is still a valid set. */
    for (size_t i = 0; i < count; i++)
        if (sel_mark_used(sel, items[i].key) < 0)
            return;
}

/* ---- building a set --------------------------------------------------- */

static int new_data(const pl_selector *sel, uint64_t lo, uint64_t hi,
                    pl_rng *rng, sel_out *out)
{
    uint64_t n = hi - lo;
    if (sel->limit < 0 || n <= (uint64_t)sel->limit)
        return sel_choose_range(lo, hi, n, rng, out);
    bool newest = !sel->all_data && sel->tail_triggers == 0 && !sel->limit_uar;
    if (newest)
        return sel_choose_range(hi - (uint64_t)sel->limit, hi,
                                (uint64_t)sel->limit, rng, out);
    return sel_choose_range(lo, hi, (uint64_t)sel->limit, rng, out);
}

/* How many never-used (*fresh) and used (*old) samples a freshness set
 * takes from a pool with nunused and nused of them. */
static void freshness_split(const pl_selector *sel, uint64_t nunused,
                            uint64_t nused, uint64_t *fresh, uint64_t *old)
{
    uint64_t r = (uint64_t)sel->unused_ratio;
    if (sel->limit < 0) {
        *fresh = nunused;
        *old = nunused * (100 - r) / r;
    } else {
        uint64_t total = (uint64_t)sel->limit;
        uint64_t want = total * r / 100;
        *fresh = want < nunused ? want : nunused;
        *old = total - *fresh;
    }
    if (*old > nused)
        *old = nused;
}

static int freshness(const pl_selector *sel, uint64_t lo, uint64_t hi,
                     pl_rng *rng, sel_out *out)
{
    uint64_t nunused, fresh, old;
    uint64_t *idx = sel_split_used(sel, lo, hi, &nunused);
    if (!idx)
        return -1;
    freshness_split(sel, nunused, hi - lo - nunused, &fresh, &old);
    int rc = sel_choose_list(idx, nunused, fresh, rng, out);
    if (rc == 0)
        rc = sel_choose_list(idx + nunused, hi - lo - nunused, old, rng, out);
    free(idx);
    sel_out_sort(out);
    return rc;
}

static int choose(pl_selector *sel, const pl_sample *s, uint64_t lo,
                  uint64_t hi, const uint64_t *bounds, uint32_t trigger,
                  pl_rng *rng, sel_out *out)
{
    switch (sel->kind) {
    case SEL_NEW_DATA:
        return new_data(sel, lo, hi, rng, out);
    case SEL_FRESHNESS:
        return freshness(sel, lo, hi, rng, out);
    case SEL_CORESET:
        if (trigger < (uint64_t)sel->warmup_triggers) {
            sel_presample_kind keep = sel->presample;
            sel->presample = PRE_NONE;
            int rc = sel_presample(sel, s, lo, hi, bounds, trigger, rng, out);
            sel->presample = keep;
            return rc;
        }
        return sel_presample(sel, s, lo, hi, bounds, trigger, rng, out);
    }
    return 0;
}

/* The first sample index of the pool: the start of trigger
 * trigger - tail_triggers, or 0. */
static uint64_t pool_start(const pl_selector *sel, const uint64_t *bounds,
                           uint32_t trigger)
{
    if (sel->all_data || (uint64_t)sel->tail_triggers >= trigger)
        return 0;
    return bounds[trigger - (uint32_t)sel->tail_triggers - 1];
}

/* The bounds in order and within the samples, and the samples dense
 * (the last one's key is its index), as the choices rely on. */
static int check_bounds(const pl_sample *samples, const uint64_t *bounds,
                        uint32_t trigger, uint64_t end, char *err,
                        size_t errlen)
{
    if (end > 0 && samples[end - 1].key != end - 1) {
        snprintf(err, errlen, "selection: sample %llu has key %llu; keys must "
                 "be dense from 0", (unsigned long long)(end - 1),
                 (unsigned long long)samples[end - 1].key);
        return -1;
    }
    for (uint32_t i = 0; i < trigger; i++)
        if (bounds[i] > end || (i > 0 && bounds[i] < bounds[i - 1])) {
            snprintf(err, errlen, "selection: trigger %u ends at key %llu, "
                     "outside 0..%llu or before the trigger ahead of it", i,
                     (unsigned long long)bounds[i], (unsigned long long)end);
            return -1;
        }
    return 0;
}

/* Whether the strategy's choices come in key order, so they can stream to
 * the file as they are made. */
static bool choices_in_order(const pl_selector *sel, uint32_t trigger)
{
    if (sel->kind == SEL_NEW_DATA)
        return true;
    return sel->kind == SEL_CORESET &&
           (trigger < (uint64_t)sel->warmup_triggers ||
            sel->presample == PRE_RANDOM || sel->presample == PRE_NONE);
}

/* Whether the strategy reads which keys were used (and so must record
 * them as it goes). */
static bool tracks_use(const pl_selector *sel)
{
    return sel->kind == SEL_FRESHNESS ||
           (sel->kind == SEL_CORESET && sel->presample == PRE_RANDOM_NO_REPLACEMENT);
}

/* Chooses into a list, sorts it and writes it to the file. */
static int choose_listed(pl_selector *sel, const pl_sample *s, uint64_t lo,
                         uint64_t end, const uint64_t *bounds, uint32_t trigger,
                         pl_rng *rng, sel_out *file)
{
    sel_out list = {0};
    int rc = choose(sel, s, lo, end, bounds, trigger, rng, &list);
    if (rc < 0)
        snprintf(file->err, sizeof file->err, "%s",
                 list.err[0] ? list.err : "selection: out of memory");
    for (size_t i = 0; rc == 0 && i < list.count; i++)
        rc = sel_out_add(file, list.items[i].key);
    free(list.items);
    return rc;
}

int pl_selector_build(pl_selector *sel, const pl_sample *samples, uint64_t end,
                      const uint64_t *bounds, uint32_t trigger,
                      const char *path, char *err, size_t errlen)
{
    if (check_bounds(samples, bounds, trigger, end, err, errlen) < 0)
        return -1;
    pl_rng rng;
    pl_rng_seed(&rng, sel->seed, trigger);
    sel_out file = {.stream = pl_trainset_begin(path, err, errlen),
                    .mark = tracks_use(sel) ? sel : NULL};
    if (!file.stream)
        return -1;
    uint64_t lo = pool_start(sel, bounds, trigger);
    int rc = choices_in_order(sel, trigger)
                 ? choose(sel, samples, lo, end, bounds, trigger, &rng, &file)
                 : choose_listed(sel, samples, lo, end, bounds, trigger, &rng, &file);
    if (rc < 0) {
        pl_trainset_abort(file.stream);
        snprintf(err, errlen, "%s (building trigger %u's set)",
                 file.err[0] ? file.err : "selection: out of memory", trigger);
        return -1;
    }
    return pl_trainset_finish(file.stream, sel->seed, trigger, err, errlen);
}
