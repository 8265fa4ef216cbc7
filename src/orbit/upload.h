/* upload.h -- the satellite's update store: it takes a signed manifest and
 * the chunks of its payload across as many passes as it needs, checks
 * signature, version, ABI, architecture, hashes and quota, test-runs the
 * module in the sandbox, and switches it in atomically; it rolls a module
 * back to its previous version after a number of consecutive failures in
 * flight, and rotates the ground's key on a message signed with the old.
 * An update of kind 2 carries an image of DISH procedures the same way
 * (manifest, chunks, resume); where a module is test-run and switched
 * in, it is handed to the runtime (up_config's accept), and only its
 * version stays here, the floor of the next.
 *
 * Everything is in one folder: "index" (the one commit point, replaced
 * crash-safe: keys, each module's active and previous version, the upload
 * in progress and which chunks of it are on board), "upload.part" (the
 * chunks, each synced before the index names it) and "NAME@V.so" (one file
 * per version kept). After a power cut at any moment the store opens in
 * its last committed state: a module is active whole or not at all. */
#ifndef DIPP_UPLOAD_H
#define DIPP_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "upload_msg.h"

#define UP_MAX_MODULES 32

typedef struct up_module {
    char name[UP_NAME_MAX];
    uint32_t highest;  /* highest version accepted: the replay floor */
    uint32_t active, previous; /* versions; 0 none */
    uint32_t failures; /* consecutive failures in flight of active */
    uint32_t active_size, previous_size;
    uint8_t active_sha[UP_SHA_BYTES], previous_sha[UP_SHA_BYTES];
} up_module;

/* The index file, as kept: the board's own layout, checked by a SHA-256
 * of the rest. */
typedef struct up_index {
    char magic[4];
    uint32_t key_serial;
    uint8_t pk[UP_PK_BYTES];
    uint32_t nmods;
    up_module mod[UP_MAX_MODULES];
    uint32_t uploading; /* 1 while an upload is in progress */
    uint8_t manifest[UP_MANIFEST_BYTES];
    uint32_t received;
    uint8_t map[UP_MAX_CHUNKS / 8];
    char garbage[UP_NAME_MAX + 16]; /* a file to remove after a commit */
    uint8_t sum[UP_SHA_BYTES];
} up_index;

/* Takes a complete image of procedures (an update of kind UP_KIND_PROCS,
 * its hash checked): verifies, loads and stores it, or refuses it. An
 * errors.h code, what happened in detail either way. Taking the same
 * name and version again (a power cut came before the index said so)
 * must succeed. */
typedef int (*up_accept_fn)(void *ctx, const up_manifest *m, const uint8_t *bytes,
                            char *detail, size_t cap);

typedef struct up_config {
    uint64_t quota_bytes; /* module versions and the upload; 16 MiB */
    uint32_t fail_limit;  /* consecutive failures before a rollback; 3 */
    uint32_t arch;        /* ELF e_machine accepted; the board's */
    up_accept_fn accept;  /* procedures; NULL: the board takes none */
    void *accept_ctx;
    /* what an image of procedures may be, checked before its upload
     * starts: its most bytes and the bytecode version the board runs */
    uint32_t procs_max_bytes, procs_version;
} up_config;

typedef struct up_result {
    int code;          /* 0 or errors.h's code */
    int installed;     /* this call activated a version */
    uint32_t missing;  /* chunks the upload still needs */
    char detail[256];
} up_result;

/* Test-runs the candidate at path: an errors.h code, why in detail. */
typedef int (*up_test_fn)(void *ctx, const char *path, const up_manifest *m,
                          char *detail, size_t cap);

typedef struct up_store {
    char dir[512];
    up_config cfg;
    up_index idx;
    up_test_fn test;
    void *test_ctx;
} up_store;

/* The defaults above. */
up_config up_config_default(void);
/* Opens dir's store (first_pk installed as key 1 in a new one), finishes
 * what a power cut interrupted, and completes an upload whose chunks are
 * all on board (its outcome in r). 0, or -1 when the index is unreadable
 * (r's code and detail say why). */
int up_open(up_store *s, const char *dir, const uint8_t first_pk[UP_PK_BYTES],
            const up_config *cfg, up_test_fn test, void *test_ctx,
            up_result *r);

/* The three messages. Each returns r->code (0 when taken). A manifest
 * starts an upload, or resumes it when it is the one in progress. */
int up_on_manifest(up_store *s, const uint8_t *msg, size_t len, up_result *r);
int up_on_chunk(up_store *s, const uint8_t *msg, size_t len, up_result *r);
int up_on_rotate(up_store *s, const uint8_t *msg, size_t len, up_result *r);

/* The chunks the upload in progress lacks, up to max of them (the ground
 * resends these); returns how many there are in all. */
uint32_t up_missing(const up_store *s, uint32_t *list, uint32_t max);

/* The active version of name: its path. 0, or -1 when none. */
int up_active_path(const up_store *s, const char *name, char *path, size_t cap);
const up_module *up_find(const up_store *s, const char *name);

/* How a run of name went in flight (its errors.h code): fail_limit
 * failures in a row roll it back to its previous version (r's code
 * DIPP_E_UP_ROLLBACK). */
int up_on_run(up_store *s, const char *name, int code, up_result *r);

/* Internal to the store's files (upload_index.c, upload_install.c). */
int up_index_save(up_store *s, up_result *r);
int up_install(up_store *s, up_result *r);
int up_fail(up_result *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void up_version_file(const char *name, uint32_t version, char *out, size_t cap);
/* name's entry, made when absent: in a free place, else in that of a
 * name never installed (one kept only for its replay floor: the
 * refusals of mistyped names must not fill the table for good); NULL
 * when every place holds an installed module. */
up_module *up_module_of(up_store *s, const char *name);
/* Whether up_module_of would find or make name's entry. */
bool up_module_room(const up_store *s, const char *name);
/* Whether entry m holds an image of procedures: its hash, kept by the
 * install, and no version (a module's entry has one active for good). */
bool up_holds_procs(const up_module *m);

#endif
