/* binrec.c -- fixed-size binary records (records.h). */
#include "records.h"

#include <string.h>

int pl_label_ok(const pl_dsconf *c, int64_t label) {
    return c->classes <= 0 || (label >= 0 && label < c->classes);
}

/* The little-endian signed integer of n bytes at p. */
static int64_t read_label(const unsigned char *p, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~0ull << (8 * n); /* sign-extend */
    return (int64_t)v;
}

static void add_bad(pl_found *out, uint64_t offset, pl_bad_reason why) {
    out->bads[out->nbad++] = (pl_bad_entry){.offset = offset, .reason = why};
}

void pl_binary_find(const pl_dsconf *c, const unsigned char *base,
                    uint64_t from, uint64_t size, int final, int64_t mtime,
                    uint32_t file, pl_found *out) {
    uint64_t rs = c->record_size, at = from;
    while (out->count + out->nbad < out->cap && size - at >= rs) {
        int64_t label = read_label(base + at, c->label_size);
        if (pl_label_ok(c, label))
            out->samples[out->count++] = (pl_sample){
                .ts = mtime, .label = label, .file = file,
                .len = (uint32_t)rs, .offset = at};
        else
            add_bad(out, at, PL_BAD_LABEL);
        at += rs;
    }
    if (final && at < size && size - at < rs && out->nbad < out->cap) {
        add_bad(out, at, PL_BAD_TRUNCATED);
        at = size;
    }
    out->done = at;
}

void pl_binary_features(const pl_dsconf *c, const unsigned char *rec,
                        float *out, size_t max, size_t *dim) {
    size_t n = (c->record_size - c->label_size) / sizeof(float);
    if (n > max)
        n = max;
    memcpy(out, rec + c->label_size, n * sizeof(float));
    *dim = n;
}
