/* upload_testrun.c -- a candidate module's test-run: the reference image
 * is a simulated camera scene, given in the format the manifest declares
 * for the input (a raw format: Bayer as shot, RGB or grey from the same
 * values), and the output must be images of the declared format and,
 * where declared, size. */
#include "upload_testrun.h"

#include <stdio.h>
#include <string.h>

#include "camera.h"
#include "errors.h"

static int reference(dbatch *in, uint32_t format) {
    dbatch raw;
    uint32_t side = UP_TEST_SIDE, bpp = dipp_format_bpp(format);
    uint64_t px = (uint64_t)side * side;
    if (batch_create(&raw, px))
        return -1;
    if (camera_shoot(&raw, side, 7) || batch_create(in, px * 3 + 4096)) { /* scene 7 */
        batch_close(&raw);
        return -1;
    }
    dipp_image *img = in->api.add(&in->api, side, side, format, px * bpp);
    for (uint64_t k = 0; img && k < px * bpp; k++)
        img->data[k] = raw.api.images[0].data[k / bpp];
    batch_close(&raw);
    if (!img)
        batch_close(in);
    return img ? 0 : -1;
}

static int shape_ok(const dbatch *out, const up_manifest *m, char *detail,
                    size_t cap) {
    const dipp_batch *b = &out->api;
    if (b->count == 0)
        snprintf(detail, cap, "%s v%u: test-run gave no image", m->name, m->version);
    for (uint32_t k = 0; k < b->count; k++) {
        const dipp_image *i = &b->images[k];
        if (i->format != m->out_format || (m->out_width && i->width != m->out_width) ||
            (m->out_height && i->height != m->out_height)) {
            snprintf(detail, cap, "%s v%u: test-run image %u is %ux%u format %u, "
                     "declared %ux%u format %u (0: any)", m->name, m->version, k,
                     i->width, i->height, i->format, m->out_width, m->out_height,
                     m->out_format);
            return 0;
        }
    }
    return b->count > 0;
}

int up_test_in_sandbox(void *ctx, const char *path, const up_manifest *m,
                       char *detail, size_t cap) {
    dbatch in, out;
    dipp_params none;
    run_report rep;
    memset(&none, 0, sizeof none);
    if (reference(&in, m->in_format)) {
        snprintf(detail, cap, "%s v%u: no memory for the test-run", m->name, m->version);
        return DIPP_E_RUNNER;
    }
    if (batch_create(&out, 16u << 20)) {
        batch_close(&in);
        snprintf(detail, cap, "%s v%u: no memory for the test-run", m->name, m->version);
        return DIPP_E_RUNNER;
    }
    int code = runner_run_path((runner *)ctx, path, &none, &in, &out, &rep);
    if (code)
        snprintf(detail, cap, "%s v%u: test-run: %s (%d)", m->name, m->version,
                 rep.detail, code);
    else if (!shape_ok(&out, m, detail, cap))
        code = DIPP_E_UP_TESTRUN;
    batch_close(&in);
    batch_close(&out);
    return code;
}
