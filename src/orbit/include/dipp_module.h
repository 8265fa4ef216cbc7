/* dipp_module.h -- the one public header a DIPP module is built against:
 * the versioned C ABI between the pipeline runner and a module shared
 * object. A module exports one data symbol, DIPP_MODULE_SYMBOL, of type
 * dipp_module_info: its ABI version, name, version, the parameters it
 * declares and its run function. Images arrive and leave in shared memory
 * mapped by the runner: a module reads its input in place and writes its
 * output into space it asks for with out->add, never copied in between.
 *
 * The header is self-contained C11 (stdint/stddef only) so a module can be
 * built for the flight computer without the rest of the project. */
#ifndef DIPP_MODULE_H
#define DIPP_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised on any change of the structures below: the runner refuses a
 * module built against another version (error 520) instead of running it
 * with a misread layout. */
#define DIPP_ABI_VERSION 1u
#define DIPP_MODULE_SYMBOL "dipp_module"

/* Pixel layouts. RAW8 Bayer is what the camera gives (RGGB: red at even
 * row and even column); JPEG and PNG are encoded files (size bytes). */
enum dipp_format {
    DIPP_FMT_BAYER_RGGB8 = 1,
    DIPP_FMT_RGB8 = 2,
    DIPP_FMT_GRAY8 = 3,
    DIPP_FMT_JPEG = 4,
    DIPP_FMT_PNG = 5,
};

/* One image of a batch. x and y place a tile in the camera frame; value is
 * a number a module may attach (the cloud module: cloud cover, per mille). */
typedef struct dipp_image {
    uint32_t width, height, format;
    uint32_t x, y;
    int32_t value;
    uint64_t size;  /* bytes at data */
    uint8_t *data;  /* in shared memory; read only in the input batch */
} dipp_image;

#define DIPP_BATCH_MAX 1024u /* images in one batch (400 tiles fit) */

/* A batch: the input a module reads, or the output it fills. add()
 * reserves an image of size bytes in the output's shared memory and
 * returns it with data set, or NULL when the batch is full: a module
 * returns DIPP_ERR_NOSPACE then. */
typedef struct dipp_batch {
    uint32_t count;
    dipp_image *images;
    dipp_image *(*add)(struct dipp_batch *self, uint32_t width,
                       uint32_t height, uint32_t format, uint64_t size);
    void *runner; /* the runner's own; a module leaves it alone */
} dipp_batch;

/* Parameters. A module declares each one it reads (name, type, default,
 * range); the runner checks a pipeline's values against the declaration
 * before the run, fills in defaults, and refuses unknown names. */
enum dipp_param_type { DIPP_PARAM_INT = 1, DIPP_PARAM_FLOAT = 2, DIPP_PARAM_STR = 3 };

#define DIPP_PARAM_NAME_MAX 24u /* with the terminating NUL */
#define DIPP_PARAM_STR_MAX 32u
#define DIPP_PARAMS_MAX 16u

typedef struct dipp_param_decl {
    const char *name;
    uint32_t type;
    double def, min, max; /* INT and FLOAT; ignored for STR */
    const char *help;
} dipp_param_decl;

typedef struct dipp_param {
    char name[DIPP_PARAM_NAME_MAX];
    uint32_t type;
    int64_t i;
    double f;
    char s[DIPP_PARAM_STR_MAX];
} dipp_param;

typedef struct dipp_params {
    uint32_t count;
    dipp_param item[DIPP_PARAMS_MAX];
} dipp_params;

/* What run returns: 0, or an error, mapped as the flight DIPP maps a
 * module's code: 1 to 99 are the module's own, published as 700 + code (so
 * 1 is error 701); 100 to 999 are published as they are, for a code of the
 * flight DIPP's table (100: an allocation failed). Anything else is refused
 * as malformed (604). DIPP_ERR_NOMEM was 3 (error 703) before it took the
 * flight's number; a module built then still returns 3. */
#define DIPP_OK 0
#define DIPP_ERR_FORMAT 1   /* an input format the module does not take */
#define DIPP_ERR_NOSPACE 2  /* out->add returned NULL */
#define DIPP_ERR_NOMEM 100  /* an allocation failed (the memory limit) */

typedef int (*dipp_run_fn)(const dipp_batch *in, const dipp_params *p,
                           dipp_batch *out);

typedef struct dipp_module_info {
    uint32_t abi_version; /* DIPP_ABI_VERSION when built */
    const char *name;     /* [a-z0-9_], at most 23 characters */
    const char *version;  /* the module's own, e.g. "1.2.0" */
    const dipp_param_decl *params;
    uint32_t param_count;
    dipp_run_fn run;
} dipp_module_info;

/* DIPP_MODULE(name, version, params, run): defines the exported symbol;
 * params is an array of dipp_param_decl. DIPP_MODULE_NO_PARAMS for a
 * module that declares none. The count is sizeof(params) over one
 * declaration's size, so params must be the array itself: 0, NULL or a
 * pointer is refused at compile time by the _Static_assert, with a
 * message naming DIPP_MODULE_NO_PARAMS (a subscript of 0 gave only
 * "subscripted value is neither array nor pointer"). */
#define DIPP_MODULE_EXPORT __attribute__((visibility("default")))
#define DIPP_IS_DECL_ARRAY_(a)                                                 \
    (_Generic((a), const dipp_param_decl *: 1, dipp_param_decl *: 1,            \
              default: 0) &&                                                   \
     sizeof(a) >= sizeof(dipp_param_decl) && sizeof(a) % sizeof(dipp_param_decl) == 0)
#define DIPP_MODULE(mname, mversion, mparams, mrun)                            \
    _Static_assert(DIPP_IS_DECL_ARRAY_(mparams),                               \
                   "DIPP_MODULE's params must be an array of dipp_param_decl; " \
                   "a module without parameters uses "                         \
                   "DIPP_MODULE_NO_PARAMS(name, version, run)");               \
    DIPP_MODULE_EXPORT const dipp_module_info dipp_module = {                  \
        DIPP_ABI_VERSION, mname, mversion, mparams,                            \
        (uint32_t)(sizeof(mparams) / sizeof(dipp_param_decl)), mrun}
#define DIPP_MODULE_NO_PARAMS(mname, mversion, mrun)                           \
    DIPP_MODULE_EXPORT const dipp_module_info dipp_module = {                  \
        DIPP_ABI_VERSION, mname, mversion, NULL, 0u, mrun}

/* Reading a parameter inside run: every declared one is present. */
static inline const dipp_param *dipp_param_get(const dipp_params *p,
                                               const char *name) {
    for (uint32_t k = 0; k < p->count; k++)
        if (strcmp(p->item[k].name, name) == 0)
            return &p->item[k];
    return NULL;
}

static inline int64_t dipp_param_int(const dipp_params *p, const char *name) {
    const dipp_param *v = dipp_param_get(p, name);
    return v ? v->i : 0;
}

static inline double dipp_param_float(const dipp_params *p, const char *name) {
    const dipp_param *v = dipp_param_get(p, name);
    return v ? v->f : 0.0;
}

/* Bytes a pixel takes in a raw format (0 for encoded ones). */
static inline uint32_t dipp_format_bpp(uint32_t format) {
    return format == DIPP_FMT_RGB8 ? 3u
           : (format == DIPP_FMT_GRAY8 || format == DIPP_FMT_BAYER_RGGB8) ? 1u
                                                                          : 0u;
}

#ifdef __cplusplus
}
#endif
#endif
