/* sup_cost.c -- what the trainings cost, for a cost trigger's forecast
 * (trigger.h, pl_cost_fn): each trained fire's training set size and
 * the seconds aegisd recorded its attempts running. aegisd keeps those
 * records, so a restarted supervisor answers the same.
 */
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainset.h"

/* Trigger n's training set size, or -1 when it cannot be read. */
static double sc_set_size(const sup *s, uint32_t n, char *err,
                          size_t errlen) {
    char path[4400];
    pl_trainset_item *items;
    size_t count;
    uint64_t seed;
    uint32_t trigger;
    sup_file(s, "trainsets", "tset", n, path, sizeof(path));
    if (pl_trainset_read(path, &items, &count, &seed, &trigger, err,
                         errlen) != 0)
        return -1;
    free(items);
    return (double)count;
}

/* Adds trigger n's training to the costs: 0, or -1 with err. */
static int sc_add(sup *s, uint32_t n, char *err, size_t errlen) {
    double size = sc_set_size(s, n, err, errlen);
    double seconds = size < 0 ? -1 : sup_job_seconds(s, s->log.trigs[n].job);
    if (size < 0) return -1;
    if (seconds < 0) {
        snprintf(err, errlen, "trigger %u: aegisd did not say how long job "
                 "%lld ran", n, (long long)s->log.trigs[n].job);
        return -1;
    }
    double *a = realloc(s->cost_samples, (s->ncosts + 1) * sizeof(*a));
    if (a) s->cost_samples = a;
    double *b = a ? realloc(s->cost_seconds, (s->ncosts + 1) * sizeof(*b))
                  : NULL;
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cost_seconds = b;
    s->cost_samples[s->ncosts] = size;
    s->cost_seconds[s->ncosts++] = seconds;
    return 0;
}

int sup_costs(void *ctx, const double **samples, const double **seconds,
              size_t *n, char *err, size_t errlen) {
    sup *s = ctx;
    while (s->next < s->nfires)
        if (sup_settle(s, err, errlen) != 0) return -1;
    for (; s->costs_upto < s->next; s->costs_upto++) {
        const pl_trig *t = s->costs_upto < s->log.ntrigs
                               ? &s->log.trigs[s->costs_upto] : NULL;
        if (t && strcmp(t->state, "done") == 0 &&
            sc_add(s, s->costs_upto, err, errlen) != 0)
            return -1;
    }
    *samples = s->cost_samples;
    *seconds = s->cost_seconds;
    *n = s->ncosts;
    return 0;
}
