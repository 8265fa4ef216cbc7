/* eval_config.c -- a pipeline file's evaluation section (eval.h), in
 * Modyn's shape: `handlers` say when and on which intervals models are
 * evaluated, `datasets` on which dataset and with which metrics.
 *
 * aegis evaluates on one dataset: every handler's `datasets` must name
 * it. Modyn's keys that a framework's code would fill
 * (bytes_parser_function and the like, dataloader_workers) are accepted
 * and left to the evaluation command, which reads the samples itself.
 */
#include "eval.h"

#include <stdio.h>
#include <string.h>

#include "pl_config.h"

static const char *const section_keys[] = {"command", "gpus", "mem",
                                           "handlers", "datasets", NULL};
static const char *const handler_keys[] = {"name", "execution_time", "models",
                                           "strategy", "datasets", NULL};
static const char *const dataset_keys[] = {
    "dataset_id", "batch_size", "dataloader_workers", "metrics",
    "bytes_parser_function", "transformations", "label_transformer_function",
    "tokenizer", NULL};
static const char *const execution_times[] = {
    "after_training", "after_pipeline", "manual", NULL};
/* In the order of pl_eval_models; "training" is refused below. */
static const char *const model_choices[] = {"matrix", "most_recent",
                                            "active", "training", NULL};

/* models against execution_time, as Modyn's validator and code have
 * them. */
static int check_models(const pl_eval_handler *out, int models,
                        const char *path, char *err, size_t errlen) {
    if (models == 3)
        return plcfg_fail(err, errlen, path, "models", "'training' is not "
                          "supported: Modyn's code looks for 'train' and so "
                          "evaluates no model with it; most_recent evaluates "
                          "the active model and the one in training, matrix "
                          "every model");
    if (models == PL_EVAL_ACTIVE && !out->after_pipeline && !out->manual)
        return plcfg_fail(err, errlen, path, "models", "'active' needs "
                          "execution_time after_pipeline (Modyn allows only "
                          "matrix after training: the next model is not "
                          "known yet); most_recent works after training");
    return 0;
}

static int parse_metrics(const json_t *list, const char *path,
                         pl_eval_config *c, char *err, size_t errlen) {
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0 || n > PL_EVAL_MAX_METRICS)
        return plcfg_fail(err, errlen, path, NULL, "expected a list of 1 to "
                          "%d metrics", PL_EVAL_MAX_METRICS);
    for (c->nmetrics = 0; c->nmetrics < n; c->nmetrics++) {
        char at[PLCFG_PATH_MAX];
        snprintf(at, sizeof(at), "%s[%zu]", path, c->nmetrics);
        if (pl_metric_parse(json_array_get(list, c->nmetrics), at,
                            &c->metrics[c->nmetrics], err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* evaluation.datasets: exactly one, with its metrics. */
static int parse_datasets(const json_t *sec, pl_eval_config *c, char *err,
                          size_t errlen) {
    const json_t *list = json_object_get(sec, "datasets");
    const char *path = "evaluation.datasets[0]";
    if (!json_is_array(list) || json_array_size(list) != 1)
        return plcfg_fail(err, errlen, "evaluation", "datasets",
                          "expected a list of one dataset (evaluating on "
                          "several is not supported yet)");
    const json_t *d = json_array_get(list, 0);
    int64_t batch;
    char at[PLCFG_PATH_MAX];
    if (plcfg_check_keys(d, path, dataset_keys, err, errlen) ||
        plcfg_str(d, path, "dataset_id", NULL, &c->dataset, err, errlen) ||
        plcfg_int(d, path, "batch_size", 0, 1, 1 << 30, &batch, err, errlen))
        return -1;
    if (!c->dataset)
        return plcfg_fail(err, errlen, path, NULL, "missing key dataset_id");
    c->batch_size = (long)batch;
    return parse_metrics(json_object_get(d, "metrics"),
                         plcfg_join(at, sizeof(at), path, "metrics"), c, err,
                         errlen);
}

/* A handler's datasets: the one evaluation dataset (or left out). */
static int check_handler_datasets(const json_t *h, const char *path,
                                  const pl_eval_config *c, char *err,
                                  size_t errlen) {
    const json_t *list = json_object_get(h, "datasets"), *d;
    size_t i;
    if (list && !json_is_array(list))
        return plcfg_fail(err, errlen, path, "datasets", "expected a list "
                          "of evaluation.datasets' dataset_id");
    json_array_foreach(list, i, d) {
        if (!json_is_string(d) || strcmp(json_string_value(d), c->dataset))
            return plcfg_fail(err, errlen, path, "datasets", "[%zu] is not "
                              "%s, the dataset of evaluation.datasets", i,
                              c->dataset);
    }
    return 0;
}

static int parse_handler(const json_t *h, size_t i, pl_eval_config *c,
                         char *err, size_t errlen) {
    pl_eval_handler *out = &c->handlers[i];
    char path[PLCFG_PATH_MAX], at[PLCFG_PATH_MAX];
    const char *name;
    int when, models;
    snprintf(path, sizeof(path), "evaluation.handlers[%zu]", i);
    if (plcfg_check_keys(h, path, handler_keys, err, errlen) ||
        plcfg_str(h, path, "name", NULL, &name, err, errlen) ||
        plcfg_enum(h, path, "execution_time", execution_times, -1, &when, err,
                   errlen) ||
        plcfg_enum(h, path, "models", model_choices, 1, &models, err,
                   errlen) ||
        check_handler_datasets(h, path, c, err, errlen))
        return -1;
    if (when < 0)
        return plcfg_fail(err, errlen, path, NULL, "missing key "
                          "execution_time (after_training or after_pipeline)");
    if (name) snprintf(out->name, sizeof(out->name), "%s", name);
    else snprintf(out->name, sizeof(out->name), "handler %zu", i);
    out->after_pipeline = when == 1;
    out->manual = when == 2;
    if (check_models(out, models, path, err, errlen)) return -1;
    out->models = (pl_eval_models)models;
    if (pl_eval_strategy_parse(json_object_get(h, "strategy"),
                               plcfg_join(at, sizeof(at), path, "strategy"),
                               &out->strategy, err, errlen) != 0)
        return -1;
    c->nhandlers++;
    if (out->strategy.kind == PL_EVAL_BETWEEN_TRIGGERS &&
        !out->after_pipeline && !out->manual)
        return plcfg_fail(err, errlen, path, "execution_time", "must be "
                          "after_pipeline for BetweenTwoTriggersEvalStrategy "
                          "(the next trigger is not known after a training)");
    return 0;
}

int pl_eval_config_parse(const json_t *sec, pl_eval_config *c, char *err,
                         size_t errlen) {
    memset(c, 0, sizeof(*c));
    const json_t *list = json_object_get(sec, "handlers");
    size_t n = json_array_size(list);
    if (plcfg_check_keys(sec, "evaluation", section_keys, err, errlen))
        return -1;
    /* only a PerformanceTrigger's command: no handlers, no dataset */
    if (!list && !json_object_get(sec, "datasets")) return 0;
    if (parse_datasets(sec, c, err, errlen)) return -1;
    if (!json_is_array(list) || n == 0 || n > PL_EVAL_MAX_HANDLERS)
        return plcfg_fail(err, errlen, "evaluation", "handlers", "expected a "
                          "list of 1 to %d handlers", PL_EVAL_MAX_HANDLERS);
    for (size_t i = 0; i < n; i++)
        if (parse_handler(json_array_get(list, i), i, c, err, errlen) != 0) {
            pl_eval_config_free(c);
            return -1;
        }
    return 0;
}

void pl_eval_config_free(pl_eval_config *c) {
    for (size_t i = 0; i < c->nhandlers; i++)
        pl_eval_strategy_free(&c->handlers[i].strategy);
    c->nhandlers = 0;
}
