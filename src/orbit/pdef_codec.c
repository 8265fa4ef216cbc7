/* pdef_codec.c -- the binary form of a pipeline definition, as uplinked
 * and as stored in a slot: one envelope byte, then CBOR (RFC 8949, through
 * Debian's libcbor) either as is (envelope 0) or zstd-compressed
 * (envelope 1), whichever is smaller. CBOR rather than protobuf-c: no
 * schema compiler in the build, self-describing on the ground, and small
 * integers take one byte. The CBOR is
 *
 *   [version=1, pipeline, [[module name, {param: value, ...}], ...]]
 *
 * where a step that takes a module-configuration slot has it third:
 * [module name, {param: value, ...}, slot].
 * with integers in their shortest form and floats as float32 when exact.
 * Short definitions rarely compress (zstd's frame header costs ~6 bytes),
 * hence the choice per definition. */
#include "pdef.h"

#include <cbor.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "runner.h"

#define CODEC_VERSION 1
#define ENV_RAW 0
#define ENV_ZSTD 1
#define MAX_RAW 4096 /* a definition's CBOR is never near this */

static cbor_item_t *build_int(int64_t v) {
    uint64_t m = v < 0 ? (uint64_t)(-(v + 1)) : (uint64_t)v;
    cbor_item_t *i = m <= UINT8_MAX ? cbor_build_uint8((uint8_t)m)
                     : m <= UINT16_MAX ? cbor_build_uint16((uint16_t)m)
                     : m <= UINT32_MAX ? cbor_build_uint32((uint32_t)m)
                                       : cbor_build_uint64(m);
    if (i && v < 0)
        cbor_mark_negint(i);
    return i;
}

static cbor_item_t *build_value(const dipp_param *v) {
    if (v->type == DIPP_PARAM_INT)
        return build_int(v->i);
    if (v->type == DIPP_PARAM_FLOAT)
        return (double)(float)v->f == v->f ? cbor_build_float4((float)v->f)
                                           : cbor_build_float8(v->f);
    return cbor_build_string(v->s);
}

/* Appends item to array and drops the caller's reference to item (the
 * array holds its own), whatever happens: 0 when either is missing. */
static int push(cbor_item_t *array, cbor_item_t *item) {
    int ok = array && item && cbor_array_push(array, item);
    if (item)
        cbor_decref(&item);
    return ok;
}

static int add_pair(cbor_item_t *map, const dipp_param *v) {
    struct cbor_pair kv = {cbor_build_string(v->name), build_value(v)};
    int ok = map && kv.key && kv.value && cbor_map_add(map, kv);
    if (kv.key)
        cbor_decref(&kv.key);
    if (kv.value)
        cbor_decref(&kv.value);
    return ok;
}

static cbor_item_t *build_step(const pdef_step *s) {
    cbor_item_t *step = cbor_new_definite_array(s->config ? 3 : 2);
    int ok = push(step, cbor_build_string(s->name));
    cbor_item_t *map = cbor_new_definite_map(s->params.count);
    for (uint32_t k = 0; ok && k < s->params.count; k++)
        ok = add_pair(map, &s->params.item[k]);
    ok = push(step, map) && ok;
    if (s->config)
        ok = push(step, build_int(s->config)) && ok;
    if (!ok && step)
        cbor_decref(&step);
    return ok ? step : NULL;
}

static cbor_item_t *build(const pdef *d) {
    cbor_item_t *root = cbor_new_definite_array(3);
    int ok = push(root, build_int(CODEC_VERSION)) && push(root, build_int(d->id));
    cbor_item_t *steps = cbor_new_definite_array(d->count);
    for (uint32_t k = 0; ok && k < d->count; k++)
        ok = push(steps, build_step(&d->step[k]));
    ok = push(root, steps) && ok;
    if (!ok && root)
        cbor_decref(&root);
    return ok ? root : NULL;
}

int pdef_encode(const pdef *d, uint8_t *out, char *err, size_t errlen) {
    uint8_t raw[MAX_RAW], packed[MAX_RAW];
    cbor_item_t *root = build(d);
    size_t n = root ? cbor_serialize(root, raw, sizeof raw) : 0;
    if (root)
        cbor_decref(&root);
    if (!n) {
        snprintf(err, errlen, "cannot encode the definition (too large or no memory)");
        return -1;
    }
    size_t z = ZSTD_compress(packed, sizeof packed, raw, n, 19);
    int use_z = !ZSTD_isError(z) && z < n;
    size_t total = 1 + (use_z ? z : n);
    if (total > PDEF_MAX_BYTES) {
        snprintf(err, errlen, "encoded definition is %zu bytes, %zu over the %d-byte parameter",
                 total, total - PDEF_MAX_BYTES, PDEF_MAX_BYTES);
        return -1;
    }
    out[0] = use_z ? ENV_ZSTD : ENV_RAW;
    memcpy(out + 1, use_z ? packed : raw, total - 1);
    return (int)total;
}

/* ---- decoding: every shape and range checked, nothing trusted ---- */

static int get_uint(const cbor_item_t *i, uint64_t max, uint64_t *v) {
    if (!i || !cbor_isa_uint(i))
        return -1;
    *v = cbor_get_int(i);
    return *v <= max ? 0 : -1;
}

/* A NUL inside the text would cut it short without a word ("debayer\0junk"
 * passing as debayer), so text holding one is refused, as the YAML reader
 * refuses it. */
static int get_text(const cbor_item_t *i, char *dst, size_t cap) {
    if (!i || !cbor_isa_string(i) || !cbor_string_is_definite(i))
        return -1;
    size_t n = cbor_string_length(i);
    if (n == 0 || n >= cap || memchr(cbor_string_handle(i), 0, n))
        return -1;
    memcpy(dst, cbor_string_handle(i), n);
    dst[n] = 0;
    return 0;
}

static int get_value(const cbor_item_t *i, dipp_param *v) {
    if (cbor_isa_uint(i) || cbor_isa_negint(i)) {
        uint64_t m = cbor_get_int(i);
        if (m > INT64_MAX)
            return -1;
        v->type = DIPP_PARAM_INT;
        v->i = cbor_isa_negint(i) ? -(int64_t)m - 1 : (int64_t)m;
        return 0;
    }
    if (cbor_isa_float_ctrl(i) && cbor_float_get_width(i) != CBOR_FLOAT_0) {
        v->type = DIPP_PARAM_FLOAT;
        v->f = cbor_float_get_float(i);
        return isfinite(v->f) ? 0 : -1;
    }
    v->type = DIPP_PARAM_STR;
    return get_text(i, v->s, sizeof v->s);
}

/* Whether parameter k's name is that of one before it. */
static int named_before(const dipp_params *p, size_t k) {
    for (size_t j = 0; j < k; j++)
        if (strcmp(p->item[j].name, p->item[k].name) == 0)
            return 1;
    return 0;
}

/* A name given twice is refused, as the YAML reader refuses it: which
 * value a module would see is up to its lookup. */
static int get_params(const cbor_item_t *m, dipp_params *p) {
    if (!cbor_isa_map(m) || cbor_map_size(m) > DIPP_PARAMS_MAX)
        return -1;
    struct cbor_pair *kv = cbor_map_handle(m);
    for (size_t k = 0; k < cbor_map_size(m); k++, p->count++)
        if (get_text(kv[k].key, p->item[k].name, sizeof p->item[k].name) ||
            named_before(p, k) || get_value(kv[k].value, &p->item[k]))
            return -1;
    return 0;
}

static int get_step(const cbor_item_t *i, pdef_step *s) {
    size_t n = cbor_isa_array(i) ? cbor_array_size(i) : 0;
    if (n != 2 && n != 3)
        return -1;
    cbor_item_t **f = cbor_array_handle(i);
    uint64_t config = 0;
    if (get_text(f[0], s->name, sizeof s->name) || !runner_name_ok(s->name) ||
        (n == 3 && (get_uint(f[2], PDEF_CONFIGS, &config) || !config)))
        return -1;
    s->config = (uint32_t)config;
    return get_params(f[1], &s->params);
}

static int get_def(const cbor_item_t *root, pdef *d) {
    uint64_t version, id;
    if (!cbor_isa_array(root) || cbor_array_size(root) != 3)
        return -1;
    cbor_item_t **f = cbor_array_handle(root);
    if (get_uint(f[0], CODEC_VERSION, &version) || version != CODEC_VERSION ||
        get_uint(f[1], PDEF_PIPELINES, &id) || id < 1 || !cbor_isa_array(f[2]))
        return -1;
    d->id = (uint32_t)id;
    d->count = (uint32_t)cbor_array_size(f[2]);
    if (d->count < 1 || d->count > PDEF_MAX_STEPS)
        return -1;
    for (uint32_t k = 0; k < d->count; k++)
        if (get_step(cbor_array_handle(f[2])[k], &d->step[k]))
            return -1;
    return 0;
}

/* cbor_load allocates a container's slots from the count it declares
 * before reading them: a damaged count could ask for gigabytes. A first
 * pass with the streaming decoder refuses any container that claims more
 * items than bytes are left (each item takes at least one). */
typedef struct scan {
    size_t left;
    int too_big;
} scan;

static void on_container(void *ctx, size_t items) {
    scan *sc = ctx;
    sc->too_big |= items > sc->left;
}

static void on_map(void *ctx, size_t pairs) {
    on_container(ctx, pairs > SIZE_MAX / 2 ? SIZE_MAX : pairs * 2);
}

static int counts_plausible(const uint8_t *p, size_t n) {
    struct cbor_callbacks cb = cbor_empty_callbacks;
    cb.array_start = on_container;
    cb.map_start = on_map;
    scan sc = {n, 0};
    for (size_t at = 0; at < n && !sc.too_big;) {
        sc.left = n - at;
        struct cbor_decoder_result r = cbor_stream_decode(p + at, n - at, &cb, &sc);
        if (r.status != CBOR_DECODER_FINISHED || r.read == 0)
            return 0;
        at += r.read;
    }
    return !sc.too_big;
}

/* The CBOR bytes of an envelope, decompressed into buf when needed. */
static long unwrap(const uint8_t *in, size_t len, uint8_t *buf) {
    if (len < 2 || len > PDEF_MAX_BYTES || in[0] > ENV_ZSTD)
        return -1;
    if (in[0] == ENV_RAW) {
        memcpy(buf, in + 1, len - 1);
        return (long)len - 1;
    }
    size_t n = ZSTD_decompress(buf, MAX_RAW, in + 1, len - 1);
    return ZSTD_isError(n) ? -1 : (long)n;
}

int pdef_decode(const uint8_t *in, size_t len, pdef *d, char *err,
                size_t errlen) {
    uint8_t raw[MAX_RAW];
    memset(d, 0, sizeof *d);
    long n = unwrap(in, len, raw);
    struct cbor_load_result res;
    int plausible = n > 0 && counts_plausible(raw, (size_t)n);
    cbor_item_t *root = plausible ? cbor_load(raw, (size_t)n, &res) : NULL;
    int rc = root && res.read == (size_t)n ? get_def(root, d) : -1;
    if (root)
        cbor_decref(&root);
    if (rc)
        snprintf(err, errlen, "not a DIPP pipeline definition (%zu bytes: envelope, "
                 "compression or CBOR layout wrong)", len);
    return rc;
}
