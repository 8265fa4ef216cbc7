/* trigger_drift.c -- Modyn's DataDriftTrigger, on the samples' feature
 * vectors or on a model's embeddings of them (pl_trigger_set_embedder).
 *
 * Every evaluation_interval_data_points samples it compares the current
 * window (the newest samples; only those since the last trigger unless
 * allow_overlap) with the reference window (the samples before the last
 * trigger), each cut to sample_size rows at random, with every metric,
 * and fires when the metrics' votes (MajorityVote or AtLeastN) say drift.
 * On a trigger the reference becomes the newest samples.
 *
 * The first detection point only sets the reference and fires, as Modyn
 * does (even with a warm-up), so a pipeline has a first model. For the
 * first warmup_intervals detection points warmup_policy decides
 * (trigger_warmup.c) while the distances only feed the dynamic criteria's
 * history.
 * Random choices are seeded by the detection point's number, so the
 * trigger is a function of the stream it is fed.
 *
 * With an embedder the windows keep keys: at each detection point the
 * sampled reference and current samples are embedded together by the
 * newest model (Modyn embeds both windows again, as the model changes),
 * and the kernel's bandwidth comes from the reference's embeddings.
 */
#include <assert.h>
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
 * most limit of them: the index of the first in recent, their number in
 * n. */
static size_t newest(const trig_drift *d, int64_t size, int64_t now,
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

/* n elements of size bytes at from, copied (at least one byte); NULL when
 * out of memory. */
static void *copy_of(const void *from, size_t n, size_t size)
{
    size_t bytes = n * size;
    void *copy = malloc(bytes > 0 ? bytes : 1);
    if (copy && bytes > 0)
        memcpy(copy, from, bytes);
    return copy;
}

/* Takes the newest samples as the reference (after a trigger): their
 * rows, or their keys when they are embedded at each detection. */
static int set_reference(trig_drift *d, int64_t now)
{
    size_t n, at = newest(d, d->ref_size, now, SIZE_MAX, &n);
    if (d->embed) {
        uint64_t *keys = copy_of(d->recent.keys + at, n, sizeof *keys);
        if (!keys)
            return -1;
        free(d->ref_keys);
        d->ref_keys = keys;
    } else {
        float *rows = copy_of(d->recent.rows + at * d->dim, n,
                              d->dim * sizeof *rows);
        if (!rows)
            return -1;
        free(d->ref);
        d->ref = rows;
        d->ref_sigma = drift_median_sigma(rows, n, d->dim);
    }
    d->nref = n;
    d->since_trigger = 0;
    return 0;
}

/* How many of n rows a window compares: at most sample_size. */
static size_t sampled(const trig_drift *d, size_t n)
{
    return d->sample_size && (size_t)d->sample_size < n
               ? (size_t)d->sample_size : n;
}

/* sampled(n) of the n elements (size bytes each) at from, chosen at
 * random in their order (selection sampling), into out; returns how
 * many. */
static size_t subsample(const trig_drift *d, const void *from, size_t n,
                        size_t size, void *out, uint64_t stream)
{
    size_t want = sampled(d, n);
    pl_rng rng;
    pl_rng_seed(&rng, (uint64_t)d->detections, stream);
    size_t taken = 0;
    for (size_t i = 0; i < n && taken < want; i++)
        if (want == n || pl_rng_below(&rng, n - i) < want - taken)
            memcpy((char *)out + taken++ * size, (const char *)from + i * size,
                   size);
    return taken;
}

/* ---- decisions -------------------------------------------------------- */

/* Each metric's vote on the windows; *votes counts those saying drift.
 * During warm-up the distances only calibrate the criteria. */
static int measure_votes(trig_drift *d, const float *ref, size_t nref,
                         const float *cur, size_t ncur, size_t dim,
                         double sigma, bool warming, size_t *votes)
{
    *votes = 0;
    for (size_t i = 0; i < d->nmetrics; i++) {
        drift_metric *m = &d->metrics[i];
        double dist, p;
        if (drift_metric_measure(m, ref, nref, cur, ncur, dim, sigma,
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

/* The metrics' decision on windows ref and cur of dim-wide rows. */
static int decide(trig_drift *d, const float *ref, size_t nref,
                  const float *cur, size_t ncur, size_t dim, double sigma,
                  bool warming, bool *fire)
{
    size_t votes;
    if (measure_votes(d, ref, nref, cur, ncur, dim, sigma, warming,
                      &votes) < 0)
        return -1;
    if (!warming)
        *fire = votes_fire(d, votes);
    return 0;
}

static int fail_memory(char *err, size_t errlen)
{
    snprintf(err, errlen, "trigger: out of memory for the drift windows");
    return -1;
}

/* Compares the sampled rows of the reference and of the current window
 * (ncur rows from index cur of recent). */
static int detect_features(trig_drift *d, size_t cur, size_t ncur,
                           bool warming, bool *fire, char *err, size_t errlen)
{
    size_t row = d->dim * sizeof(float);
    float *buf = malloc((sampled(d, d->nref) + sampled(d, ncur)) * row);
    if (!buf)
        return fail_memory(err, errlen);
    size_t nref = subsample(d, d->ref, d->nref, row, buf, 1);
    float *cur_rows = buf + nref * d->dim;
    size_t ncur_s = subsample(d, d->recent.rows + cur * d->dim, ncur, row,
                              cur_rows, 2);
    int rc = decide(d, buf, nref, cur_rows, ncur_s, d->dim, d->ref_sigma,
                    warming, fire);
    free(buf);
    return rc < 0 ? fail_memory(err, errlen) : 0;
}

/* The same on the model's embeddings of the sampled samples, the
 * reference's first; the kernel's bandwidth from the reference's, as the
 * model changes between detections. No model yet: no vote. */
static int detect_embedded(trig_drift *d, size_t cur, size_t ncur,
                           bool warming, bool *fire, char *err, size_t errlen)
{
    uint64_t *keys = malloc((sampled(d, d->nref) + sampled(d, ncur)) *
                            sizeof *keys);
    if (!keys)
        return fail_memory(err, errlen);
    size_t nref = subsample(d, d->ref_keys, d->nref, sizeof *keys, keys, 1);
    size_t ncur_s = subsample(d, d->recent.keys + cur, ncur, sizeof *keys,
                              keys + nref, 2);
    float *emb = NULL;
    size_t dim = 0;
    int rc = d->embed(d->embed_ctx, keys, nref + ncur_s, &emb, &dim, err,
                      errlen);
    free(keys);
    if (rc == 0 && decide(d, emb, nref, emb + nref * dim, ncur_s, dim,
                          drift_median_sigma(emb, nref, dim), warming,
                          fire) < 0)
        rc = fail_memory(err, errlen);
    free(emb);
    return rc < 0 ? -1 : 0;
}

/* Compares the windows at a detection point; *fire when they differ. */
static int detect(trig_drift *d, int64_t now, bool warming, bool *fire,
                  char *err, size_t errlen)
{
    size_t limit = d->overlap ? SIZE_MAX : (size_t)d->since_trigger;
    size_t ncur, cur = newest(d, d->cur_size, now, limit, &ncur);
    if (ncur < 2 || d->nref < 2)
        return 0;
    return d->embed ? detect_embedded(d, cur, ncur, warming, fire, err, errlen)
                    : detect_features(d, cur, ncur, warming, fire, err,
                                      errlen);
}

/* Whether a reference was set (it may hold no rows: a time window with
 * nothing in it). */
static bool has_reference(const trig_drift *d)
{
    return d->ref || d->ref_keys;
}

/* A warm-up detection point (the first always is one): it fires when
 * the first, or when warmup_policy fired since the last; its distances
 * only calibrate the dynamic criteria. The reference moves on at each
 * while the warm-up lasts, as Modyn's windows do then. */
static int at_warmup(trig_drift *d, int64_t now, int64_t n, bool *fire,
                     char *err, size_t errlen)
{
    bool unused = false;
    if (has_reference(d) && drift_any_dynamic(d) &&
        detect(d, now, true, &unused, err, errlen) < 0)
        return -1;
    *fire = trig_warmup_decide(&d->warm, n);
    bool moves = *fire || !trig_warmup_done(&d->warm);
    return moves && set_reference(d, now) < 0 ? fail_memory(err, errlen) : 0;
}

/* What happens at a detection point: the warm-up's decide as it says;
 * later ones compare the windows, and a fire takes a new reference. */
static int at_detection(trig_drift *d, int64_t now, bool *fire, char *err,
                        size_t errlen)
{
    int64_t n = d->detections++;
    if (trig_warmup_delegates(&d->warm, n))
        return at_warmup(d, now, n, fire, err, errlen);
    if (detect(d, now, false, fire, err, errlen) < 0)
        return -1;
    return *fire && set_reference(d, now) < 0 ? fail_memory(err, errlen) : 0;
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
    if (!d->embed && check_dim(d, dim, err, errlen) < 0)
        return -1;
    if (drift_window_push(&d->recent, s->ts, s->key, features) < 0)
        return fail_memory(err, errlen);
    trim_recent(d, s->ts);
    d->since_trigger++;
    if (trig_warmup_feed(&d->warm, s, err, errlen) < 0)
        return -1;
    if (++d->since_detect < d->interval)
        return 0;
    d->since_detect = 0;
    return at_detection(d, s->ts, fire, err, errlen);
}

static void drift_free(pl_trigger *t)
{
    trig_drift *d = (trig_drift *)t;
    for (size_t i = 0; i < d->nmetrics; i++)
        drift_metric_free(&d->metrics[i]);
    free(d->metrics);
    trig_warmup_free(&d->warm);
    drift_window_free(&d->recent);
    free(d->ref);
    free(d->ref_keys);
    free(d);
}

/* An embedder: from now on the windows keep keys, embedded at each
 * detection point (it is set before any sample is fed). */
static size_t drift_set_hook(pl_trigger *t, const trig_hook *h)
{
    trig_drift *d = (trig_drift *)t;
    if (h->kind != TRIG_HOOK_EMBED)
        return 0;
    assert(d->recent.count == 0);
    d->embed = h->embed;
    d->embed_ctx = h->ctx;
    d->base.needs_features = false;
    return 1;
}

static const pl_trigger_ops drift_ops = {drift_feed, drift_free,
                                         drift_set_hook};

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
