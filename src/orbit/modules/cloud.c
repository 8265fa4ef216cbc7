/* cloud.c -- DIPP module: estimates each RGB image's cloud cover with
 * thresholds (a pixel is cloud when bright and grey: its darkest channel
 * is above `bright` and its channels differ by less than `grey`), sets it
 * as the image's value in per mille, and keeps only the images no cloudier
 * than `max_cover` -- cloudy tiles are not worth the downlink. */
#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"bright", DIPP_PARAM_INT, 180, 0, 255, "darkest channel of a cloud pixel"},
    {"grey", DIPP_PARAM_INT, 40, 0, 255, "largest channel spread of a cloud pixel"},
    {"max_cover", DIPP_PARAM_INT, 1000, 0, 1000, "per mille; cloudier images are dropped"},
};

static int is_cloud(const uint8_t *p, int bright, int grey) {
    int lo = p[0], hi = p[0];
    for (int c = 1; c < 3; c++) {
        lo = p[c] < lo ? p[c] : lo;
        hi = p[c] > hi ? p[c] : hi;
    }
    return lo >= bright && hi - lo <= grey;
}

static int32_t cover(const dipp_image *img, int bright, int grey) {
    uint64_t n = (uint64_t)img->width * img->height, cloudy = 0;
    for (uint64_t k = 0; k < n; k++)
        cloudy += (uint64_t)is_cloud(img->data + k * 3, bright, grey);
    return n ? (int32_t)(cloudy * 1000 / n) : 0;
}

static int keep(const dipp_image *in, int32_t permille, dipp_batch *out) {
    dipp_image *o = out->add(out, in->width, in->height, in->format, in->size);
    if (!o)
        return DIPP_ERR_NOSPACE;
    memcpy(o->data, in->data, in->size);
    o->x = in->x, o->y = in->y, o->value = permille;
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    int bright = (int)dipp_param_int(p, "bright"), grey = (int)dipp_param_int(p, "grey");
    int32_t max = (int32_t)dipp_param_int(p, "max_cover");
    for (uint32_t k = 0; k < in->count; k++) {
        const dipp_image *img = &in->images[k];
        if (img->format != DIPP_FMT_RGB8)
            return DIPP_ERR_FORMAT;
        int32_t c = cover(img, bright, grey);
        int rc = c <= max ? keep(img, c, out) : DIPP_OK;
        if (rc)
            return rc;
    }
    return DIPP_OK;
}

DIPP_MODULE("cloud", "1.0.0", params, run);
