/* metrics_counts.c -- the counters behind aegisd's metrics endpoint: see
 * metrics_counts.h. Users are few (the accounts of one server), so a
 * linear search finds theirs.
 */
#include "metrics_counts.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const metrics_end_states[METRICS_END_STATES] = {
    "done", "failed", "cancelled", "timeout"};

/* Scheduling passes take microseconds with a short queue, milliseconds
 * with tens of thousands of jobs: buckets from 10 us to 1 s. */
static const double metrics_pass_bounds[] = {1e-5, 2.5e-5, 5e-5, 1e-4,
                                             2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                             5e-3, 1e-2, 0.1, 1};

void metrics_counts_init(metrics_counts *m) {
    *m = (metrics_counts){0};
    mtext_hist_init(&m->pass_s, metrics_pass_bounds,
                    (int)(sizeof(metrics_pass_bounds) /
                          sizeof(*metrics_pass_bounds)));
}

void metrics_counts_free(metrics_counts *m) {
    free(m->users);
    m->users = NULL;
    m->nusers = m->capusers = 0;
}

metrics_user *metrics_user_of(metrics_counts *m, const char *user) {
    for (size_t i = 0; i < m->nusers; i++)
        if (strcmp(m->users[i].user, user) == 0) return &m->users[i];
    if (m->nusers == m->capusers) {
        size_t cap = m->capusers ? m->capusers * 2 : 8;
        metrics_user *grown = realloc(m->users, cap * sizeof(*grown));
        if (!grown) return NULL;
        m->users = grown;
        m->capusers = cap;
    }
    metrics_user *u = &m->users[m->nusers++];
    *u = (metrics_user){0};
    snprintf(u->user, sizeof(u->user), "%s", user);
    return u;
}

void metrics_count_attempt(metrics_counts *m, const char *user, int ngpus,
                           double seconds) {
    metrics_user *u = metrics_user_of(m, user);
    if (u && seconds > 0) u->gpu_s += seconds * ngpus;
}

void metrics_count_finished(metrics_counts *m, const char *user,
                            const char *state, double energy_j) {
    metrics_user *u = metrics_user_of(m, user);
    if (!u) return;
    if (energy_j > 0) u->energy_j += energy_j;
    for (int i = 0; i < METRICS_END_STATES; i++)
        if (strcmp(state, metrics_end_states[i]) == 0) u->finished[i]++;
}
