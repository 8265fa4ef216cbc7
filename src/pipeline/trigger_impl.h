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

/* What a trigger may ask of the supervisor, one kind at a time. */
typedef enum trig_hook_kind {
    TRIG_HOOK_EMBED, TRIG_HOOK_EVALUATE, TRIG_HOOK_TRAININGS
} trig_hook_kind;

typedef struct trig_hook {
    trig_hook_kind kind;
    pl_embed_fn embed;
    pl_perf_fn evaluate;
    pl_cost_fn trainings;
    void *ctx;
} trig_hook;

typedef struct pl_trigger_ops {
    /* Feeds one sample (its dim features, or NULL when the kind needs
     * none); sets *fire when the trigger fires after it. 0, or -1 with
     * err. */
    int (*feed)(pl_trigger *t, const pl_sample *s, const float *features,
                size_t dim, bool *fire, char *err, size_t errlen);
    void (*free)(pl_trigger *t);
    /* Takes hook h when the kind asks that of the supervisor (a model's
     * embeddings, its scores, the trainings' costs): 1, else 0; an
     * ensemble, how many of its subtriggers took it. NULL for kinds that
     * ask nothing. */
    size_t (*set_hook)(pl_trigger *t, const trig_hook *h);
} pl_trigger_ops;

/* Trainings when no supervisor tells them (a trigger built only to be
 * checked): an error. */
int trig_no_trainings(void *ctx, const double **samples,
                      const double **seconds, size_t *n, char *err,
                      size_t errlen);

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

/* A batched trigger's warm-up (trigger_warmup.c): the detection points
 * a simple warmup_policy decides, as Modyn's WarmupTrigger. */
typedef struct trig_warmup {
    int64_t intervals;      /* warmup_intervals; 0 without a policy */
    pl_trigger *policy;     /* warmup_policy; NULL: none */
    int64_t delegated;      /* detection points it decided so far */
    bool fired;             /* it fired since the last detection point */
} trig_warmup;

/* Reads warmup_intervals and warmup_policy of SECTION at PATH. 0, or -1
 * with err naming the key. */
int trig_warmup_parse(trig_warmup *w, const json_t *section, const char *path,
                      char *err, size_t errlen);
/* Whether detection point number DETECTION (from 0) is the warm-up's to
 * decide: the first always is. */
bool trig_warmup_delegates(const trig_warmup *w, int64_t detection);
/* Feeds a sample to the policy while the warm-up lasts. */
int trig_warmup_feed(trig_warmup *w, const pl_sample *s, char *err,
                     size_t errlen);
/* The decision at a delegated detection point (the first fires), which
 * counts it. */
bool trig_warmup_decide(trig_warmup *w, int64_t detection);
/* Whether every warm-up detection point has passed. */
bool trig_warmup_done(const trig_warmup *w);
void trig_warmup_free(trig_warmup *w);

static inline int trig_feed(pl_trigger *t, const pl_sample *s,
                            const float *features, size_t dim, bool *fire,
                            char *err, size_t errlen)
{
    return t->ops->feed(t, s, features, dim, fire, err, errlen);
}

#endif
