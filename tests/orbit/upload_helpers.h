/* upload_helpers.h -- the ground's side of an update in the update tests:
 * keys from fixed seeds, module-like ELF bytes, and sending a manifest and
 * the chunks the store still lacks. */
#ifndef DIPP_UPLOAD_HELPERS_H
#define DIPP_UPLOAD_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "upload.h"

typedef struct test_key {
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES];
    uint32_t serial;
} test_key;

/* The key of seed byte s (the same s, the same key), as key serial s. */
test_key test_key_make(uint8_t s);
/* len bytes that pass the ELF check of this board, the rest from seed;
 * marker, when not NULL, written at byte 100 (the stub test-run fails a
 * module holding "BAD"). */
uint8_t *test_elf(size_t len, uint32_t seed, const char *marker);
/* A manifest for module name version v of mod (a delta against base when
 * base is not NULL), signed by k as its serial; *payload malloc'ed. */
up_manifest test_manifest(const char *name, uint32_t v, const uint8_t *mod,
                          size_t len, const uint8_t *base, size_t base_len,
                          const test_key *k, uint8_t **payload);
/* Sends m and then every chunk the store lacks, until it needs none or a
 * call fails: the last result's code. */
int test_send(up_store *s, const up_manifest *m, const uint8_t *payload,
              up_result *r);
/* The stub test-run: ok unless the candidate holds "BAD" (600), checking
 * the candidate file is whole (its hash). */
int test_stub_run(void *ctx, const char *path, const up_manifest *m,
                  char *detail, size_t cap);

#endif
