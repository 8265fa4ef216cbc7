/* upload_helpers.c -- the ground's side of the update tests
 * (upload_helpers.h). */
#include "upload_helpers.h"

#include <elf.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dipp_module.h"
#include "errors.h"
#include "platform.h"

test_key test_key_make(uint8_t s) {
    test_key k;
    uint8_t seed[crypto_sign_SEEDBYTES];
    memset(seed, s, sizeof seed);
    k.serial = s;
    if (sodium_init() >= 0)
        crypto_sign_seed_keypair(k.pk, k.sk, seed);
    return k;
}

uint8_t *test_elf(size_t len, uint32_t seed, const char *marker) {
    uint8_t *p = malloc(len);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t k = 0; k < len; k++) { /* text-like: repeats, for zstd */
        x = x * 1103515245u + 12345u;
        p[k] = (uint8_t)("abcdefgh"[(x >> 16) & 7]);
    }
    memset(p, 0, 64);
    memcpy(p, ELFMAG, SELFMAG);
    p[EI_CLASS] = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    uint16_t type = ET_DYN, machine = (uint16_t)up_board_arch();
    memcpy(p + 16, &type, 2);
    memcpy(p + 18, &machine, 2);
    if (marker)
        memcpy(p + 100, marker, strlen(marker));
    return p;
}

up_manifest test_manifest(const char *name, uint32_t v, const uint8_t *mod,
                          size_t len, const uint8_t *base, size_t base_len,
                          const test_key *k, uint8_t **payload) {
    up_manifest m;
    char err[256];
    memset(&m, 0, sizeof m);
    m.kind = 1, m.chunk_size = 512, m.version = v, m.abi = DIPP_ABI_VERSION;
    snprintf(m.name, sizeof m.name, "%s", name);
    m.arch = up_board_arch();
    m.in_format = DIPP_FMT_GRAY8, m.out_format = DIPP_FMT_GRAY8;
    m.base_version = base ? v - 1 : 0;
    m.key_serial = k->serial;
    if (up_prepare(&m, mod, len, base, base_len, 19, k->sk, payload, err, sizeof err))
        fprintf(stderr, "%s\n", err);
    return m;
}

int test_send(up_store *s, const up_manifest *m, const uint8_t *payload,
              up_result *r) {
    uint8_t wire[UP_MANIFEST_BYTES], chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    uint32_t missing[64];
    up_manifest_encode(m, wire);
    if (up_on_manifest(s, wire, sizeof wire, r) || r->installed)
        return r->code;
    while (r->missing) {
        uint32_t n = up_missing(s, missing, 64);
        for (uint32_t k = 0; k < n && k < 64; k++) {
            size_t len = up_chunk_build(m, payload, missing[k], chunk);
            if (up_on_chunk(s, chunk, len, r) || r->installed)
                return r->code;
        }
    }
    return r->code;
}

int test_stub_run(void *ctx, const char *path, const up_manifest *m,
                  char *detail, size_t cap) {
    uint8_t *bytes, sha[UP_SHA_BYTES];
    size_t len;
    (void)ctx;
    if (plat_file_read(path, &bytes, &len)) {
        snprintf(detail, cap, "%s: unreadable", path);
        return DIPP_E_MISSING_MODULE;
    }
    up_sha256(bytes, len, sha);
    int bad = len > 103 && memcmp(bytes + 100, "BAD", 3) == 0;
    int whole = len == m->size && memcmp(sha, m->sha256, UP_SHA_BYTES) == 0;
    free(bytes);
    snprintf(detail, cap, "%s", !whole ? "candidate not whole" : bad ? "crashed" : "ok");
    return !whole ? DIPP_E_MISSING_MODULE : bad ? DIPP_E_CRASH : 0;
}
