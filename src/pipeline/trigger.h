/* trigger.h -- when a pipeline retrains: Modyn's triggering policies
 * (DataAmountTrigger, TimeTrigger, DataDriftTrigger, PerformanceTrigger,
 * EnsembleTrigger) fed the samples in order.
 *
 * A trigger is a pure function of the samples (and features) it is fed:
 * fed the same stream again it fires at the same places. The supervisor
 * relies on that to rebuild a trigger after a crash by feeding it the
 * dataset from key 0, submitting only triggers its own log lacks.
 */
#ifndef AEGIS_PL_TRIGGER_H
#define AEGIS_PL_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sample.h"

typedef struct pl_trigger pl_trigger;

/* Builds the trigger the pipeline's `trigger` section describes (the
 * YAML as JSON, Modyn's key names). On a bad or unknown key returns NULL
 * and writes "trigger.KEY.PATH: what is wrong" to err, so the caller can
 * name the line the key is on. */
pl_trigger *pl_trigger_new(const json_t *section, char *err, size_t errlen);
void pl_trigger_free(pl_trigger *t);

/* Whether it needs each sample's features (a drift trigger does), and how
 * many per sample (0: whatever the dataset has). */
bool pl_trigger_needs_features(const pl_trigger *t);

/* A model's embeddings of samples, for a DataDriftTrigger that measures
 * on them (the pipeline's `embedding` section): the supervisor runs the
 * embedding command with the newest model (sup_embed.c). Writes n x *dim
 * floats, row i the embedding of keys[i], to *out (malloc'd, the caller
 * frees it). 0; 1 when there is no model yet (the detection point then
 * votes no drift); -1 with err. Fed the same stream again it must answer
 * the same (trigger.h's promise rests on it). */
typedef int (*pl_embed_fn)(void *ctx, const uint64_t *keys, size_t n,
                           float **out, size_t *dim, char *err,
                           size_t errlen);

/* Has every DataDriftTrigger in t measure on embed's embeddings instead
 * of the samples' features; they then need keys only. Returns how many
 * took it (0: t has no drift trigger). */
size_t pl_trigger_set_embedder(pl_trigger *t, pl_embed_fn embed, void *ctx);

/* What a PerformanceTrigger asks at a detection point: the newest
 * model's scores on windows of samples (keys[w][0..n[w])), with the
 * trigger's metrics. */
typedef struct pl_perf_ask {
    const uint64_t *const *keys;
    const size_t *n;
    size_t nwindows;
    const struct pl_metric *metrics;
    size_t nmetrics;
} pl_perf_ask;

struct perf_obs;
/* Evaluates the newest model as ask says (the supervisor runs the
 * evaluation command, sup_perf.c), writing one perf_obs (perf.h) per
 * window to out. 0; 1 when there is no model yet; -1 with err. Fed the
 * same stream again it must answer the same. */
typedef int (*pl_perf_fn)(void *ctx, const pl_perf_ask *ask,
                          struct perf_obs *out, char *err, size_t errlen);

/* Has every PerformanceTrigger in t ask evaluate. Returns how many took
 * it (0: t has none). */
size_t pl_trigger_set_evaluator(pl_trigger *t, pl_perf_fn evaluate,
                                void *ctx);

/* The trainings done so far, for a cost trigger's forecast of what the
 * next one costs: for each, the samples it trained on and its run time
 * in seconds (as aegisd measured its attempts), oldest first, into
 * arrays that stay valid until the next call. The supervisor settles the
 * fires so far first (sup_cost.c). 0, or -1 with err. Fed the same
 * stream again it must answer the same. */
typedef int (*pl_cost_fn)(void *ctx, const double **samples,
                          const double **seconds, size_t *n, char *err,
                          size_t errlen);

/* Has every cost trigger in t ask trainings. Returns how many took it. */
size_t pl_trigger_set_coster(pl_trigger *t, pl_cost_fn trainings, void *ctx);

/* Feeds n samples, in key order, with n x dim features when it needs
 * them (NULL otherwise). Writes to fires[] the index in s of each sample
 * after which it fires (at most n), and their number to *nfires.
 * 0, or -1 with err. */
int pl_trigger_inform(pl_trigger *t, const pl_sample *s, const float *features,
                      size_t dim, size_t n, size_t *fires, size_t *nfires,
                      char *err, size_t errlen);

#endif
