/* window.c -- telemetry windows as step functions, and risk scores.
 *
 * A training job's counters change rarely compared with the sample period
 * (the simulator only reports changes), so a window is held as a few steps,
 * not W samples. Two facts keep scoring cheap:
 *  - when the last change is at least (W-1) periods old every instant reads
 *    the current value, and every score equals that value (the fast path);
 *  - otherwise the W instants form at most one run per step, and each
 *    statistic has a closed form over runs (EWMA over n equal values v
 *    moves y to v + (1-alpha)^n (y - v)).
 * Scores are cached until the next instant at which the window can change.
 * The cache is filled in two steps: the runs and the peak memory first,
 * the four risk scores only when asked for, since every launch reads the
 * peak (core_start) but only collocation attempts read the scores.
 */
#include "window.h"
#include "alloc.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The metrics that get a risk score, by their place in core_reading. */
static const size_t win_metric_offset[] = {
    offsetof(core_reading, smact), offsetof(core_reading, smocc),
    offsetof(core_reading, drama), offsetof(core_reading, util),
};
#define WIN_METRICS (sizeof(win_metric_offset) / sizeof(win_metric_offset[0]))

static double win_metric(const core_reading *r, size_t m) {
    return *(const double *)((const char *)r + win_metric_offset[m]);
}

/* Steps a window has room for at first. A window holds the few changes of
 * its last W periods; dropped ones stay in front of the live ones until
 * the room is used up, so the live ones move once per this many pushes,
 * not at every push. */
#define WIN_STEPS0 16

int win_init(win *w, int samples, double period) {
    memset(w, 0, sizeof(*w));
    w->samples = samples;
    w->period = period;
    w->span = (samples - 1) * period;
    w->full_from = INFINITY;
    w->cache_from = NAN;
    w->capsteps = WIN_STEPS0;
    w->base = w->steps = core_malloc(sizeof(*w->steps) * (size_t)w->capsteps);
    w->run_step = core_malloc(sizeof(*w->run_step) * (size_t)samples);
    w->run_count = core_malloc(sizeof(*w->run_count) * (size_t)samples);
    w->runs = core_malloc(sizeof(*w->runs) * (size_t)samples);
    w->sorted = core_malloc(sizeof(*w->sorted) * (size_t)samples);
    w->keep_pow = core_malloc(sizeof(*w->keep_pow) * (size_t)(samples + 1));
    if (!w->steps || !w->run_step || !w->run_count || !w->runs || !w->sorted ||
        !w->keep_pow) {
        win_free(w);
        return -1;
    }
    /* pow() was the costliest call of a simulation; the same arguments
     * give the same bits, so a table changes no score. */
    double keep = 1.0 - 2.0 / (double)(samples + 1);
    for (int c = 0; c <= samples; c++) w->keep_pow[c] = pow(keep, c);
    return 0;
}

void win_free(win *w) {
    free(w->base);
    free(w->run_step);
    free(w->run_count);
    free(w->runs);
    free(w->sorted);
    free(w->keep_pow);
    memset(w, 0, sizeof(*w));
}

/* Time of the oldest instant of the window at `now`. */
static double win_oldest(const win *w, double now) {
    return now - w->span;
}

static bool win_same_reading(const core_reading *a, const core_reading *b) {
    return a->used_mib == b->used_mib && a->total_mib == b->total_mib &&
           a->smact == b->smact && a->smocc == b->smocc &&
           a->drama == b->drama && a->util == b->util;
}

/* Makes room for a step after the last: moves the live steps to the front,
 * or doubles the room when they fill it. Returns 0, or -1 when out of
 * memory. */
static int win_make_room(win *w) {
    if (w->steps > w->base) {
        memmove(w->base, w->steps, sizeof(*w->steps) * (size_t)w->nsteps);
    } else {
        int cap = w->capsteps * 2;
        win_step *grown = core_realloc(w->base, sizeof(*grown) * (size_t)cap);
        if (!grown) return -1;
        w->base = grown;
        w->capsteps = cap;
    }
    w->steps = w->base;
    return 0;
}

int win_push(win *w, const core_reading *r, double now) {
    if (!w->any) {
        w->any = true;
        w->first_t = now;
    }
    if (w->nsteps > 0) {
        win_step *last = &w->steps[w->nsteps - 1];
        /* An unchanged reading is no step: the last change keeps its time,
         * which is what the fast path and the cache rely on. */
        if (win_same_reading(&last->r, r)) return 0;
        /* Two readings at one instant (or a late one): the newer wins. */
        if (now <= last->t) {
            last->r = *r;
            w->cache_from = NAN;
            w->next_ok = false;
            return 0;
        }
    }
    if (w->steps + w->nsteps == w->base + w->capsteps && win_make_room(w) != 0)
        return -1;
    w->steps[w->nsteps].t = now;
    w->steps[w->nsteps].r = *r;
    w->nsteps++;
    /* steps[0] is useless once steps[1] covers the oldest instant; windows
     * only move forward, so it will never be read again. */
    int drop = 0;
    double oldest = win_oldest(w, now);
    while (drop + 1 < w->nsteps && w->steps[drop + 1].t <= oldest) drop++;
    w->steps += drop;
    w->nsteps -= drop;
    w->cache_from = NAN;
    w->next_ok = false;
    return 0;
}

bool win_full(win *w, double now) {
    /* Asked for every open GPU at every collocation attempt. now - first_t
     * grows with now, rounding included, so once full, full later on. */
    if (now >= w->full_from) return true;
    if (!w->any || !(now - w->first_t >= w->span)) return false;
    w->full_from = now;
    return true;
}

double win_full_at(const win *w) {
    return w->any ? w->first_t + w->span : -1;
}

/* Quantile with linear interpolation between closest ranks, the rule of
 * numpy.percentile and pandas.quantile that AEGIS's monitor computes with.
 * `sorted` holds n runs of positive counts summing to total, by value. */
static double win_quantile(const win_run *sorted, int n, long total, double q) {
    double pos = q * (double)(total - 1);
    long lo = (long)pos; /* pos >= 0, so this is floor(), without libm */
    double frac = pos - (double)lo;
    int i = 0;
    while (i + 1 < n && lo >= sorted[i].count) lo -= sorted[i++].count;
    double v = sorted[i].v;
    if (frac == 0) return v;
    /* frac > 0 puts rank lo + 1 inside the total: in this run or the next. */
    double above = lo + 1 < sorted[i].count ? v : sorted[i + 1].v;
    return v + frac * (above - v);
}

/* win_risk(), with keep_pow (or NULL) holding the EWMA factors for a
 * total of `samples` known instants, the usual case. */
static double win_risk_pow(const win_run *runs, int n, win_run *scratch,
                           const double *keep_pow, int samples) {
    int m = 0;
    long total = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i].v < 0 || runs[i].count <= 0) continue;
        scratch[m++] = runs[i];
        total += runs[i].count;
        sum += runs[i].v * runs[i].count;
    }
    if (m == 0) return CORE_UNKNOWN;

    /* EWMA seeded with the oldest value, alpha = 2/(W+1) (DESIGN.md 3). */
    double keep = 1.0 - 2.0 / (double)(total + 1);
    bool table = keep_pow && total == samples;
    double ewma = scratch[0].v;
    for (int i = 1; i < m; i++) {
        double f = table ? keep_pow[scratch[i].count] : pow(keep, scratch[i].count);
        ewma = scratch[i].v + f * (ewma - scratch[i].v);
    }

    for (int i = 1; i < m; i++) { /* insertion sort: m <= W runs */
        win_run r = scratch[i];
        int j = i - 1;
        while (j >= 0 && scratch[j].v > r.v) {
            scratch[j + 1] = scratch[j];
            j--;
        }
        scratch[j + 1] = r;
    }
    double mean = sum / (double)total;
    double median = win_quantile(scratch, m, total, 0.5);
    double p95 = win_quantile(scratch, m, total, 0.95);
    return (mean + median + p95 + ewma) / 4.0;
}

double win_risk(const win_run *runs, int n, win_run *scratch) {
    return win_risk_pow(runs, n, scratch, NULL, 0);
}

static void win_scores_uniform(win_scores *s, const core_reading *r) {
    s->smact = r->smact < 0 ? CORE_UNKNOWN : r->smact;
    s->smocc = r->smocc < 0 ? CORE_UNKNOWN : r->smocc;
    s->drama = r->drama < 0 ? CORE_UNKNOWN : r->drama;
    s->util = r->util < 0 ? CORE_UNKNOWN : r->util;
    s->used_max_mib = r->used_mib;
}

/* Instant i of the window at `now`: i periods before it. Every instant is
 * worked out by this one expression, so that comparisons with a step's
 * time come out the same wherever they are made. */
static double win_instant(const win *w, double now, int i) {
    return now - i * w->period;
}

/* The largest i below `from` whose instant is at or after `next`, or -1:
 * where a run of instants that read one step ends. Instants fall as i
 * grows, so a guess by division is corrected in a step or two, each with
 * the compare that walking the instants one by one would make. */
static int win_run_end(const win *w, double now, int from, double next) {
    double guess = (now - next) / w->period;
    int i = guess < 0 ? -1 : guess >= from ? from - 1 : (int)guess;
    while (i >= 0 && win_instant(w, now, i) < next) i--;
    while (i + 1 < from && win_instant(w, now, i + 1) >= next) i++;
    return i;
}

/* Groups the W instants of the window at `now` into runs of equal steps,
 * oldest first, in w->run_step and w->run_count; returns how many runs. */
static int win_step_runs(win *w, double now) {
    int nruns = 0, k = 0;
    for (int i = w->samples - 1; i >= 0; nruns++) {
        double x = win_instant(w, now, i);
        while (k + 1 < w->nsteps && w->steps[k + 1].t <= x) k++;
        /* Instants i, i-1, ... read step k until one reaches the next
         * step's time. */
        int from = i;
        i = k + 1 == w->nsteps ? -1 : win_run_end(w, now, from, w->steps[k + 1].t);
        w->run_step[nruns] = k;
        w->run_count[nruns] = from - i;
    }
    return nruns;
}

/* The risk scores of the cached runs (win_cache_at()'s slow path). */
static void win_scores_slow(win *w, win_scores *s) {
    double *score[WIN_METRICS] = {&s->smact, &s->smocc, &s->drama, &s->util};
    for (size_t m = 0; m < WIN_METRICS; m++) {
        for (int i = 0; i < w->nruns; i++) {
            w->runs[i].v = win_metric(&w->steps[w->run_step[i]].r, m);
            w->runs[i].count = w->run_count[i];
        }
        *score[m] = win_risk_pow(w->runs, w->nruns, w->sorted, w->keep_pow,
                                 w->samples);
    }
}

/* When the cached window stops holding, worked out when first asked. */
static double win_cache_end(win *w) {
    if (!w->until_ok) {
        double next = win_next_change(w, w->cache_from);
        w->cache_until = next < 0 ? INFINITY : next;
        w->until_ok = true;
    }
    return w->cache_until;
}

/* True when the cache holds the window at `now`. */
static bool win_cache_holds(win *w, double now) {
    /* Written so that no `now` is at or after a NAN cache_from. */
    if (!(now >= w->cache_from)) return false;
    return now == w->cache_from || now < win_cache_end(w);
}

/* Fills the cache with the window at `now`: its runs and peak memory, and
 * on the fast path its scores as well. Kept out of line: inlined into
 * win_cache_at(), it made every call save and restore the registers it
 * needs, and most calls find the cache holding. */
__attribute__((noinline)) static void win_cache_fill(win *w, double now) {
    const win_step *last = &w->steps[w->nsteps - 1];
    if (last->t <= win_oldest(w, now)) {
        win_scores_uniform(&w->cache, &last->r);
        w->scores_ok = true;
        w->cache_until = INFINITY;
        w->until_ok = true;
    } else {
        w->nruns = win_step_runs(w, now);
        w->cache.used_max_mib = 0;
        for (int i = 0; i < w->nruns; i++) { /* not fmax(): a libm call */
            double used = w->steps[w->run_step[i]].r.used_mib;
            if (used > w->cache.used_max_mib) w->cache.used_max_mib = used;
        }
        w->scores_ok = false;
        w->until_ok = false;
    }
    w->cache_from = now;
    w->fills++;
}

/* Makes the cache hold the window at `now`. Asked for every open GPU at
 * every collocation attempt, and most of them hold already. */
static void win_cache_at(win *w, double now) {
    if (!win_cache_holds(w, now)) win_cache_fill(w, now);
}

const win_scores *win_scores_at(win *w, double now) {
    win_cache_at(w, now);
    if (!w->scores_ok) {
        win_scores_slow(w, &w->cache);
        w->scores_ok = true;
    }
    return &w->cache;
}

uint64_t win_version_at(win *w, double now) {
    win_cache_at(w, now);
    return w->fills;
}

double win_used_max_at(win *w, double now) {
    win_cache_at(w, now);
    return w->cache.used_max_mib;
}

/* True when the remembered next change is the answer for `now`. Only
 * answers from a full window are remembered: before the window fills,
 * every change is reported as the filling (below), which a later `now`
 * may already be past. */
static bool win_next_known(const win *w, double now) {
    return w->next_ok && now >= w->next_from &&
           (w->next_at < 0 || now < w->next_at);
}

/* The double next to x upward (dir 1) or downward (-1). For the positive
 * finite times asked about here that is the next bit pattern, without a
 * call into libm: a crossing is worked out for every step whenever a
 * window changes. */
static double ulp_step(double x, int dir) {
    if (!(x > 0 && x < INFINITY))
        return nextafter(x, dir > 0 ? INFINITY : -INFINITY);
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    bits += (uint64_t)(int64_t)dir;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

/* The first time at which instant i reads step time t: the least `at`
 * with win_instant(w, at, i) >= t, the compare the runs make. That is
 * t + i*p in exact arithmetic, but the rounded sum can miss by an ulp
 * either way, and a crossing reported an ulp early was then passed over
 * for a whole period: the window read its old content that long. */
static double win_crossing(const win *w, double t, int i) {
    if (i == 0) return t;
    double at = t + i * w->period;
    while (win_instant(w, at, i) < t) at = ulp_step(at, 1);
    for (;;) {
        double before = ulp_step(at, -1);
        if (before < t || win_instant(w, before, i) < t) return at;
        at = before;
    }
}

/* The first crossing of step time t after `now` by one of the W
 * instants, or -1 when none is left: the crossing of the newest instant
 * that does not read t yet. Division guesses which instant that is; the
 * compare the runs make settles it. */
static double win_next_crossing(const win *w, double t, double now) {
    double guess = t > now ? 0 : floor((now - t) / w->period) + 1;
    int i = guess > w->samples ? w->samples : (int)guess;
    while (i > 0 && win_instant(w, now, i - 1) < t) i--;
    while (i < w->samples && win_instant(w, now, i) >= t) i++;
    return i < w->samples ? win_crossing(w, t, i) : -1;
}

/* win_next_change() worked out from the steps, and remembered. Out of
 * line, so that the test of the remembered answer inlines into the
 * schedule's pass over every GPU. */
__attribute__((noinline)) static double win_next_find(win *w, double now) {
    double next = -1;
    double full_at = win_full_at(w);
    for (int k = 0; k < w->nsteps; k++) {
        double t = w->steps[k].t;
        /* The first sample has nothing before it to slide past: its only
         * event is the window filling, which win_full_at() reports. */
        if (t == w->first_t) continue;
        double at = win_next_crossing(w, t, now);
        if (at < 0) continue;
        if (at < full_at) at = full_at; /* nothing is decided before */
        if (next < 0 || at < next) next = at;
    }
    /* The schedule asks every GPU after every change on any one of them:
     * most windows have not changed since they were last asked. */
    w->next_ok = now >= full_at;
    w->next_from = now;
    w->next_at = next;
    return next;
}

double win_next_change(win *w, double now) {
    return win_next_known(w, now) ? w->next_at : win_next_find(w, now);
}
