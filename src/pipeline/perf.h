/* perf.h -- a PerformanceTrigger's decisions (Modyn's, hindsight mode):
 * what the newest model scored on the newest samples, against what
 * models scored right after their trainings.
 *
 *   perf_policy.c  the tracker of scores and the decision criteria
 *   trigger_perf.c the trigger: detection points, asking for scores
 * and the cost trigger's forecast of a training's time (trigger_cost.c).
 *
 * The criteria (any one fires):
 *   StaticPerformanceThresholdCriterion{metric, metric_threshold}
 *       the score is below metric_threshold
 *   DynamicPerformanceThresholdCriterion{metric, allowed_deviation}
 *       the score is below the expected one by more than allowed_deviation
 *   StaticNumberMisclassificationCriterion{
 *           avoidable_misclassification_threshold, expected_accuracy,
 *           allow_reduction}
 *       the misclassifications beyond those the expected accuracy
 *       allows, summed since the last trigger, reach the threshold
 * "Expected" is the forecast (forecasting_method) over the scores models
 * had on the detection samples right before their training, measured
 * after it: the last performance_triggers_window_size of them.
 */
#ifndef AEGIS_PL_PERF_H
#define AEGIS_PL_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drift.h"
#include "eval.h"

/* One evaluation: its samples, those misclassified (top-1), and each of
 * the trigger's metrics (NAN where not defined). */
typedef struct perf_obs {
    size_t samples, misclassified;
    double values[PL_EVAL_MAX_METRICS];
} perf_obs;

typedef enum perf_kind {
    PERF_STATIC,
    PERF_QUANTILE,              /* DynamicQuantilePerformanceThreshold... */
    PERF_ROLLING,               /* DynamicRollingAveragePerformance... */
    PERF_MISCLASSIFICATION
} perf_kind;

typedef struct perf_criterion {
    perf_kind kind;
    size_t metric;              /* index in the trigger's metrics */
    double threshold;           /* static: metric_threshold */
    drift_criterion dynamic;    /* QUANTILE, ROLLING: Modyn's dynamic
                                   policy on the scores, direction lower */
    int64_t max_avoidable;      /* misclassification threshold */
    double expected_accuracy;   /*   NAN: forecast */
    bool allow_reduction;
    int64_t avoidable;          /*   summed since the last trigger */
} perf_criterion;

/* The scores right after the last trainings, newest last. */
typedef struct perf_tracker {
    perf_obs *after;
    size_t n, window;           /* kept, at most window */
    bool ridge;                 /* forecasting_method: ridge_regression
                                   (else rolling_average) */
} perf_tracker;

/* Modyn's forecast of the next of n observations: their mean, or with
 * ridge and 5 or more a ridge regression (alpha 0.5) on their index. */
double perf_forecast(const double *obs, size_t n, bool ridge);
/* The expected score of metric, or accuracy, from the tracker: NAN
 * before any training was measured. */
double perf_expected(const perf_tracker *t, size_t metric);
double perf_expected_accuracy(const perf_tracker *t);
/* A training's model measured right after it: kept (the oldest beyond
 * the window dropped). 0, or -1 when out of memory. */
int perf_after_training(perf_tracker *t, const perf_obs *o);
void perf_tracker_free(perf_tracker *t);

/* The cost triggers' model (trigger_cost.c): the training time of at
 * samples forecast by a ridge regression (alpha 1) of y (seconds) on x
 * (training set sizes) over n trainings; one training: its time. */
double cost_forecast(const double *x, const double *y, size_t n, double at);

/* The misclassifications of o beyond what the expected accuracy (c's,
 * else the tracker's forecast) allows: 0 for fewer, unless
 * c->allow_reduction; NAN when nothing is expected yet. */
double perf_new_avoidable(const perf_criterion *c, const perf_tracker *t,
                          const perf_obs *o);

/* Criterion c's decision on the newest evaluation o. */
bool perf_decide(perf_criterion *c, const perf_tracker *t,
                 const perf_obs *o);
/* A trigger fired: the sums restart. */
void perf_reset(perf_criterion *c);

#endif
