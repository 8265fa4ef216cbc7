/* select.c -- building each trigger's training set (select.h); the
 * selector's settings come from select_config.c.
 *
 * Every strategy first takes its pool: the samples of this trigger and
 * the tail_triggers before it (all samples when tail_triggers is null or
 * absent). Then
 *   NewDataStrategy            the pool, cut to `limit`: with
 *                              tail_triggers null by limit_reset (lastX:
 *                              the newest; sampleUAR: uniformly), otherwise
 *                              uniformly, as Modyn's code does (its
 *                              schema's text says the opposite);
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

#include "select_impl.h"

void pl_selector_free(pl_selector *sel)
{
    if (!sel)
        return;
    free(sel->used);
    json_decref(sel->downsampling);
    json_decref(sel->ds_thresholds);
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
    /* Modyn's code: limit_reset only where the pool is all the data;
     * a pool of triggers (tail_triggers 0 or k) is sampled uniformly. */
    bool newest = sel->all_data && !sel->limit_uar;
    if (newest)
        return sel_choose_range(hi - (uint64_t)sel->limit, hi,
                                (uint64_t)sel->limit, rng, out);
    return sel_choose_range(lo, hi, (uint64_t)sel->limit, rng, out);
}

/* The largest set whose share of n samples is pct percent, as Modyn
 * computes it: int(n / (pct / 100.0)), in doubles, so the rounding is
 * Python's (7 / 0.07 is 99, not 100). */
static uint64_t freshness_room(uint64_t n, int64_t pct)
{
    return (uint64_t)((double)n / ((double)pct / 100.0));
}

/* How many never-used (*fresh) and used (*old) samples a freshness set
 * takes from a pool with nunused and nused of them, as Modyn's
 * freshness_sampling_strategy.py: with no used sample yet (its first
 * trigger) every unused one, up to `limit`; else the largest set in the
 * ratio that the scarcer kind allows (so fewer unused samples when used
 * ones run short), cut to `limit` in the ratio only when it is larger.
 * (Found by an audit against Modyn: aegis took every unused sample and
 * filled `limit` past the ratio.) */
static void freshness_split(const pl_selector *sel, uint64_t nunused,
                            uint64_t nused, uint64_t *fresh, uint64_t *old)
{
    int64_t r = sel->unused_ratio;
    uint64_t limit = sel->limit < 0 ? UINT64_MAX : (uint64_t)sel->limit;
    if (nused == 0) {
        *fresh = nunused < limit ? nunused : limit;
        *old = 0;
        return;
    }
    uint64_t by_unused = freshness_room(nunused, r);
    uint64_t by_used = freshness_room(nused, 100 - r);
    uint64_t total = by_unused <= by_used ? by_unused : by_used;
    *old = by_unused <= by_used ? total - nunused : nused;
    if (total > limit) {
        total = limit;
        *old = limit - (uint64_t)((double)limit * ((double)r / 100.0));
    }
    /* Modyn asserts each kind lasts; clamp where rounding says not. */
    *old = *old < nused ? *old : nused;
    *fresh = total - *old < nunused ? total - *old : nunused;
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
