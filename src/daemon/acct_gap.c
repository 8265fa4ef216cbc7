/* acct_gap.c -- the energy of an outage of aegisd, split among the jobs
 * that ran on the GPU during it: see acct_gap.h for the rule.
 */
#include "acct_gap.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

/* The part of [t0, t1] job j ran. */
static double acct_gap_overlap(const acct_gap_gpu *g, const acct_gap_job *j) {
    double from = j->start > g->t0 ? j->start : g->t0;
    double to = j->end >= 0 && j->end < g->t1 ? j->end : g->t1;
    return to > from ? to - from : 0;
}

typedef struct acct_gap_span {
    double from, to;
} acct_gap_span;

static int acct_gap_span_cmp(const void *a, const void *b) {
    const acct_gap_span *x = a, *y = b;
    return (x->from > y->from) - (x->from < y->from);
}

/* Whether some job ran at every moment of [t0, t1] (the union of their
 * overlaps is all of it); false when out of memory, which then charges
 * no idle time to anyone. */
static bool acct_gap_covered(const acct_gap_gpu *g, const acct_gap_job *jobs,
                             int n) {
    acct_gap_span *s = malloc((size_t)(n > 0 ? n : 1) * sizeof(*s));
    if (!s) return false;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double o = acct_gap_overlap(g, &jobs[i]);
        if (o <= 0) continue;
        double from = jobs[i].start > g->t0 ? jobs[i].start : g->t0;
        s[k++] = (acct_gap_span){from, from + o};
    }
    qsort(s, (size_t)k, sizeof(*s), acct_gap_span_cmp);
    /* a gap under a millisecond is the clocks', not an idle GPU */
    double reached = g->t0;
    for (int i = 0; i < k && s[i].from <= reached + 1e-3; i++)
        if (s[i].to > reached) reached = s[i].to;
    free(s);
    return k > 0 && reached >= g->t1 - 1e-3;
}

double acct_gap_split(const acct_gap_gpu *g, acct_gap_job *jobs, int n) {
    double span = g->t1 - g->t0, known = 0;
    int ran = 0, unknown = 0;
    for (int i = 0; i < n; i++) {
        jobs[i].charge = 0;
        if (acct_gap_overlap(g, &jobs[i]) <= 0) continue;
        ran++;
        if (jobs[i].share >= 0) known += jobs[i].share;
        else unknown++;
    }
    if (ran == 0 || span <= 0 || g->joules <= 0) return 0;
    /* a job with no saved share gets an even one; the shares of the jobs
     * that ran are then renormalized to 1 */
    double even = 1.0 / ran, total_share = known + unknown * even;
    double power = g->power_w >= 0 ? g->power_w : g->joules / span;
    double estimate = 0;
    for (int i = 0; i < n; i++) {
        double o = acct_gap_overlap(g, &jobs[i]);
        if (o <= 0) continue;
        double s = jobs[i].share >= 0 ? jobs[i].share : even;
        s = total_share > 0 ? s / total_share : even;
        jobs[i].charge = s * power * o;
        estimate += jobs[i].charge;
    }
    bool covered = acct_gap_covered(g, jobs, n);
    if (estimate <= 0) { /* a power of 0 at t0: by overlap alone */
        if (!covered) return 0; /* all charges are 0 */
        for (int i = 0; i < n; i++) jobs[i].charge = acct_gap_overlap(g, &jobs[i]);
        for (int i = 0; i < n; i++) estimate += jobs[i].charge;
    }
    /* covered: the whole rise is the jobs'; else their estimates, never
     * more in all than the rise */
    double scale = covered || estimate > g->joules ? g->joules / estimate : 1;
    double charged = 0;
    for (int i = 0; i < n; i++) {
        jobs[i].charge *= scale;
        charged += jobs[i].charge;
    }
    assert(charged <= g->joules * (1 + 1e-9));
    return charged;
}
