/* encode_jpeg.c -- DIPP module: RGB or gray images to JPEG files through
 * libjpeg-turbo, written straight into the output batch's shared memory
 * (the encoder's destination is the reserved image; a JPEG that would not
 * fit in raw size + 64 KiB is refused rather than copied). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

#include "dipp_module.h"
#include "encode_each.h"

static const dipp_param_decl params[] = {
    {"quality", DIPP_PARAM_INT, 85, 1, 100, "JPEG quality"},
};

typedef struct guard {
    struct jpeg_error_mgr mgr;
    jmp_buf back;
} guard;

/* libjpeg's own handler exit()s the process: come back instead. */
static void on_error(j_common_ptr c) {
    longjmp(((guard *)c->err)->back, 1);
}

static void rows(struct jpeg_compress_struct *c, const dipp_image *in) {
    uint32_t stride = in->width * dipp_format_bpp(in->format);
    while (c->next_scanline < c->image_height) {
        JSAMPROW row = (JSAMPROW)(in->data + (uint64_t)c->next_scanline * stride);
        jpeg_write_scanlines(c, &row, 1);
    }
}

static int encode(const dipp_image *in, int quality, dipp_image *o) {
    struct jpeg_compress_struct c;
    guard g;
    unsigned char *buf = o->data;
    unsigned long size = (unsigned long)o->size;
    c.err = jpeg_std_error(&g.mgr);
    g.mgr.error_exit = on_error;
    if (setjmp(g.back)) {
        jpeg_destroy_compress(&c);
        return ENCODER_FAILED;
    }
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &size);
    c.image_width = in->width, c.image_height = in->height;
    c.input_components = (int)dipp_format_bpp(in->format);
    c.in_color_space = c.input_components == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    rows(&c, in);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    if (buf != o->data) { /* outgrew the reservation: libjpeg's own copy */
        free(buf);
        return DIPP_ERR_NOSPACE;
    }
    o->size = size;
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    return encode_each(in, out, DIPP_FMT_JPEG, encode, (int)dipp_param_int(p, "quality"));
}

DIPP_MODULE("encode_jpeg", "1.0.0", params, run);
