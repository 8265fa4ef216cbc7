/* fuzz_sat.c -- fuzz target (fuzz.h) of the satellite as a whole
 * (sat_handle, sat.h): a sequence of packets from the link, as `dipp sat`
 * receives them, into a satellite set up afresh for each input in a
 * temporary folder (its slots, update store and procedures on disk, a
 * fork server, an empty module folder, three images in its ring). After
 * each packet:
 *   - every answer frames with the CRC the satellite sends it with, goes
 *     back to the port that asked, and carries the question's sequence
 *     number where its port has one (a status reply the ground can parse);
 *     an image request is answered with PROTO_PARTS_PER_ASK parts at most;
 *   - the state on disk is valid and is the live one: the update store
 *     opens again with the same index, the procedure store loads again
 *     without a warning the same images into the same slots, each slot
 *     reads back (none corrupt) at or below its floor;
 *   - a packet as it came off the link (nothing signed here) changed
 *     nothing only the ground's key may: the key, the slots, the active
 *     modules, the procedures, the images in the ring, the outcome the
 *     ground's next status question gets; but for an upload in progress,
 *     which its chunks finish;
 *   - an honest upload told "installed" put on board what it sent (a
 *     module's version active, an image of procedures held under its
 *     name and version).
 *   - a signed command sent again at once (its answer lost) is answered
 *     as the first time; the port's command before it, sent again, is
 *     refused (cmd_sig.h).
 * A crash, a sanitizer report or a hang (libFuzzer's -timeout, ctest's
 * TIMEOUT) is a fault too.
 *
 * The input is records: a byte choosing the kind (enum below), two bytes
 * of length (little endian), the body:
 *   R_FRAME  a CSP frame as the hub delivers it: dropped when it does not
 *            parse, is over CSP_MTU or is for another node, as serve() does;
 *   R_MSG    body[0] the port (its low 6 bits), the rest the message, from
 *            the ground's node and port;
 *   R_SIGNED what only the ground can send, signed with its key now:
 *            body[0] % 5 picks a manifest (body[1..] its fields, re-signed),
 *            a chunk of the upload in progress (body[1..4] its index, the
 *            rest its data), a key rotation (body[1] seeds the new key), a
 *            slot write (body[1] odd: a configuration slot, else a
 *            pipeline's; body[2] the slot, body[3..6] the version, little
 *            endian, the rest the definition) or a command (body[1] odd:
 *            an image's removal, 'K', body[2..5] its id; else body[1] / 2
 *            % 3 picks a run, stop or delete; the rest its bytes after the
 *            sequence number);
 *   R_UPLOAD a whole honest upload of procedures over port 20 (manifest,
 *            every chunk, status question): body[0] picks the image (one
 *            of four fixed ones, or body[3..] when longer than a header)
 *            and whether it travels compressed (bit 2), body[1] the
 *            version, body[2] the name;
 *   R_TIME   wall time passes (body[0..1] * 100 ms, little endian) and the
 *            satellite steps DISH's clock and its captures (sat_step_at);
 *            body[2] odd: a camera frame is processed too;
 *   R_MODULE a whole honest upload of a module, as R_UPLOAD: body[0] picks
 *            one of the modules tests/orbit builds (a good one, one that
 *            fails in flight behind a Bayer frame, one that fails, one
 *            that crashes: test-run in the sandbox, then run by the
 *            pipelines that name it, failing until it is rolled back),
 *            bit 2 compressed, bit 3 a delta against the version active
 *            on board; body[1] the version, body[2] the name (one the
 *            seeds' pipelines use). Skipped when the modules are not
 *            built (DIPP_TEST_MODULES).
 * Seeds: seeds/sat/ (FUZZ_SAT_VERBOSE=1 prints every answer on stderr,
 * to read what one does). The folder is under $TMPDIR, /tmp without it:
 * a tmpfs there (TMPDIR=/dev/shm) spares the syncs of every write.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd_sig.h"
#include "csp.h"
#include "dipp_module.h"
#include "dish.h"
#include "dish_compile.h"
#include "errors.h"
#include "pdef.h"
#include "platform.h"
#include "proc_store.h"
#include "proto.h"
#include "sat.h"
#include "slot_msg.h"
#include "slots.h"
#include "upload_helpers.h"

FUZZ_TOKENS("\x00\x01\x02\x03\x04\x05\x06\x07\x0a\x14\x16\x18\xa2\xc8\xff"
            "CDEIKLMPQRSTVX");

#define RECORDS_MAX 16 /* packets an input sends */

enum { R_FRAME, R_MSG, R_SIGNED, R_UPLOAD, R_TIME, R_MODULE, R_KINDS };

/* The folders (made once, emptied for each input) and the satellite. */
static char root[128], store_dir[160], updates_dir[176], modules_dir[176];
static sat s;
static test_key ground; /* the ground's key now (a rotation changes it) */
static uint64_t wall;   /* the satellite's wall clock, ms, from 0 */
static uint16_t seq;    /* the ground's next sequence number */
static int verbose;

/* Four images of procedures: a few that wake, start a pipeline, wait
 * and write telemetry (slots 3-5); and three that fill the slots after
 * them, 16 procedures each at most (the compiler's limit). */
#define PROCS_IMAGES 4
static uint8_t procs[PROCS_IMAGES][DISH_MAX_IMAGE];
static int procs_len[PROCS_IMAGES];

static const char few_src[] =
    "slot 3\n"
    "proc shoot(p) {\n  wake\n  let ok = -2\n  if start(p) == 0 {\n"
    "    wait pipe(p) != 0 within 60\n    ok = pipe(p)\n  }\n  suspend\n  return ok\n}\n"
    "proc twice(x) {\n  tm(7, x)\n  sleep 5\n  return x * 2\n}\n"
    "proc spin(n) {\n  repeat 50 as k {\n    if k >= n {\n      return k\n    }\n"
    "    tm(1, k)\n    sleep 1\n  }\n  return 50\n}\n";

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    remove(path);
    return 0;
}

static void remove_root(void) {
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The folders, empty; made at the first input, removed at exit. */
static void fresh_folders(void) {
    if (!root[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/aegis-fuzz-sat-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        FUZZ_CHECK(mkdtemp(root) != NULL, "mkdtemp");
        atexit(remove_root);
        snprintf(store_dir, sizeof store_dir, "%s/store", root);
        snprintf(updates_dir, sizeof updates_dir, "%s/updates", store_dir);
        snprintf(modules_dir, sizeof modules_dir, "%s/modules", root);
    }
    remove_root();
    FUZZ_CHECK(mkdir(root, 0700) == 0 && mkdir(store_dir, 0700) == 0 &&
                   mkdir(updates_dir, 0700) == 0 && mkdir(modules_dir, 0700) == 0,
               "the folders cannot be made");
}

static void compile_procs(void) {
    static char src[8192];
    char err[256];
    for (int i = 0; i < PROCS_IMAGES; i++) {
        int first = 6 + 16 * (i - 1);
        size_t n = i == 0 ? (size_t)snprintf(src, sizeof src, "%s", few_src)
                          : (size_t)snprintf(src, sizeof src, "slot %d\n", first);
        for (int k = first; i > 0 && k < first + 16 && k < DISH_SLOTS; k++)
            n += (size_t)snprintf(src + n, sizeof src - n,
                                  "proc p%02d(a, b) { return a + b + %d }\n", k, k);
        procs_len[i] = dish_compile("board.dish", src, n, procs[i], sizeof procs[i], err,
                                    sizeof err);
        if (procs_len[i] <= 0)
            fprintf(stderr, "%s\n%s\n", src, err);
        FUZZ_CHECK(procs_len[i] > 0, "the fixed procedures do not compile");
    }
}

/* ---- answers ---- */

/* The last status the update port answered. */
static proto_status last_status;
/* The code of the last answer 'A' seq code text (ports 10, 22, 24). */
static uint32_t last_code;

/* The question being answered: its port, the asker's and its bytes. */
static struct {
    uint8_t port, sport;
    const uint8_t *msg;
    size_t len;
    unsigned answers;
} asked;

static void on_reply(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    static uint8_t frame[CSP_HEADER_BYTES + CSP_MTU];
    proto_status st;
    (void)ctx;
    asked.answers++;
    if (verbose) /* FUZZ_SAT_VERBOSE=1: each answer on stderr, to read a seed */
        fprintf(stderr, "port %u '%c' -> %zu bytes: %.*s\n", asked.port,
                asked.len ? asked.msg[0] : '?', len,
                (int)(len > 3 ? (len - 3 < 900 ? len - 3 : 900) : 0), (const char *)msg + 3);
    FUZZ_CHECK(port == asked.sport, "an answer to another port than the asker's");
    /* the satellite's node sends with the CRC (csp_node_send) */
    csp_id id = {CSP_PRI_NORM, port, asked.port, CSP_F_CRC32, GROUND_NODE, DIPP_NODE};
    if (csp_frame(&id, msg, len, frame, sizeof frame) <= 0)
        fprintf(stderr, "an answer of %zu bytes on port %u to '%c'\n", len, port,
                asked.msg[0]);
    FUZZ_CHECK(csp_frame(&id, msg, len, frame, sizeof frame) > 0,
               "an answer that does not fit a frame (it is never sent)");
    FUZZ_CHECK(len >= 1, "an empty answer");
    if (msg[0] == 'A' && len >= 7)
        last_code = proto_get32(msg + 3);
    /* a ping too is answered only within a frame: one whose echo fits
     * none is not answered (sat.c's on_ping) */
    if (asked.port == CSP_PORT_PING) {
        FUZZ_CHECK(len == asked.len && !memcmp(msg, asked.msg, len), "a ping not echoed");
        return;
    }
    switch (asked.port) {
    case DIPP_PORT_UPLOAD:
        FUZZ_CHECK(proto_status_parse(msg, len, &st) == 0, "a status the ground cannot read");
        last_status = st;
        if (verbose)
            fprintf(stderr, "  status: code %u installed %u missing %u: %s\n",
                    (unsigned)st.code, st.installed, (unsigned)st.missing, st.detail);
        FUZZ_CHECK(asked.len >= 3 && !memcmp(msg + 1, asked.msg + 1, 2),
                   "a status for another question");
        break;
    case DIPP_PORT_PARAM:
    case DIPP_PORT_PROCS:
        FUZZ_CHECK(len >= 3 && asked.len >= 3 && !memcmp(msg + 1, asked.msg + 1, 2),
                   "an answer for another question");
        FUZZ_CHECK(msg[0] == (asked.port == DIPP_PORT_PARAM && asked.msg[0] == 'T' ? 'V' : 'A'),
                   "an answer of the wrong type");
        FUZZ_CHECK(msg[0] == 'V' || len >= 7, "an answer without its code");
        break;
    case DIPP_PORT_IMAGES:
        if (asked.len >= 3 && asked.msg[0] == 'K') { /* a removal's answer */
            FUZZ_CHECK(msg[0] == 'A' && len >= 7 && !memcmp(msg + 1, asked.msg + 1, 2),
                       "a removal's answer malformed, or another question's");
            break;
        }
        FUZZ_CHECK(msg[0] == 'I' && len >= 14, "an image part malformed");
        FUZZ_CHECK(asked.answers <= PROTO_PARTS_PER_ASK, "more image parts than asked");
        break;
    default:
        FUZZ_CHECK(0, "an answer on a port the satellite does not serve");
    }
}

/* msg to port from the ground, as the satellite's loop hands it over. */
static void handle(uint8_t port, const uint8_t *msg, size_t len) {
    csp_id id = {CSP_PRI_NORM, port, port, CSP_F_CRC32, DIPP_NODE, GROUND_NODE};
    asked.port = asked.sport = port;
    asked.msg = msg, asked.len = len, asked.answers = 0;
    sat_handle(&s, &id, msg, len, on_reply, NULL);
}

/* ---- the state on disk ---- */

static void warned(void *ctx, const char *why) {
    fprintf(stderr, "fuzz_sat: stored procedures: %s\n", why);
    FUZZ_CHECK(0, "stored procedures that do not load again");
}

/* A pipeline slot left out (its configuration slot empty, say) is the
 * satellite's to tell, not a fault. */
static void skipped(void *ctx, const char *why) {
    (void)ctx, (void)why;
}

static int no_accept(void *ctx, const up_manifest *m, const uint8_t *bytes, char *detail,
                     size_t cap) {
    FUZZ_CHECK(0, "the update store opened again took procedures the live one had not");
    return 0;
}

/* What only the ground's key changes: the key, the slots' versions, the
 * modules' active versions, the procedures, the ring's images; an upload
 * started with a signed manifest may be finished by chunks, which carry
 * none. */
typedef struct signed_state {
    uint32_t key_serial, uploading;
    up_result last_done;                /* what the ground's status question gets */
    uint8_t refused[UP_MANIFEST_BYTES]; /* and its manifest sent again */
    uint32_t slot_version[2][SLOT_CONFIGS + 1];
    uint32_t active[UP_MAX_MODULES];
    unsigned procs, images;
} signed_state;

static signed_state now;

static void check_store(void) {
    static up_store again;
    static sat_dish d2;
    static pdef defs[PDEF_PIPELINES];
    up_result r;
    char err[256];
    /* the update store: what the live one holds */
    up_config cfg = s.up.cfg;
    cfg.accept = no_accept, cfg.accept_ctx = NULL;
    FUZZ_CHECK(up_open(&again, updates_dir, ground.pk, &cfg, s.up.test, s.up.test_ctx,
                       &r) == 0,
               "an update store that does not open again");
    up_index live = s.up.idx;
    memcpy(live.garbage, again.idx.garbage, sizeof live.garbage);
    memcpy(live.sum, again.idx.sum, sizeof live.sum);
    FUZZ_CHECK(memcmp(&again.idx, &live, sizeof live) == 0,
               "the update store on disk differs from the live one");
    /* the procedures: the same images, in the same slots */
    memset(&d2, 0, sizeof d2);
    dish_sim_init(&d2.sim);
    d2.pl = d2.sim.pl;
    dish_vm_init(&d2.vm, &d2.pl);
    FUZZ_CHECK(proc_store_open(&d2.store, store_dir, &d2.vm, warned, NULL) >= 0,
               "a procedure store that does not open again");
    FUZZ_CHECK(d2.store.count == s.dish.store.count, "stored procedures lost or added");
    for (unsigned k = 0; k < d2.store.count; k++) {
        const proc_image *a = &d2.store.img[k], *b = &s.dish.store.img[k];
        FUZZ_CHECK(!strcmp(a->name, b->name) && a->version == b->version &&
                       a->len == b->len && !memcmp(a->bytes, b->bytes, a->len),
                   "stored procedures that differ from the live ones");
    }
    for (unsigned k = 0; k < DISH_SLOTS; k++)
        FUZZ_CHECK(d2.vm.slots[k].info.used == s.dish.vm.slots[k].info.used,
                   "a procedure slot on disk other than live");
    /* the slots: each readable, at or below its floor */
    for (int kind = SLOT_PIPELINE; kind <= SLOT_CONFIG; kind++)
        for (unsigned n = 1; n <= slot_count((slot_kind)kind); n++) {
            uint32_t have, floor;
            FUZZ_CHECK(slot_version(store_dir, (slot_kind)kind, n, &have, err, sizeof err) == 0,
                       "a slot unreadable or corrupt");
            FUZZ_CHECK(slot_floor(store_dir, (slot_kind)kind, n, &floor, err, sizeof err) == 0,
                       "the slots' floors unreadable");
            FUZZ_CHECK(have <= floor, "a slot above its floor");
            now.slot_version[kind][n] = have;
        }
    pdef_load_slots(store_dir, defs, skipped, NULL);
    now.key_serial = s.up.idx.key_serial, now.uploading = s.up.idx.uploading;
    now.last_done = s.last_done;
    memcpy(now.refused, s.refused, sizeof now.refused);
    for (unsigned k = 0; k < UP_MAX_MODULES; k++)
        now.active[k] = k < s.up.idx.nmods ? s.up.idx.mod[k].active : 0;
    now.procs = s.dish.store.count;
    now.images = s.images.count;
}

/* After a packet from the link as it came (no signature made here): what
 * only a signature changes is as it was, but for an upload in progress
 * finished. */
static void check_unsigned(const signed_state *before) {
    FUZZ_CHECK(now.key_serial == before->key_serial, "a key rotated without a signature");
    FUZZ_CHECK(now.images == before->images, "an image removed without a signature");
    FUZZ_CHECK(!memcmp(now.slot_version, before->slot_version, sizeof now.slot_version),
               "a slot written without a signature");
    if (before->uploading)
        return;
    /* anyone on the link may send a manifest: its refusal is no outcome
     * of the ground's own upload (sat.c's upload_ended) */
    FUZZ_CHECK(now.last_done.code == before->last_done.code &&
                   now.last_done.installed == before->last_done.installed &&
                   !strcmp(now.last_done.detail, before->last_done.detail) &&
                   !memcmp(now.refused, before->refused, sizeof now.refused),
               "an upload's outcome changed by a packet without a signature");
    FUZZ_CHECK(!memcmp(now.active, before->active, sizeof now.active),
               "a module installed without a signature");
    FUZZ_CHECK(now.procs == before->procs, "procedures changed without a signature");
}

/* ---- what only the ground sends ---- */

static void put_le32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++, v >>= 8)
        p[k] = (uint8_t)v;
}

static uint32_t get_le32(const uint8_t *p) {
    return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void send_manifest(const uint8_t *body, size_t len) {
    uint8_t msg[3 + UP_MANIFEST_BYTES] = {'M'};
    up_manifest m;
    char err[256];
    proto_put16(msg + 1, seq++);
    memcpy(msg + 3, body, len < UP_MANIFEST_BYTES ? len : UP_MANIFEST_BYTES);
    if (up_manifest_decode(msg + 3, UP_MANIFEST_BYTES, &m, err, sizeof err) == 0) {
        m.key_serial = ground.serial;
        up_sign(&m, ground.sk);
        up_manifest_encode(&m, msg + 3);
    }
    handle(DIPP_PORT_UPLOAD, msg, sizeof msg);
}

/* A chunk of the upload in progress, its tag right: body[0..3] its index
 * (of those the upload has), the rest its data, cut or filled with zeros
 * to the chunk's length; as it came when no upload is in progress. */
static void send_chunk(const uint8_t *body, size_t len) {
    static uint8_t msg[1 + UP_CHUNK_HDR + UP_CHUNK_MAX];
    up_manifest m;
    char err[256];
    msg[0] = 'C';
    if (len < 4 || !s.up.idx.uploading ||
        up_manifest_decode(s.up.idx.manifest, UP_MANIFEST_BYTES, &m, err, sizeof err)) {
        len = len < sizeof msg - 1 ? len : sizeof msg - 1;
        memcpy(msg + 1, body, len);
        handle(DIPP_PORT_UPLOAD, msg, 1 + len);
        return;
    }
    uint32_t count = up_chunk_count(&m), k = get_le32(body) % count;
    size_t want = k + 1 < count ? m.chunk_size : m.payload_size - k * m.chunk_size;
    memset(msg, 0, sizeof msg);
    msg[0] = 'C';
    put_le32(msg + 1, up_tag(&m));
    put_le32(msg + 5, k);
    memcpy(msg + 1 + UP_CHUNK_HDR, body + 4, len - 4 < want ? len - 4 : want);
    handle(DIPP_PORT_UPLOAD, msg, 1 + UP_CHUNK_HDR + want);
}

static void send_rotate(const uint8_t *body, size_t len) {
    uint8_t msg[3 + UP_ROTATE_BYTES] = {'R'};
    test_key next = test_key_make(len > 0 ? body[0] : 2);
    next.serial = len > 1 && body[1] & 1 ? body[1] : s.up.idx.key_serial + 1;
    proto_put16(msg + 1, seq++);
    up_rotate_build(next.serial, next.pk, ground.sk, msg + 3);
    uint32_t before = s.up.idx.key_serial;
    handle(DIPP_PORT_UPLOAD, msg, sizeof msg);
    if (s.up.idx.key_serial != before)
        ground = next;
}

static void send_slot(const uint8_t *body, size_t len) {
    uint8_t msg[SLOT_MSG_MAX];
    if (len < 6)
        return;
    slot_msg m = {.seq = seq++, .kind = body[0] & 1 ? SLOT_CONFIG : SLOT_PIPELINE,
                  .slot = body[1], .version = get_le32(body + 2), .def = body + 6,
                  .len = len - 6 < SLOT_MAX_BYTES ? len - 6 : SLOT_MAX_BYTES};
    handle(DIPP_PORT_PARAM, msg, slot_msg_build(&m, ground.sk, msg));
}

/* A command (cmd_sig.h), signed with the ground's key and the next
 * counter; then the same bytes again, answered as the first time (the
 * ground asking again after a lost answer), and the port's command before
 * it, heard on the link and sent again: refused (1003, or 1002 when the
 * key rotated since). */
static uint8_t cmd_before[2][3 + CMD_SIG_BODY_MAX + CMD_SIG_TRAILER];
static size_t cmd_before_len[2]; /* 0: none yet on this satellite (fresh_sat) */

static void send_command(const uint8_t *body, size_t len) {
    static uint64_t counter;
    uint8_t msg[3 + CMD_SIG_BODY_MAX + CMD_SIG_TRAILER];
    if (len < 1)
        return;
    int remove = body[0] & 1;
    size_t n = remove ? 7 : 3 + (len - 1 < CMD_SIG_BODY_MAX - 3 ? len - 1 : CMD_SIG_BODY_MAX - 3);
    uint8_t port = remove ? DIPP_PORT_IMAGES : DIPP_PORT_PROCS;
    memset(msg, 0, sizeof msg);
    msg[0] = remove ? 'K' : (uint8_t)"XSE"[body[0] / 2 % 3];
    proto_put16(msg + 1, seq++);
    memcpy(msg + 3, body + 1, remove ? (len - 1 < 4 ? len - 1 : 4) : n - 3);
    n = cmd_sig_append(port, msg, n, ++counter, ground.sk);
    handle(port, msg, n);
    uint32_t code = last_code;
    handle(port, msg, n);
    FUZZ_CHECK(last_code == code, "a command sent again answered otherwise");
    if (cmd_before_len[remove]) {
        handle(port, cmd_before[remove], cmd_before_len[remove]);
        FUZZ_CHECK(last_code == DIPP_E_UP_REPLAY || last_code == DIPP_E_UP_SIGNATURE,
                   "an earlier command sent again was taken");
    }
    memcpy(cmd_before[remove], msg, n), cmd_before_len[remove] = n;
}

static void send_signed(const uint8_t *body, size_t len) {
    if (len < 1)
        return;
    switch (body[0] % 5) {
    case 0: send_manifest(body + 1, len - 1); break;
    case 1: send_chunk(body + 1, len - 1); break;
    case 2: send_rotate(body + 1, len - 1); break;
    case 3: send_slot(body + 1, len - 1); break;
    default: send_command(body + 1, len - 1); break;
    }
}

/* After an honest upload, its status question answered "installed": what
 * it installed is on board, the ground told so must not have to send it
 * again (a module's version active, an image of procedures in the store
 * under its name and version). */
static void check_installed(const up_manifest *m) {
    if (last_status.code || !last_status.installed)
        return;
    if (m->kind == UP_KIND_MODULE) {
        const up_module *mod = up_find(&s.up, m->name);
        FUZZ_CHECK(mod && mod->active == m->version, "a module said installed, not active");
        return;
    }
    int held = 0;
    for (unsigned k = 0; k < s.dish.store.count; k++)
        held |= !strcmp(s.dish.store.img[k].name, m->name) &&
                s.dish.store.img[k].version == m->version;
    if (!held)
        fprintf(stderr, "fuzz_sat: %s v%u said installed (%s), not on board\n", m->name,
                (unsigned)m->version, last_status.detail);
    FUZZ_CHECK(held, "procedures said installed, not on board");
}

/* Sends the upload m of payload (freed here) as the ground does: the
 * manifest, every chunk and a status question over port 20; then checks
 * what an "installed" answer says. */
static void upload_whole(const up_manifest *m, uint8_t *payload) {
    static uint8_t msg[1 + UP_CHUNK_HDR + UP_CHUNK_MAX];
    msg[0] = 'M';
    proto_put16(msg + 1, seq++);
    up_manifest_encode(m, msg + 3);
    handle(DIPP_PORT_UPLOAD, msg, 3 + UP_MANIFEST_BYTES);
    msg[0] = 'C';
    for (uint32_t k = 0; k < up_chunk_count(m); k++)
        handle(DIPP_PORT_UPLOAD, msg, 1 + up_chunk_build(m, payload, k, msg + 1));
    msg[0] = 'Q';
    proto_put16(msg + 1, seq++);
    handle(DIPP_PORT_UPLOAD, msg, 3);
    free(payload);
    check_installed(m);
}

/* An honest upload of procedures: the manifest, every chunk, a status
 * question, each over port 20 as the ground sends them. */
static void send_upload(const uint8_t *body, size_t len) {
    static const char *const names[] = {"plan", "survey", "many", "plan_v2"};
    up_manifest m = {.kind = UP_KIND_PROCS, .chunk_size = DISH_PACKET,
                     .key_serial = ground.serial, .abi = DISH_VERSION};
    uint8_t *payload = NULL;
    char err[256];
    int own = len > 3 + DISH_HDR;
    const uint8_t *image = own ? body + 3 : procs[len > 0 ? body[0] % PROCS_IMAGES : 0];
    size_t size = own ? len - 3 : (size_t)procs_len[len > 0 ? body[0] % PROCS_IMAGES : 0];
    m.version = len > 1 ? body[1] % 8 + 1 : 1;
    snprintf(m.name, sizeof m.name, "%s", names[len > 2 ? body[2] % 4 : 0]);
    if (size > DISH_MAX_IMAGE ||
        up_prepare(&m, image, size, NULL, 0, len > 0 && body[0] & 4 ? 3 : 0, ground.sk,
                   &payload, err, sizeof err))
        return;
    upload_whole(&m, payload);
}

/* The test modules (tests/orbit/modules, built there), read once: the
 * format each passes its test-run in. */
static const struct {
    const char *file;
    uint8_t format;
} mods[] = {{"copy", DIPP_FMT_BAYER_RGGB8}, {"gray_only", DIPP_FMT_GRAY8},
            {"fail", DIPP_FMT_GRAY8}, {"crash", DIPP_FMT_GRAY8}};
#define MODS (sizeof mods / sizeof *mods)
static uint8_t *mod_bytes[MODS];
static size_t mod_len[MODS];

static void read_modules(void) {
#ifdef DIPP_TEST_MODULES
    for (size_t k = 0; k < MODS; k++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s.so", DIPP_TEST_MODULES, mods[k].file);
        if (plat_file_read(path, &mod_bytes[k], &mod_len[k]))
            mod_bytes[k] = NULL, mod_len[k] = 0;
    }
#endif
}

/* An honest upload of a module, every chunk and a status question over
 * port 20; a delta against the active version's file on board. */
static void send_module(const uint8_t *body, size_t len) {
    static const char *const names[] = {"debayer", "downsample", "encode_png", "m1"};
    size_t k = len > 0 ? body[0] % MODS : 0;
    uint8_t *payload = NULL, *base = NULL;
    size_t base_len = 0;
    char err[256], path[600];
    if (!mod_bytes[k])
        return;
    up_manifest m = {.kind = UP_KIND_MODULE, .chunk_size = 1900, .abi = DIPP_ABI_VERSION,
                     .arch = up_board_arch(), .in_format = mods[k].format,
                     .out_format = mods[k].format, .key_serial = ground.serial};
    m.version = len > 1 ? body[1] % 8 + 1 : 1;
    snprintf(m.name, sizeof m.name, "%s", names[len > 2 ? body[2] % 4 : 0]);
    const up_module *on_board = up_find(&s.up, m.name);
    if (len > 0 && body[0] & 8 && on_board && on_board->active &&
        up_active_path(&s.up, m.name, path, sizeof path) == 0 &&
        plat_file_read(path, &base, &base_len) == 0)
        m.base_version = on_board->active;
    int rc = up_prepare(&m, mod_bytes[k], mod_len[k], base, base_len,
                        base || (len > 0 && body[0] & 4) ? 3 : 0, ground.sk, &payload, err,
                        sizeof err);
    free(base);
    if (rc)
        return;
    upload_whole(&m, payload);
}

/* ---- the satellite ---- */

/* Wall time passes: DISH's clock and captures, and a camera frame. */
static void pass_time(const uint8_t *body, size_t len) {
    wall += 100u * (len > 1 ? (uint32_t)(body[0] | body[1] << 8) : len ? body[0] : 1);
    sat_step_at(&s, wall);
    if (len > 2 && body[2] & 1)
        sat_process_frame(&s);
}

/* A frame off the hub, as serve() takes it (csp_node_recv, then the
 * node's address). */
static void receive_frame(const uint8_t *body, size_t len) {
    static uint8_t msg[CSP_MTU];
    csp_id id;
    const uint8_t *data;
    size_t n;
    if (len > CSP_HEADER_BYTES + CSP_MTU + 64 || csp_parse(body, len, &id, &data, &n) ||
        n > sizeof msg || id.dst != DIPP_NODE)
        return;
    memcpy(msg, data, n);
    asked.port = id.dport, asked.sport = id.sport;
    asked.msg = msg, asked.len = n, asked.answers = 0;
    sat_handle(&s, &id, msg, n, on_reply, NULL);
}

/* A new satellite, as `dipp sat` opens one on an empty store: the
 * ground's key its first, the clock at wall time 0, three images in the
 * ring (one short, one of a part and a bit, one of more parts than one
 * question gets). */
static void fresh_sat(void) {
    static uint8_t pixels[200000];
    if (!pixels[1])
        for (size_t k = 0; k < sizeof pixels; k++)
            pixels[k] = (uint8_t)(k * 7);
    fresh_folders();
    ground = test_key_make(1);
    wall = 0, seq = 1;
    memset(cmd_before_len, 0, sizeof cmd_before_len);
    sat_cfg cfg = {store_dir, updates_dir, modules_dir, 32, {1000, 64u << 20},
                   up_config_default()};
    cfg.up.quota_bytes = 1u << 20;
    FUZZ_CHECK(sat_open(&s, &cfg, ground.pk) == 0, "a new satellite does not open");
    sat_dish_configure(&s.dish, &(sat_dish_cfg){60, 20, 0}, wall);
    ring_push(&s.images, 10, 10, 10, DIPP_FMT_GRAY8, pixels, 100);
    ring_push(&s.images, 5, 50, 40, DIPP_FMT_GRAY8, pixels, 2000);
    ring_push(&s.images, 1, 500, 400, DIPP_FMT_GRAY8, pixels, sizeof pixels);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int devnull = -1, out = -1;
    if (!procs_len[0]) {
        FUZZ_CHECK(sodium_init() >= 0, "sodium_init");
        verbose = getenv("FUZZ_SAT_VERBOSE") != NULL;
        compile_procs();
        read_modules();
        devnull = open("/dev/null", O_WRONLY);
        out = dup(1);
        FUZZ_CHECK(devnull >= 0 && out >= 0, "/dev/null");
    }
    /* the satellite's log (DISH's telemetry lines) is not the test's */
    fflush(stdout);
    dup2(devnull, 1);
    fresh_sat();
    check_store(); /* the state before the first packet */
    memset(&last_status, 0, sizeof last_status);
    for (int n = 0; n < RECORDS_MAX && size >= 3; n++) {
        int kind = data[0] % R_KINDS;
        size_t len = (size_t)(data[1] | data[2] << 8);
        signed_state before = now;
        data += 3, size -= 3;
        len = len < size ? len : size;
        switch (kind) {
        case R_FRAME: receive_frame(data, len); break;
        case R_MSG:
            if (len >= 2)
                handle(data[0] & 63, data + 1, len - 1 < CSP_MTU ? len - 1 : CSP_MTU);
            break;
        case R_SIGNED: send_signed(data, len); break;
        case R_UPLOAD: send_upload(data, len); break;
        case R_MODULE: send_module(data, len); break;
        case R_TIME: pass_time(data, len); break;
        }
        check_store();
        if (kind == R_FRAME || kind == R_MSG)
            check_unsigned(&before);
        data += len, size -= len;
    }
    sat_close(&s);
    fflush(stdout);
    dup2(out, 1);
    return 0;
}
