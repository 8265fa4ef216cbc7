/* trigger_drift_config.c -- reading a DataDriftTrigger section with
 * Modyn's keys (docs/pipelines.md, Triggers): the detection interval,
 * windows, metrics and their aggregation, and the warm-up; defaults are
 * Modyn's except where the file says. */
#include <stdlib.h>

#include "pl_config.h"
#include "trigger_drift.h"

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

bool drift_any_dynamic(const trig_drift *d)
{
    for (size_t i = 0; i < d->nmetrics; i++)
        if (drift_criterion_dynamic(&d->metrics[i].crit))
            return true;
    return false;
}

/* The warm-up (trigger_warmup.c); a dynamic criterion needs a policy,
 * as Modyn's validator says. */
static int parse_warmup(trig_drift *d, const json_t *section, const char *path,
                        char *err, size_t errlen)
{
    const json_t *policy = json_object_get(section, "warmup_policy");
    if (drift_any_dynamic(d) && (!policy || json_is_null(policy)))
        return plcfg_fail(err, errlen, path, "warmup_policy",
                          "required while a dynamic decision_criterion calibrates");
    return trig_warmup_parse(&d->warm, section, path, err, errlen);
}

int drift_parse(trig_drift *d, const json_t *section, const char *path,
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

