/* trigger.c -- building a trigger from its section by id, and feeding it
 * a batch of samples (trigger.h). The kinds live in trigger_*.c. */
#include "trigger_impl.h"

#include <stdio.h>
#include <string.h>

#include "pl_config.h"

pl_trigger *trig_new_at(const json_t *section, const char *path,
                        bool simple_only, char *err, size_t errlen)
{
    const char *id;
    if (!json_is_object(section)) {
        plcfg_fail(err, errlen, path, NULL, "must be a mapping with an id");
        return NULL;
    }
    if (plcfg_str(section, path, "id", NULL, &id, err, errlen) < 0)
        return NULL;
    if (!id) {
        plcfg_fail(err, errlen, path, "id", "missing (DataAmountTrigger, "
                   "TimeTrigger, DataDriftTrigger, PerformanceTrigger, "
                   "DataIncorporationLatencyCostTrigger, "
                   "AvoidableMisclassificationCostTrigger or "
                   "EnsembleTrigger)");
        return NULL;
    }
    if (strcmp(id, "DataAmountTrigger") == 0)
        return trig_amount_new(section, path, err, errlen);
    if (strcmp(id, "TimeTrigger") == 0)
        return trig_time_new(section, path, err, errlen);
    if (!simple_only && strcmp(id, "DataDriftTrigger") == 0)
        return trig_drift_new(section, path, err, errlen);
    if (!simple_only && strcmp(id, "PerformanceTrigger") == 0)
        return trig_perf_new(section, path, false, err, errlen);
    if (!simple_only &&
        strcmp(id, "AvoidableMisclassificationCostTrigger") == 0)
        return trig_perf_new(section, path, true, err, errlen);
    if (!simple_only && strcmp(id, "DataIncorporationLatencyCostTrigger") == 0)
        return trig_cost_new(section, path, err, errlen);
    if (!simple_only && strcmp(id, "EnsembleTrigger") == 0)
        return trig_ensemble_new(section, path, err, errlen);
    plcfg_fail(err, errlen, path, "id", "'%s' is not %s", id,
               simple_only ? "DataAmountTrigger or TimeTrigger"
                           : "DataAmountTrigger, TimeTrigger, "
                             "DataDriftTrigger, PerformanceTrigger, "
                             "DataIncorporationLatencyCostTrigger, "
                             "AvoidableMisclassificationCostTrigger or "
                             "EnsembleTrigger");
    return NULL;
}

pl_trigger *pl_trigger_new(const json_t *section, char *err, size_t errlen)
{
    return trig_new_at(section, "trigger", false, err, errlen);
}

void pl_trigger_free(pl_trigger *t)
{
    if (t)
        t->ops->free(t);
}

bool pl_trigger_needs_features(const pl_trigger *t)
{
    return t->needs_features;
}

/* Hook h set on t, where t takes it. */
static size_t trig_set_hook(pl_trigger *t, const trig_hook *h)
{
    return t->ops->set_hook ? t->ops->set_hook(t, h) : 0;
}

size_t pl_trigger_set_embedder(pl_trigger *t, pl_embed_fn embed, void *ctx)
{
    trig_hook h = {.kind = TRIG_HOOK_EMBED, .embed = embed, .ctx = ctx};
    return trig_set_hook(t, &h);
}

size_t pl_trigger_set_evaluator(pl_trigger *t, pl_perf_fn evaluate,
                                void *ctx)
{
    trig_hook h = {.kind = TRIG_HOOK_EVALUATE, .evaluate = evaluate,
                   .ctx = ctx};
    return trig_set_hook(t, &h);
}

size_t pl_trigger_set_coster(pl_trigger *t, pl_cost_fn trainings, void *ctx)
{
    trig_hook h = {.kind = TRIG_HOOK_TRAININGS, .trainings = trainings,
                   .ctx = ctx};
    return trig_set_hook(t, &h);
}

int trig_no_trainings(void *ctx, const double **samples,
                      const double **seconds, size_t *n, char *err,
                      size_t errlen)
{
    (void)ctx;
    (void)samples;
    (void)seconds;
    *n = 0;
    snprintf(err, errlen, "trigger: a cost trigger needs the supervisor's "
             "trainings");
    return -1;
}

int pl_trigger_inform(pl_trigger *t, const pl_sample *s, const float *features,
                      size_t dim, size_t n, size_t *fires, size_t *nfires,
                      char *err, size_t errlen)
{
    *nfires = 0;
    if (t->needs_features && (!features || dim == 0)) {
        snprintf(err, errlen, "trigger: needs each sample's features, "
                 "none were given");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        bool fire = false;
        const float *row = t->needs_features ? features + i * dim : NULL;
        if (trig_feed(t, &s[i], row, dim, &fire, err, errlen) < 0)
            return -1;
        if (fire)
            fires[(*nfires)++] = i;
    }
    return 0;
}
