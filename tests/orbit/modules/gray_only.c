/* gray_only.c -- test module: copies GRAY8 images and refuses any other
 * format (error 701). It passes a test-run declared on grey images, then
 * fails in flight behind debayer (RGB): what a rollback is for. */
#include "dipp_module.h"

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *i = &in->images[k];
        if (i->format != DIPP_FMT_GRAY8)
            return DIPP_ERR_FORMAT;
        dipp_image *o = out->add(out, i->width, i->height, i->format, i->size);
        if (!o)
            return DIPP_ERR_NOSPACE;
        memcpy(o->data, i->data, i->size);
    }
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("gray_only", "1.0.0", run);
