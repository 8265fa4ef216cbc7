/* metrics_counts.h -- what aegisd counts for its metrics endpoint as
 * things happen, since it started: placements, OOM crashes, recoveries,
 * the time of each scheduling pass, and per user the GPU-seconds and
 * energy of their attempts and their jobs finished by state. Everything
 * else on /metrics is read from the daemon's state when scraped
 * (metrics.c). Counting is a few additions per event; nothing here does
 * I/O.
 */
#ifndef AEGIS_METRICS_COUNTS_H
#define AEGIS_METRICS_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "metrics_text.h"

/* The states a job finishes in, as the store names them. */
#define METRICS_END_STATES 4
extern const char *const metrics_end_states[METRICS_END_STATES];

typedef struct metrics_user {
    char user[64];
    double gpu_s;           /* GPU-seconds of its ended attempts */
    double energy_j;        /* energy of its finished jobs */
    uint64_t finished[METRICS_END_STATES];
} metrics_user;

typedef struct metrics_counts {
    uint64_t placements;    /* attempts started */
    uint64_t oom_crashes;   /* attempts that ended out of GPU memory */
    uint64_t recoveries;    /* jobs requeued by the OOM ladder */
    mtext_hist pass_s;      /* d_jobs_schedule()'s time, seconds */
    metrics_user *users;    /* in the order they first ended anything */
    size_t nusers, capusers;
} metrics_counts;

void metrics_counts_init(metrics_counts *m);
void metrics_counts_free(metrics_counts *m);
/* The user's totals, added on first use; NULL when out of memory (that
 * event is then not counted). */
metrics_user *metrics_user_of(metrics_counts *m, const char *user);
/* An attempt of user's on ngpus GPUs ran seconds. */
void metrics_count_attempt(metrics_counts *m, const char *user, int ngpus,
                           double seconds);
/* A job of user's finished in state (one of metrics_end_states; others
 * are not counted by state) having drawn energy_j. */
void metrics_count_finished(metrics_counts *m, const char *user,
                            const char *state, double energy_j);

#endif
