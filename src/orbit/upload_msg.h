/* upload_msg.h -- the messages of a module update as they travel: a signed
 * manifest, the chunks of its payload, and a key rotation. Fixed layouts,
 * little endian (docs/orbit.md, "Updates"), so a ground tool in any
 * language can build them. The ground side also lives here: building and
 * signing a manifest, and a payload as a zstd patch-from delta. */
#ifndef DIPP_UPLOAD_MSG_H
#define DIPP_UPLOAD_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UP_NAME_MAX 24
#define UP_SHA_BYTES 32
#define UP_PK_BYTES 32
#define UP_SK_BYTES 64
#define UP_SIG_BYTES 64
#define UP_MANIFEST_BYTES 192 /* 128 signed, then the signature */
#define UP_SIGNED_BYTES 128
#define UP_ROTATE_BYTES 104   /* "DKR1", serial, key, signature */
#define UP_CHUNK_HDR 8        /* upload tag (4), chunk index (4) */
#define UP_CHUNK_MIN 64
#define UP_CHUNK_MAX 4096
#define UP_MAX_CHUNKS 16384
#define UP_MAX_SIZE (8u << 20) /* a module, and a payload, at most 8 MiB */

/* What an update carries. */
enum up_kind {
    UP_KIND_MODULE = 1, /* a module's shared object, test-run before the switch */
    UP_KIND_PROCS = 2,  /* a DISH image of procedures, verified and loaded on board */
};

enum up_flags {
    UP_FLAG_ZSTD = 1,  /* the payload is a zstd frame */
    UP_FLAG_DELTA = 2, /* ... compressed against base_version's bytes */
};

typedef struct up_manifest {
    uint8_t kind; /* up_kind */
    uint8_t flags;
    uint16_t chunk_size;
    char name[UP_NAME_MAX];
    uint32_t version, abi, arch; /* arch: ELF e_machine; procedures: 0, 0 */
    uint8_t in_format, out_format; /* the test-run's image formats; procedures: 0 */
    uint16_t out_width, out_height; /* its output's shape; 0: any */
    uint32_t base_version; /* a delta's base */
    uint32_t size, payload_size;
    uint32_t key_serial; /* the key it is signed with */
    uint8_t sha256[UP_SHA_BYTES];         /* of the module's bytes */
    uint8_t payload_sha256[UP_SHA_BYTES]; /* of what travels */
    uint8_t sig[UP_SIG_BYTES];
} up_manifest;

/* Whether name is one a module or procedure set may have: 1 to
 * UP_NAME_MAX - 1 bytes of lowercase letters, digits and '_'. */
bool up_name_ok(const char *name);
/* Wire form; decode checks the layout and field ranges (not the
 * signature): 0, or -1 with the field at fault in err. */
void up_manifest_encode(const up_manifest *m, uint8_t out[UP_MANIFEST_BYTES]);
int up_manifest_decode(const uint8_t *msg, size_t len, up_manifest *m,
                       char *err, size_t errlen);
/* Chunks of the payload: index k covers bytes k*chunk_size on. */
uint32_t up_chunk_count(const up_manifest *m);
/* The tag a chunk carries: the payload hash's first 4 bytes, so a chunk of
 * another upload is never written into this one. */
uint32_t up_tag(const up_manifest *m);
/* Builds chunk k of payload into out (UP_CHUNK_HDR + chunk bytes);
 * returns its length. */
size_t up_chunk_build(const up_manifest *m, const uint8_t *payload,
                      uint32_t k, uint8_t *out);

/* Ground side. Fills m's hashes and payload fields for module bytes mod
 * (base: the version on board for a delta, else NULL), signs it with sk;
 * *payload is malloc'ed. 0, or -1 with why in err. */
int up_prepare(up_manifest *m, const uint8_t *mod, size_t mod_len,
               const uint8_t *base, size_t base_len, int level,
               const uint8_t sk[UP_SK_BYTES], uint8_t **payload,
               char *err, size_t errlen);
void up_sign(up_manifest *m, const uint8_t sk[UP_SK_BYTES]);
/* A key rotation: install pk as key serial, signed with the current sk. */
void up_rotate_build(uint32_t serial, const uint8_t pk[UP_PK_BYTES],
                     const uint8_t old_sk[UP_SK_BYTES],
                     uint8_t out[UP_ROTATE_BYTES]);

/* Satellite side: whether m's signature verifies with pk. */
int up_manifest_verify(const up_manifest *m, const uint8_t pk[UP_PK_BYTES]);
/* Decodes the module bytes from a payload (a delta needs base). 0, or -1
 * with why. *mod is malloc'ed, m->size bytes. */
int up_payload_decode(const up_manifest *m, const uint8_t *payload,
                      const uint8_t *base, size_t base_len, uint8_t **mod,
                      char *err, size_t errlen);
void up_sha256(const uint8_t *data, size_t len, uint8_t out[UP_SHA_BYTES]);
/* Whether ELF bytes are a shared object of this board's architecture
 * (class and e_machine); the board's e_machine. */
int up_elf_arch_ok(const uint8_t *data, size_t len, uint32_t arch);
uint32_t up_board_arch(void);

#endif
