/* crop_tile.c -- DIPP module: crops each raw image (RGB, gray) to a
 * rectangle and cuts it into square tiles, the input a classifier takes
 * (224x224). Only whole tiles are kept; each remembers where it was in
 * the frame (x, y). */
#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"x", DIPP_PARAM_INT, 0, 0, 1e6, "left edge of the crop"},
    {"y", DIPP_PARAM_INT, 0, 0, 1e6, "top edge of the crop"},
    {"width", DIPP_PARAM_INT, 0, 0, 1e6, "crop width; 0: to the right edge"},
    {"height", DIPP_PARAM_INT, 0, 0, 1e6, "crop height; 0: to the bottom"},
    {"tile", DIPP_PARAM_INT, 224, 8, 8192, "tile side, pixels"},
};

typedef struct rect {
    uint32_t x, y, w, h;
} rect;

static rect crop_of(const dipp_image *in, const dipp_params *p) {
    rect r = {(uint32_t)dipp_param_int(p, "x"), (uint32_t)dipp_param_int(p, "y"),
              (uint32_t)dipp_param_int(p, "width"), (uint32_t)dipp_param_int(p, "height")};
    r.x = r.x < in->width ? r.x : in->width;
    r.y = r.y < in->height ? r.y : in->height;
    if (!r.w || r.w > in->width - r.x)
        r.w = in->width - r.x;
    if (!r.h || r.h > in->height - r.y)
        r.h = in->height - r.y;
    return r;
}

static int tile(const dipp_image *in, uint32_t x, uint32_t y, uint32_t side,
                dipp_batch *out) {
    uint32_t bpp = dipp_format_bpp(in->format);
    dipp_image *o = out->add(out, side, side, in->format, (uint64_t)side * side * bpp);
    if (!o)
        return DIPP_ERR_NOSPACE;
    o->x = in->x + x, o->y = in->y + y;
    for (uint32_t row = 0; row < side; row++) {
        const uint8_t *s = in->data + ((uint64_t)(y + row) * in->width + x) * bpp;
        memcpy(o->data + (uint64_t)row * side * bpp, s, (size_t)side * bpp);
    }
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    uint32_t side = (uint32_t)dipp_param_int(p, "tile");
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *img = &in->images[k];
        if (!dipp_format_bpp(img->format))
            return DIPP_ERR_FORMAT;
        rect r = crop_of(img, p);
        for (uint32_t y = r.y; y + side <= r.y + r.h; y += side)
            for (uint32_t x = r.x; x + side <= r.x + r.w; x += side) {
                int rc = tile(img, x, y, side, out);
                if (rc)
                    return rc;
            }
    }
    return DIPP_OK;
}

DIPP_MODULE("crop_tile", "1.0.0", params, run);
