/* upload_msg.c -- the update messages' wire layout (upload_msg.h), their
 * Ed25519 signatures (libsodium) and chunking. */
#include "upload_msg.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "dipp_module.h"

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
    put16(p, v & 0xFFFFu), put16(p + 2, v >> 16);
}

static uint32_t get16(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get32(const uint8_t *p) {
    return get16(p) | get16(p + 2) << 16;
}

/* Offsets of the manifest's fields (docs/orbit.md lists them). */
enum {
    M_MAGIC = 0, M_KIND = 4, M_FLAGS = 5, M_CHUNK = 6, M_NAME = 8,
    M_VERSION = 32, M_ABI = 36, M_ARCH = 40, M_IN_FMT = 42, M_OUT_FMT = 43,
    M_OUT_W = 44, M_OUT_H = 46, M_BASE = 48, M_SIZE = 52, M_PAYLOAD = 56,
    M_SERIAL = 60, M_SHA = 64, M_PSHA = 96, M_SIG = 128,
};

void up_manifest_encode(const up_manifest *m, uint8_t out[UP_MANIFEST_BYTES]) {
    memset(out, 0, UP_MANIFEST_BYTES);
    memcpy(out + M_MAGIC, "DUP1", 4);
    out[M_KIND] = m->kind, out[M_FLAGS] = m->flags;
    put16(out + M_CHUNK, m->chunk_size);
    memcpy(out + M_NAME, m->name, strnlen(m->name, UP_NAME_MAX - 1));
    put32(out + M_VERSION, m->version), put32(out + M_ABI, m->abi);
    put16(out + M_ARCH, m->arch);
    out[M_IN_FMT] = m->in_format, out[M_OUT_FMT] = m->out_format;
    put16(out + M_OUT_W, m->out_width), put16(out + M_OUT_H, m->out_height);
    put32(out + M_BASE, m->base_version), put32(out + M_SIZE, m->size);
    put32(out + M_PAYLOAD, m->payload_size);
    put32(out + M_SERIAL, m->key_serial);
    memcpy(out + M_SHA, m->sha256, UP_SHA_BYTES);
    memcpy(out + M_PSHA, m->payload_sha256, UP_SHA_BYTES);
    memcpy(out + M_SIG, m->sig, UP_SIG_BYTES);
}

bool up_name_ok(const char *name) {
    size_t len = strnlen(name, UP_NAME_MAX);
    return len > 0 && len < UP_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

static const char *bad_field(const up_manifest *m, size_t len) {
    if (len != UP_MANIFEST_BYTES) return "length";
    if (m->kind != UP_KIND_MODULE && m->kind != UP_KIND_PROCS) return "kind";
    if (m->flags & ~(unsigned)(UP_FLAG_ZSTD | UP_FLAG_DELTA)) return "flags";
    if ((m->flags & UP_FLAG_DELTA) && !(m->flags & UP_FLAG_ZSTD)) return "flags";
    /* procedures travel whole: there is no version file to patch */
    if ((m->flags & UP_FLAG_DELTA) && m->kind == UP_KIND_PROCS) return "flags";
    if (m->chunk_size < UP_CHUNK_MIN || m->chunk_size > UP_CHUNK_MAX) return "chunk_size";
    if (!up_name_ok(m->name)) return "name";
    if (m->version == 0) return "version";
    if (m->size == 0 || m->size > UP_MAX_SIZE) return "size";
    if (m->payload_size == 0 || m->payload_size > UP_MAX_SIZE) return "payload_size";
    if (up_chunk_count(m) > UP_MAX_CHUNKS) return "chunk_size";
    if (!(m->flags & UP_FLAG_ZSTD) && m->payload_size != m->size) return "payload_size";
    if (m->kind == UP_KIND_PROCS) return NULL; /* no test-run: no formats */
    if (dipp_format_bpp(m->in_format) == 0) return "in_format";
    if (m->out_format < DIPP_FMT_BAYER_RGGB8 || m->out_format > DIPP_FMT_PNG) return "out_format";
    return NULL;
}

int up_manifest_decode(const uint8_t *msg, size_t len, up_manifest *m,
                       char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (len != UP_MANIFEST_BYTES || memcmp(msg, "DUP1", 4) != 0) {
        snprintf(err, errlen, "manifest: %zu bytes, not a DUP1 manifest of %d", len,
                 UP_MANIFEST_BYTES);
        return -1;
    }
    m->kind = msg[M_KIND], m->flags = msg[M_FLAGS];
    m->chunk_size = (uint16_t)get16(msg + M_CHUNK);
    memcpy(m->name, msg + M_NAME, UP_NAME_MAX - 1);
    m->version = get32(msg + M_VERSION), m->abi = get32(msg + M_ABI);
    m->arch = get16(msg + M_ARCH);
    m->in_format = msg[M_IN_FMT], m->out_format = msg[M_OUT_FMT];
    m->out_width = (uint16_t)get16(msg + M_OUT_W);
    m->out_height = (uint16_t)get16(msg + M_OUT_H);
    m->base_version = get32(msg + M_BASE), m->size = get32(msg + M_SIZE);
    m->payload_size = get32(msg + M_PAYLOAD);
    m->key_serial = get32(msg + M_SERIAL);
    memcpy(m->sha256, msg + M_SHA, UP_SHA_BYTES);
    memcpy(m->payload_sha256, msg + M_PSHA, UP_SHA_BYTES);
    memcpy(m->sig, msg + M_SIG, UP_SIG_BYTES);
    const char *field = msg[M_NAME + UP_NAME_MAX - 1] ? "name" : bad_field(m, len);
    if (field)
        snprintf(err, errlen, "manifest of '%s': field %s out of range", m->name, field);
    return field ? -1 : 0;
}

uint32_t up_chunk_count(const up_manifest *m) {
    return m->chunk_size ? (m->payload_size + m->chunk_size - 1u) / m->chunk_size : 0;
}

uint32_t up_tag(const up_manifest *m) {
    return get32(m->payload_sha256);
}

size_t up_chunk_build(const up_manifest *m, const uint8_t *payload, uint32_t k,
                      uint8_t *out) {
    uint32_t off = k * m->chunk_size;
    uint32_t n = m->payload_size - off < m->chunk_size ? m->payload_size - off
                                                        : m->chunk_size;
    put32(out, up_tag(m)), put32(out + 4, k);
    memcpy(out + UP_CHUNK_HDR, payload + off, n);
    return UP_CHUNK_HDR + n;
}

void up_sign(up_manifest *m, const uint8_t sk[UP_SK_BYTES]) {
    if (sodium_init() < 0)
        return;
    uint8_t wire[UP_MANIFEST_BYTES];
    up_manifest_encode(m, wire);
    crypto_sign_detached(m->sig, NULL, wire, UP_SIGNED_BYTES, sk);
}

int up_manifest_verify(const up_manifest *m, const uint8_t pk[UP_PK_BYTES]) {
    if (sodium_init() < 0) /* idempotent; picks the implementations */
        return 0;
    uint8_t wire[UP_MANIFEST_BYTES];
    up_manifest_encode(m, wire);
    return crypto_sign_verify_detached(m->sig, wire, UP_SIGNED_BYTES, pk) == 0;
}

void up_rotate_build(uint32_t serial, const uint8_t pk[UP_PK_BYTES],
                     const uint8_t old_sk[UP_SK_BYTES],
                     uint8_t out[UP_ROTATE_BYTES]) {
    memcpy(out, "DKR1", 4);
    put32(out + 4, serial);
    memcpy(out + 8, pk, UP_PK_BYTES);
    crypto_sign_detached(out + 40, NULL, out, 40, old_sk);
}

void up_sha256(const uint8_t *data, size_t len, uint8_t out[UP_SHA_BYTES]) {
    crypto_hash_sha256(out, data, len);
}
