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
#include "trigger_impl.h"

typedef struct trig_drift {
    pl_trigger base;
    /* configuration */
    int64_t interval;          /* samples between detection points */
    bool by_time;              /* TimeWindowingStrategy, else amounts */
    int64_t ref_size, cur_size;/* rows, or seconds when by_time */
    bool overlap;              /* current window may reach before a trigger */
    int64_t sample_size;       /* rows per window compared; 0: all */
    drift_metric *metrics;
    size_t nmetrics;
    int64_t at_least;          /* votes needed; 0: a majority */
    int64_t warmup_intervals;
    pl_trigger *warmup;        /* decides during warm-up; may be NULL */
    /* state */
    size_t dim;                /* features per sample, from the first one */
    drift_window recent;       /* enough rows for either window */
    float *ref;                /* the reference window's rows */
    size_t nref;
    double ref_sigma;          /* kernel bandwidth from the reference */
    int64_t since_detect;      /* samples since the last detection point */
    int64_t since_trigger;     /* samples since the last fire */
    int64_t detections;        /* detection points passed */
} trig_drift;

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

/* ---- configuration ---------------------------------------------------- */

static const char *const drift_keys[] = {
    "id", "evaluation_interval_data_points", "windowing_strategy",
    "sample_size", "metrics", "aggregation_strategy", "warmup_intervals",
    "warmup_policy", NULL};

static int parse_windows(trig_drift *d, const json_t *w, const char *path,
                         char *err, size_t errlen)
{
    static const char *const ids[] = {"AmountWindowingStrategy",
                                      "TimeWindowingStrategy", NULL};
    static const char *const amount_keys[] = {"id", "amount_ref", "amount_cur",
                                              "allow_overlap", NULL};
    static const char *const time_keys[] = {"id", "limit_ref", "limit_cur",
                                            "allow_overlap", NULL};
    int id;
    d->ref_size = d->cur_size = 1000;  /* Modyn's AmountWindowingStrategy */
    if (!w)
        return 0;
    if (!json_is_object(w))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping with an id");
    if (plcfg_enum(w, path, "id", ids, 0, &id, err, errlen) < 0 ||
        plcfg_check_keys(w, path, id ? time_keys : amount_keys, err, errlen) < 0 ||
        plcfg_bool(w, path, "allow_overlap", false, &d->overlap, err, errlen) < 0)
        return -1;
    d->by_time = id == 1;
    if (!d->by_time)
        return plcfg_int(w, path, "amount_ref", 1000, 2, 100000000,
                         &d->ref_size, err, errlen) < 0 ||
               plcfg_int(w, path, "amount_cur", 1000, 2, 100000000,
                         &d->cur_size, err, errlen) < 0 ? -1 : 0;
    if (!json_object_get(w, "limit_ref") || !json_object_get(w, "limit_cur"))
        return plcfg_fail(err, errlen, path, json_object_get(w, "limit_ref")
                          ? "limit_cur" : "limit_ref", "missing (e.g. \"1d\")");
    return plcfg_duration(w, path, "limit_ref", 0, &d->ref_size, err, errlen) < 0 ||
           plcfg_duration(w, path, "limit_cur", 0, &d->cur_size, err, errlen) < 0
               ? -1 : 0;
}

/* The metrics; without any, one MMD with the default threshold. */
static int parse_metrics(trig_drift *d, const json_t *metrics, const char *path,
                         char *err, size_t errlen)
{
    static const char default_mmd[] = "{\"id\": \"AlibiDetectMmdDriftMetric\"}";
    json_t *fallback = metrics ? NULL : json_loads(default_mmd, 0, NULL);
    const json_t *all = metrics ? metrics : json_pack("{so}", "mmd", fallback);
    int rc = -1;
    if (!json_is_object(all) || json_object_size(all) == 0) {
        plcfg_fail(err, errlen, path, NULL, "must map names to metrics");
        goto out;
    }
    d->metrics = calloc(json_object_size(all), sizeof *d->metrics);
    if (!d->metrics)
        goto out;
    const char *name;
    const json_t *m;
    char sub[PLCFG_PATH_MAX];
    json_object_foreach((json_t *)all, name, m) {
        if (drift_metric_parse(m, plcfg_join(sub, sizeof sub, path, name),
                               name, &d->metrics[d->nmetrics], err, errlen) < 0)
            goto out;
        d->nmetrics++;
    }
    rc = 0;
out:
    if (!metrics)
        json_decref((json_t *)all);
    return rc;
}

static int parse_aggregation(trig_drift *d, const json_t *a, const char *path,
                             char *err, size_t errlen)
{
    static const char *const ids[] = {"MajorityVote", "AtLeastN", NULL};
    static const char *const keys[] = {"id", "n", NULL};
    int id;
    if (!a)
        return 0;
    if (plcfg_check_keys(a, path, keys, err, errlen) < 0 ||
        plcfg_enum(a, path, "id", ids, 0, &id, err, errlen) < 0)
        return -1;
    if (id == 0)
        return json_object_get(a, "n")
                   ? plcfg_fail(err, errlen, path, "n", "only for AtLeastN") : 0;
    if (!json_object_get(a, "n"))
        return plcfg_fail(err, errlen, path, "n", "missing");
    return plcfg_int(a, path, "n", 1, 1, (int64_t)d->nmetrics, &d->at_least,
                     err, errlen);
}

/* The longest history a dynamic criterion keeps (0: none is dynamic). */
static int64_t calibration_need(const trig_drift *d)
{
    int64_t need = 0;
    for (size_t i = 0; i < d->nmetrics; i++)
        if (drift_criterion_dynamic(&d->metrics[i].crit) &&
            d->metrics[i].crit.window_size > need)
            need = d->metrics[i].crit.window_size;
    return need;
}

static int parse_warmup(trig_drift *d, const json_t *section, const char *path,
                        char *err, size_t errlen)
{
    char sub[PLCFG_PATH_MAX];
    bool has;
    const json_t *policy = json_object_get(section, "warmup_policy");
    if (plcfg_opt_int(section, path, "warmup_intervals", 0, 1000000,
                      &d->warmup_intervals, &has, err, errlen) < 0)
        return -1;
    int64_t need = calibration_need(d);
    if (need > 0 && !policy)
        return plcfg_fail(err, errlen, path, "warmup_policy",
                          "required while a dynamic decision_criterion calibrates");
    if (!has)
        d->warmup_intervals = policy ? need : 0;
    if (!policy)
        return 0;
    d->warmup = trig_new_at(policy, plcfg_join(sub, sizeof sub, path,
                            "warmup_policy"), true, err, errlen);
    return d->warmup ? 0 : -1;
}

static int parse_drift(trig_drift *d, const json_t *section, const char *path,
                       char *err, size_t errlen)
{
    char sub[PLCFG_PATH_MAX];
    bool has_size;
    if (plcfg_check_keys(section, path, drift_keys, err, errlen) < 0 ||
        plcfg_int(section, path, "evaluation_interval_data_points", 1000, 1,
                  100000000, &d->interval, err, errlen) < 0 ||
        plcfg_opt_int(section, path, "sample_size", 2, 100000000,
                      &d->sample_size, &has_size, err, errlen) < 0)
        return -1;
    /* Modyn's default of 5,000 rows; null compares whole windows. */
    json_t *size = json_object_get(section, "sample_size");
    if (!has_size)
        d->sample_size = size ? 0 : 5000;
    return parse_windows(d, json_object_get(section, "windowing_strategy"),
                         plcfg_join(sub, sizeof sub, path, "windowing_strategy"),
                         err, errlen) < 0 ||
           parse_metrics(d, json_object_get(section, "metrics"),
                         plcfg_join(sub, sizeof sub, path, "metrics"),
                         err, errlen) < 0 ||
           parse_aggregation(d, json_object_get(section, "aggregation_strategy"),
                             plcfg_join(sub, sizeof sub, path, "aggregation_strategy"),
                             err, errlen) < 0 ||
           parse_warmup(d, section, path, err, errlen) < 0
               ? -1 : 0;
}

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
    if (parse_drift(d, section, path, err, errlen) < 0) {
        drift_free(&d->base);
        return NULL;
    }
    return &d->base;
}
