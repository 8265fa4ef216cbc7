/* perf_policy.c -- a PerformanceTrigger's tracker of scores and its
 * decision criteria (perf.h), as Modyn decides in hindsight mode.
 */
#include "perf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ridge regression's slope penalty, and the observations it needs before
 * it is used instead of the mean: Modyn's. */
#define PERF_RIDGE_ALPHA 0.5
#define PERF_RIDGE_MIN 5

double perf_forecast(const double *obs, size_t n, bool ridge) {
    double mean = 0;
    for (size_t i = 0; i < n; i++) mean += obs[i] / (double)n;
    if (n == 0) return NAN;
    if (!ridge || n < PERF_RIDGE_MIN) return mean;
    /* y = a + b x on x = 0..n-1, the intercept not penalised */
    double xbar = (double)(n - 1) / 2, sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        sxy += ((double)i - xbar) * (obs[i] - mean);
        sxx += ((double)i - xbar) * ((double)i - xbar);
    }
    double slope = sxy / (sxx + PERF_RIDGE_ALPHA);
    return mean + slope * ((double)n - xbar);
}

/* The forecast over the kept scores that pick says of each. */
static double perf_forecast_of(const perf_tracker *t,
                               double (*pick)(const perf_obs *, size_t),
                               size_t metric) {
    double obs[64];
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < sizeof(obs) / sizeof(*obs); i++) {
        double v = pick(&t->after[t->n - 1 - i], metric);
        if (!isnan(v)) obs[n++] = v;
    }
    /* newest first above: reversed into time order */
    for (size_t i = 0; i < n / 2; i++) {
        double tmp = obs[i];
        obs[i] = obs[n - 1 - i];
        obs[n - 1 - i] = tmp;
    }
    return perf_forecast(obs, n, t->ridge);
}

static double pick_metric(const perf_obs *o, size_t metric) {
    return o->values[metric];
}

static double pick_accuracy(const perf_obs *o, size_t metric) {
    (void)metric;
    return o->samples ? 1 - (double)o->misclassified / (double)o->samples
                      : NAN;
}

double perf_expected(const perf_tracker *t, size_t metric) {
    return perf_forecast_of(t, pick_metric, metric);
}

double perf_expected_accuracy(const perf_tracker *t) {
    return perf_forecast_of(t, pick_accuracy, 0);
}

int perf_after_training(perf_tracker *t, const perf_obs *o) {
    if (!t->after && !(t->after = calloc(t->window, sizeof(*t->after))))
        return -1;
    if (t->n == t->window) {
        memmove(t->after, t->after + 1, (t->n - 1) * sizeof(*t->after));
        t->n--;
    }
    t->after[t->n++] = *o;
    return 0;
}

void perf_tracker_free(perf_tracker *t) {
    free(t->after);
    t->after = NULL;
    t->n = 0;
}

double perf_new_avoidable(const perf_criterion *c, const perf_tracker *t,
                          const perf_obs *o) {
    double expected = isnan(c->expected_accuracy) ? perf_expected_accuracy(t)
                                                  : c->expected_accuracy;
    if (isnan(expected)) return NAN; /* nothing to expect yet */
    double extra = (double)o->misclassified -
                   (1 - expected) * (double)o->samples;
    return extra < 0 && !c->allow_reduction ? 0 : extra;
}

/* The avoidable misclassifications summed since the last trigger;
 * whether they reach the threshold. */
static bool perf_avoidable(perf_criterion *c, const perf_tracker *t,
                           const perf_obs *o) {
    double extra = perf_new_avoidable(c, t, o);
    if (isnan(extra)) return false;
    c->avoidable += (int64_t)llround(extra);
    return c->avoidable >= c->max_avoidable;
}

bool perf_decide(perf_criterion *c, const perf_tracker *t,
                 const perf_obs *o) {
    double v = o->values[c->metric];
    switch (c->kind) {
    case PERF_STATIC: /* Modyn: at or below the threshold */
        return v <= c->threshold;
    case PERF_QUANTILE: /* Modyn's dynamic policies, a low score firing; */
    case PERF_ROLLING:  /* an undefined score is not one to remember */
        return !isnan(v) && drift_criterion_decide(&c->dynamic, v, NAN, 0);
    default:
        return perf_avoidable(c, t, o);
    }
}

void perf_reset(perf_criterion *c) {
    c->avoidable = 0;
}
