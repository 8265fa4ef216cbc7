/* encode_each.h -- what the encoder modules share: each RGB or gray input
 * image gets an output image of format reserved at raw size + 64 KiB (an
 * encoding that does not fit is refused, not copied), keeps its place and
 * value, and is filled by the module's encode function, which sets the
 * encoded size. A header of static functions: each module stays one
 * self-contained shared object. */
#ifndef DIPP_ENCODE_EACH_H
#define DIPP_ENCODE_EACH_H

#include "dipp_module.h"

#define ENCODER_FAILED 4 /* published as 704 */
#define ENCODE_SLACK 65536u

typedef int (*encode_fn)(const dipp_image *in, int setting, dipp_image *o);

static int encode_each(const dipp_batch *in, dipp_batch *out, uint32_t format,
                       encode_fn encode, int setting) {
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *img = &in->images[k];
        if (img->format != DIPP_FMT_RGB8 && img->format != DIPP_FMT_GRAY8)
            return DIPP_ERR_FORMAT;
        dipp_image *o = out->add(out, img->width, img->height, format,
                                 img->size + ENCODE_SLACK);
        if (!o)
            return DIPP_ERR_NOSPACE;
        o->x = img->x, o->y = img->y, o->value = img->value;
        int rc = encode(img, setting, o);
        if (rc)
            return rc;
    }
    return DIPP_OK;
}

#endif
