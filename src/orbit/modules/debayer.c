/* debayer.c -- DIPP module: raw RGGB Bayer frames to RGB. Each 2x2 cell's
 * red, mean green and blue colour all four of its pixels (superpixel
 * demosaicing: cheap, no colour fringes, half the sharpness). */
#include "dipp_module.h"

static void cell(const uint8_t *src, uint32_t w, uint8_t *dst, uint32_t x,
                 uint32_t y) {
    const uint8_t *top = src + (uint64_t)y * w + x, *bot = top + w;
    uint8_t rgb[3] = {top[0], (uint8_t)((top[1] + bot[0] + 1) / 2), bot[1]};
    for (uint32_t dy = 0; dy < 2; dy++)
        for (uint32_t dx = 0; dx < 2; dx++) {
            uint8_t *p = dst + ((uint64_t)(y + dy) * w + x + dx) * 3;
            p[0] = rgb[0], p[1] = rgb[1], p[2] = rgb[2];
        }
}

static int debayer(const dipp_image *in, dipp_batch *out) {
    uint32_t w = in->width & ~1u, h = in->height & ~1u;
    dipp_image *o = out->add(out, w, h, DIPP_FMT_RGB8, (uint64_t)w * h * 3);
    if (!o)
        return DIPP_ERR_NOSPACE;
    o->x = in->x, o->y = in->y;
    for (uint32_t y = 0; y < h; y += 2)
        for (uint32_t x = 0; x < w; x += 2)
            cell(in->data, in->width, o->data, x, y);
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    for (uint32_t k = 0; k < in->count; k++) {
        if (in->images[k].format != DIPP_FMT_BAYER_RGGB8)
            return DIPP_ERR_FORMAT;
        int rc = debayer(&in->images[k], out);
        if (rc)
            return rc;
    }
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("debayer", "1.0.0", run);
