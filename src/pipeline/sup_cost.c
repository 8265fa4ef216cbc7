/* sup_cost.c -- what the trainings cost, for a cost trigger's forecast
 * (trigger.h, pl_cost_fn): each trained fire's training set size and the
 * seconds aegisd recorded its attempts running, as kept in models/N.json
 * when it ended (sup_trained.c), so a restarted supervisor answers the
 * same.
 */
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Adds trigger n's training, as models/N.json keeps it
 * (sup_trained.c), to the costs: 0, or -1 with err. */
static int sc_add(sup *s, uint32_t n, char *err, size_t errlen) {
    char path[4400];
    json_error_t jerr;
    sup_file(s, "models", "json", n, path, sizeof(path));
    json_t *doc = json_load_file(path, 0, &jerr);
    json_t *size = json_object_get(doc, "samples");
    json_t *secs = json_object_get(doc, "seconds");
    bool known = json_is_integer(size) && json_is_number(secs);
    double *a = known ? realloc(s->cost_samples,
                                (s->ncosts + 1) * sizeof(*a)) : NULL;
    if (a) s->cost_samples = a;
    double *b = a ? realloc(s->cost_seconds, (s->ncosts + 1) * sizeof(*b))
                  : NULL;
    if (b) {
        s->cost_seconds = b;
        s->cost_samples[s->ncosts] = (double)json_integer_value(size);
        s->cost_seconds[s->ncosts++] = json_number_value(secs);
    } else {
        snprintf(err, errlen, "%s: %s", path, !doc ? jerr.text : known
                 ? "out of memory" : "no samples or seconds (aegisd did not "
                                     "say how long its job ran?)");
    }
    json_decref(doc);
    return b ? 0 : -1;
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
