/* step_pool.h -- the output batches of pipelines' steps, kept from frame
 * to frame. A step's output of this frame is written where the same
 * step's output of the last frame was: its memory is already there, and
 * the module's worker keeps it mapped (runner_maps.h), so neither pays
 * for new pages each frame. The price is memory held between frames: the
 * most bytes each kept step ever wrote (about 240 MB for the mission
 * pipeline on 4512x4512 frames). */
#ifndef DIPP_STEP_POOL_H
#define DIPP_STEP_POOL_H

#include <stdint.h>

#include "batch.h"
#include "pdef.h"

/* Every step but the last of every pipeline slot. */
#define STEP_POOL_MAX (PDEF_PIPELINES * (PDEF_MAX_STEPS - 1))

typedef struct step_pool {
    struct step_entry {
        uint32_t pipeline;
        unsigned step;
        uint64_t used; /* when last taken; 0: a free entry */
        dbatch *batch;
    } entry[STEP_POOL_MAX];
    uint64_t takes;
} step_pool;

/* The empty output batch of pipeline's step, with room for at least room
 * bytes of images (kept, or made anew when there is none or it is
 * smaller). It stays the pool's: valid until the same step is taken
 * again. NULL when no shared memory is left. */
dbatch *step_pool_take(step_pool *p, uint32_t pipeline, unsigned step,
                       uint64_t room);
void step_pool_free(step_pool *p);

#endif
