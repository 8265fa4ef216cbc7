/* downsample.c -- DIPP module: shrinks RGB or gray images by an integer
 * factor, each output pixel the mean of a factor x factor box. */
#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"factor", DIPP_PARAM_INT, 2, 1, 64, "side of the averaged box"},
};

static void box(const dipp_image *in, uint32_t f, uint32_t bpp, uint32_t x,
                uint32_t y, uint8_t *dst) {
    for (uint32_t c = 0; c < bpp; c++) {
        uint32_t sum = 0;
        for (uint32_t dy = 0; dy < f; dy++)
            for (uint32_t dx = 0; dx < f; dx++)
                sum += in->data[((uint64_t)(y * f + dy) * in->width + x * f + dx) * bpp + c];
        dst[c] = (uint8_t)((sum + f * f / 2) / (f * f));
    }
}

static int shrink(const dipp_image *in, uint32_t f, dipp_batch *out) {
    uint32_t bpp = dipp_format_bpp(in->format);
    uint32_t w = in->width / f, h = in->height / f;
    if (!bpp || in->format == DIPP_FMT_BAYER_RGGB8)
        return DIPP_ERR_FORMAT;
    dipp_image *o = out->add(out, w, h, in->format, (uint64_t)w * h * bpp);
    if (!o)
        return DIPP_ERR_NOSPACE;
    o->x = in->x, o->y = in->y, o->value = in->value;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            box(in, f, bpp, x, y, o->data + ((uint64_t)y * w + x) * bpp);
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    uint32_t f = (uint32_t)dipp_param_int(p, "factor");
    for (uint32_t k = 0; k < in->count; k++) {
        int rc = shrink(&in->images[k], f, out);
        if (rc)
            return rc;
    }
    return DIPP_OK;
}

DIPP_MODULE("downsample", "1.0.0", params, run);
