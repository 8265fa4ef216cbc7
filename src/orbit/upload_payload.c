/* upload_payload.c -- what travels for a module: its bytes, a zstd frame
 * of them, or a zstd frame against the version on board used as a prefix
 * with long-distance matching (what `zstd --patch-from` does), so a small
 * code change costs a small patch. Also the ELF architecture check. */
#include "upload_msg.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* A window that spans base and module alike (both at most UP_MAX_SIZE). */
#define WINDOW_LOG 24

static int compress_with(const uint8_t *mod, size_t len, const uint8_t *base,
                         size_t base_len, int level, uint8_t **out, size_t *out_len) {
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t cap = ZSTD_compressBound(len);
    *out = malloc(cap);
    size_t n = !c || !*out ? 1 : 0;
    if (!n) {
        ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
        ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, WINDOW_LOG);
        ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
        if (base)
            ZSTD_CCtx_refPrefix(c, base, base_len);
        n = ZSTD_compress2(c, *out, cap, mod, len);
    }
    ZSTD_freeCCtx(c);
    if (!*out || ZSTD_isError(n)) {
        free(*out);
        return -1;
    }
    *out_len = n;
    return 0;
}

int up_prepare(up_manifest *m, const uint8_t *mod, size_t mod_len,
               const uint8_t *base, size_t base_len, int level,
               const uint8_t sk[UP_SK_BYTES], uint8_t **payload,
               char *err, size_t errlen) {
    size_t n = mod_len;
    if (mod_len == 0 || mod_len > UP_MAX_SIZE) {
        snprintf(err, errlen, "module of %zu bytes: 1 to %u", mod_len, UP_MAX_SIZE);
        return -1;
    }
    if (level > 0 && compress_with(mod, mod_len, base, base_len, level, payload, &n)) {
        snprintf(err, errlen, "zstd could not compress the module");
        return -1;
    }
    if (level <= 0 && (*payload = malloc(mod_len)))
        memcpy(*payload, mod, mod_len);
    m->flags = (uint8_t)((level > 0 ? UP_FLAG_ZSTD : 0) | (base ? UP_FLAG_DELTA : 0));
    m->size = (uint32_t)mod_len, m->payload_size = (uint32_t)n;
    up_sha256(mod, mod_len, m->sha256);
    up_sha256(*payload, n, m->payload_sha256);
    up_sign(m, sk);
    return 0;
}

int up_payload_decode(const up_manifest *m, const uint8_t *payload,
                      const uint8_t *base, size_t base_len, uint8_t **mod,
                      char *err, size_t errlen) {
    *mod = malloc(m->size);
    if (!*mod) {
        snprintf(err, errlen, "%s: no memory for %u bytes", m->name, m->size);
        return -1;
    }
    if (!(m->flags & UP_FLAG_ZSTD)) {
        memcpy(*mod, payload, m->size);
        return 0;
    }
    ZSTD_DCtx *d = ZSTD_createDCtx();
    size_t n = 0;
    if (d) {
        ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, WINDOW_LOG);
        if (m->flags & UP_FLAG_DELTA)
            ZSTD_DCtx_refPrefix(d, base, base_len);
        n = ZSTD_decompressDCtx(d, *mod, m->size, payload, m->payload_size);
    }
    ZSTD_freeDCtx(d);
    if (!d || ZSTD_isError(n) || n != m->size) {
        snprintf(err, errlen, "%s v%u: payload does not decode to %u bytes (%s)",
                 m->name, m->version, m->size,
                 d && ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
        free(*mod);
        *mod = NULL;
        return -1;
    }
    return 0;
}

uint32_t up_board_arch(void) {
#if defined(__x86_64__)
    return EM_X86_64;
#elif defined(__aarch64__)
    return EM_AARCH64;
#elif defined(__arm__)
    return EM_ARM;
#else
    return EM_NONE;
#endif
}

int up_elf_arch_ok(const uint8_t *data, size_t len, uint32_t arch) {
    const int wide = sizeof(void *) == 8;
    if (len < sizeof(Elf64_Ehdr) || memcmp(data, ELFMAG, SELFMAG) != 0 ||
        data[EI_CLASS] != (wide ? ELFCLASS64 : ELFCLASS32))
        return 0;
    uint16_t type, machine; /* at the same offsets in both classes */
    memcpy(&type, data + 16, 2);
    memcpy(&machine, data + 18, 2);
    return type == ET_DYN && machine == arch;
}
