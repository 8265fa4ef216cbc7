/* select_presample.c -- CoresetStrategy's presampling (Modyn's
 * presampling_config): keep ratio/ratio_max of the pool (at most `limit`)
 *   Random               uniformly;
 *   RandomNoReplacement  preferring samples no earlier set trained on, so
 *                        the stream is used up before any sample repeats;
 *   LabelBalanced        as evenly over labels as their sizes allow;
 *   TriggerBalanced      as evenly over the triggers the samples came in;
 *   No                   all of it (the oldest `limit` with a limit).
 * "As evenly as sizes allow": a group smaller than its share gives all it
 * has, and the rest is spread over the larger groups; with
 * force_column_balancing every group then gives only as many as the
 * smallest, so that all are the same size (Modyn's balanced presampling
 * does this when its smallest group is below the fair share).
 */
#include <stdlib.h>

#include "select_impl.h"

/* A pool sample and the group (label or trigger) it is balanced in. */
typedef struct grouped {
    int64_t group;
    uint64_t idx;
} grouped;

static int cmp_grouped(const void *a, const void *b)
{
    const grouped *x = a, *y = b;
    if (x->group != y->group)
        return (x->group > y->group) - (x->group < y->group);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* How many samples to keep from the n of the pool. */
static uint64_t target_size(const pl_selector *sel, uint64_t n)
{
    uint64_t t = sel->presample == PRE_NONE
                     ? n
                     : (uint64_t)((unsigned __int128)n * (uint64_t)sel->ratio /
                                  (uint64_t)sel->ratio_max);
    if (sel->limit >= 0 && t > (uint64_t)sel->limit)
        t = (uint64_t)sel->limit;
    return t;
}

/* The trigger that sample index i arrived in. */
static int64_t trigger_of(const uint64_t *bounds, uint32_t trigger, uint64_t i)
{
    uint32_t t = 0;
    while (t < trigger && i >= bounds[t])
        t++;
    return t;
}

static grouped *group_pool(const pl_selector *sel, const pl_sample *s,
                           uint64_t lo, uint64_t hi, const uint64_t *bounds,
                           uint32_t trigger)
{
    grouped *g = malloc((hi - lo ? hi - lo : 1) * sizeof *g);
    if (!g)
        return NULL;
    for (uint64_t i = lo; i < hi; i++)
        g[i - lo] = (grouped){sel->presample == PRE_LABEL_BALANCED
                                  ? s[i].label : trigger_of(bounds, trigger, i),
                              i};
    qsort(g, hi - lo, sizeof *g, cmp_grouped);
    return g;
}

/* Shares of target over groups of the given sizes: smallest groups first,
 * each gets an equal part of what is left or all it has. */
static int balance(const uint64_t *sizes, size_t ngroups, uint64_t target,
                   uint64_t *quota)
{
    size_t *order = malloc(ngroups * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < ngroups; i++)
        order[i] = i;
    /* Insertion sort by size: groups are labels or triggers, few. */
    for (size_t i = 1; i < ngroups; i++)
        for (size_t j = i; j > 0 && sizes[order[j - 1]] > sizes[order[j]]; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    uint64_t left = target;
    for (size_t i = 0; i < ngroups; i++) {
        uint64_t share = left / (ngroups - i);
        uint64_t size = sizes[order[i]];
        quota[order[i]] = size < share ? size : share;
        left -= quota[order[i]];
    }
    free(order);
    return 0;
}

/* force_column_balancing: when the smallest group could not give its
 * share (some quota is above its size), every quota is cut to it. */
static void force_equal(const uint64_t *sizes, size_t ngroups,
                        uint64_t *quota)
{
    uint64_t smallest = UINT64_MAX, largest = 0;
    for (size_t i = 0; i < ngroups; i++) {
        if (sizes[i] < smallest)
            smallest = sizes[i];
        if (quota[i] > largest)
            largest = quota[i];
    }
    if (ngroups == 0 || smallest >= largest)
        return;
    for (size_t i = 0; i < ngroups; i++)
        quota[i] = smallest;
}

/* The runs of equal group in g (sorted) as start offsets and sizes. */
static size_t group_runs(const grouped *g, uint64_t n, uint64_t *start,
                         uint64_t *size)
{
    size_t runs = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i == 0 || g[i].group != g[i - 1].group) {
            start[runs] = i;
            size[runs++] = 0;
        }
        size[runs - 1]++;
    }
    return runs;
}

static int choose_balanced(const grouped *g, uint64_t n, uint64_t target,
                           bool force, pl_rng *rng, sel_out *out)
{
    uint64_t *start = malloc(3 * (n ? n : 1) * sizeof *start);
    uint64_t *idx = malloc((n ? n : 1) * sizeof *idx);
    int rc = -1;
    if (!start || !idx)
        goto out;
    uint64_t *size = start + n, *quota = size + n;
    size_t runs = group_runs(g, n, start, size);
    if (balance(size, runs, target, quota) < 0)
        goto out;
    if (force)
        force_equal(size, runs, quota);
    for (uint64_t i = 0; i < n; i++)
        idx[i] = g[i].idx;
    rc = 0;
    for (size_t r = 0; r < runs && rc == 0; r++)
        rc = sel_choose_list(idx + start[r], size[r], quota[r], rng, out);
    sel_out_sort(out);
out:
    free(start);
    free(idx);
    return rc;
}

static int choose_unused_first(const pl_selector *sel, uint64_t lo,
                               uint64_t hi, uint64_t target, pl_rng *rng,
                               sel_out *out)
{
    uint64_t nunused;
    uint64_t *idx = sel_split_used(sel, lo, hi, &nunused);
    if (!idx)
        return -1;
    uint64_t fresh = target < nunused ? target : nunused;
    int rc = sel_choose_list(idx, nunused, fresh, rng, out);
    if (rc == 0)
        rc = sel_choose_list(idx + nunused, hi - lo - nunused,
                             target - fresh, rng, out);
    free(idx);
    sel_out_sort(out);
    return rc;
}

int sel_presample(pl_selector *sel, const pl_sample *s, uint64_t lo,
                  uint64_t hi, const uint64_t *bounds, uint32_t trigger,
                  pl_rng *rng, sel_out *out)
{
    uint64_t target = target_size(sel, hi - lo);
    switch (sel->presample) {
    case PRE_NONE:
        /* Modyn's NoPresamplingStrategy (a warm-up trigger's too) cuts to
         * `limit` by ORDER BY timestamp LIMIT: the pool's oldest samples,
         * here its first keys, not a random few (found by an audit). */
        return sel_choose_range(lo, lo + target, target, rng, out);
    case PRE_RANDOM:
        return sel_choose_range(lo, hi, target, rng, out);
    case PRE_RANDOM_NO_REPLACEMENT:
        return choose_unused_first(sel, lo, hi, target, rng, out);
    case PRE_LABEL_BALANCED:
    case PRE_TRIGGER_BALANCED:
        break;
    }
    grouped *g = group_pool(sel, s, lo, hi, bounds, trigger);
    if (!g)
        return -1;
    int rc = choose_balanced(g, hi - lo, target, sel->force_balance, rng, out);
    free(g);
    return rc;
}
