/* drift_metric.c -- one entry of a drift trigger's `metrics` (drift.h):
 * Modyn's AlibiDetectMmdDriftMetric or AlibiDetectKSDriftMetric, read with
 * Modyn's keys, and the distance it measures between two windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "pl_config.h"

static const char *const metric_ids[] = {"AlibiDetectMmdDriftMetric",
                                         "AlibiDetectKSDriftMetric", NULL};
static const char *const mmd_keys[] = {
    "id", "num_permutations", "kernel", "configure_kernel_from_x_ref",
    "threshold", "p_val", "decision_criterion", NULL};
static const char *const ks_keys[] = {
    "id", "p_val", "correction", "alternative_hypothesis",
    "decision_criterion", NULL};
static const char *const corrections[] = {"bonferroni", "fdr", NULL};
static const char *const alternatives[] = {"two-sided", NULL};
static const char *const kernels[] = {"GaussianRBF", NULL};

/* A decision criterion given as a key, or the one the metric implies. */
static int parse_decision(const json_t *obj, const char *path,
                          drift_metric *m, bool has_threshold,
                          double threshold, char *err, size_t errlen)
{
    const json_t *crit = json_object_get(obj, "decision_criterion");
    char sub[PLCFG_PATH_MAX];
    if (crit) {
        if (has_threshold)
            return plcfg_fail(err, errlen, path, "threshold",
                              "give either threshold or decision_criterion");
        if (drift_criterion_parse(crit, plcfg_join(sub, sizeof sub, path,
                                  "decision_criterion"), &m->crit, err, errlen) < 0)
            return -1;
        if (m->crit.kind == DRIFT_CRIT_HYPOTHESIS && !m->is_ks &&
            m->permutations == 0)
            return plcfg_fail(err, errlen, path, "num_permutations",
                              "a hypothesis test needs num_permutations");
        return 0;
    }
    memset(&m->crit, 0, sizeof m->crit);
    bool test = m->is_ks || (m->permutations > 0 && !has_threshold);
    m->crit.kind = test ? DRIFT_CRIT_HYPOTHESIS : DRIFT_CRIT_THRESHOLD;
    m->crit.threshold = has_threshold ? threshold : DRIFT_MMD_DEFAULT_THRESHOLD;
    return 0;
}

static int parse_mmd(const json_t *obj, const char *path, drift_metric *m,
                     char *err, size_t errlen)
{
    int kernel;
    double threshold;
    if (plcfg_check_keys(obj, path, mmd_keys, err, errlen) < 0 ||
        plcfg_int(obj, path, "num_permutations", 0, 1, 100000,
                  &m->permutations, err, errlen) < 0 ||
        plcfg_enum(obj, path, "kernel", kernels, 0, &kernel, err, errlen) < 0 ||
        plcfg_bool(obj, path, "configure_kernel_from_x_ref", true,
                   &m->kernel_from_ref, err, errlen) < 0 ||
        plcfg_num(obj, path, "threshold", 0, -1e300, 1e300, &threshold, err,
                  errlen) < 0)
        return -1;
    bool has_threshold = json_object_get(obj, "threshold") != NULL;
    if (has_threshold && m->permutations > 0)
        return plcfg_fail(err, errlen, path, "threshold",
                          "threshold and num_permutations exclude each other");
    return parse_decision(obj, path, m, has_threshold, threshold, err, errlen);
}

static int parse_ks(const json_t *obj, const char *path, drift_metric *m,
                    char *err, size_t errlen)
{
    int correction, alternative;
    if (plcfg_check_keys(obj, path, ks_keys, err, errlen) < 0 ||
        plcfg_enum(obj, path, "correction", corrections, 0, &correction, err,
                   errlen) < 0 ||
        plcfg_enum(obj, path, "alternative_hypothesis", alternatives, 0,
                   &alternative, err, errlen) < 0)
        return -1;
    m->fdr = correction == 1;
    return parse_decision(obj, path, m, false, 0, err, errlen);
}

int drift_metric_parse(const json_t *obj, const char *path, const char *name,
                       drift_metric *m, char *err, size_t errlen)
{
    int id;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    if (!json_is_object(obj))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping with an id");
    if (!json_object_get(obj, "id"))
        return plcfg_fail(err, errlen, path, "id", "missing");
    if (plcfg_enum(obj, path, "id", metric_ids, 0, &id, err, errlen) < 0 ||
        plcfg_num(obj, path, "p_val", 0.05, 0.0, 1.0, &m->p_val, err,
                  errlen) < 0)
        return -1;
    m->is_ks = id == 1;
    return m->is_ks ? parse_ks(obj, path, m, err, errlen)
                    : parse_mmd(obj, path, m, err, errlen);
}

/* The bandwidth from both windows: the median distance over up to half
 * DRIFT_SIGMA_ROWS rows of each, side by side. */
static double joint_sigma(const float *ref, size_t nref, const float *cur,
                          size_t ncur, size_t dim)
{
    size_t half = DRIFT_SIGMA_ROWS / 2;
    size_t a = nref < half ? nref : half, b = ncur < half ? ncur : half;
    float *rows = malloc((a + b) * dim * sizeof *rows);
    if (!rows)
        return 1.0;
    memcpy(rows, ref, a * dim * sizeof(float));
    memcpy(rows + a * dim, cur, b * dim * sizeof(float));
    double sigma = drift_median_sigma(rows, a + b, dim);
    free(rows);
    return sigma;
}

int drift_metric_measure(const drift_metric *m, const float *ref, size_t nref,
                         const float *cur, size_t ncur, size_t dim,
                         double sigma, uint64_t seed, double *distance,
                         double *p_value)
{
    if (m->is_ks)
        return drift_ks(ref, nref, cur, ncur, dim, m->fdr, distance, p_value);
    if (!m->kernel_from_ref)
        sigma = joint_sigma(ref, nref, cur, ncur, dim);
    return drift_mmd(ref, nref, cur, ncur, dim, sigma, m->permutations, seed,
                     distance, p_value);
}

void drift_metric_free(drift_metric *m)
{
    drift_criterion_free(&m->crit);
}
