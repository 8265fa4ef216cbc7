/* step_pool.c -- kept step outputs (step_pool.h). */
#include "step_pool.h"

#include <stdlib.h>

static void drop(struct step_entry *e) {
    if (e->batch) {
        batch_close(e->batch);
        free(e->batch);
    }
    e->batch = NULL, e->used = 0;
}

static struct step_entry *find(step_pool *p, uint32_t pipeline, unsigned step) {
    for (int k = 0; k < STEP_POOL_MAX; k++)
        if (p->entry[k].used && p->entry[k].pipeline == pipeline &&
            p->entry[k].step == step)
            return &p->entry[k];
    return NULL;
}

/* A free entry, or the least recently taken one, dropped. */
static struct step_entry *free_entry(step_pool *p) {
    struct step_entry *oldest = &p->entry[0];
    for (int k = 0; k < STEP_POOL_MAX; k++) {
        if (!p->entry[k].used)
            return &p->entry[k];
        if (p->entry[k].used < oldest->used)
            oldest = &p->entry[k];
    }
    drop(oldest);
    return oldest;
}

static dbatch *make(uint64_t room) {
    dbatch *b = malloc(sizeof *b);
    if (b && batch_create(b, room) != 0) {
        free(b);
        return NULL;
    }
    if (b)
        b->kept = 1;
    return b;
}

dbatch *step_pool_take(step_pool *p, uint32_t pipeline, unsigned step,
                       uint64_t room) {
    struct step_entry *e = find(p, pipeline, step);
    if (e && batch_room(e->batch) < room)
        drop(e);
    if (!e || !e->batch) {
        e = e ? e : free_entry(p);
        e->batch = make(room);
        if (!e->batch) {
            e->used = 0;
            return NULL;
        }
        e->pipeline = pipeline, e->step = step;
    }
    e->used = ++p->takes;
    batch_reset(e->batch);
    return e->batch;
}

void step_pool_free(step_pool *p) {
    for (int k = 0; k < STEP_POOL_MAX; k++)
        drop(&p->entry[k]);
}
