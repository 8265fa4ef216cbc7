/* desc.c -- reading a model description (aegis-model/1 JSON).
 *
 * Every check names where the bad value is, in the form the user can find
 * it: "desc.json: layers[12].params: not a non-negative integer". Bad input
 * is an error, never a guess: a description that silently lost a layer
 * would give a low estimate, and low estimates cause OOMs.
 */
#include "estimate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_TAG "aegis-model/1"

/* A count above 2^40 elements (4 TiB of fp32) is no model a GPU holds,
 * in one field or in all layers together: such a description is a typo or
 * garbage, and estimating it would only give absurd figures. (No model
 * layer comes near: GPT-3's embedding is ~6e8 elements.) */
#define MAX_ELEMENTS ((json_int_t)1 << 40)

static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Reads obj[key] as a whole number in [lo, MAX_ELEMENTS]. Messages name
 * the field as layers[layer].key, or as key when layer is -1. Absent:
 * *out untouched, returns 0 if optional, else an error. */
static int read_count(const json_t *obj, const char *key, double lo,
                      int optional, const char *name, long layer,
                      double *out, char *err, size_t errlen) {
    /* Formatted only for a message: a big description has hundreds of
     * layers, and formatting each one's cost more than estimating. */
    char where[48] = "";
    const json_t *v = json_object_get(obj, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    if (v && json_is_integer(v) && n <= MAX_ELEMENTS && (double)n >= lo) {
        *out = (double)n;
        return 0;
    }
    if (!v && optional) return 0;
    if (layer >= 0) snprintf(where, sizeof(where), "layers[%ld].", layer);
    if (!v)
        fail(err, errlen, "%s: %s%s: missing", name, where, key);
    else if (n > MAX_ELEMENTS)
        fail(err, errlen, "%s: %s%s: %lld is implausible (above 2^40 "
             "elements)", name, where, key, (long long)n);
    else
        fail(err, errlen, "%s: %s%s: not a%s integer", name, where, key,
             lo > 0 ? " positive" : " non-negative");
    return -1;
}

/* Reads obj[key] as one of names[0..n); returns its index or -1. */
static int read_choice(const json_t *obj, const char *key,
                       const char *(*name_of)(int), int n, const char *name,
                       char *err, size_t errlen) {
    const char *text = json_string_value(json_object_get(obj, key));
    if (!text) {
        fail(err, errlen, "%s: %s: missing or not a string", name, key);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(text, name_of(i)) == 0) return i;
    char known[256] = "";
    for (int i = 0; i < n; i++) {
        strncat(known, name_of(i), sizeof(known) - strlen(known) - 1);
        if (i + 1 < n) strncat(known, ", ", sizeof(known) - strlen(known) - 1);
    }
    fail(err, errlen, "%s: %s: unknown value '%s' (one of: %s)", name, key,
         text, known);
    return -1;
}

static const char *optimizer_of(int i) {
    return est_optimizer_name((est_optimizer)i);
}
static const char *precision_of(int i) {
    return est_precision_name((est_precision)i);
}

static int read_layer(const json_t *item, size_t index, const char *name,
                      est_layer *layer, char *err, size_t errlen) {
    if (!json_is_object(item)) {
        fail(err, errlen, "%s: layers[%zu]: not an object", name, index);
        return -1;
    }
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type || !type[0]) {
        fail(err, errlen, "%s: layers[%zu].type: missing or not a non-empty "
             "string", name, index);
        return -1;
    }
    *layer = (est_layer){.category = est_category_of(type)};
    long at = (long)index;
    return read_count(item, "activations", 0, 0, name, at,
                      &layer->activations, err, errlen) ||
                   read_count(item, "params", 0, 0, name, at,
                              &layer->params, err, errlen) ||
                   read_count(item, "buffers", 0, 1, name, at,
                              &layer->buffers, err, errlen) ||
                   read_count(item, "saved", 0, 1, name, at, &layer->saved,
                              err, errlen) ||
                   read_count(item, "saved_bytes", 0, 1, name, at,
                              &layer->saved_bytes, err, errlen) ||
                   read_count(item, "masks", 0, 1, name, at, &layer->masks,
                              err, errlen)
               ? -1
               : 0;
}

static int is_measured(const json_t *item) {
    return json_object_get(item, "saved") ||
           json_object_get(item, "saved_bytes") ||
           json_object_get(item, "masks");
}

/* Fields plausible one by one can still add up to no real model. */
static int check_totals(const est_desc *d, const char *name, char *err,
                        size_t errlen) {
    double params = 0, kept = 0;
    for (size_t i = 0; i < d->nlayers; i++) {
        const est_layer *l = &d->layers[i];
        params += l->params + l->buffers;
        kept += l->activations + l->saved + l->masks + l->saved_bytes / 8;
    }
    if (params > (double)MAX_ELEMENTS) {
        fail(err, errlen, "%s: layers: %.0f parameters in all is "
             "implausible (above 2^40 elements)", name, params);
        return -1;
    }
    if (kept * (double)d->batch_size > (double)MAX_ELEMENTS) {
        fail(err, errlen, "%s: layers: %.0f activation elements per batch "
             "of %ld is implausible (above 2^40)", name,
             kept * (double)d->batch_size, d->batch_size);
        return -1;
    }
    return 0;
}

/* The extractor's warnings (optional): an array of strings. */
static int read_warnings(const json_t *root, const char *name, est_desc *d,
                         char *err, size_t errlen) {
    const json_t *list = json_object_get(root, "warnings");
    if (!list) return 0;
    size_t n = json_array_size(list);   /* 0 for a non-array */
    for (size_t i = 0; i < n; i++)
        if (!json_is_string(json_array_get(list, i))) list = NULL;
    if (!json_is_array(list)) {
        fail(err, errlen, "%s: warnings: not an array of strings", name);
        return -1;
    }
    if (n && !(d->warnings = calloc(n, sizeof(*d->warnings)))) {
        fail(err, errlen, "%s: out of memory", name);
        return -1;
    }
    for (; d->nwarnings < n; d->nwarnings++) {
        const json_t *text = json_array_get(list, d->nwarnings);
        if (!(d->warnings[d->nwarnings] = strdup(json_string_value(text)))) {
            fail(err, errlen, "%s: out of memory", name);
            return -1;
        }
    }
    return 0;
}

static int read_header(const json_t *root, const char *name, est_desc *d,
                       char *err, size_t errlen) {
    const char *format = json_string_value(json_object_get(root, "format"));
    if (!format || strcmp(format, FORMAT_TAG) != 0) {
        fail(err, errlen, "%s: format: expected \"" FORMAT_TAG "\"", name);
        return -1;
    }
    const char *model = json_string_value(json_object_get(root, "model"));
    if (!(d->model = strdup(model ? model : ""))) {
        fail(err, errlen, "%s: out of memory", name);
        return -1;
    }
    double batch;
    int opt, prec;
    if (read_count(root, "batch_size", 1, 0, name, -1, &batch, err, errlen) ||
        read_count(root, "input_elements", 0, 0, name, -1, &d->input_elements,
                   err, errlen) ||
        (opt = read_choice(root, "optimizer", optimizer_of, EST_NOPT, name,
                           err, errlen)) < 0 ||
        (prec = read_choice(root, "precision", precision_of, EST_NPREC, name,
                            err, errlen)) < 0)
        return -1;
    /* A batch beyond a million samples is a typo, not a training job. */
    if (batch > 1e6) {
        fail(err, errlen, "%s: batch_size: %.0f is above 1000000", name, batch);
        return -1;
    }
    d->batch_size = (long)batch;
    d->optimizer = (est_optimizer)opt;
    d->precision = (est_precision)prec;
    return 0;
}

est_desc *est_desc_from_json(const json_t *root, const char *name, char *err,
                             size_t errlen) {
    if (!json_is_object(root)) {
        fail(err, errlen, "%s: not a JSON object", name);
        return NULL;
    }
    est_desc *d = calloc(1, sizeof(*d));
    if (!d) {
        fail(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    if (read_header(root, name, d, err, errlen) < 0 ||
        read_warnings(root, name, d, err, errlen) < 0)
        goto bad;
    const json_t *layers = json_object_get(root, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0) {
        fail(err, errlen, "%s: layers: missing or not a non-empty array", name);
        goto bad;
    }
    d->nlayers = json_array_size(layers);
    if (!(d->layers = calloc(d->nlayers, sizeof(*d->layers)))) {
        fail(err, errlen, "%s: out of memory", name);
        goto bad;
    }
    for (size_t i = 0; i < d->nlayers; i++) {
        const json_t *item = json_array_get(layers, i);
        if (read_layer(item, i, name, &d->layers[i], err, errlen) < 0)
            goto bad;
        if (is_measured(item)) d->measured = 1;
    }
    if (check_totals(d, name, err, errlen) < 0) goto bad;
    return d;
bad:
    est_desc_free(d);
    return NULL;
}

/* read_file()'s *nul when the file holds no NUL byte. */
#define NUL_NONE SIZE_MAX

/* The whole file in a buffer of *len bytes, or NULL with errno set. jansson
 * reads a FILE one character at a time; parsing a buffer took a sixth off
 * the load of a 700-layer description. Stops at a NUL byte, which no JSON
 * holds (*nul its offset, else NUL_NONE), and past EST_DESC_MAX
 * (EFBIG). */
static char *read_file(const char *path, size_t *len, size_t *nul) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    *len = 0;
    *nul = NUL_NONE;
    while (buf) {
        size_t got = fread(buf + *len, 1, cap - *len, fp);
        const char *at = memchr(buf + *len, '\0', got);
        if (at) *nul = (size_t)(at - buf);
        *len += got;
        if (*len > EST_DESC_MAX && !at) {
            free(buf);
            fclose(fp);
            errno = EFBIG;
            return NULL;
        }
        if (*len < cap || at) break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
        } else {
            buf = bigger;
            cap *= 2;
        }
    }
    int failed = ferror(fp) ? (errno ? errno : EIO) : 0;
    fclose(fp);
    if (buf && failed) {
        free(buf);
        errno = failed;
        return NULL;
    }
    return buf;
}

void est_desc_too_big(const char *name, char *err, size_t errlen) {
    fail(err, errlen, "%s: a model description may hold %zu bytes (%zu MiB) "
         "at most", name, EST_DESC_MAX, EST_DESC_MAX >> 20);
}

est_desc *est_desc_load(const char *path, char *err, size_t errlen) {
    size_t len, nul;
    char *text = read_file(path, &len, &nul);
    if (!text && errno == EFBIG)
        est_desc_too_big(path, err, errlen);
    else if (!text)
        fail(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    if (!text) return NULL;
    if (nul != NUL_NONE) {
        fail(err, errlen, "%s: a NUL byte at offset %zu: binary, not JSON",
             path, nul);
        free(text);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root) {
        fail(err, errlen, "%s:%d:%d: bad JSON: %s", path, jerr.line,
             jerr.column, jerr.text);
        return NULL;
    }
    est_desc *d = est_desc_from_json(root, path, err, errlen);
    json_decref(root);
    return d;
}

void est_desc_free(est_desc *desc) {
    if (!desc) return;
    free(desc->model);
    free(desc->layers);
    for (size_t i = 0; i < desc->nwarnings; i++) free(desc->warnings[i]);
    free(desc->warnings);
    free(desc);
}
