/* window.h -- per-GPU telemetry windows and their risk scores.
 *
 * The driver gives each GPU a step function of readings (core_sample()).
 * The window at time `now` is the reading at the W instants now, now-p, ...,
 * now-(W-1)p. A window keeps only the steps that can still fall inside it,
 * so its size does not grow with time, and caches its scores until the next
 * instant at which the window's content can change.
 */
#ifndef AEGIS_WINDOW_H
#define AEGIS_WINDOW_H

#include <stdbool.h>
#include "core.h"

/* One step of the function: from t on, the GPU read r. */
typedef struct win_step {
    double t;
    core_reading r;
} win_step;

/* A run of `count` equal values of one metric, oldest run first. */
typedef struct win_run {
    double v;
    int count;
} win_run;

/* Risk scores of one window; CORE_UNKNOWN where the metric is unknown in
 * every instant of the window. */
typedef struct win_scores {
    double smact, smocc, drama, util;
    double used_max_mib; /* most memory used at any instant of the window */
} win_scores;

typedef struct win {
    int samples;          /* W */
    int nruns;            /* runs in run_step and run_count */
    double period;        /* p, seconds */
    double span;          /* (W-1) p: from the oldest instant to `now` */
    win_step *base;       /* room for capsteps steps: dropped ones, then the
                             nsteps live ones from `steps` on, then free */
    win_step *steps;      /* oldest first; steps[0] may predate the window */
    int nsteps, capsteps;
    double first_t;       /* time of the GPU's first sample ever */
    double full_from;     /* a time at which the window was full, so full
                             at every later one; INFINITY before */
    int *run_step;        /* the runs of the cached window: the step each */
    int *run_count;       /*   run of instants reads, and how many instants */
    win_run *runs;        /* scratch for the slow path: W runs per metric */
    win_run *sorted;      /* scratch for medians and percentiles */
    double *keep_pow;     /* keep_pow[c] = (1 - 2/(W+1))^c, c = 0..W: the
                             EWMA factor of a run when every instant is known */
    double cache_from;    /* cache holds the window at [cache_from,
                             cache_until); NAN: it holds none */
    double cache_until;
    win_scores cache;
    uint64_t fills;       /* times the cache was filled (win_version_at()) */
    double next_from, next_at;
    /* The flags last, packed together: */
    bool any;             /* at least one sample seen */
    bool scores_ok;       /* the cache holds the risk scores too, not just
                             used_max_mib */
    bool until_ok;        /* cache_until is known (computed when first asked
                             about a later time: a new sample often comes
                             before that) */
    bool next_ok;         /* win_next_change(w, t) is next_at for every t in
                             [next_from, next_at), or every t >= next_from
                             when next_at < 0 (see win_next_change) */
} win;

/* Returns 0, or -1 when out of memory. */
int win_init(win *w, int samples, double period);
void win_free(win *w);

/* From `now` on the GPU reads *r. */
int win_push(win *w, const core_reading *r, double now);

/* True when all W instants of the window at `now` follow the first sample. */
bool win_full(win *w, double now);

/* The time the window fills, or -1 before any sample. */
double win_full_at(const win *w);

/* Scores of the window at `now`; the window must hold a sample. */
const win_scores *win_scores_at(win *w, double now);

/* The window at `now` as a number, never 0: two calls that answer the same
 * number saw the same readings, so whatever a caller derived from the
 * window at one holds at the other. The window must hold a sample. */
uint64_t win_version_at(win *w, double now);

/* win_scores_at(w, now)->used_max_mib without computing the risk scores,
 * which a caller that only wants free memory would throw away. */
double win_used_max_at(win *w, double now);

/* The earliest time after `now` at which the window's content changes,
 * or a negative value when it will not change without a new sample.
 * Remembers its answer: asked again before that time, it answers at once. */
double win_next_change(win *w, double now);

/* Risk score of runs given oldest first: the mean of (mean, median, p95,
 * EWMA with alpha 2/(W+1) where W is the total count). Unknown values
 * (< 0) are skipped; CORE_UNKNOWN when none is known. `scratch` holds n
 * runs. Exposed for the unit tests of the math. */
double win_risk(const win_run *runs, int n, win_run *scratch);

#endif
