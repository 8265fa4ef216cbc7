/* history.h -- each job's history: its memory and SM share, and its GPUs'
 * used and total memory, sampled every history_period_s seconds (config;
 * default 10) while it runs, kept in the store for `aegis show --history`.
 *
 * A job keeps at most HISTORY_MAX_SAMPLES samples, however long it runs:
 * when it has that many, every other one is dropped and the job is sampled
 * half as often from then on, so its samples stay evenly spaced and cover
 * its whole run, at a resolution that halves each time the run doubles
 * (4,320 samples: 12 hours at 10 s, then 24 hours at 20 s, ...).
 *
 * Ownership: a history_track lives in its d_job; nothing here allocates.
 */
#ifndef AEGIS_HISTORY_H
#define AEGIS_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#define HISTORY_MAX_SAMPLES 4320
#define HISTORY_DEFAULT_PERIOD_S 10.0
#define HISTORY_MIN_PERIOD_S 1.0
#define HISTORY_MAX_PERIOD_S 86400.0

/* Where one job's history stands. */
typedef struct history_track {
    int count;              /* samples stored */
    int max;                /* at most (HISTORY_MAX_SAMPLES) */
    int step;               /* history periods between two samples */
    long period;            /* periods seen since sampling (re)started */
} history_track;

/* A job's track: a new job's (count 0, step 1), or one recovered after a
 * restart with what the store holds. */
void history_track_init(history_track *h, int max, int count, int step);

/* One history period has passed for a running job: whether it takes a
 * sample in this one. */
bool history_due(history_track *h);

/* Stores a sample of job id, first thinning its samples when it has its
 * maximum already. */
void history_add(store *st, int64_t id, history_track *h,
                 const store_sample *s);

#endif
