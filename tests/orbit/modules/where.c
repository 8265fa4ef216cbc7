/* where.c -- test module: copies every image, then adds a 1x1 grey one
 * that tells where this run ran: its value the CPU (-1 where it cannot
 * tell), its x how many CPUs the worker may use now. where_too.c is the
 * same module by another name, for pipelines that alternate two. */
#define _GNU_SOURCE /* sched_getcpu, sched_getaffinity */
#include <sched.h>

#include "dipp_module.h"

#ifndef WHERE_NAME
#define WHERE_NAME "where"
#endif

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *i = &in->images[k];
        dipp_image *o = out->add(out, i->width, i->height, i->format, i->size);
        if (!o)
            return DIPP_ERR_NOSPACE;
        memcpy(o->data, i->data, i->size);
        o->value = i->value, o->x = i->x;
    }
    dipp_image *stamp = out->add(out, 1, 1, DIPP_FMT_GRAY8, 1);
    if (!stamp)
        return DIPP_ERR_NOSPACE;
    cpu_set_t mine;
    stamp->data[0] = 0;
    stamp->value = sched_getcpu();
    stamp->x = sched_getaffinity(0, sizeof mine, &mine) == 0 ? (uint32_t)CPU_COUNT(&mine) : 0;
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS(WHERE_NAME, "1.0.0", run);
