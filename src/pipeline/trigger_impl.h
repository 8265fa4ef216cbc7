/* trigger_impl.h -- what every trigger kind provides behind trigger.h: one
 * sample at a time in, "fires after it" out. Each kind's struct starts
 * with a pl_trigger, so one pointer serves both views.
 */
#ifndef AEGIS_PL_TRIGGER_IMPL_H
#define AEGIS_PL_TRIGGER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "trigger.h"

typedef struct pl_trigger_ops {
    /* Feeds one sample (its dim features, or NULL when the kind needs
     * none); sets *fire when the trigger fires after it. 0, or -1 with
     * err. */
    int (*feed)(pl_trigger *t, const pl_sample *s, const float *features,
                size_t dim, bool *fire, char *err, size_t errlen);
    void (*free)(pl_trigger *t);
    /* pl_trigger_set_embedder's work; NULL for kinds that never measure
     * drift. */
    size_t (*set_embedder)(pl_trigger *t, pl_embed_fn embed, void *ctx);
    /* pl_trigger_set_evaluator's work; NULL for kinds that never
     * evaluate a model. */
    size_t (*set_evaluator)(pl_trigger *t, pl_perf_fn evaluate, void *ctx);
    /* pl_trigger_set_coster's; NULL for kinds that weigh no cost. */
    size_t (*set_coster)(pl_trigger *t, pl_cost_fn trainings, void *ctx);
} pl_trigger_ops;

struct pl_trigger {
    const pl_trigger_ops *ops;
    bool needs_features;
};

/* The trigger section at PATH (errors name PATH.KEY). simple_only admits
 * only DataAmountTrigger and TimeTrigger (a drift trigger's warm-up
 * policy). */
pl_trigger *trig_new_at(const json_t *section, const char *path,
                        bool simple_only, char *err, size_t errlen);

pl_trigger *trig_amount_new(const json_t *section, const char *path,
                            char *err, size_t errlen);
pl_trigger *trig_time_new(const json_t *section, const char *path,
                          char *err, size_t errlen);
pl_trigger *trig_drift_new(const json_t *section, const char *path,
                           char *err, size_t errlen);
/* cost: an AvoidableMisclassificationCostTrigger */
pl_trigger *trig_perf_new(const json_t *section, const char *path, bool cost,
                          char *err, size_t errlen);
pl_trigger *trig_cost_new(const json_t *section, const char *path,
                          char *err, size_t errlen);
pl_trigger *trig_ensemble_new(const json_t *section, const char *path,
                              char *err, size_t errlen);

static inline int trig_feed(pl_trigger *t, const pl_sample *s,
                            const float *features, size_t dim, bool *fire,
                            char *err, size_t errlen)
{
    return t->ops->feed(t, s, features, dim, fire, err, errlen);
}

#endif
