/* trigger_perf_config.c -- a PerformanceTrigger section read into a
 * trig_perf (trigger_perf.h), Modyn's keys, errors naming the key.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_config.h"
#include "trigger_perf.h"

#define PERF_KEYS "id", "evaluation_interval_data_points", \
    "warmup_intervals", "warmup_policy", "performance_triggers_window_size", \
    "data_density_window_size", "mode", "forecasting_method", "evaluation", \
    "decision_criteria"
static const char *const perf_keys[] = {PERF_KEYS, NULL};
/* An AvoidableMisclassificationCostTrigger's: the performance trigger's
 * and its cost criterion's. */
static const char *const cost_keys[] = {
    PERF_KEYS, "avoidable_misclassification_latency_per_training_second",
    "expected_accuracy", "allow_reduction", "cost_tracking_window_size",
    NULL};
static const char *const evaluation_keys[] = {"device", "dataset", NULL};
static const char *const dataset_keys[] = {
    "dataset_id", "batch_size", "dataloader_workers", "metrics",
    "bytes_parser_function", "transformations", "label_transformer_function",
    "tokenizer", NULL};
/* Modyn's current criteria, in perf_kind's order. */
static const char *const criterion_ids[] = {
    "StaticPerformanceThresholdCriterion",
    "DynamicQuantilePerformanceThresholdCriterion",
    "DynamicRollingAveragePerformanceThresholdCriterion",
    "StaticNumberMisclassificationCriterion", NULL};
/* Modyn's criterion before its #626, removed there: refused by name, so an
 * old file is told what replaced it rather than that the id is unknown. */
static const char removed_dynamic[] = "DynamicPerformanceThresholdCriterion";
static const char *const modes[] = {"hindsight", "lookahead", NULL};
static const char *const methods[] = {"ridge_regression", "rolling_average",
                                      NULL};

/* Modyn's name of a metric kind, which criteria may use too. */
static const char *modyn_name(const pl_metric *m) {
    return m->kind == PL_METRIC_ACCURACY ? "Accuracy"
         : m->kind == PL_METRIC_F1 ? "F1Score" : "RocAuc";
}

/* evaluation.dataset.metrics, which must hold Accuracy (Modyn's rule:
 * the misclassification counts come from it). */
static int parse_metrics(trig_perf *p, const json_t *list, const char *path,
                         char *err, size_t errlen) {
    size_t n = json_array_size(list);
    bool accuracy = false;
    if (!json_is_array(list) || n == 0 || n > PL_EVAL_MAX_METRICS)
        return plcfg_fail(err, errlen, path, NULL, "expected a list of 1 to "
                          "%d metrics", PL_EVAL_MAX_METRICS);
    for (; p->nmetrics < n; p->nmetrics++) {
        char at[PLCFG_PATH_MAX];
        pl_metric *m = &p->metrics[p->nmetrics];
        snprintf(at, sizeof(at), "%s[%zu]", path, p->nmetrics);
        if (pl_metric_parse(json_array_get(list, p->nmetrics), at, m, err,
                            errlen) != 0)
            return -1;
        accuracy = accuracy || m->kind == PL_METRIC_ACCURACY;
    }
    return accuracy ? 0 : plcfg_fail(err, errlen, path, NULL, "must hold "
                                     "Accuracy (the performance trigger "
                                     "counts misclassifications with it)");
}

static int parse_evaluation(trig_perf *p, const json_t *ev, const char *path,
                            char *err, size_t errlen) {
    char at[PLCFG_PATH_MAX], sub[PLCFG_PATH_MAX];
    if (!ev) return plcfg_fail(err, errlen, path, NULL, "missing key");
    if (plcfg_check_keys(ev, path, evaluation_keys, err, errlen) < 0)
        return -1;
    const json_t *ds = json_object_get(ev, "dataset");
    plcfg_join(at, sizeof(at), path, "dataset");
    if (!ds) return plcfg_fail(err, errlen, at, NULL, "missing key");
    if (plcfg_check_keys(ds, at, dataset_keys, err, errlen) < 0) return -1;
    if (json_object_get(ds, "label_transformer_function"))
        return plcfg_fail(err, errlen, at, "label_transformer_function",
                          "not supported: transform in the evaluation "
                          "command");
    return parse_metrics(p, json_object_get(ds, "metrics"),
                         plcfg_join(sub, sizeof(sub), at, "metrics"), err,
                         errlen);
}

/* The index of the trigger's metric a criterion names (by the name
 * results use, or Modyn's), or -1. */
static int find_metric(const trig_perf *p, const char *name) {
    for (size_t i = 0; i < p->nmetrics; i++)
        if (strcmp(p->metrics[i].name, name) == 0) return (int)i;
    for (size_t i = 0; i < p->nmetrics; i++)
        if (strcmp(modyn_name(&p->metrics[i]), name) == 0) return (int)i;
    return -1;
}

/* A dynamic criterion's keys (Modyn's defaults: window_size 10,
 * quantile 0.05, deviation 0.05, relative), into Modyn's dynamic policy
 * with direction "lower": a low score fires. */
static int parse_dynamic(const json_t *obj, const char *path,
                         perf_criterion *c, char *err, size_t errlen) {
    drift_criterion *d = &c->dynamic;
    bool quantile = c->kind == PERF_QUANTILE;
    d->kind = quantile ? DRIFT_CRIT_QUANTILE : DRIFT_CRIT_ROLLING;
    d->lower = true;
    if (plcfg_int(obj, path, "window_size", 10, 1, 10000, &d->window_size,
                  err, errlen) < 0 ||
        (quantile ? plcfg_num(obj, path, "quantile", 0.05, 0.0, 1.0,
                              &d->quantile, err, errlen)
                  : plcfg_num(obj, path, "deviation", 0.05, -1e300, 1e300,
                              &d->deviation, err, errlen) < 0 ||
                        plcfg_bool(obj, path, "absolute", false,
                                   &d->absolute, err, errlen)) < 0)
        return -1;
    d->history = calloc((size_t)d->window_size, sizeof(*d->history));
    return d->history ? 0 : plcfg_fail(err, errlen, path, NULL,
                                       "out of memory");
}

static int parse_threshold_criterion(trig_perf *p, const json_t *obj,
                                     const char *path, perf_criterion *c,
                                     char *err, size_t errlen) {
    static const char *const keys[][7] = {
        {"id", "metric", "metric_threshold", "needs_calibration", NULL},
        {"id", "metric", "window_size", "quantile", "needs_calibration",
         NULL},
        {"id", "metric", "window_size", "deviation", "absolute",
         "needs_calibration", NULL}};
    const char *metric;
    if (plcfg_check_keys(obj, path, keys[c->kind], err, errlen) < 0 ||
        plcfg_str(obj, path, "metric", "Accuracy", &metric, err, errlen) < 0)
        return -1;
    if (c->kind == PERF_STATIC
            ? plcfg_num(obj, path, "metric_threshold", 0.0, -1e9, 1e9,
                        &c->threshold, err, errlen) < 0
            : parse_dynamic(obj, path, c, err, errlen) < 0)
        return -1;
    int m = find_metric(p, metric);
    if (m < 0)
        return plcfg_fail(err, errlen, path, "metric", "'%s' is not one of "
                          "evaluation.dataset.metrics", metric);
    c->metric = (size_t)m;
    return 0;
}

static int parse_misclassification(const json_t *obj, const char *path,
                                   perf_criterion *c, char *err,
                                   size_t errlen) {
    static const char *const keys[] = {
        "id", "avoidable_misclassification_threshold", "expected_accuracy",
        "allow_reduction", "needs_calibration", NULL};
    if (plcfg_check_keys(obj, path, keys, err, errlen) < 0 ||
        plcfg_int(obj, path, "avoidable_misclassification_threshold", -1, 1,
                  INT64_MAX / 2, &c->max_avoidable, err, errlen) < 0 ||
        plcfg_num(obj, path, "expected_accuracy", NAN, 0, 1,
                  &c->expected_accuracy, err, errlen) < 0 ||
        plcfg_bool(obj, path, "allow_reduction", false, &c->allow_reduction,
                   err, errlen) < 0)
        return -1;
    if (c->max_avoidable < 0)
        return plcfg_fail(err, errlen, path, NULL, "missing key "
                          "avoidable_misclassification_threshold");
    return 0;
}

static int parse_criterion(trig_perf *p, const json_t *obj, const char *path,
                           perf_criterion *c, char *err, size_t errlen) {
    int id;
    const char *given;
    if (!json_is_object(obj) || !json_object_get(obj, "id"))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping with "
                          "an id");
    if (plcfg_str(obj, path, "id", NULL, &given, err, errlen) < 0) return -1;
    if (strcmp(given, removed_dynamic) == 0)
        return plcfg_fail(err, errlen, path, "id", "%s was removed from "
                          "Modyn: use DynamicQuantilePerformanceThreshold"
                          "Criterion{metric, window_size, quantile} or "
                          "DynamicRollingAveragePerformanceThreshold"
                          "Criterion{metric, window_size, deviation, "
                          "absolute}", removed_dynamic);
    if (plcfg_enum(obj, path, "id", criterion_ids, 0, &id, err, errlen) < 0)
        return -1;
    c->kind = (perf_kind)id;
    c->expected_accuracy = NAN;
    return c->kind == PERF_MISCLASSIFICATION
               ? parse_misclassification(obj, path, c, err, errlen)
               : parse_threshold_criterion(p, obj, path, c, err, errlen);
}

static int parse_criteria(trig_perf *p, const json_t *obj, const char *path,
                          char *err, size_t errlen) {
    size_t n = json_object_size(obj);
    if (p->cost && !obj) return 0; /* the cost criterion may be alone */
    if (!json_is_object(obj) || n == 0 || n > PERF_MAX_CRITERIA)
        return plcfg_fail(err, errlen, path, NULL, "must name 1 to %d "
                          "criteria", PERF_MAX_CRITERIA);
    if (!(p->criteria = calloc(n, sizeof(*p->criteria))))
        return plcfg_fail(err, errlen, path, NULL, "out of memory");
    const char *name;
    const json_t *c;
    char at[PLCFG_PATH_MAX];
    /* counted before it is read, so that perf_free frees what a
     * criterion refused half-way had allocated */
    json_object_foreach((json_t *)obj, name, c) {
        perf_criterion *crit = &p->criteria[p->ncriteria++];
        if (parse_criterion(p, c, plcfg_join(at, sizeof(at), path, name),
                            crit, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* mode (hindsight only), forecasting_method, the window of
 * post-training scores, and the warm-up. */
static int parse_policy(trig_perf *p, const json_t *section, const char *path,
                        char *err, size_t errlen) {
    int mode, method;
    int64_t window, density;
    if (plcfg_enum(section, path, "mode", modes, 0, &mode, err, errlen) < 0 ||
        plcfg_enum(section, path, "forecasting_method", methods, 0, &method,
                   err, errlen) < 0 ||
        plcfg_int(section, path, "performance_triggers_window_size", 10, 1,
                  PERF_MAX_WINDOW, &window, err, errlen) < 0 ||
        plcfg_int(section, path, "data_density_window_size", 0, 0, 1000000,
                  &density, err, errlen) < 0)
        return -1;
    if (mode != 0)
        return plcfg_fail(err, errlen, path, "mode", "only hindsight is "
                          "supported (as in Modyn's own experiments)");
    p->tracker.window = (size_t)window;
    p->tracker.ridge = method == 0;
    return trig_warmup_parse(&p->warm, section, path, err, errlen);
}

/* The cost criterion's keys (an AvoidableMisclassificationCostTrigger),
 * which needs a warm-up, as Modyn's: the expected accuracy calibrates. */
static int parse_cost(trig_perf *p, const json_t *section, const char *path,
                      char *err, size_t errlen) {
    perf_criterion *c = &p->avoidable;
    c->kind = PERF_MISCLASSIFICATION;
    if (plcfg_num(section, path,
                  "avoidable_misclassification_latency_per_training_second",
                  -1, 0, 1e12, &p->conversion, err, errlen) < 0 ||
        plcfg_num(section, path, "expected_accuracy", NAN, 0, 1,
                  &c->expected_accuracy, err, errlen) < 0 ||
        plcfg_bool(section, path, "allow_reduction", false,
                   &c->allow_reduction, err, errlen) < 0 ||
        plcfg_int(section, path, "cost_tracking_window_size", 1000, 1,
                  1000000, &p->cost_window, err, errlen) < 0)
        return -1;
    if (p->conversion < 0)
        return plcfg_fail(err, errlen, path, NULL, "missing key "
                          "avoidable_misclassification_latency_per_training_"
                          "second");
    if (!json_object_get(section, "warmup_policy"))
        return plcfg_fail(err, errlen, path, "warmup_policy", "required "
                          "(the expected accuracy calibrates meanwhile)");
    return 0;
}

/* Whether a criterion needs calibration (Modyn's needs_calibration):
 * all but the static threshold. */
static bool needs_warmup(const trig_perf *p) {
    for (size_t i = 0; i < p->ncriteria; i++)
        if (p->criteria[i].kind != PERF_STATIC) return true;
    return false;
}

int perf_parse(trig_perf *p, const json_t *section, const char *path,
               char *err, size_t errlen) {
    char sub[PLCFG_PATH_MAX];
    if (plcfg_check_keys(section, path, p->cost ? cost_keys : perf_keys, err,
                         errlen) < 0 ||
        (p->cost && parse_cost(p, section, path, err, errlen) < 0) ||
        plcfg_int(section, path, "evaluation_interval_data_points", 1000, 1,
                  100000000, &p->interval, err, errlen) < 0 ||
        parse_evaluation(p, json_object_get(section, "evaluation"),
                         plcfg_join(sub, sizeof(sub), path, "evaluation"),
                         err, errlen) < 0 ||
        parse_criteria(p, json_object_get(section, "decision_criteria"),
                       plcfg_join(sub, sizeof(sub), path, "decision_criteria"),
                       err, errlen) < 0)
        return -1;
    if (parse_policy(p, section, path, err, errlen) < 0) return -1;
    return needs_warmup(p) && !p->warm.policy
               ? plcfg_fail(err, errlen, path, "warmup_policy", "required "
                            "while a dynamic or misclassification criterion "
                            "calibrates (as Modyn's validator says)")
               : 0;
}
