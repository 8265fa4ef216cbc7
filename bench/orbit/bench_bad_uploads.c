/* bench_bad_uploads.c -- robustness: N generated bad uploads (default
 * 1,000) to the satellite's handler (sat.h, the real store, sandbox
 * test-run and pipeline), each followed by a camera frame through the
 * stored pipeline. Ten kinds in turn: crashing, aborting, spinning and
 * allocation-bomb modules, a missing symbol, the wrong ABI version, the
 * wrong architecture, a truncated chunk, a corrupted chunk and a bad
 * signature. Every one must be refused with its code, the next batch must
 * be processed, the pipeline slot must read back unchanged and the good
 * module uploaded first must stay active. Prints how many of each held
 * (goal: all). CI runs a sample (orbit_bad_uploads); the benchmark, all.
 *
 * Usage: bench_bad_uploads MODULE_DIR TEST_MODULE_DIR [N] */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errors.h"
#include "pdef.h"
#include "platform.h"
#include "proto.h"
#include "sat.h"
#include "slots.h"

enum { CRASH, ABORT, SPIN, BOMB, SYMBOL, ABI, ARCH, TRUNCATED, CORRUPTED, SIGNATURE, KINDS };
static const char *const kind_name[KINDS] = {
    "crash", "abort", "spin", "bomb", "no_symbol", "wrong_abi", "wrong arch",
    "truncated chunk", "corrupted chunk", "bad signature"};
/* What each kind's upload must end in. */
static const int want_code[KINDS] = {
    DIPP_E_CRASH, DIPP_E_CRASH, DIPP_E_TIMEOUT, DIPP_E_NOMEM, DIPP_E_MISSING_SYMBOL,
    DIPP_E_ABI, DIPP_E_UP_ARCH, DIPP_E_UP_MESSAGE, DIPP_E_UP_HASH, DIPP_E_UP_SIGNATURE};

static sat s;
static uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES];
static int last_code;

static void reply(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    proto_status st;
    (void)ctx, (void)port;
    if (proto_status_parse(msg, len, &st) == 0 && (st.code || st.installed))
        last_code = (int)st.code;
}

static void send(uint8_t port, const uint8_t *msg, size_t len) {
    csp_id id = {CSP_PRI_NORM, port, port, 0, DIPP_NODE, GROUND_NODE};
    sat_handle(&s, &id, msg, len, reply, NULL);
}

/* Uploads mod as "victim" version v, spoiled as kind says: the code the
 * satellite reported (0: installed). */
static int upload(const uint8_t *mod, size_t len, uint32_t v, int kind) {
    uint8_t *payload, msg[3 + UP_MANIFEST_BYTES], chunk[1 + UP_CHUNK_HDR + UP_CHUNK_MAX];
    char err[256];
    up_manifest m = {1, 0, 1900, "victim", v, DIPP_ABI_VERSION, up_board_arch(),
                     DIPP_FMT_GRAY8, DIPP_FMT_GRAY8, 0, 0, 0, 0, 0, 1, {0}, {0}, {0}};
    if (kind == ARCH)
        m.arch ^= 1;
    if (up_prepare(&m, mod, len, NULL, 0, 3, sk, &payload, err, sizeof err))
        return -1;
    if (kind == SIGNATURE)
        m.sig[7] ^= 0x20;
    msg[0] = 'M', msg[1] = 0, msg[2] = 1;
    up_manifest_encode(&m, msg + 3);
    last_code = -1;
    s.st.last_error = 0;
    send(DIPP_PORT_UPLOAD, msg, sizeof msg);
    chunk[0] = 'C';
    for (uint32_t k = 0; last_code < 0 && k < up_chunk_count(&m); k++) {
        size_t n = up_chunk_build(&m, payload, k, chunk + 1);
        if (kind == CORRUPTED && k == 0)
            chunk[1 + UP_CHUNK_HDR] ^= 0x01;
        if (kind == TRUNCATED && k == 0) { /* the handler refuses it quietly */
            up_result r;
            last_code = up_on_chunk(&s.up, chunk + 1, n - 3, &r);
            break;
        }
        send(DIPP_PORT_UPLOAD, chunk, 1 + n);
    }
    uint8_t ask[3] = {'Q', 0, 2}; /* chunks are not answered: ask */
    if (last_code < 0)
        send(DIPP_PORT_UPLOAD, ask, sizeof ask);
    if (last_code < 0 && s.st.last_error) /* a bad payload is asked for again, */
        last_code = (int)(s.st.last_error / 1000); /* its error published */
    free(payload);
    return last_code;
}

static uint8_t *load(const char *dir, const char *name, size_t *len) {
    char path[1024];
    uint8_t *data;
    snprintf(path, sizeof path, "%s/%s.so", dir, name);
    return plat_file_read(path, &data, len) ? NULL : data;
}

static int pipeline_slot(const char *dir, uint8_t *enc, size_t *len) {
    const char *yaml = "pipeline: 1\nmodules:\n  - name: debayer\n  - name: downsample\n"
                       "    params: {factor: 4}\n";
    pdef d;
    char err[256];
    int n = pdef_from_yaml("p1", yaml, strlen(yaml), &d, err, sizeof err) ? -1
            : pdef_encode(&d, enc, err, sizeof err);
    *len = n > 0 ? (size_t)n : 0;
    return n > 0 ? slot_write(dir, SLOT_PIPELINE, 1, enc, *len, 1, err, sizeof err) : -1;
}

int main(int argc, char **argv) {
    char tmp[] = "/tmp/dipp-bench-bad-XXXXXX", upd[64], cmd[96];
    uint8_t enc[PDEF_MAX_BYTES], back[SLOT_MAX_BYTES];
    size_t enc_len, back_len, len[KINDS + 1];
    unsigned held[KINDS] = {0}, tried[KINDS] = {0};
    int n = argc > 3 ? atoi(argv[3]) : 1000;
    if (argc < 3 || n < 1 || sodium_init() < 0 || !mkdtemp(tmp)) {
        fprintf(stderr, "Usage: bench_bad_uploads MODULE_DIR TEST_MODULE_DIR [N]\n");
        return 2;
    }
    snprintf(upd, sizeof upd, "%s/updates", tmp);
    mkdir(upd, 0755);
    crypto_sign_keypair(pk, sk);
    sat_cfg cfg = {tmp, upd, argv[1], 256, {2000, 64u << 20}, up_config_default()};
    static const char *const file[KINDS + 1] = {"crash", "abort", "spin", "bomb", "no_symbol",
        "wrong_abi", "copy", "copy", "copy", "copy", "copy"};
    uint8_t *mods[KINDS + 1];
    for (int k = 0; k <= KINDS; k++)
        if (!(mods[k] = load(argv[2], file[k], &len[k])))
            return 1;
    if (sat_open(&s, &cfg, pk) || pipeline_slot(tmp, enc, &enc_len) ||
        upload(mods[KINDS], len[KINDS], 1, -1) != 0) {
        fprintf(stderr, "bench_bad_uploads: the good module did not install: %s\n",
                s.st.last_detail);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        int kind = i % KINDS;
        uint64_t lost = s.st.batches_lost, images = s.st.images;
        char err[256];
        int code = upload(mods[kind], len[kind], 2 + (uint32_t)i, kind);
        sat_process_frame(&s);
        int ok = code == want_code[kind] && s.st.images > images &&
                 s.st.batches_lost == lost && up_find(&s.up, "victim")->active == 1 &&
                 slot_read(tmp, SLOT_PIPELINE, 1, back, &back_len, err, sizeof err) == 0 &&
                 back_len == enc_len && memcmp(back, enc, enc_len) == 0;
        if (!ok)
            printf("upload %d (%s): code %d, wanted %d\n", i, kind_name[kind], code,
                   want_code[kind]);
        tried[kind]++, held[kind] += ok;
    }
    unsigned all = 0;
    for (int k = 0; k < KINDS; k++) {
        printf("%-16s %u of %u refused with error %u, next batch processed\n", kind_name[k],
               held[k], tried[k], dipp_error_number(want_code[k], 0, 0));
        all += held[k];
    }
    printf("%u of %d bad uploads held (goal: all): %s\n", all, n, all == (unsigned)n ? "met"
                                                                          : "NOT met");
    sat_close(&s);
    for (int k = 0; k <= KINDS; k++)
        free(mods[k]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) || all != (unsigned)n ? 1 : 0;
}
