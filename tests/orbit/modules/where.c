/* where.c -- test module: copies every image, then adds a 1x1 grey one
 * whose value is the CPU this run ran on (-1 where it cannot tell), so a
 * test can see where each step of a pipeline ran. */
#define _GNU_SOURCE /* sched_getcpu */
#include <sched.h>

#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *i = &in->images[k];
        dipp_image *o = out->add(out, i->width, i->height, i->format, i->size);
        if (!o)
            return DIPP_ERR_NOSPACE;
        memcpy(o->data, i->data, i->size);
        o->value = i->value;
    }
    dipp_image *stamp = out->add(out, 1, 1, DIPP_FMT_GRAY8, 1);
    if (!stamp)
        return DIPP_ERR_NOSPACE;
    stamp->data[0] = 0;
    stamp->value = sched_getcpu();
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("where", "1.0.0", run);
