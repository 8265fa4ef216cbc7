/* select.h -- on what a pipeline retrains: Modyn's selection strategies
 * (NewDataStrategy, FreshnessSamplingStrategy, CoresetStrategy with its
 * presampling) building each trigger's training set (trainset.h).
 *
 * Deterministic: the same samples, bounds, trigger and seed give the same
 * set, byte for byte.
 */
#ifndef AEGIS_PL_SELECT_H
#define AEGIS_PL_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sample.h"
#include "trainset.h"

typedef struct pl_selector pl_selector;

/* Builds the selector the pipeline's `selection_strategy` section
 * describes. NULL with "selection_strategy.KEY: what is wrong" in err. */
pl_selector *pl_selector_new(const json_t *section, uint64_t seed,
                             char *err, size_t errlen);
void pl_selector_free(pl_selector *sel);

/* Tells it that an earlier trigger's set was trained on (the supervisor
 * replays the sets on disk after a restart, so freshness survives it). */
void pl_selector_note_used(pl_selector *sel, const pl_trainset_item *items,
                           size_t count);

/* The downsampling config in force for trigger's training (a
 * CoresetStrategy's downsampling_config, docs/pipelines.md): borrowed
 * from sel, or NULL when the training takes its whole set (none given,
 * "No", or a warm-up trigger). */
const json_t *pl_selector_downsampling(const pl_selector *sel,
                                       uint32_t trigger);

/* Builds trigger TRIGGER's training set from samples[0 .. end) where
 * bounds[i] (i < trigger) is the first key after trigger i, and writes it
 * to PATH (pl_trainset_write). 0, or -1 with err. */
int pl_selector_build(pl_selector *sel, const pl_sample *samples, uint64_t end,
                      const uint64_t *bounds, uint32_t trigger,
                      const char *path, char *err, size_t errlen);

#endif
