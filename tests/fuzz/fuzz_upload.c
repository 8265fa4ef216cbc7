/* fuzz_upload.c -- fuzz target (fuzz.h) of the satellite's update store
 * (upload.h) as the link drives it: a sequence of manifests, chunks and
 * key rotations, some as they came, some signed with the ground's key,
 * and whole honest uploads of a module or of DISH procedures between
 * them. Every message is answered with its code, a refusal with a
 * sentence; and after each one the store opened again from its folder
 * holds what the live one holds (nothing said done that a power cut
 * would undo, nothing lost).
 *
 * The input is records: a byte choosing the kind (enum below), two bytes
 * of length (little endian), the body. Each input starts from an empty
 * store, on the in-memory file system of the update tests (faultfs.h):
 * fast, and nothing left on disk. Seeds: seeds/upload/.
 */
#include "fuzz.h"

#include <sodium.h>
#include <string.h>

#include "dipp_module.h"
#include "dish_compile.h"
#include "dish_verify.h"
#include "errors.h"
#include "faultfs.h"
#include "upload.h"
#include "upload_helpers.h"

FUZZ_TOKENS("\x00\x01\x02\x03\x04\x05\x06\x07\x08\xc0\x10\xff" "DUP1DKR1abc_");

#define RECORDS_MAX 12 /* messages an input sends */

enum { R_RAW_MANIFEST, R_MANIFEST, R_RAW_CHUNK, R_CHUNK, R_UPLOAD, R_RAW_ROTATE,
       R_ROTATE, R_KINDS };

/* The store, its folder and the ground's key now (a rotation changes it). */
static up_store store;
static const char dir[] = "/store"; /* in faultfs, in memory */
static test_key ground;

/* The board takes an image of procedures its verifier accepts. */
static int accept_procs(void *ctx, const up_manifest *m, const uint8_t *bytes,
                        char *detail, size_t cap) {
    static dish_image im;
    char err[200];
    if (dish_verify(bytes, m->size, NULL, &im, err, sizeof err))
        return dipp_say(detail, cap, DIPP_E_UP_PROCS, "%s", err);
    return dipp_say(detail, cap, 0, "%s v%u: %d procedures", m->name,
                    (unsigned)m->version, im.nprocs);
}

/* The test-run passes whatever is whole (the hash is the store's check). */
static int test_run(void *ctx, const char *path, const up_manifest *m, char *detail,
                    size_t cap) {
    return 0;
}

static up_config config(void) {
    up_config c = up_config_default();
    c.accept = accept_procs;
    c.procs_max_bytes = DISH_MAX_IMAGE;
    c.procs_version = DISH_VERSION;
    return c;
}

static int open_store(up_store *s, up_result *r) {
    up_config c = config();
    test_key first = test_key_make(1);
    return up_open(s, dir, first.pk, &c, test_run, NULL, r);
}

/* What any call into the store answers: its code, a sentence with a
 * refusal; and the store on disk is the live one. */
static void check_answer(int rc, const up_result *r) {
    static up_store again;
    up_result r2;
    FUZZ_CHECK(rc == r->code, "a return that is not the result's code");
    FUZZ_CHECK(rc == 0 || r->detail[0], "a refusal without a sentence");
    FUZZ_CHECK(open_store(&again, &r2) == 0, "a store that does not open again");
    /* the file to remove after a commit is cleared live once removed,
     * saved with the next change; the sum covers it */
    up_index live = store.idx;
    memcpy(live.garbage, again.idx.garbage, sizeof live.garbage);
    memcpy(live.sum, again.idx.sum, sizeof live.sum);
    if (memcmp(&again.idx, &live, sizeof live) != 0)
        fprintf(stderr, "after code %d (%s): the index on disk is not the live one\n",
                rc, r->detail);
    FUZZ_CHECK(memcmp(&again.idx, &live, sizeof live) == 0,
               "the store on disk differs from the live one");
}

/* body (up to 192 bytes, zeros after) as a manifest signed with the
 * ground's key; as it came when it does not decode. */
static int send_manifest(const uint8_t *body, size_t len, up_result *r) {
    uint8_t wire[UP_MANIFEST_BYTES] = {0};
    up_manifest m;
    char err[256];
    memcpy(wire, body, len < sizeof wire ? len : sizeof wire);
    if (up_manifest_decode(wire, sizeof wire, &m, err, sizeof err) == 0) {
        m.key_serial = ground.serial;
        up_sign(&m, ground.sk);
        up_manifest_encode(&m, wire);
    }
    return up_on_manifest(&store, wire, sizeof wire, r);
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++, v >>= 8)
        p[k] = (uint8_t)v;
}

/* body as a chunk of the upload in progress: its first 4 bytes the
 * chunk's index (of those the upload has), the rest its data, cut or
 * filled with zeros to the chunk's length; as it came when no upload is
 * in progress. */
static int send_chunk(const uint8_t *body, size_t len, up_result *r) {
    static uint8_t chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    up_manifest m;
    char err[256];
    if (len < 4 || !store.idx.uploading ||
        up_manifest_decode(store.idx.manifest, UP_MANIFEST_BYTES, &m, err, sizeof err))
        return up_on_chunk(&store, body, len, r);
    uint32_t count = up_chunk_count(&m);
    uint32_t k = (uint32_t)(body[0] | body[1] << 8 | body[2] << 16 | (uint32_t)body[3] << 24) % count;
    size_t want = k + 1 < count ? m.chunk_size : m.payload_size - k * m.chunk_size;
    memset(chunk, 0, sizeof chunk);
    put_le32(chunk, up_tag(&m));
    put_le32(chunk + 4, k);
    memcpy(chunk + UP_CHUNK_HDR, body + 4, len - 4 < want ? len - 4 : want);
    return up_on_chunk(&store, chunk, UP_CHUNK_HDR + want, r);
}

/* An honest upload from the ground, every chunk sent: body[0] picks a
 * module (an ELF of the board's architecture, 1 to 64 KiB, zstd) or
 * procedures (a fixed image, or body's bytes when they are longer than
 * 12), body[1] the version, body[2] the name. */
static int send_upload(const uint8_t *body, size_t len, up_result *r) {
    static uint8_t procs[DISH_MAX_IMAGE];
    static int nprocs;
    static const char *const names[] = {"cloud", "crop", "plan", "cloud_v2"};
    char err[256];
    up_manifest m;
    uint8_t *mod, *payload = NULL;
    size_t size;
    if (!nprocs)
        nprocs = dish_compile("plan.dish", "proc p() { return 1 }", 21, procs,
                              sizeof procs, err, sizeof err);
    FUZZ_CHECK(nprocs > 0, "the fixed procedures do not compile");
    int kind = len > 0 && body[0] & 1 ? UP_KIND_PROCS : UP_KIND_MODULE;
    memset(&m, 0, sizeof m);
    m.kind = (uint8_t)kind, m.chunk_size = 512, m.key_serial = ground.serial;
    m.version = len > 1 ? body[1] % 4 + 1 : 1;
    snprintf(m.name, sizeof m.name, "%s", names[len > 2 ? body[2] % 4 : 0]);
    if (kind == UP_KIND_PROCS) {
        int own = len > 3 + DISH_HDR;
        size = own ? len - 3 : (size_t)nprocs;
        mod = malloc(size);
        memcpy(mod, own ? body + 3 : procs, size);
        m.abi = DISH_VERSION;
    } else {
        size = 1024 + (len > 0 ? body[0] : 0) * 256u;
        mod = test_elf(size, len > 3 ? body[3] : 0, NULL);
        m.abi = DIPP_ABI_VERSION, m.arch = up_board_arch();
        m.in_format = DIPP_FMT_GRAY8, m.out_format = DIPP_FMT_GRAY8;
    }
    int rc;
    if (up_prepare(&m, mod, size, NULL, 0, kind == UP_KIND_PROCS ? 0 : 3, ground.sk,
                   &payload, err, sizeof err) != 0) {
        rc = up_fail(r, DIPP_E_UP_MESSAGE, "ground: %s", err);
    } else {
        rc = test_send(&store, &m, payload, r);
    }
    free(payload);
    free(mod);
    return rc;
}

/* body as a key rotation signed with the ground's key: body[0] seeds
 * the new key, the serial the next one unless body[1] says otherwise. */
static int send_rotate(const uint8_t *body, size_t len, up_result *r) {
    uint8_t msg[UP_ROTATE_BYTES];
    test_key next = test_key_make(len > 0 ? body[0] : 2);
    next.serial = len > 1 && body[1] & 1 ? body[1] : store.idx.key_serial + 1;
    up_rotate_build(next.serial, next.pk, ground.sk, msg);
    int rc = up_on_rotate(&store, msg, sizeof msg, r);
    if (rc == 0)
        ground = next;
    return rc;
}

static int send(int kind, const uint8_t *body, size_t len, up_result *r) {
    switch (kind) {
    case R_RAW_MANIFEST: return up_on_manifest(&store, body, len, r);
    case R_MANIFEST: return send_manifest(body, len, r);
    case R_RAW_CHUNK: return up_on_chunk(&store, body, len, r);
    case R_CHUNK: return send_chunk(body, len, r);
    case R_UPLOAD: return send_upload(body, len, r);
    case R_RAW_ROTATE: return up_on_rotate(&store, body, len, r);
    default: return send_rotate(body, len, r);
    }
}

/* An empty store, the ground's key its first, on an empty in-memory
 * file system (faultfs.h: the update tests' own, with no power cut). */
static void fresh_store(void) {
    up_result r;
    faultfs_install();
    ground = test_key_make(1);
    FUZZ_CHECK(open_store(&store, &r) == 0, "a new store does not open");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fresh_store();
    for (int n = 0; n < RECORDS_MAX && size >= 3; n++) {
        int kind = data[0] % R_KINDS;
        size_t len = (size_t)(data[1] | data[2] << 8);
        data += 3, size -= 3;
        len = len < size ? len : size;
        up_result r;
        int rc = send(kind, data, len, &r);
        check_answer(rc, &r);
        data += len, size -= len;
    }
    return 0;
}
