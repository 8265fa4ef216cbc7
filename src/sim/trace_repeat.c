/* trace_repeat.c -- finding a job_index that a trace uses twice (see
 * trace_repeat.h).
 *
 * Traces number their jobs 0..n or 1..n almost always, so the usual search
 * is one pass over a bitmap of the numbers' range: a million jobs take a
 * megabit. Numbers spread wider than that (ids from a cluster's scheduler,
 * say) are sorted instead, which costs more but only such traces pay it. */
#include "trace_repeat.h"

#include <stdint.h>
#include <stdlib.h>

/* Numbers spread over at most this many per job (plus a little) take the
 * bitmap. */
#define REPEAT_DENSE_PER_JOB 8

/* The first position from which jobs[second].index appears. */
static int first_of(const trace_job *jobs, int second) {
    int i = 0;
    while (jobs[i].index != jobs[second].index) i++;
    return i;
}

/* The bitmap search over numbers lo .. lo + span. */
static int dense_repeat(const trace_job *jobs, int count, int64_t lo,
                        uint64_t span, int *second) {
    uint64_t *seen = calloc(span / 64 + 1, sizeof(*seen));
    if (!seen) return -1;
    int found = 0;
    for (int i = 0; i < count && !found; i++) {
        uint64_t bit = (uint64_t)(jobs[i].index - lo);
        uint64_t mask = UINT64_C(1) << (bit % 64);
        found = (seen[bit / 64] & mask) != 0;
        seen[bit / 64] |= mask;
        *second = i;
    }
    free(seen);
    return found;
}

typedef struct numbered {
    int64_t index;
    int pos;
} numbered;

static int by_index_then_pos(const void *a, const void *b) {
    const numbered *x = a, *y = b;
    if (x->index != y->index) return (x->index > y->index) - (x->index < y->index);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The sorting search: equal numbers end up side by side, each run of them
 * in file order, so a run's second entry is its first repeat. */
static int sparse_repeat(const trace_job *jobs, int count, int *second) {
    numbered *all = malloc((size_t)count * sizeof(*all));
    if (!all) return -1;
    for (int i = 0; i < count; i++) all[i] = (numbered){jobs[i].index, i};
    qsort(all, (size_t)count, sizeof(*all), by_index_then_pos);
    int found = 0;
    for (int i = 1; i < count; i++)
        if (all[i].index == all[i - 1].index && (!found || all[i].pos < *second)) {
            *second = all[i].pos;
            found = 1;
        }
    free(all);
    return found;
}

int trace_find_repeat(const trace_job *jobs, int count, int *first,
                      int *second) {
    if (count < 2) return 0;
    int64_t lo = jobs[0].index, hi = jobs[0].index;
    for (int i = 1; i < count; i++) {
        if (jobs[i].index < lo) lo = jobs[i].index;
        if (jobs[i].index > hi) hi = jobs[i].index;
    }
    /* Indexes are non-negative (trace.c), so hi - lo cannot overflow. */
    uint64_t span = (uint64_t)(hi - lo);
    int found = span <= (uint64_t)count * REPEAT_DENSE_PER_JOB + 4096
                    ? dense_repeat(jobs, count, lo, span, second)
                    : sparse_repeat(jobs, count, second);
    if (found == 1) *first = first_of(jobs, *second);
    return found;
}
