/* copy.c -- test module: a good one; copies every image to its output. */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *i = &in->images[k];
        dipp_image *o = out->add(out, i->width, i->height, i->format, i->size);
        if (!o)
            return DIPP_ERR_NOSPACE;
        memcpy(o->data, i->data, i->size);
    }
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("copy", "1.0.0", run);
