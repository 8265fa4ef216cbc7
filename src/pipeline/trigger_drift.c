/* trigger_drift.c -- Modyn's DataDriftTrigger on feature vectors.
 *
 * Every evaluation_interval_data_points samples it compares the current
 * window (the newest samples; only those since the last trigger unless
 * allow_overlap) with the reference window (the samples before the last
 * trigger), each cut to sample_size rows at random, with every metric,
 * and fires when the metrics' votes (MajorityVote or AtLeastN) say drift.
 * On a trigger the reference becomes the newest samples.
 *
 * The first detection point only sets the reference and fires, as Modyn
 * does, so a pipeline has a first model. While dynamic criteria calibrate
 * (the first warmup_intervals detection points) the distances only feed
 * their history and warmup_policy, a simple trigger, decides.
 * Random choices are seeded by the detection point's number, so the
 * trigger is a function of the stream it is fed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "pl_config.h"
#include "pl_rng.h"
#include "trigger_drift.h"
#include "trigger_impl.h"


/* ---- windows ---------------------------------------------------------- */

/* Keeps what either window can still need. */
static void trim_recent(trig_drift *d, int64_t now)
{
    int64_t keep = d->ref_size > d->cur_size ? d->ref_size : d->cur_size;
    if (d->by_time)
        drift_window_drop_until(&d->recent, now - keep);
    else
        drift_window_keep_last(&d->recent, (size_t)keep);
}

/* The newest rows of a window of SIZE (rows or seconds) ending now, at
 * most limit of them. */
static const float *newest(const trig_drift *d, int64_t size, int64_t now,
                           size_t limit, size_t *n)
{
    size_t got;
    if (d->by_time)
        drift_window_since(&d->recent, now - size, &got);
    else
        got = (size_t)size;
    if (got > limit)
        got = limit;
    return drift_window_last(&d->recent, got, n);
}

/* Takes the newest samples as the reference (after a trigger). */
static int set_reference(trig_drift *d, int64_t now)
{
    size_t n;
    const float *rows = newest(d, d->ref_size, now, SIZE_MAX, &n);
    float *copy = malloc((n ? n : 1) * d->dim * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, rows, n * d->dim * sizeof *copy);
    free(d->ref);
    d->ref = copy;
    d->nref = n;
    d->ref_sigma = drift_median_sigma(copy, n, d->dim);
    d->since_trigger = 0;
    return 0;
}

/* Up to sample_size of the n rows, chosen at random in their order
 * (selection sampling), into out; returns how many. */
static size_t subsample(const trig_drift *d, const float *rows, size_t n,
                        float *out, uint64_t stream)
{
    size_t want = d->sample_size && (size_t)d->sample_size < n
                      ? (size_t)d->sample_size : n;
    pl_rng rng;
    pl_rng_seed(&rng, (uint64_t)d->detections, stream);
    size_t taken = 0;
    for (size_t i = 0; i < n && taken < want; i++)
        if (want == n || pl_rng_below(&rng, n - i) < want - taken)
            memcpy(out + taken++ * d->dim, rows + i * d->dim,
                   d->dim * sizeof *out);
    return taken;
}

/* ---- decisions -------------------------------------------------------- */

/* Each metric's vote on the windows; *votes counts those saying drift.
 * During warm-up the distances only calibrate the criteria. */
static int measure_votes(trig_drift *d, const float *ref, size_t nref,
                         const float *cur, size_t ncur, bool warming,
                         size_t *votes)
{
    *votes = 0;
    for (size_t i = 0; i < d->nmetrics; i++) {
        drift_metric *m = &d->metrics[i];
        double dist, p;
        if (drift_metric_measure(m, ref, nref, cur, ncur, d->dim, d->ref_sigma,
                                 (uint64_t)d->detections * 131 + i, &dist,
                                 &p) < 0)
            return -1;
        if (warming)
            drift_criterion_observe(&m->crit, dist);
        else
            *votes += drift_criterion_decide(&m->crit, dist, p, m->p_val);
    }
    return 0;
}

static bool votes_fire(const trig_drift *d, size_t votes)
{
    if (d->at_least > 0)
        return (int64_t)votes >= d->at_least;
    return votes * 2 > d->nmetrics;
}

/* Compares the windows at a detection point; *fire when they differ. */
static int detect(trig_drift *d, int64_t now, bool warming, bool *fire)
{
    size_t limit = d->overlap ? SIZE_MAX : (size_t)d->since_trigger;
    size_t ncur;
    const float *cur = newest(d, d->cur_size, now, limit, &ncur);
    if (ncur < 2 || d->nref < 2)
        return 0;
    size_t cap_ref = d->sample_size && (size_t)d->sample_size < d->nref
                         ? (size_t)d->sample_size : d->nref;
    size_t cap_cur = d->sample_size && (size_t)d->sample_size < ncur
                         ? (size_t)d->sample_size : ncur;
    float *buf = malloc((cap_ref + cap_cur) * d->dim * sizeof *buf);
    if (!buf)
        return -1;
    size_t nref = subsample(d, d->ref, d->nref, buf, 1);
    size_t ncur_s = subsample(d, cur, ncur, buf + nref * d->dim, 2);
    size_t votes;
    int rc = measure_votes(d, buf, nref, buf + nref * d->dim, ncur_s, warming,
                           &votes);
    free(buf);
    if (rc == 0 && !warming)
        *fire = votes_fire(d, votes);
    return rc;
}

/* What happens at a detection point: the first one sets the reference
 * (and fires, unless a warm-up policy decides); later ones compare. */
static int at_detection(trig_drift *d, int64_t now, bool warming, bool *fire)
{
    d->detections++;
    if (d->ref == NULL) {
        *fire = !warming;
        return set_reference(d, now);
    }
    if (detect(d, now, warming, fire) < 0)
        return -1;
    return *fire ? set_reference(d, now) : 0;
}

static int fail_memory(char *err, size_t errlen)
{
    snprintf(err, errlen, "trigger: out of memory for the drift windows");
    return -1;
}

static int check_dim(trig_drift *d, size_t dim, char *err, size_t errlen)
{
    if (d->dim == 0)
        d->dim = d->recent.dim = dim;
    if (dim == d->dim)
        return 0;
    snprintf(err, errlen, "trigger: samples have %zu features, earlier ones "
             "had %zu", dim, d->dim);
    return -1;
}

static int drift_feed(pl_trigger *t, const pl_sample *s, const float *features,
                      size_t dim, bool *fire, char *err, size_t errlen)
{
    trig_drift *d = (trig_drift *)t;
    if (check_dim(d, dim, err, errlen) < 0)
        return -1;
    if (drift_window_push(&d->recent, s->ts, features) < 0)
        return fail_memory(err, errlen);
    trim_recent(d, s->ts);
    d->since_trigger++;
    bool warming = d->detections < d->warmup_intervals;
    if (warming && d->warmup) {
        if (trig_feed(d->warmup, s, NULL, 0, fire, err, errlen) < 0)
            return -1;
        if (*fire && d->ref && set_reference(d, s->ts) < 0)
            return fail_memory(err, errlen);
    }
    if (++d->since_detect < d->interval)
        return 0;
    d->since_detect = 0;
    bool detected = false;
    if (at_detection(d, s->ts, warming, &detected) < 0)
        return fail_memory(err, errlen);
    *fire = *fire || detected;
    return 0;
}

static void drift_free(pl_trigger *t)
{
    trig_drift *d = (trig_drift *)t;
    for (size_t i = 0; i < d->nmetrics; i++)
        drift_metric_free(&d->metrics[i]);
    free(d->metrics);
    pl_trigger_free(d->warmup);
    drift_window_free(&d->recent);
    free(d->ref);
    free(d);
}

static const pl_trigger_ops drift_ops = {drift_feed, drift_free};

pl_trigger *trig_drift_new(const json_t *section, const char *path,
                           char *err, size_t errlen)
{
    trig_drift *d = calloc(1, sizeof *d);
    if (!d) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    d->base.ops = &drift_ops;
    d->base.needs_features = true;
    if (drift_parse(d, section, path, err, errlen) < 0) {
        drift_free(&d->base);
        return NULL;
    }
    return &d->base;
}
