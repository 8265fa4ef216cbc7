/* drift_criterion.c -- turning a drift distance into a decision (drift.h),
 * with Modyn's criteria and its comparisons (decision_policy.py): a
 * static threshold (drift at or above it); a dynamic quantile (drift when
 * the distance is above the (1 - `quantile`) quantile of the last
 * `window_size` distances); a rolling average (drift when the distance
 * reaches the average of the last `window_size` plus `deviation`, times
 * the average unless `absolute`). A dynamic criterion with no history
 * yet says drift, as Modyn's does. aegis adds a hypothesis test
 * (p < p_val), which Modyn's current criteria lack.
 */
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "pl_config.h"

static const char *const crit_names[] = {
    "ThresholdDecisionCriterion", "DynamicQuantileThresholdCriterion",
    "DynamicRollingAverageThresholdCriterion",
    "HypothesisTestDecisionCriterion", NULL};

static const char *const crit_keys[][6] = {
    {"id", "threshold", "needs_calibration", NULL},
    {"id", "window_size", "quantile", "needs_calibration", NULL},
    {"id", "window_size", "deviation", "absolute", "needs_calibration", NULL},
    {"id", "needs_calibration", NULL},
};

/* The fields of the kind already read into c->kind. */
static int parse_fields(const json_t *obj, const char *path,
                        drift_criterion *c, char *err, size_t errlen)
{
    switch (c->kind) {
    case DRIFT_CRIT_THRESHOLD:
        if (!json_object_get(obj, "threshold"))
            return plcfg_fail(err, errlen, path, "threshold", "missing");
        return plcfg_num(obj, path, "threshold", 0, -1e300, 1e300,
                         &c->threshold, err, errlen);
    case DRIFT_CRIT_QUANTILE:
        return plcfg_int(obj, path, "window_size", 10, 1, 10000,
                         &c->window_size, err, errlen) < 0 ||
                       plcfg_num(obj, path, "quantile", 0.05, 0.0, 1.0,
                                 &c->quantile, err, errlen) < 0
                   ? -1 : 0;
    case DRIFT_CRIT_ROLLING:
        return plcfg_int(obj, path, "window_size", 10, 1, 10000,
                         &c->window_size, err, errlen) < 0 ||
                       plcfg_num(obj, path, "deviation", 0.05, 0.0, 1e300,
                                 &c->deviation, err, errlen) < 0 ||
                       plcfg_bool(obj, path, "absolute", false, &c->absolute,
                                  err, errlen) < 0
                   ? -1 : 0;
    case DRIFT_CRIT_HYPOTHESIS:
        return 0;
    }
    return 0;
}

int drift_criterion_parse(const json_t *obj, const char *path,
                          drift_criterion *c, char *err, size_t errlen)
{
    int kind;
    memset(c, 0, sizeof *c);
    if (!json_is_object(obj))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping with an id");
    if (!json_object_get(obj, "id"))
        return plcfg_fail(err, errlen, path, "id", "missing");
    if (plcfg_enum(obj, path, "id", crit_names, 0, &kind, err, errlen) < 0)
        return -1;
    c->kind = (drift_crit_kind)kind;
    if (plcfg_check_keys(obj, path, crit_keys[kind], err, errlen) < 0 ||
        parse_fields(obj, path, c, err, errlen) < 0)
        return -1;
    if (drift_criterion_dynamic(c)) {
        c->history = calloc((size_t)c->window_size, sizeof *c->history);
        if (!c->history)
            return plcfg_fail(err, errlen, path, NULL, "out of memory");
    }
    return 0;
}

bool drift_criterion_dynamic(const drift_criterion *c)
{
    return c->kind == DRIFT_CRIT_QUANTILE || c->kind == DRIFT_CRIT_ROLLING;
}

void drift_criterion_observe(drift_criterion *c, double distance)
{
    if (!drift_criterion_dynamic(c))
        return;
    c->history[c->next] = distance;
    c->next = (c->next + 1) % (size_t)c->window_size;
    if (c->nhistory < (size_t)c->window_size)
        c->nhistory++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value below which a share 1 - quantile of the history lies (for
 * `lower`, a share quantile), by linear interpolation between the sorted
 * values, as numpy's default. */
static double history_quantile(const drift_criterion *c)
{
    double sorted[c->nhistory];
    memcpy(sorted, c->history, c->nhistory * sizeof *sorted);
    qsort(sorted, c->nhistory, sizeof *sorted, cmp_double);
    double q = c->lower ? c->quantile : 1.0 - c->quantile;
    double pos = q * (double)(c->nhistory - 1);
    size_t lo = (size_t)pos;
    size_t hi = lo + 1 < c->nhistory ? lo + 1 : lo;
    return sorted[lo] + (pos - (double)lo) * (sorted[hi] - sorted[lo]);
}

static double history_mean(const drift_criterion *c)
{
    double sum = 0;
    for (size_t i = 0; i < c->nhistory; i++)
        sum += c->history[i];
    return sum / (double)c->nhistory;
}

/* Modyn's rule: the distance above the average reaches deviation, or
 * deviation times the average (not a share of |average|: Modyn's
 * formula, kept as it is). */
static bool rolling_exceeds(const drift_criterion *c, double distance)
{
    double mean = history_mean(c);
    double above = c->lower ? mean - distance : distance - mean;
    return above >= (c->absolute ? c->deviation : c->deviation * mean);
}

bool drift_criterion_decide(drift_criterion *c, double distance,
                            double p_value, double p_val)
{
    bool drift = false;
    switch (c->kind) {
    case DRIFT_CRIT_THRESHOLD:
        return c->lower ? distance <= c->threshold : distance >= c->threshold;
    case DRIFT_CRIT_HYPOTHESIS:
        return p_value < p_val;
    case DRIFT_CRIT_QUANTILE: /* strictly above, as Modyn's */
        drift = c->nhistory == 0 ||
                (c->lower ? distance < history_quantile(c)
                          : distance > history_quantile(c));
        break;
    case DRIFT_CRIT_ROLLING:
        drift = c->nhistory == 0 || rolling_exceeds(c, distance);
        break;
    }
    drift_criterion_observe(c, distance);
    return drift;
}

void drift_criterion_free(drift_criterion *c)
{
    free(c->history);
    c->history = NULL;
}
