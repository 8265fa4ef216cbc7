/* encode_png.c -- DIPP module: RGB or gray images to PNG files through
 * libpng, written straight into the output batch's shared memory by a
 * write callback (a PNG larger than raw size + 64 KiB is refused). */
#include <setjmp.h>

#include <png.h>

#include "dipp_module.h"
#include "encode_each.h"

static const dipp_param_decl params[] = {
    {"level", DIPP_PARAM_INT, 6, 0, 9, "zlib compression level"},
};

typedef struct sink {
    dipp_image *o;
    uint64_t used;
} sink;

static void put(png_structp png, png_bytep data, size_t n) {
    sink *s = png_get_io_ptr(png);
    if (n > s->o->size - s->used)
        png_error(png, "output reservation full");
    memcpy(s->o->data + s->used, data, n);
    s->used += n;
}

static void flush(png_structp png) {
    (void)png;
}

static void header(png_structp png, png_infop info, const dipp_image *in, int level) {
    int type = in->format == DIPP_FMT_RGB8 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
    png_set_IHDR(png, info, in->width, in->height, 8, type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, level);
    png_write_info(png, info);
}

static int encode(const dipp_image *in, int level, dipp_image *o) {
    sink s = {o, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return ENCODER_FAILED;
    }
    png_set_write_fn(png, &s, put, flush);
    header(png, info, in, level);
    uint32_t stride = in->width * dipp_format_bpp(in->format);
    for (uint32_t y = 0; y < in->height; y++)
        png_write_row(png, in->data + (uint64_t)y * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    o->size = s.used;
    return DIPP_OK;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    return encode_each(in, out, DIPP_FMT_PNG, encode, (int)dipp_param_int(p, "level"));
}

DIPP_MODULE("encode_png", "1.0.0", params, run);
