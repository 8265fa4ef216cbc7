/* test_sat_dish.c -- DISH on board (sat_dish.h) without a link: images of
 * procedures as updates of kind 2 through the real update store (one
 * installed, zstd or not; a replay, an unknown bytecode version, bytes
 * that are no bytecode, a delta, a board without procedures: refused
 * with the reason), the procedure port against hostile bytes (each
 * answered with its sequence number and a reason, or not at all, never a
 * crash), commands taken only signed and once, a resent request done once, a stop reaching the runs that
 * called into the slot, and the clock: a capture's
 * outcome reported when its simulated time is up, the cores' awake time,
 * the run records as the telemetry carries them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd_sig.h"
#include "csp.h"
#include "dish_compile.h"
#include "errors.h"
#include "faultfs.h"
#include "proto.h"
#include "sat.h"
#include "sat_dish.h"
#include "upload.h"
#include "upload_helpers.h"

#define DIR "/store"

static const char src[] =
    "slot 3\n"
    "proc shoot(p) {\n  wake\n  let ok = -2\n  if start(p) == 0 {\n"
    "    wait pipe(p) != 0 within 60\n    ok = pipe(p)\n  }\n  suspend\n  return ok\n}\n"
    "proc twice(x) {\n  tm(7, x)\n  return x * 2\n}\n";

static sat_dish d;
static up_store st;
static uint8_t img[DISH_MAX_IMAGE];
static int img_len;

static int setup(void **s) {
    char err[256];
    (void)s;
    img_len = dish_compile("t.dish", src, strlen(src), img, sizeof img, err, sizeof err);
    if (img_len < 0)
        fprintf(stderr, "%s\n", err);
    return img_len > 0 ? 0 : -1;
}

/* A fresh board: the runtime on a new store, the update store taking
 * procedures through it. */
static void board(int with_procs) {
    test_key k = test_key_make(1);
    up_config cfg = up_config_default();
    up_result r;
    faultfs_install();
    sat_dish_open(&d, DIR, 0);
    cfg.accept = with_procs ? sat_dish_accept : NULL, cfg.accept_ctx = &d;
    cfg.procs_max_bytes = DISH_MAX_IMAGE, cfg.procs_version = DISH_VERSION;
    assert_int_equal(up_open(&st, DIR, k.pk, &cfg, test_stub_run, NULL, &r), 0);
    d.pk = st.idx.pk;
}

/* An update of kind 2 carrying bytes (zstd-compressed or not). */
static up_manifest procs_manifest(const char *name, uint32_t v, const uint8_t *bytes,
                                  size_t len, int zstd, uint8_t **payload) {
    test_key k = test_key_make(1);
    up_manifest m = {.kind = UP_KIND_PROCS, .chunk_size = DISH_PACKET, .version = v,
                     .abi = len > 4 ? bytes[4] : 0, .key_serial = k.serial};
    char err[256];
    snprintf(m.name, sizeof m.name, "%s", name);
    assert_int_equal(up_prepare(&m, bytes, len, NULL, 0, zstd ? 19 : 0, k.sk, payload, err,
                                sizeof err), 0);
    return m;
}

static int upload(const char *name, uint32_t v, const uint8_t *bytes, size_t len, int zstd,
                  up_result *r) {
    uint8_t *payload;
    up_manifest m = procs_manifest(name, v, bytes, len, zstd, &payload);
    int code = test_send(&st, &m, payload, r);
    free(payload);
    return code;
}

static void test_uploads(void **s) {
    up_result r;
    uint8_t bad[DISH_MAX_IMAGE];
    (void)s;
    board(1);
    assert_int_equal(upload("t", 1, img, (size_t)img_len, 1, &r), 0);
    assert_true(r.installed);
    assert_string_equal(r.detail, "t v1: slots 3 4 loaded");
    assert_true(d.vm.slots[3].info.used && d.vm.slots[4].info.used);
    assert_int_equal(upload("t", 1, img, (size_t)img_len, 0, &r), DIPP_E_UP_REPLAY);
    /* an unknown version: the header's version byte is not in the CRC */
    memcpy(bad, img, (size_t)img_len);
    bad[4] = 9;
    assert_int_equal(upload("future", 1, bad, (size_t)img_len, 0, &r), DIPP_E_UP_PROCS);
    assert_string_equal(r.detail, "future v1: bytecode version 9 is unknown (this runtime "
                                  "runs 1)");
    /* refused by its manifest, before a chunk crosses the link */
    static uint8_t big[DISH_MAX_IMAGE + 1];
    memcpy(big, img, (size_t)img_len);
    assert_int_equal(upload("big", 1, big, sizeof big, 0, &r), DIPP_E_UP_PROCS);
    assert_string_equal(r.detail, "big v1: an image of 4097 bytes, the runtime takes 4096 "
                                  "at most");
    for (int k = 0; k < 300; k++)
        bad[k] = (uint8_t)(k * 37 + 11);
    bad[4] = DISH_VERSION; /* past the manifest's check, to the verifier */
    assert_int_equal(upload("noise", 1, bad, 300, 0, &r), DIPP_E_UP_PROCS);
    assert_non_null(strstr(r.detail, "not DISH bytecode"));
    /* the upload's proto status carries the sentence to the ground */
    uint8_t wire[PROTO_STATUS_MAX];
    proto_status ps;
    assert_int_equal(proto_status_parse(wire, proto_status_build(&st, &r, 7, wire), &ps), 0);
    assert_int_equal(ps.code, DIPP_E_UP_PROCS);
    assert_string_equal(ps.detail, r.detail);
    /* refusals of 40 names never installed take the table's places of
     * such names, never that of "t", installed: its floor stays */
    for (int k = 0; k < 40; k++) {
        char name[16];
        snprintf(name, sizeof name, "noise%d", k);
        assert_int_equal(upload(name, 1, bad, 300, 0, &r), DIPP_E_UP_PROCS);
    }
    assert_int_equal(upload("t", 1, img, (size_t)img_len, 0, &r), DIPP_E_UP_REPLAY);
    /* a delta of procedures is malformed: there is no version file to patch */
    uint8_t *payload, msg[UP_MANIFEST_BYTES];
    up_manifest m = procs_manifest("t", 5, img, (size_t)img_len, 1, &payload);
    m.flags |= UP_FLAG_DELTA;
    up_manifest_encode(&m, msg);
    assert_int_equal(up_on_manifest(&st, msg, sizeof msg, &r), DIPP_E_UP_MESSAGE);
    assert_non_null(strstr(r.detail, "field flags"));
    free(payload);
    faultfs_uninstall();
    board(0); /* a board without a runtime for them */
    assert_int_equal(upload("t", 1, img, (size_t)img_len, 0, &r), DIPP_E_UP_PROCS);
    assert_string_equal(r.detail, "t v1: this board runs no procedures");
    faultfs_uninstall();
}

/* Sends msg on the procedure port as it is: the answer's code, its text
 * in text. */
static long ask_raw(const uint8_t *msg, size_t len, char *text) {
    uint8_t out[CSP_MTU];
    size_t n = sat_dish_handle(&d, msg, len, out, sizeof out);
    if (n == 0)
        return -1;
    assert_true(n >= 7 && n < sizeof out);
    assert_int_equal(out[0], 'A');
    assert_memory_equal(out + 1, msg + 1, 2); /* the question it answers */
    memcpy(text, out + 7, n - 7);
    text[n - 7] = 0;
    return (long)proto_get32(out + 3);
}

/* The counter the next signed command takes: rises across tests, as the
 * ground's clock does. */
static uint64_t next_counter = 1000;

/* msg signed for port (cmd_sig.h) with key serial `key` into out (room
 * for CMD_SIG_TRAILER more): its length. */
static size_t sign_with(uint8_t key, uint8_t port, const uint8_t *msg, size_t len,
                        uint8_t *out) {
    test_key k = test_key_make(key);
    memcpy(out, msg, len);
    return cmd_sig_append(port, out, len, next_counter++, k.sk);
}

/* Sends msg on the procedure port signed with the ground's key, as the
 * ground sends a run, stop or delete: as ask_raw. */
static long ask(const uint8_t *msg, size_t len, char *text) {
    uint8_t out[CSP_MTU];
    return ask_raw(out, sign_with(1, DIPP_PORT_PROCS, msg, len, out), text);
}

static void test_port_hostile(void **s) {
    char text[CSP_MTU];
    up_result r;
    (void)s;
    board(1);
    upload("t", 1, img, (size_t)img_len, 0, &r);
    assert_int_equal(ask_raw((const uint8_t *)"L", 1, text), -1); /* no seq: no answer */
    assert_int_equal(ask_raw((const uint8_t *)"L\0\1", 3, text), 0);
    assert_string_equal(text, "slot 3: t v1, 1 args, 41 bytes, called from 0 places, 0 runs\n"
                              "slot 4: t v1, 1 args, 14 bytes, called from 0 places, 0 runs\n");
    assert_int_equal(ask((const uint8_t *)"X\0\2", 3, text), DIPP_E_UP_MESSAGE);
    assert_int_equal(ask((const uint8_t *)"X\0\3\4", 4, text), DIPP_E_UP_MESSAGE);
    assert_string_equal(text, "run: 4 bytes, not 5 and 4 per argument (0 arguments, at "
                              "most 32)");
    assert_int_equal(ask((const uint8_t *)"X\0\4\x3c\0", 5, text), DIPP_E_UP_MESSAGE);
    assert_string_equal(text, "run: slot 60 is not one of 0-49");
    assert_int_equal(ask((const uint8_t *)"X\0\5\x28\0", 5, text), DIPP_E_UP_PROCS);
    assert_string_equal(text, "slot 40 is empty: not started");
    assert_int_equal(ask((const uint8_t *)"X\0\6\3\0", 5, text), DIPP_E_UP_PROCS);
    assert_string_equal(text, "slot 3 takes 1 arguments: not started");
    assert_int_equal(ask((const uint8_t *)"X\0\7\3\xff", 5, text), DIPP_E_UP_MESSAGE);
    assert_int_equal(ask((const uint8_t *)"E\0\x08\3\0", 5, text), DIPP_E_UP_MESSAGE);
    assert_string_equal(text, "delete: 5 bytes, not 4");
    assert_int_equal(ask((const uint8_t *)"E\0\x09\x2a", 4, text), DIPP_E_UP_PROCS);
    assert_string_equal(text, "slot 42 is empty: not deleted");
    assert_int_equal(ask_raw((const uint8_t *)"\x01\0\x0a", 3, text), DIPP_E_UP_MESSAGE);
    assert_non_null(strstr(text, "message '?' of 3 bytes is not one of"));
    /* noise: answered with its seq, or not at all; the board unharmed */
    srand(5);
    for (int k = 0; k < 2000; k++) {
        uint8_t msg[48];
        size_t len = (size_t)rand() % sizeof msg;
        for (size_t j = 0; j < len; j++)
            msg[j] = (uint8_t)rand();
        if (len && k % 2)
            msg[0] = (uint8_t)"LXE"[k % 3];
        ask_raw(msg, len, text);
    }
    assert_true(d.vm.slots[3].info.used && d.vm.slots[4].info.used);
    faultfs_uninstall();
}

static void test_resent_run_done_once(void **s) {
    char text[CSP_MTU], again[CSP_MTU];
    up_result r;
    uint8_t msg[9] = {'X', 0x12, 0x34, 4, 1, 0, 0, 0, 21}, sent[CSP_MTU];
    (void)s;
    board(1);
    upload("t", 1, img, (size_t)img_len, 0, &r);
    size_t n = sign_with(1, DIPP_PORT_PROCS, msg, sizeof msg, sent);
    assert_int_equal(ask_raw(sent, n, text), 0);
    assert_string_equal(text, "slot 4: run 0 started");
    assert_int_equal(ask_raw(sent, n, again), 0); /* the answer was lost */
    assert_string_equal(again, text);
    assert_int_equal(d.started, 1);
    msg[2] = 0x35; /* a new question: a new run */
    assert_int_equal(ask(msg, sizeof msg, text), 0);
    assert_int_equal(d.started, 2);
    faultfs_uninstall();
}

/* Runs, stops and deletes are taken only signed with the ground's key
 * (cmd_sig.h), each counter once: a command heard on the link and sent
 * again later is refused, after a power cut too. A refused message does
 * not take the place of the answer kept for the ground's resend. */
static void test_commands_signed(void **s) {
    char text[CSP_MTU];
    up_result r;
    uint8_t run[9] = {'X', 0, 1, 4, 1, 0, 0, 0, 21};
    uint8_t first[CSP_MTU], second[CSP_MTU], forged[CSP_MTU];
    (void)s;
    board(1);
    upload("t", 1, img, (size_t)img_len, 0, &r);
    assert_int_equal(ask_raw(run, sizeof run, text), DIPP_E_UP_MESSAGE);
    assert_string_equal(text, "'X' of 9 bytes: not a signed command (its bytes, then a "
                              "counter and the ground's signature, 72 bytes)");
    size_t nf = sign_with(2, DIPP_PORT_PROCS, run, sizeof run, forged); /* another key */
    assert_int_equal(ask_raw(forged, nf, text), DIPP_E_UP_SIGNATURE);
    assert_non_null(strstr(text, "the signature does not verify with the key on board"));
    nf = sign_with(1, DIPP_PORT_IMAGES, run, sizeof run, forged); /* another port's */
    assert_int_equal(ask_raw(forged, nf, text), DIPP_E_UP_SIGNATURE);
    size_t n1 = sign_with(1, DIPP_PORT_PROCS, run, sizeof run, first);
    first[sizeof run + 7] ^= 1; /* its counter changed */
    assert_int_equal(ask_raw(first, n1, text), DIPP_E_UP_SIGNATURE);
    first[sizeof run + 7] ^= 1;
    assert_int_equal(d.started, 0);
    assert_int_equal(d.procs.refused, 4);
    assert_int_equal(ask_raw(first, n1, text), 0);
    assert_int_equal(ask_raw(forged, nf, text), DIPP_E_UP_SIGNATURE);
    assert_int_equal(ask_raw(first, n1, text), 0); /* its answer, not done again */
    assert_string_equal(text, "slot 4: run 0 started");
    run[2] = 2;
    size_t n2 = sign_with(1, DIPP_PORT_PROCS, run, sizeof run, second);
    assert_int_equal(ask_raw(second, n2, text), 0);
    assert_int_equal(ask_raw(first, n1, text), DIPP_E_UP_REPLAY); /* heard, sent again */
    assert_non_null(strstr(text, "the command counter is not above"));
    assert_int_equal(d.started, 2);
    /* signed but malformed, longer than any run: its counter is spent, and
     * its resend answered the same (it was "not above" when the answer
     * kept was only as long as a run's; found by fuzz_sat) */
    uint8_t longer[200] = {'X', 0, 4, 4, 1};
    size_t nl = sign_with(1, DIPP_PORT_PROCS, longer, sizeof longer, forged);
    assert_int_equal(ask_raw(forged, nl, text), DIPP_E_UP_MESSAGE);
    assert_non_null(strstr(text, "run: 200 bytes"));
    assert_int_equal(ask_raw(forged, nl, text), DIPP_E_UP_MESSAGE);
    /* the power fails: a command whose counter cannot be kept is not done */
    faultfs_cut_at(1);
    run[2] = 3;
    assert_int_equal(ask(run, sizeof run, text), DIPP_E_UP_STORE);
    assert_int_equal(d.started, 2);
    faultfs_power_up();
    sat_dish_open(&d, DIR, 0);
    d.pk = st.idx.pk;
    assert_int_equal(ask_raw(second, n2, text), DIPP_E_UP_REPLAY);
    faultfs_uninstall();
}

/* Steps the board's loop until wall time `until` (ms), as the satellite's
 * loop does; a capture fails when fail is set. */
static void run_until(uint64_t until, int fail) {
    for (uint64_t wall = 0; wall <= until;) {
        sat_dish_step(&d, wall);
        for (int p = 1; p <= DISH_PIPELINES; p++)
            if (d.captures & (1u << p))
                sat_dish_captured(&d, p, !fail);
        wall += (uint64_t)sat_dish_idle_ms(&d, wall, 50) + 1;
    }
}

/* The newest run record of kind. */
static const dish_tlm *newest(dish_tlm_kind kind) {
    for (uint32_t k = d.logged; k-- > 0;)
        if (d.log[k % SAT_DISH_LOG].kind == kind)
            return &d.log[k % SAT_DISH_LOG];
    fail();
    return NULL;
}

/* `proc stop SLOT` stops the procedure wherever it runs: the run started
 * in its slot, and the run of another slot's procedure that called into
 * it (that one went on, and the slot could not be deleted for "is
 * running" though nothing stopped it). */
static void test_stop_reaches_callers(void **s) {
    static const char naps[] = "slot 20\nproc nap() {\n  sleep 3600\n  return 1\n}\n"
                               "proc outer() {\n  return nap() + 1\n}\n";
    uint8_t code[DISH_MAX_IMAGE];
    char err[256], text[CSP_MTU];
    up_result r;
    (void)s;
    int n = dish_compile("naps.dish", naps, strlen(naps), code, sizeof code, err, sizeof err);
    assert_true(n > 0);
    board(1);
    assert_int_equal(upload("naps", 1, code, (size_t)n, 0, &r), 0);
    assert_int_equal(ask((const uint8_t *)"X\0\1\x15\0", 5, text), 0);
    assert_string_equal(text, "slot 21: run 0 started");
    assert_int_equal(ask((const uint8_t *)"X\0\2\x14\0", 5, text), 0);
    assert_string_equal(text, "slot 20: run 1 started");
    sat_dish_step(&d, 0); /* run 0 is asleep inside nap, called by outer */
    assert_int_equal(d.vm.runs[0].nfr, 2);
    assert_int_equal(ask((const uint8_t *)"S\0\3\x14", 4, text), 0);
    assert_string_equal(text, "slot 20: 2 runs stopped");
    assert_int_equal(dish_vm_alive(&d.vm), 0);
    assert_int_equal(newest(DISH_TLM_FAULT)->code, DISH_FAULT_KILLED);
    /* outer still calls it; nothing runs in it any more */
    assert_int_equal(ask((const uint8_t *)"E\0\4\x14", 4, text), DIPP_E_UP_PROCS);
    assert_string_equal(text, "slot 20 is called by another procedure: not deleted");
    assert_int_equal(ask((const uint8_t *)"E\0\5\x15", 4, text), 0);
    assert_int_equal(ask((const uint8_t *)"E\0\6\x14", 4, text), 0);
    faultfs_uninstall();
}

/* A loop of tm records (1,500 in one run) prints the run's first 1,000
 * and a line saying the rest are not printed (a loop of them wrote
 * hundreds of MB of log); all are counted. */
static void test_tm_flood_printed_once(void **s) {
    static const char flood[] = "slot 7\nproc f() {\n  repeat 1500 { tm(1, 2) }\n}\n";
    uint8_t code[DISH_MAX_IMAGE];
    char err[256], text[CSP_MTU], path[] = "/tmp/dish-flood-XXXXXX";
    up_result r;
    (void)s;
    int n = dish_compile("f.dish", flood, strlen(flood), code, sizeof code, err,
                         sizeof err);
    assert_true(n > 0);
    board(1);
    assert_int_equal(upload("flood", 1, code, (size_t)n, 0, &r), 0);
    int out = mkstemp(path), saved = dup(1);
    assert_true(out >= 0 && saved >= 0);
    fflush(stdout);
    dup2(out, 1);
    assert_int_equal(ask((const uint8_t *)"X\0\x40\7\0", 5, text), 0);
    run_until(2000, 0);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fdopen(out, "r");
    char line[256];
    int tms = 0, notes = 0;
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        int note = strstr(line, "more than 1000 tm records") != NULL;
        notes += note;
        tms += !note && strstr(line, " tm ") != NULL;
    }
    fclose(f);
    unlink(path);
    assert_int_equal(tms, 1000);
    assert_int_equal(notes, 1);
    assert_int_equal(d.tms, 1500);
    faultfs_uninstall();
}

static void test_capture_on_the_clock(void **s) {
    char text[CSP_MTU], lines[CSP_MTU];
    up_result r;
    (void)s;
    board(1);
    sat_dish_configure(&d, &(sat_dish_cfg){1000, 20, 1}, 0);
    upload("t", 1, img, (size_t)img_len, 0, &r);
    assert_false(sat_dish_awake(&d));
    assert_int_equal(ask((const uint8_t *)"X\0\1\3\1\0\0\0\1", 9, text), 0);
    run_until(10, 0); /* 10 wall ms: 10 simulated s, the capture still going */
    assert_true(sat_dish_awake(&d));
    assert_int_equal(d.ended, 0);
    run_until(30, 0);
    assert_false(sat_dish_awake(&d));
    assert_int_equal(d.ended, 1);
    assert_int_equal(newest(DISH_TLM_END)->value, DISH_PIPE_OK);
    assert_int_equal(d.sim.awake_total_ms, 20000);
    /* a failed capture: reported failed when its time is up */
    assert_int_equal(ask((const uint8_t *)"X\0\2\3\1\0\0\0\1", 9, text), 0);
    run_until(60, 1);
    assert_int_equal(d.ended, 2);
    assert_int_equal(newest(DISH_TLM_END)->value, DISH_PIPE_FAILED);
    /* the records as the telemetry carries them, from an index on */
    sat_dish_records(&d, d.logged - 3, lines, sizeof lines); /* clock set, start, end */
    assert_non_null(strstr(lines, "slot  3 start 3 0\n"));
    assert_non_null(strstr(lines, "slot -1 clock 0 0\n"));
    assert_non_null(strstr(lines, "slot  3 end   0 -1\n"));
    assert_int_equal(strncmp(lines, "dish.", 5), 0);
    sat_dish_status(&d, text, sizeof text);
    assert_non_null(strstr(text, "dish.wakes=2\n"));
    assert_non_null(strstr(text, "dish.awake_s=40.0\n"));
    assert_non_null(strstr(text, "dish.started=2\ndish.ended=2\n"));
    faultfs_uninstall();
}

/* Suspending the cores fails a started pipeline, and its capture is
 * dropped: no frame runs while they sleep. */
static void test_suspend_drops_captures(void **s) {
    (void)s;
    board(1);
    d.pl.power(d.pl.ctx, 1);
    assert_int_equal(d.pl.pipe_start(d.pl.ctx, 2), 0);
    assert_int_equal(d.captures, 1u << 2);
    d.pl.power(d.pl.ctx, 0);
    assert_int_equal(d.captures, 0);
    assert_int_equal(d.pl.pipe_status(d.pl.ctx, 2), DISH_PIPE_FAILED);
    faultfs_uninstall();
}

/* Text from the link reaches the ground's terminal without its control
 * bytes; a listing keeps its newlines. */
static void test_link_text_printable(void **s) {
    (void)s;
    char listing[] = "slot 3\n\x1b[2J\x7f", sentence[] = "a\nb\r";
    proto_printable(listing, strlen(listing), 1);
    assert_string_equal(listing, "slot 3\n?[2J?");
    proto_printable(sentence, strlen(sentence), 0);
    assert_string_equal(sentence, "a?b?");
}

static uint8_t answer_text[CSP_MTU];
static size_t answer_len;

static void keep_answer(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    (void)ctx, (void)port;
    memcpy(answer_text, msg, len < sizeof answer_text ? len : sizeof answer_text);
    answer_len = len;
}

/* A busy board's telemetry (16 modules' run times, 32 modules of long
 * names, a long last error) is longer than a frame carries: it is cut
 * after a whole line and marked, where it went unanswered. */
static void test_telemetry_fits_a_frame(void **state) {
    (void)state;
    static sat b;
    memset(&b, 0, sizeof b);
    faultfs_install();
    sat_dish_open(&b.dish, DIR, 0);
    b.st.mods = SAT_TRACKED;
    for (unsigned k = 0; k < SAT_TRACKED; k++) {
        snprintf(b.st.mod_name[k], UP_NAME_MAX, "module_with_long_nam%03u", k);
        b.st.mod_ms[k] = 4000000000u;
    }
    b.up.idx.nmods = UP_MAX_MODULES;
    for (unsigned k = 0; k < UP_MAX_MODULES; k++) {
        snprintf(b.up.idx.mod[k].name, UP_NAME_MAX, "another_long_module%03u", k);
        b.up.idx.mod[k].active = 4000000000u;
    }
    memset(b.st.last_detail, 'x', sizeof b.st.last_detail - 1);
    const uint8_t ask[7] = {'T', 0, 9, 0, 0, 0, 0};
    csp_id id = {.dport = DIPP_PORT_PARAM, .sport = DIPP_PORT_PARAM};
    answer_len = 0;
    sat_handle(&b, &id, ask, sizeof ask, keep_answer, NULL);
    assert_true(answer_len > 3 && answer_len <= CSP_DATA_MAX);
    const char *end = "\ntruncated=1\n";
    assert_memory_equal(answer_text + answer_len - strlen(end), end, strlen(end));
    faultfs_uninstall();
}

/* The module's manifest sent again on the update port (its answer lost):
 * the board's status. */
static proto_status resend(sat *b, const up_manifest *m) {
    uint8_t msg[3 + UP_MANIFEST_BYTES] = {'M', 0, 1};
    csp_id id = {.dport = DIPP_PORT_UPLOAD, .sport = DIPP_PORT_UPLOAD};
    proto_status ps;
    up_manifest_encode(m, msg + 3);
    answer_len = 0;
    sat_handle(b, &id, msg, sizeof msg, keep_answer, NULL);
    assert_int_equal(proto_status_parse(answer_text, answer_len, &ps), 0);
    return ps;
}

/* b as the satellite opens it in DIR: its DISH store, and its update
 * store taking procedures too, updates signed by k. */
static void open_board(sat *b, const test_key *k) {
    up_config cfg = up_config_default();
    up_result r;
    memset(b, 0, sizeof *b);
    faultfs_install();
    sat_dish_open(&b->dish, DIR, 0);
    cfg.accept = sat_dish_accept, cfg.accept_ctx = &b->dish;
    cfg.procs_max_bytes = DISH_MAX_IMAGE, cfg.procs_version = DISH_VERSION;
    assert_int_equal(up_open(&b->up, DIR, k->pk, &cfg, test_stub_run, NULL, &r), 0);
    b->dish.pk = b->up.idx.pk; /* as sat_open sets them */
    b->removals.port = DIPP_PORT_IMAGES;
}

/* A name is a module's or a procedure set's, whichever was installed
 * under it first: an image of procedures under a module's name is refused
 * at its manifest, and a module under a procedure set's. The image was
 * taken, its hash written over the module's, so a resend of the active
 * module's manifest was refused as a replay (1003), not answered as
 * already active. */
static void test_names_keep_their_kind(void **state) {
    (void)state;
    static sat b;
    test_key k = test_key_make(1);
    up_result r;
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    open_board(&b, &k);
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    assert_int_equal(test_send(&b.up, &m, payload, &r), 0);
    free(payload), free(mod);
    up_manifest p = procs_manifest("debayer", 4, img, (size_t)img_len, 0, &payload);
    assert_int_equal(test_send(&b.up, &p, payload, &r), DIPP_E_UP_PROCS);
    assert_string_equal(r.detail, "debayer v4: a module's name on board; an image of "
                                  "procedures takes a name of its own");
    free(payload);
    proto_status ps = resend(&b, &m);
    assert_int_equal(ps.code, 0);
    assert_true(ps.installed);
    assert_non_null(strstr(ps.detail, "already active"));
    p = procs_manifest("t", 1, img, (size_t)img_len, 0, &payload);
    assert_int_equal(test_send(&b.up, &p, payload, &r), 0);
    free(payload);
    mod = test_elf(3000, 2, NULL);
    m = test_manifest("t", 2, mod, 3000, NULL, 0, &k, &payload);
    assert_int_equal(test_send(&b.up, &m, payload, &r), DIPP_E_UP_PROCS);
    assert_string_equal(r.detail, "t v2: an image of procedures' name on board; a "
                                  "module takes a name of its own");
    free(payload), free(mod);
    faultfs_uninstall();
}

/* A chunk the board cannot store (its file system fails: here the power
 * is cut under it) is no outcome of the upload, which stays in
 * progress, but the ground's next status question must say so: it was
 * answered "nothing wrong, these chunks missing", and the ground resent
 * them for ever (found by driving the update port with a failing file
 * system). */
static void test_chunk_store_failure_answered(void **state) {
    (void)state;
    static sat b;
    test_key k = test_key_make(1);
    up_result r;
    uint8_t *mod = test_elf(3000, 1, NULL), *payload;
    uint8_t msg[1 + UP_CHUNK_HDR + UP_CHUNK_MAX] = {'C'};
    uint8_t q[3] = {'Q', 0, 7};
    csp_id id = {.dport = DIPP_PORT_UPLOAD, .sport = DIPP_PORT_UPLOAD};
    proto_status ps;
    memset(&b, 0, sizeof b);
    faultfs_install();
    sat_dish_open(&b.dish, DIR, 0);
    assert_int_equal(up_open(&b.up, DIR, k.pk, NULL, test_stub_run, NULL, &r), 0);
    up_manifest m = test_manifest("debayer", 2, mod, 3000, NULL, 0, &k, &payload);
    assert_int_equal(resend(&b, &m).code, 0); /* the upload starts */
    faultfs_cut_at(1);
    size_t n = up_chunk_build(&m, payload, 0, msg + 1);
    sat_handle(&b, &id, msg, 1 + n, keep_answer, NULL);
    answer_len = 0;
    sat_handle(&b, &id, q, sizeof q, keep_answer, NULL);
    assert_int_equal(proto_status_parse(answer_text, answer_len, &ps), 0);
    assert_int_equal(ps.code, DIPP_E_UP_STORE);
    assert_non_null(strstr(ps.detail, "upload.part"));
    /* the disk back, the same command run again resumes the upload: its
     * manifest was answered with the stored 1008 as a refusal, and the
     * version stayed blocked until the board restarted (review) */
    faultfs_power_up();
    ps = resend(&b, &m);
    assert_int_equal(ps.code, 0);
    uint32_t before = ps.missing;
    sat_handle(&b, &id, msg, 1 + n, keep_answer, NULL);
    answer_len = 0;
    sat_handle(&b, &id, q, sizeof q, keep_answer, NULL);
    assert_int_equal(proto_status_parse(answer_text, answer_len, &ps), 0);
    assert_int_equal(ps.code, 0);
    assert_int_equal(ps.missing, before - 1);
    free(payload), free(mod);
    faultfs_uninstall();
}

/* A full board's listing (every slot, long names) is longer than a
 * frame: it comes in whole lines within CSP_DATA_MAX, each answer but the
 * last ending "more from slot K", and the next asked from K lists every
 * slot once. The listing was cut at CSP_MTU, an answer too long for a
 * frame with its CRC, so `dipp ground proc list` never got one (found by
 * fuzz_sat). */
static void test_full_listing_fits_frames(void **state) {
    (void)state;
    static sat b;
    static uint8_t image[DISH_MAX_IMAGE];
    test_key k = test_key_make(1);
    up_result r;
    char text[2048], err[256];
    open_board(&b, &k);
    for (int first = 0; first < DISH_SLOTS; first += 16) {
        size_t n = (size_t)snprintf(text, sizeof text, "slot %d\n", first);
        for (int j = first; j < first + 16 && j < DISH_SLOTS; j++)
            n += (size_t)snprintf(text + n, sizeof text - n,
                                  "proc p%d(a, b) { return a + b }\n", j);
        int len = dish_compile("full.dish", text, n, image, sizeof image, err, sizeof err);
        assert_true(len > 0);
        char name[UP_NAME_MAX];
        snprintf(name, sizeof name, "a_rather_long_name_%d", first);
        uint8_t *payload;
        up_manifest m = procs_manifest(name, 1, image, (size_t)len, 0, &payload);
        assert_int_equal(test_send(&b.up, &m, payload, &r), 0);
        free(payload);
    }
    csp_id id = {.dport = DIPP_PORT_PROCS, .sport = DIPP_PORT_PROCS};
    unsigned from = 0, listed = 0, asks = 0;
    for (;;) {
        uint8_t ask[4] = {'L', 0, (uint8_t)asks, (uint8_t)from};
        answer_len = 0;
        sat_handle(&b, &id, ask, sizeof ask, keep_answer, NULL);
        asks++;
        assert_true(answer_len > 7 && answer_len <= CSP_DATA_MAX);
        assert_int_equal(proto_get32(answer_text + 3), 0);
        answer_text[answer_len] = 0;
        unsigned slot, more = 0;
        for (char *line = strtok((char *)answer_text + 7, "\n"); line;
             line = strtok(NULL, "\n")) {
            if (sscanf(line, "more from slot %u", &more) == 1)
                break;
            assert_int_equal(sscanf(line, "slot %u:", &slot), 1);
            assert_int_equal(slot, listed); /* every slot once, in order */
            listed++;
        }
        if (!more)
            break;
        assert_int_equal(more, listed);
        from = more;
    }
    assert_int_equal(listed, DISH_SLOTS);
    assert_true(asks >= 2 && asks <= 3);
    faultfs_uninstall();
}

/* An image of procedures deleted on port 24, whole or in part, is not
 * on board: its manifest sent again is a replay (1003), not "already
 * active" and installed, which told the ground procedures were on board
 * that were not (found by fuzz_sat). Whole, it is still answered as
 * installed (the ground asking again after a lost answer). */
static void test_deleted_procs_not_active(void **state) {
    (void)state;
    static sat b;
    test_key k = test_key_make(1);
    up_result r;
    uint8_t *payload;
    csp_id id = {.dport = DIPP_PORT_PROCS, .sport = DIPP_PORT_PROCS};
    open_board(&b, &k);
    up_manifest m = procs_manifest("t", 1, img, (size_t)img_len, 0, &payload);
    assert_int_equal(test_send(&b.up, &m, payload, &r), 0);
    free(payload);
    proto_status ps = resend(&b, &m);
    assert_int_equal(ps.code, 0);
    assert_true(ps.installed); /* whole: asked again */
    assert_non_null(strstr(ps.detail, "already active"));
    /* slot 4 deleted: the image on board is no longer the one sent */
    uint8_t del[4] = {'E', 0, 1, 4}, sent[CSP_MTU];
    answer_len = 0;
    sat_handle(&b, &id, sent, sign_with(1, DIPP_PORT_PROCS, del, sizeof del, sent),
               keep_answer, NULL);
    assert_int_equal(proto_get32(answer_text + 3), 0);
    ps = resend(&b, &m);
    assert_int_equal(ps.code, DIPP_E_UP_REPLAY);
    assert_false(ps.installed);
    /* and slot 3 too: nothing of it on board */
    del[2] = 2, del[3] = 3;
    sat_handle(&b, &id, sent, sign_with(1, DIPP_PORT_PROCS, del, sizeof del, sent),
               keep_answer, NULL);
    assert_int_equal(proto_get32(answer_text + 3), 0);
    assert_int_equal(b.dish.store.count, 0);
    ps = resend(&b, &m);
    assert_int_equal(ps.code, DIPP_E_UP_REPLAY);
    assert_false(ps.installed);
    /* a version above it goes on board again */
    m = procs_manifest("t", 2, img, (size_t)img_len, 0, &payload);
    assert_int_equal(test_send(&b.up, &m, payload, &r), 0);
    assert_true(r.installed);
    free(payload);
    assert_true(resend(&b, &m).installed);
    faultfs_uninstall();
}

/* An image's removal ('K' seq id on port 22) is taken only signed with
 * the ground's key and a counter above the board's, answered either way
 * (the ground stops rather than take the same image down again), and a
 * resend of the same bytes gets the same answer. */
static void test_image_removal_signed(void **state) {
    (void)state;
    static sat b;
    static const uint8_t pixels[64];
    test_key k = test_key_make(1);
    csp_id id = {.dport = DIPP_PORT_IMAGES, .sport = DIPP_PORT_IMAGES};
    uint8_t kill[7] = {'K', 0, 9}, sent[CSP_MTU], forged[CSP_MTU];
    open_board(&b, &k);
    b.slots_dir = DIR;
    ring_init(&b.images, 8, 1u << 20);
    uint32_t image = ring_push(&b.images, 1, 8, 8, DIPP_FMT_GRAY8, pixels, sizeof pixels);
    proto_put32(kill + 3, image);
    answer_len = 0;
    sat_handle(&b, &id, kill, sizeof kill, keep_answer, NULL); /* unsigned */
    assert_true(answer_len >= 7 && answer_text[0] == 'A' && answer_text[2] == 9);
    assert_int_equal(proto_get32(answer_text + 3), DIPP_E_UP_MESSAGE);
    size_t nf = sign_with(2, DIPP_PORT_IMAGES, kill, sizeof kill, forged); /* another key */
    sat_handle(&b, &id, forged, nf, keep_answer, NULL);
    assert_int_equal(proto_get32(answer_text + 3), DIPP_E_UP_SIGNATURE);
    nf = sign_with(1, DIPP_PORT_PROCS, kill, sizeof kill, forged); /* another port's */
    sat_handle(&b, &id, forged, nf, keep_answer, NULL);
    assert_int_equal(proto_get32(answer_text + 3), DIPP_E_UP_SIGNATURE);
    assert_int_equal(b.images.count, 1);
    assert_int_equal(b.removals.refused, 3);
    size_t n = sign_with(1, DIPP_PORT_IMAGES, kill, sizeof kill, sent);
    sat_handle(&b, &id, sent, n, keep_answer, NULL);
    assert_int_equal(proto_get32(answer_text + 3), 0);
    assert_int_equal(b.images.count, 0);
    char want[32];
    snprintf(want, sizeof want, "image %u removed", (unsigned)image);
    answer_text[answer_len] = 0;
    assert_string_equal((char *)answer_text + 7, want);
    answer_len = 0;
    sat_handle(&b, &id, sent, n, keep_answer, NULL); /* its answer was lost */
    assert_int_equal(proto_get32(answer_text + 3), 0);
    uint8_t again[7] = {'K', 0, 10};
    proto_put32(again + 3, image);
    size_t n2 = sign_with(1, DIPP_PORT_IMAGES, again, sizeof again, forged);
    sat_handle(&b, &id, forged, n2, keep_answer, NULL);
    sat_handle(&b, &id, sent, n, keep_answer, NULL); /* heard, sent again later */
    assert_int_equal(proto_get32(answer_text + 3), DIPP_E_UP_REPLAY);
    ring_free(&b.images);
    faultfs_uninstall();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uploads),
        cmocka_unit_test(test_port_hostile),
        cmocka_unit_test(test_resent_run_done_once),
        cmocka_unit_test(test_commands_signed),
        cmocka_unit_test(test_stop_reaches_callers),
        cmocka_unit_test(test_tm_flood_printed_once),
        cmocka_unit_test(test_capture_on_the_clock),
        cmocka_unit_test(test_suspend_drops_captures),
        cmocka_unit_test(test_link_text_printable),
        cmocka_unit_test(test_telemetry_fits_a_frame),
        cmocka_unit_test(test_names_keep_their_kind),
        cmocka_unit_test(test_chunk_store_failure_answered),
        cmocka_unit_test(test_full_listing_fits_frames),
        cmocka_unit_test(test_deleted_procs_not_active),
        cmocka_unit_test(test_image_removal_signed),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
