/* test_upload.c -- the update store (upload.h) on disk: an upload resumed
 * across passes (and a restart) installs; an old or replayed version, a
 * bad or stale signature, the wrong ABI or architecture, a corrupted or
 * truncated chunk, a delta against the wrong base, and a full quota are
 * refused with their codes; a module failing its test-run is refused, one
 * failing in flight is rolled back; keys rotate only by the old key; an
 * index whose fields this store never writes is refused; and the real
 * sandbox test-run rejects crashing, hanging, wrong-ABI and symbol-less
 * modules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dipp_module.h"
#include "errors.h"
#include "platform.h"
#include "proto.h"
#include "upload.h"
#include "upload_helpers.h"
#include "upload_testrun.h"

static char dir[64];
static up_store st;
static up_result res;
static test_key key1, key2;
static runner sandbox; /* started in the group's setup: before cmocka's
                          signal handlers, which the children must not have */

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/dipp-upload-XXXXXX");
    key1 = test_key_make(1), key2 = test_key_make(2);
    plat_limits lim = {2000, 64u << 20};
    if (!mkdtemp(dir) || runner_start(&sandbox, DIPP_TEST_MODULES, lim))
        return -1;
    return up_open(&st, dir, key1.pk, NULL, test_stub_run, NULL, &res);
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    runner_stop(&sandbox);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

/* Uploads name v (v-1 as delta base when base), expecting code. */
static int upload(const char *name, uint32_t v, const uint8_t *mod, size_t len,
                  const uint8_t *base, size_t base_len, const test_key *k) {
    uint8_t *payload;
    up_manifest m = test_manifest(name, v, mod, len, base, base_len, k, &payload);
    int code = test_send(&st, &m, payload, &res);
    if (code)
        print_message("%s v%u: %d %s\n", name, v, code, res.detail);
    free(payload);
    return code;
}

static void assert_active(const char *name, uint32_t v, const uint8_t *mod,
                          size_t len) {
    char path[600];
    uint8_t *bytes;
    size_t got;
    assert_int_equal(up_active_path(&st, name, path, sizeof path), 0);
    assert_int_equal(up_find(&st, name)->active, v);
    assert_int_equal(plat_file_read(path, &bytes, &got), 0);
    assert_int_equal(got, len);
    assert_memory_equal(bytes, mod, len);
    free(bytes);
}

static void test_resumed_across_passes_and_restart(void **s) {
    (void)s;
    uint8_t *mod = test_elf(40000, 1, NULL), *payload, wire[UP_MANIFEST_BYTES];
    uint8_t chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    up_manifest m = test_manifest("blur", 1, mod, 40000, NULL, 0, &key1, &payload);
    up_manifest_encode(&m, wire);
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), 0);
    uint32_t total = res.missing;
    assert_true(total > 2);
    for (uint32_t k = 0; k < total; k += 2) /* first pass: every other chunk */
        assert_int_equal(up_on_chunk(&st, chunk, up_chunk_build(&m, payload, k, chunk),
                                     &res), 0);
    assert_int_equal(up_open(&st, dir, key1.pk, NULL, test_stub_run, NULL, &res), 0);
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), 0); /* next pass */
    assert_int_equal(res.missing, total / 2);
    assert_int_equal(test_send(&st, &m, payload, &res), 0);
    assert_true(res.installed);
    assert_active("blur", 1, mod, 40000);
    free(payload);
    free(mod);
}

static void test_replay_and_old_versions_refused(void **s) {
    (void)s;
    uint8_t *mod = test_elf(3000, 2, NULL);
    assert_int_equal(upload("sharpen", 5, mod, 3000, NULL, 0, &key1), 0);
    assert_int_equal(upload("sharpen", 5, mod, 3000, NULL, 0, &key1), DIPP_E_UP_REPLAY);
    assert_int_equal(upload("sharpen", 4, mod, 3000, NULL, 0, &key1), DIPP_E_UP_REPLAY);
    assert_active("sharpen", 5, mod, 3000);
    free(mod);
}

static void test_signature_abi_and_arch_checked(void **s) {
    (void)s;
    uint8_t *mod = test_elf(3000, 3, NULL), *payload, wire[UP_MANIFEST_BYTES];
    up_manifest m = test_manifest("edge", 1, mod, 3000, NULL, 0, &key1, &payload);
    up_manifest forged = m;
    forged.version = 9; /* changed after signing */
    up_manifest_encode(&forged, wire);
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), DIPP_E_UP_SIGNATURE);
    uint8_t *other_payload;
    up_manifest other = test_manifest("edge", 1, mod, 3000, NULL, 0, &key2, &other_payload);
    other.key_serial = 1; /* claims the board's key, signed by another */
    up_sign(&other, key2.sk);
    assert_int_equal(test_send(&st, &other, other_payload, &res), DIPP_E_UP_SIGNATURE);
    free(other_payload);
    up_manifest abi = m;
    abi.abi = DIPP_ABI_VERSION + 1;
    up_sign(&abi, key1.sk);
    assert_int_equal(test_send(&st, &abi, payload, &res), DIPP_E_ABI);
    up_manifest arch = m;
    arch.arch = up_board_arch() + 1;
    up_sign(&arch, key1.sk);
    assert_int_equal(test_send(&st, &arch, payload, &res), DIPP_E_UP_ARCH);
    free(payload);
    mod[18] ^= 0x40; /* e_machine of another board, manifest unchanged */
    assert_int_equal(upload("edge", 2, mod, 3000, NULL, 0, &key1), DIPP_E_UP_ARCH);
    assert_int_equal(up_find(&st, "edge")->active, 0);
    free(mod);
}

static void test_delta_small_and_checked(void **s) {
    (void)s;
    uint8_t *v1 = test_elf(60000, 4, NULL), *v2 = test_elf(60000, 4, NULL);
    memcpy(v2 + 30000, "a changed function body", 23);
    uint8_t *full, *delta;
    up_manifest mf = test_manifest("tile", 2, v2, 60000, NULL, 0, &key1, &full);
    up_manifest md = test_manifest("tile", 2, v2, 60000, v1, 60000, &key1, &delta);
    print_message("full zstd %u bytes, delta %u bytes\n", mf.payload_size, md.payload_size);
    assert_true(md.payload_size * 10 < mf.payload_size);
    assert_int_equal(test_send(&st, &md, delta, &res), DIPP_E_UP_DELTA); /* no v1 */
    /* the refusal says what is on board (it said "board runs v0") */
    assert_string_equal(res.detail, "tile v2: a delta against v1, but no version of tile "
                        "is active on board to apply it to (send it whole)");
    assert_int_equal(upload("tile", 1, v1, 60000, NULL, 0, &key1), 0);
    assert_int_equal(test_send(&st, &md, delta, &res), 0);
    assert_active("tile", 2, v2, 60000);
    uint8_t *stale;
    up_manifest ms = test_manifest("tile", 4, v2, 60000, v1, 60000, &key1, &stale);
    assert_int_equal(test_send(&st, &ms, stale, &res), DIPP_E_UP_DELTA); /* v3: none */
    assert_string_equal(res.detail, "tile v4: a delta against v3, but v2 is the version "
                        "active on board, the only one a delta applies to");
    free(full), free(delta), free(stale), free(v1), free(v2);
}

static void test_bad_chunks(void **s) {
    (void)s;
    uint8_t *mod = test_elf(5000, 5, NULL), *payload, wire[UP_MANIFEST_BYTES];
    uint8_t chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    up_manifest m = test_manifest("cloud2", 1, mod, 5000, NULL, 0, &key1, &payload);
    up_manifest_encode(&m, wire);
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), 0);
    size_t len = up_chunk_build(&m, payload, 0, chunk);
    assert_int_equal(up_on_chunk(&st, chunk, len - 1, &res), DIPP_E_UP_MESSAGE);
    chunk[0] ^= 1; /* another upload's tag */
    assert_int_equal(up_on_chunk(&st, chunk, len, &res), DIPP_E_UP_MESSAGE);
    chunk[0] ^= 1;
    chunk[UP_CHUNK_HDR + 3] ^= 0x10; /* corrupted on the way, right length */
    assert_int_equal(up_on_chunk(&st, chunk, len, &res), 0);
    uint32_t total = up_chunk_count(&m), k = 1, code = 0;
    for (; k < total && !code; k++)
        code = (uint32_t)up_on_chunk(&st, chunk, up_chunk_build(&m, payload, k, chunk), &res);
    assert_int_equal(code, DIPP_E_UP_HASH);
    assert_int_equal(res.missing, total); /* asked for again, whole */
    assert_int_equal(test_send(&st, &m, payload, &res), 0);
    assert_active("cloud2", 1, mod, 5000);
    free(payload);
    free(mod);
}

static void test_key_rotation(void **s) {
    (void)s;
    uint8_t rot[UP_ROTATE_BYTES], *mod = test_elf(2000, 6, NULL), *payload;
    up_rotate_build(2, key2.pk, key2.sk, rot); /* not signed by the old key */
    assert_int_equal(up_on_rotate(&st, rot, sizeof rot, &res), DIPP_E_UP_SIGNATURE);
    up_rotate_build(2, key2.pk, key1.sk, rot);
    assert_int_equal(up_on_rotate(&st, rot, sizeof rot, &res), 0);
    /* asked again (the answer was lost): in effect, so done, not refused */
    assert_int_equal(up_on_rotate(&st, rot, sizeof rot, &res), 0);
    assert_int_equal(st.idx.key_serial, 2);
    assert_int_equal(upload("rot", 1, mod, 2000, NULL, 0, &key1), DIPP_E_UP_SIGNATURE);
    up_manifest m = test_manifest("rot", 1, mod, 2000, NULL, 0, &key2, &payload);
    assert_int_equal(test_send(&st, &m, payload, &res), 0);
    uint8_t zeros[UP_PK_BYTES] = {0}; /* a key nothing signs for */
    up_rotate_build(3, zeros, key2.sk, rot);
    assert_int_equal(up_on_rotate(&st, rot, sizeof rot, &res), DIPP_E_UP_MESSAGE);
    up_rotate_build(2, key1.pk, key2.sk, rot); /* back to an old serial */
    assert_int_equal(up_on_rotate(&st, rot, sizeof rot, &res), DIPP_E_UP_REPLAY);
    free(payload);
    free(mod);
}

static void test_testrun_failure_and_rollback(void **s) {
    (void)s;
    uint8_t *v1 = test_elf(2000, 7, NULL), *v2 = test_elf(2000, 8, NULL);
    uint8_t *bad = test_elf(2000, 9, "BAD");
    assert_int_equal(upload("roll", 1, v1, 2000, NULL, 0, &key1), 0);
    assert_int_equal(upload("roll", 2, bad, 2000, NULL, 0, &key1), DIPP_E_CRASH);
    assert_active("roll", 1, v1, 2000);
    assert_int_equal(upload("roll", 2, bad, 2000, NULL, 0, &key1), DIPP_E_UP_REPLAY);
    assert_int_equal(upload("roll", 3, v2, 2000, NULL, 0, &key1), 0);
    assert_int_equal(up_on_run(&st, "roll", DIPP_E_CRASH, &res), 0);
    assert_int_equal(up_on_run(&st, "roll", 0, &res), 0); /* not in a row */
    assert_int_equal(up_on_run(&st, "roll", DIPP_E_TIMEOUT, &res), 0);
    assert_int_equal(up_on_run(&st, "roll", DIPP_E_CRASH, &res), 0);
    assert_int_equal(up_on_run(&st, "roll", DIPP_E_CRASH, &res), DIPP_E_UP_ROLLBACK);
    print_message("%s\n", res.detail);
    assert_active("roll", 1, v1, 2000);
    char gone[200];
    snprintf(gone, sizeof gone, "%s/roll@3.so", dir);
    assert_int_equal(access(gone, F_OK), -1);
    free(v1), free(v2), free(bad);
}

/* Refused uploads of 40 names never installed (a mistyped name each)
 * do not fill the table of 32 for good: a good module still installs. */
static void test_refused_names_do_not_fill_the_table(void **s) {
    (void)s;
    uint8_t *bad = test_elf(2000, 11, "BAD"), *good = test_elf(2000, 12, NULL);
    char name[16];
    for (int k = 0; k < 40; k++) {
        snprintf(name, sizeof name, "typo%d", k);
        assert_int_equal(upload(name, 1, bad, 2000, NULL, 0, &key2), DIPP_E_CRASH);
    }
    assert_int_equal(upload("fits", 1, good, 2000, NULL, 0, &key2), 0);
    assert_active("fits", 1, good, 2000);
    free(bad), free(good);
}

/* A copy of the manifest in flight with a byte of its name's padding
 * changed (not covered by the signature) resumes the upload, where it was
 * admitted as a new one and every chunk received was asked for again. */
static void test_manifest_padding_resumes(void **s) {
    (void)s;
    uint8_t *mod = test_elf(3000, 13, NULL), *payload;
    uint8_t wire[UP_MANIFEST_BYTES], chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    up_manifest m = test_manifest("pad", 1, mod, 3000, NULL, 0, &key2, &payload);
    up_manifest_encode(&m, wire);
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), 0);
    uint32_t all = res.missing;
    assert_true(all > 1);
    size_t len = up_chunk_build(&m, payload, 0, chunk);
    assert_int_equal(up_on_chunk(&st, chunk, len, &res), 0);
    wire[8 + strlen("pad") + 1] = 'A'; /* past the name's NUL */
    assert_int_equal(up_on_manifest(&st, wire, sizeof wire, &res), 0);
    assert_int_equal(res.missing, all - 1);
    assert_int_equal(test_send(&st, &m, payload, &res), 0);
    free(payload), free(mod);
}

static void test_quota(void **s) {
    (void)s;
    up_config cfg = up_config_default();
    cfg.quota_bytes = 200000;
    assert_int_equal(up_open(&st, dir, key1.pk, &cfg, test_stub_run, NULL, &res), 0);
    uint8_t *mod = test_elf(300000, 10, NULL);
    assert_int_equal(upload("big", 1, mod, 300000, NULL, 0, &key2), DIPP_E_UP_QUOTA);
    free(mod);
}

/* An index whose checksum holds but whose fields this store never writes
 * (another build's, or bits flipped before the checksum was made) is
 * refused as corrupt, naming the field: 33 modules made up_find read past
 * the table, a name or garbage without its NUL read past its field, and
 * a count of chunks received unlike the map's kept the upload from ever
 * ending (or ended it early). */
static void test_index_fields_checked(void **s) {
    (void)s;
    static const char *const field[] = {"nmods", "module name", "garbage", "received"};
    static up_index x;
    static up_store other;
    int opened = 0;
    for (int k = 0; k < 4; k++) {
        x = st.idx;
        if (k == 0)
            x.nmods = UP_MAX_MODULES + 1;
        else if (k == 1)
            x.nmods = 1, memset(x.mod[0].name, 'a', sizeof x.mod[0].name);
        else if (k == 2)
            memset(x.garbage, 'x', sizeof x.garbage);
        else
            x.received = UP_MAX_CHUNKS + 1;
        up_sha256((const uint8_t *)&x, offsetof(up_index, sum), x.sum);
        assert_int_equal(plat_file_replace(dir, "index", &x, sizeof x), 0);
        if (up_open(&other, dir, key1.pk, NULL, test_stub_run, NULL, &res) == 0) {
            print_message("%s: opened\n", field[k]);
            opened++;
            continue;
        }
        print_message("%s\n", res.detail);
        assert_int_equal(res.code, DIPP_E_UP_STORE);
        assert_non_null(strstr(res.detail, field[k]));
    }
    assert_int_equal(up_index_save(&st, &res), 0); /* the good one back */
    assert_int_equal(opened, 0);
}

/* The sandbox's test-run with real modules: a good one is activated,
 * each bad one is refused with its runner code. */
static void test_real_testrun(void **s) {
    (void)s;
    static const struct { const char *file; int code; } cases[] = {
        {"copy", 0}, {"crash", DIPP_E_CRASH}, {"spin", DIPP_E_TIMEOUT},
        {"wrong_abi", DIPP_E_ABI}, {"no_symbol", DIPP_E_MISSING_SYMBOL},
        {"fail", DIPP_E_MODULE + 42}, {"copy", 0},
    };
    assert_int_equal(up_open(&st, dir, key1.pk, NULL, up_test_in_sandbox, &sandbox,
                             &res), 0);
    for (uint32_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[600];
        uint8_t *mod, *payload;
        size_t len;
        snprintf(path, sizeof path, "%s/%s.so", DIPP_TEST_MODULES, cases[k].file);
        assert_int_equal(plat_file_read(path, &mod, &len), 0);
        up_manifest m = test_manifest("real", 10 + k, mod, len, NULL, 0, &key2, &payload);
        int code = test_send(&st, &m, payload, &res);
        print_message("%s: %d %s\n", cases[k].file, code, res.detail);
        assert_int_equal(code, cases[k].code);
        free(mod), free(payload);
    }
    assert_int_equal(up_find(&st, "real")->active, 16);
}

/* A satellite that answers every question but keeps no chunk: its
 * status says one chunk missing with an empty bitmap (nothing to resend)
 * or marks chunk 0 that never arrives. It once had ground_upload resend
 * and ask for ever, each answer taken as progress (found by answering
 * ground_upload's questions with such statuses). */
enum { ONE, WOBBLE, NONE_BY_TURNS, NONE, FALLING };

typedef struct stuck_sat {
    unsigned answers; /* questions answered so far */
    int mark;         /* the bitmap marks chunk 0 */
    int counts;       /* missing: 1 always, or by turns 1 and 2 (WOBBLE),
                         0 and 2 (NONE_BY_TURNS), 0 always (NONE), or
                         one fewer each answer from 2^32 - 1 (FALLING) */
    uint8_t seq[2];   /* the last question's number */
} stuck_sat;

static int stuck_send(void *ctx, const uint8_t *msg, size_t len) {
    stuck_sat *t = ctx;
    if (len >= 3 && msg[0] != 'C')
        memcpy(t->seq, msg + 1, 2);
    return 0;
}

static int stuck_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    stuck_sat *t = ctx;
    (void)timeout_ms, (void)cap;
    if (t->answers >= 1000) /* the test's own bound: then silence */
        return 0;
    t->answers++;
    memset(msg, 0, 19);
    msg[0] = 'S', memcpy(msg + 1, t->seq, 2);
    static const uint32_t by_turns[][2] = {{1, 1}, {1, 2}, {0, 2}, {0, 0}};
    uint32_t missing = t->counts == FALLING ? UINT32_MAX - t->answers
                                            : by_turns[t->counts][t->answers & 1];
    proto_put32(msg + 8, missing);
    proto_put16(msg + 16, t->mark ? 8 : 0);
    msg[18] = (uint8_t)t->mark;
    *len = t->mark ? 19 : 18;
    return 1;
}

static void test_ground_gives_up_without_progress(void **state) {
    (void)state;
    test_key k = test_key_make(1);
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    for (int mark = 0; mark < 2; mark++) {
        stuck_sat t = {0, mark, ONE, {0, 0}};
        ground_io io = {stuck_send, stuck_recv, &t, 10, 3, 1};
        uint64_t sent;
        proto_status last;
        assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), PROTO_STALLED);
        assert_true(t.answers <= PROTO_STALL_ROUNDS + 1);
    }
    /* a count that goes down and up again by turns is no progress
     * either, nor is "none missing" answered again and again without an
     * install: each fall from the last answer, or each manifest sent
     * again, began the rounds anew, so such a board held the upload for
     * ever (review) */
    for (int counts = WOBBLE; counts <= NONE; counts++) {
        stuck_sat t = {0, 0, counts, {0, 0}};
        ground_io io = {stuck_send, stuck_recv, &t, 10, 3, 1};
        uint64_t sent;
        proto_status last;
        assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), PROTO_STALLED);
        assert_true(t.answers <= PROTO_STALL_ROUNDS + 2 * PROTO_STALL_RESTARTS + 2);
    }
    /* nor is a count that falls by one each answer but is more chunks
     * than the upload has: every answer was progress, so such a board
     * held the upload for 4 billion rounds (fuzzing's review) */
    stuck_sat t = {0, 0, FALLING, {0, 0}};
    ground_io io = {stuck_send, stuck_recv, &t, 10, 3, 1};
    uint64_t sent;
    proto_status last;
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), PROTO_STALLED);
    assert_true(t.answers <= PROTO_STALL_ROUNDS + 1);
    free(payload), free(mod);
}

/* A stream of answers to other questions (stale statuses, a number not
 * this question's): each ask still ends after its timeout_ms. Each such
 * answer began the wait again, so the stream held the upload for as long
 * as it came (found by answering ground_upload's questions with them);
 * and a flood always waiting (faster than the ground reads) still held
 * it: asked for what was left of the wait, 0 ms at the end, the ground
 * was handed the next one at once (review). */
typedef struct stale_stream {
    unsigned long left; /* answers still to come */
    int pace_ms;        /* one each pace_ms; 0: all already waiting */
} stale_stream;

static int stale_send(void *ctx, const uint8_t *msg, size_t len) {
    (void)ctx, (void)msg, (void)len;
    return 0;
}

static int stale_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    stale_stream *stream = ctx;
    (void)cap;
    if (!stream->left || timeout_ms < stream->pace_ms)
        return 0; /* silence for the rest of the wait: no sleep needed here */
    stream->left--;
    if (stream->pace_ms)
        nanosleep(&(struct timespec){0, stream->pace_ms * 1000L * 1000}, NULL);
    memset(msg, 0, 18);
    msg[0] = 'S', msg[1] = 0xEE, msg[2] = 0xEE; /* never this upload's number */
    *len = 18;
    return 1;
}

static void test_ground_wait_bounded_by_stale_answers(void **state) {
    (void)state;
    test_key k = test_key_make(1);
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    uint64_t sent, start = plat_now_ms();
    proto_status last;
    /* one every 5 ms for 30 s: 2 asks of 50 ms, and a loaded machine adds
     * far less than the rest of the 10 s allowed */
    stale_stream paced = {6000, 5};
    ground_io io = {stale_send, stale_recv, &paced, 50, 2, 1};
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), -1);
    assert_true(plat_now_ms() - start < 10000);
    /* always one waiting: most of them are left unread */
    stale_stream flood = {2000000000ul, 0};
    io.ctx = &flood, io.timeout_ms = 20;
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), -1);
    assert_true(flood.left > 1000000000ul);
    free(payload), free(mod);
}

/* A status whose code does not fit an int: none the ground can read,
 * however often it comes. ground_upload returned it cast, so 2^31 was
 * taken for no answer and 2^32 - 2 for PROTO_STALLED: `dipp ground
 * upload` said "no answer" or "chunks still missing" of a satellite that
 * had answered with a refusal (found by fuzz_ground_upload). */
typedef struct odd_code_sat {
    uint32_t code;
    uint8_t seq[2];
    unsigned answers;
} odd_code_sat;

static int odd_send(void *ctx, const uint8_t *msg, size_t len) {
    odd_code_sat *t = ctx;
    if (len >= 3 && msg[0] != 'C')
        memcpy(t->seq, msg + 1, 2);
    return 0;
}

static int odd_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    odd_code_sat *t = ctx;
    (void)timeout_ms, (void)cap;
    if (t->answers++ % 2) /* one answer a question, then the wait ends */
        return 0;
    memset(msg, 0, 18);
    msg[0] = 'S', memcpy(msg + 1, t->seq, 2);
    proto_put32(msg + 3, t->code);
    *len = 18;
    return 1;
}

static void test_ground_status_code_out_of_range(void **state) {
    (void)state;
    test_key k = test_key_make(1);
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    static const uint32_t codes[] = {0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (size_t c = 0; c < sizeof codes / sizeof *codes; c++) {
        odd_code_sat t = {codes[c], {0, 0}, 0};
        ground_io io = {odd_send, odd_recv, &t, 10, 3, 1};
        uint64_t sent;
        proto_status last;
        uint8_t msg[18] = {'S'};
        proto_put32(msg + 3, codes[c]);
        assert_int_equal(proto_status_parse(msg, sizeof msg, &last), -1);
        assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), -1);
        assert_int_equal(t.answers, 2 * 3); /* each of the 3 asks answered once */
    }
    /* INT_MAX itself is a code, refused as the satellite said */
    odd_code_sat t = {0x7FFFFFFFu, {0, 0}, 0};
    ground_io io = {odd_send, odd_recv, &t, 10, 3, 1};
    uint64_t sent;
    proto_status last;
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), 0x7FFFFFFF);
    free(payload), free(mod);
}

/* A status whose bitmap starts near 2^32: `first` + a bit's index wraps
 * past 2^32 to a chunk of the upload that the status never named, and
 * the ground resent chunks 0 to 7 of an upload whose chunks are all past
 * the bitmap's start (found by reading resend's arithmetic). */
typedef struct wrap_sat {
    uint32_t first;      /* the status's first chunk */
    uint8_t seq[2];      /* the last question's number */
    unsigned answers;    /* the test's own bound: then silence */
    unsigned resent;     /* chunk messages the ground sent */
    uint32_t last_chunk; /* the last one's index */
} wrap_sat;

static int wrap_send(void *ctx, const uint8_t *msg, size_t len) {
    wrap_sat *t = ctx;
    if (len >= 1 + UP_CHUNK_HDR && msg[0] == 'C') {
        t->resent++;
        const uint8_t *k = msg + 1 + 4; /* after the tag, little endian */
        t->last_chunk = (uint32_t)k[0] | (uint32_t)k[1] << 8 |
                        (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
    } else if (len >= 3) {
        memcpy(t->seq, msg + 1, 2);
    }
    return 0;
}

/* Answers each question once: one chunk missing, and a bitmap of 16
 * bits all set from chunk `first` on. */
static int wrap_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    wrap_sat *t = ctx;
    (void)timeout_ms, (void)cap;
    if (t->answers >= 1000 || t->answers++ % 2)
        return 0;
    memset(msg, 0, 20);
    msg[0] = 'S', memcpy(msg + 1, t->seq, 2);
    proto_put32(msg + 8, 1), proto_put32(msg + 12, t->first);
    proto_put16(msg + 16, 16);
    msg[18] = msg[19] = 0xFF;
    *len = 20;
    return 1;
}

static void test_ground_resends_only_named_chunks(void **state) {
    (void)state;
    test_key k = test_key_make(1);
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    uint32_t chunks = up_chunk_count(&m);
    assert_true(chunks >= 1 && chunks < 8);
    /* 2^32 - 8: bits 8 to 15 wrap to chunks 0 to 7; none is asked for */
    wrap_sat t = {UINT32_MAX - 7, {0, 0}, 0, 0, 0};
    ground_io io = {wrap_send, wrap_recv, &t, 10, 3, 1};
    uint64_t sent;
    proto_status last;
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), PROTO_STALLED);
    assert_int_equal(t.resent, 0);
    assert_int_equal(sent, 0);
    /* the last chunk named: it alone is resent, once an answer */
    wrap_sat named = {chunks - 1, {0, 0}, 0, 0, 0};
    io.ctx = &named;
    assert_int_equal(ground_upload(&io, &m, payload, &sent, &last), PROTO_STALLED);
    assert_true(named.resent > 0);
    assert_int_equal(named.resent, sent);
    assert_int_equal(named.resent, named.answers / 2);
    assert_int_equal(named.last_chunk, chunks - 1);
    free(payload), free(mod);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resumed_across_passes_and_restart),
        cmocka_unit_test(test_replay_and_old_versions_refused),
        cmocka_unit_test(test_signature_abi_and_arch_checked),
        cmocka_unit_test(test_delta_small_and_checked),
        cmocka_unit_test(test_bad_chunks),
        cmocka_unit_test(test_testrun_failure_and_rollback),
        cmocka_unit_test(test_key_rotation),
        cmocka_unit_test(test_refused_names_do_not_fill_the_table),
        cmocka_unit_test(test_manifest_padding_resumes),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_index_fields_checked),
        cmocka_unit_test(test_real_testrun),
        cmocka_unit_test(test_ground_gives_up_without_progress),
        cmocka_unit_test(test_ground_wait_bounded_by_stale_answers),
        cmocka_unit_test(test_ground_status_code_out_of_range),
        cmocka_unit_test(test_ground_resends_only_named_chunks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
