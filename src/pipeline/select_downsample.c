/* select_downsample.c -- a CoresetStrategy's downsampling_config (Modyn's
 * learned selection at the trainer): checked here, handed to each
 * trigger's training job as $AEGIS_DOWNSAMPLING (the config in force for
 * that trigger, JSON), and applied by the job through the aegis_downsample
 * Python module, which has the model's per-sample outputs.
 *
 * One config, or MultiDownsamplingConfig {downsampling_list,
 * downsampling_thresholds}: the i-th threshold is the trigger, counted
 * after the warm-up, from which the (i+1)-th config applies. The
 * strategy's warmup_triggers train without downsampling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_config.h"
#include "select_impl.h"

#define DS_PATH "selection_strategy.downsampling_config"

static const char *const ds_names[] = {"No", "Loss", "GradNorm",
                                       "Uncertainty", "RHOLoss", "RS2", NULL};
/* Each strategy's keys beyond the common ones. */
static const char *const ds_keys[][10] = {
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period", NULL},
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period", NULL},
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period", NULL},
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period",
     "score_metric", "balance", NULL},
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period",
     "holdout_set_ratio", "holdout_set_ratio_max", "holdout_set_strategy",
     "il_training_config", NULL},
    {"strategy", "ratio", "ratio_max", "sample_then_batch", "period",
     "with_replacement", NULL},
};
static const char *const not_here[] = {"Craig", "GradMatch", "Submodular",
                                       "KcenterGreedy", NULL};
static const char *const uncertainty_scores[] = {"LeastConfidence",
                                                 "Entropy", "Margin", NULL};

enum { DS_NO, DS_LOSS, DS_GRADNORM, DS_UNCERTAINTY, DS_RHO, DS_RS2 };

/* A strategy that Modyn has and aegis not: its own message. */
static int ds_not_supported(const json_t *d, const char *path, char *err,
                            size_t errlen) {
    const char *name = json_string_value(json_object_get(d, "strategy"));
    for (size_t i = 0; name && not_here[i]; i++)
        if (strcmp(name, not_here[i]) == 0)
            return plcfg_fail(err, errlen, path, "strategy", "%s is not "
                              "supported (Loss, GradNorm, Uncertainty, "
                              "RHOLoss, RS2 or No)", name);
    return 0;
}

/* RHOLoss's il_training_config: with a command (aegis's own key), the
 * supervisor trains the IL model on a holdout (sup_rho.c), which Simple
 * sizes by holdout_set_ratio; without one the training job brings its
 * own irreducible losses. */
static int ds_check_il(const json_t *d, const char *path, char *err,
                       size_t errlen) {
    static const char *const ways[] = {"Simple", "Twin", NULL};
    const json_t *il = json_object_get(d, "il_training_config");
    const json_t *cmd = json_object_get(il, "command"), *w;
    char at[PLCFG_PATH_MAX];
    int way;
    size_t i;
    if (plcfg_enum(d, path, "holdout_set_strategy", ways, 0, &way, err,
                   errlen) != 0)
        return -1;
    if (il && !json_is_object(il))
        return plcfg_fail(err, errlen, path, "il_training_config",
                          "must be a mapping");
    plcfg_join(at, sizeof(at), path, "il_training_config");
    json_array_foreach(cmd, i, w) if (!json_is_string(w))
        return plcfg_fail(err, errlen, at, "command", "expected words");
    if (cmd && !json_is_string(cmd) && json_array_size(cmd) == 0)
        return plcfg_fail(err, errlen, at, "command", "expected a command "
                          "line or a list of words");
    /* the holdout is a part of each set: some of it, not all */
    int64_t max, share;
    if (plcfg_int(d, path, "holdout_set_ratio_max", 100, 2, 1000000, &max,
                  err, errlen) ||
        plcfg_int(d, path, "holdout_set_ratio", max / 2, 1, max - 1, &share,
                  err, errlen))
        return -1;
    const json_t *ratio = json_object_get(d, "holdout_set_ratio");
    if (way == 1 && ratio && share != max / 2)
        return plcfg_fail(err, errlen, path, "holdout_set_ratio", "Twin "
                          "splits the set in halves (half of "
                          "holdout_set_ratio_max), as Modyn's");
    if (cmd && way == 0 && !json_is_integer(ratio))
        return plcfg_fail(err, errlen, path, "holdout_set_ratio", "missing "
                          "(the share of each training set the IL model "
                          "trains on)");
    return 0;
}

/* The keys of one strategy's config, and their ranges. */
static int ds_check_values(const json_t *d, const char *path, int kind,
                           char *err, size_t errlen) {
    int64_t max, ratio, period;
    bool then_batch;
    int score;
    if (plcfg_int(d, path, "ratio_max", 100, 1, 1000000, &max, err, errlen) ||
        plcfg_int(d, path, "ratio", kind == DS_NO ? max : -1, 0, max, &ratio,
                  err, errlen) ||
        plcfg_int(d, path, "period", 1, 0, 1000000, &period, err, errlen) ||
        plcfg_bool(d, path, "sample_then_batch", false, &then_batch, err,
                   errlen))
        return -1;
    if (ratio < 0)
        return plcfg_fail(err, errlen, path, "ratio", "missing (the share "
                          "kept, of ratio_max)");
    if (kind == DS_RHO && then_batch)
        return plcfg_fail(err, errlen, path, "sample_then_batch", "RHOLoss "
                          "selects batch by batch (as Modyn's)");
    if (kind == DS_RS2 && json_object_get(d, "sample_then_batch") &&
        !then_batch)
        return plcfg_fail(err, errlen, path, "sample_then_batch", "RS2 "
                          "selects before batching (it needs no forward "
                          "pass)");
    if (kind == DS_RS2 && (!json_is_boolean(json_object_get(
                               d, "with_replacement")) || period != 1))
        return plcfg_fail(err, errlen, path, json_object_get(
                              d, "with_replacement") ? "period"
                                                     : "with_replacement",
                          "RS2 needs with_replacement (true or false) and "
                          "period 1, as Modyn's");
    if (kind == DS_UNCERTAINTY &&
        json_is_true(json_object_get(d, "balance")) && !then_batch)
        return plcfg_fail(err, errlen, path, "balance", "needs "
                          "sample_then_batch (classes are balanced over the "
                          "whole set)");
    if (kind == DS_RHO && ds_check_il(d, path, err, errlen) != 0)
        return -1;
    if (kind == DS_UNCERTAINTY && !json_object_get(d, "score_metric"))
        return plcfg_fail(err, errlen, path, "score_metric", "missing "
                          "(LeastConfidence, Entropy or Margin)");
    return kind == DS_UNCERTAINTY
               ? plcfg_enum(d, path, "score_metric", uncertainty_scores, 0,
                            &score, err, errlen)
               : 0;
}

/* One strategy's config at path. */
static int ds_check_one(const json_t *d, const char *path, char *err,
                        size_t errlen) {
    int kind;
    if (!json_is_object(d) || !json_object_get(d, "strategy"))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping with "
                          "a strategy");
    if (ds_not_supported(d, path, err, errlen) ||
        plcfg_enum(d, path, "strategy", ds_names, 0, &kind, err, errlen) ||
        plcfg_check_keys(d, path, ds_keys[kind], err, errlen))
        return -1;
    return ds_check_values(d, path, kind, err, errlen);
}

/* MultiDownsamplingConfig: its list, and one threshold fewer, rising. */
static int ds_check_multi(pl_selector *sel, const json_t *d, char *err,
                          size_t errlen) {
    static const char *const keys[] = {"downsampling_list",
                                       "downsampling_thresholds", NULL};
    const json_t *list = json_object_get(d, "downsampling_list");
    const json_t *at = json_object_get(d, "downsampling_thresholds");
    size_t n = json_array_size(list);
    if (plcfg_check_keys(d, DS_PATH, keys, err, errlen)) return -1;
    if (n == 0 || json_array_size(at) != n - 1)
        return plcfg_fail(err, errlen, DS_PATH, "downsampling_thresholds",
                          "must hold one threshold fewer than "
                          "downsampling_list's strategies");
    for (size_t i = 0; i < n; i++) {
        char path[PLCFG_PATH_MAX];
        snprintf(path, sizeof(path), DS_PATH ".downsampling_list[%zu]", i);
        json_int_t t = json_integer_value(json_array_get(at, i ? i - 1 : 0));
        json_int_t before = i > 1 ? json_integer_value(json_array_get(at, i - 2))
                                  : -1;
        if (ds_check_one(json_array_get(list, i), path, err, errlen)) return -1;
        if (i > 0 && (!json_is_integer(json_array_get(at, i - 1)) ||
                      t <= before))
            return plcfg_fail(err, errlen, DS_PATH, "downsampling_thresholds",
                              "must be rising trigger numbers");
    }
    sel->downsampling = json_incref((json_t *)list);
    sel->ds_thresholds = json_incref((json_t *)at);
    return 0;
}

int sel_parse_downsampling(pl_selector *sel, const json_t *d, char *err,
                           size_t errlen) {
    if (!d) return 0;
    if (json_object_get(d, "downsampling_list"))
        return ds_check_multi(sel, d, err, errlen);
    if (ds_check_one(d, DS_PATH, err, errlen)) return -1;
    sel->downsampling = json_pack("[O]", d);
    sel->ds_thresholds = json_array();
    return 0;
}

const json_t *pl_selector_downsampling(const pl_selector *sel,
                                       uint32_t trigger) {
    if (!sel->downsampling || (int64_t)trigger < sel->warmup_triggers)
        return NULL;
    /* thresholds count the triggers after the warm-up, as Modyn's */
    json_int_t after = (json_int_t)trigger - sel->warmup_triggers;
    size_t i = 0, n = json_array_size(sel->ds_thresholds);
    while (i < n && after >= json_integer_value(
                                 json_array_get(sel->ds_thresholds, i)))
        i++;
    const json_t *d = json_array_get(sel->downsampling, i);
    const char *name = json_string_value(json_object_get(d, "strategy"));
    return name && strcmp(name, "No") != 0 ? d : NULL;
}
