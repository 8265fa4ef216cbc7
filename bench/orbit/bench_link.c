/* bench_link.c -- an update lands on a bad link: a 1 MiB module (an
 * example module with 1 MiB of incompressible data after it, so it loads
 * and passes its test-run) is uploaded by the ground's loop (proto.h) to
 * the satellite's handler (sat.h, the real store and sandbox test-run)
 * across the simulated radio: 9,600 bit/s each way, 10 % of frames lost,
 * passes of 10 minutes every 90. Time is simulated, never slept. Prints
 * the passes the upload took against the passes the raw capacity needs
 * for its bytes (goal: ratio <= 1.3), both counted in fractions of a pass.
 *
 * Usage: bench_link MODULE_DIR [SEED] */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csp.h"
#include "dipp_module.h"
#include "link_model.h"
#include "platform.h"
#include "proto.h"
#include "sat.h"

#define MIB (1u << 20)
#define QMAX 65536

typedef struct frame {
    uint64_t arrive;
    size_t len;
    uint8_t bytes[CSP_HEADER_BYTES + CSP_MTU];
} frame;

/* The simulated world: the radio, the satellite, frames in the air. */
typedef struct world {
    link_model radio;
    uint64_t now;
    sat *s;
    frame *up, *down;
    unsigned nup, ndown;
    uint64_t t_request; /* arrival of the request being answered */
} world;

static void air(world *w, int dir, uint64_t t, const csp_id *id, const uint8_t *msg,
                size_t len) {
    frame *q = dir == LINK_UP ? &w->up[w->nup] : &w->down[w->ndown];
    uint64_t done;
    int n = csp_frame(id, msg, len, q->bytes, sizeof q->bytes);
    if (n < 0 || w->nup == QMAX || w->ndown == QMAX)
        return;
    q->len = (size_t)n;
    if (link_model_send(&w->radio, dir, t, q->bytes, q->len, &q->arrive, &done) == 0)
        dir == LINK_UP ? w->nup++ : w->ndown++;
    if (dir == LINK_UP)
        w->now = done; /* the ground's radio sends one frame at a time */
}

static void sat_reply(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    world *w = ctx;
    csp_id id = {CSP_PRI_NORM, port, DIPP_PORT_UPLOAD, CSP_F_CRC32, GROUND_NODE, DIPP_NODE};
    air(w, LINK_DOWN, w->t_request, &id, msg, len);
}

static int io_send(void *ctx, const uint8_t *msg, size_t len) {
    world *w = ctx;
    csp_id id = {CSP_PRI_NORM, DIPP_PORT_UPLOAD, DIPP_PORT_UPLOAD, CSP_F_CRC32,
                 DIPP_NODE, GROUND_NODE};
    air(w, LINK_UP, w->now, &id, msg, len);
    return 0;
}

/* Frames in q that arrived by t, in order, one at a time. */
static int pop_due(frame *q, unsigned *n, uint64_t t, frame *out) {
    unsigned best = *n;
    for (unsigned k = 0; k < *n; k++)
        if (q[k].arrive <= t && (best == *n || q[k].arrive < q[best].arrive))
            best = k;
    if (best == *n)
        return 0;
    *out = q[best];
    q[best] = q[--*n];
    return 1;
}

static int io_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    static frame f;
    world *w = ctx;
    uint64_t deadline = w->now + (uint64_t)timeout_ms;
    csp_id id;
    const uint8_t *data;
    while (pop_due(w->up, &w->nup, deadline, &f)) /* the satellite hears */
        if (csp_parse(f.bytes, f.len, &id, &data, len) == 0) {
            w->t_request = f.arrive;
            sat_handle(w->s, &id, data, *len, sat_reply, w);
        }
    while (pop_due(w->down, &w->ndown, deadline, &f)) /* the ground hears */
        if (csp_parse(f.bytes, f.len, &id, &data, len) == 0 && *len <= cap) {
            memcpy(msg, data, *len);
            w->now = f.arrive > w->now ? f.arrive : w->now;
            return 1;
        }
    w->now = deadline;
    return 0;
}

static uint8_t *module_of(const char *dir, size_t *len) {
    char path[1024];
    uint8_t *so;
    size_t so_len;
    snprintf(path, sizeof path, "%s/downsample.so", dir);
    if (plat_file_read(path, &so, &so_len) || so_len >= MIB)
        return NULL;
    uint8_t *mod = malloc(MIB);
    memcpy(mod, so, so_len);
    for (size_t k = so_len; k < MIB; k++) /* data a loader never maps */
        mod[k] = (uint8_t)(rand() >> 7);
    free(so);
    *len = MIB;
    return mod;
}

int main(int argc, char **argv) {
    static world w;
    static sat s;
    char tmp[] = "/tmp/dipp-bench-link-XXXXXX", upd[64], cmd[96];
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES], *payload, *mod;
    size_t len, seed = argc > 2 ? (size_t)atoi(argv[2]) : 1;
    if (argc < 2 || !mkdtemp(tmp)) {
        fprintf(stderr, "Usage: bench_link MODULE_DIR [SEED]\n");
        return 2;
    }
    srand((unsigned)seed);
    snprintf(upd, sizeof upd, "%s/updates", tmp);
    sat_cfg cfg = {tmp, upd, argv[1], 64, {10000, 256u << 20}, up_config_default()};
    crypto_sign_keypair(pk, sk);
    if (sodium_init() < 0 || mkdir(upd, 0755) || !(mod = module_of(argv[1], &len)) || sat_open(&s, &cfg, pk))
        return 1;
    up_manifest m = {1, 0, 1900, "big", 1, DIPP_ABI_VERSION, up_board_arch(),
                     DIPP_FMT_GRAY8, DIPP_FMT_GRAY8, 0, 0, 0, 0, 0, 1, {0}, {0}, {0}};
    char err[256];
    if (up_prepare(&m, mod, len, NULL, 0, 0, sk, &payload, err, sizeof err))
        return 1;
    link_cfg radio = {9600, 0.10, 0.0, 50, 600000, 5400000};
    link_model_init(&w.radio, &radio, seed);
    w.s = &s;
    w.up = calloc(QMAX, sizeof(frame)), w.down = calloc(QMAX, sizeof(frame));
    ground_io io = {io_send, io_recv, &w, 2000, 1000000, 1};
    uint64_t sent;
    proto_status st;
    int code = ground_upload(&io, &m, payload, &sent, &st);
    double pass_s = radio.pass_ms / 1000.0, period = radio.period_ms;
    double used = (double)(w.now / radio.period_ms) +
                  (double)(w.now % radio.period_ms < radio.pass_ms ? w.now % radio.period_ms
                                                                    : radio.pass_ms) /
                      (double)radio.pass_ms;
    double raw = (double)m.payload_size * 8.0 / radio.bit_rate / pass_s;
    printf("update of %u bytes at %.0f bit/s, %.0f %% loss, %.0f-minute passes every %.0f:\n",
           m.payload_size, radio.bit_rate, radio.loss * 100, pass_s / 60, period / 60000);
    printf("  %s after %.2f passes (%.1f h), %llu chunks sent of %u, %llu frames up "
           "(%llu lost), %llu down\n", code ? "FAILED" : "installed", used,
           (double)w.now / 3.6e6, (unsigned long long)sent, up_chunk_count(&m),
           (unsigned long long)w.radio.sent[0], (unsigned long long)w.radio.lost[0],
           (unsigned long long)w.radio.sent[1]);
    printf("  raw capacity needs %.2f passes; ratio %.2f (goal <= 1.30): %s\n", raw,
           used / raw, !code && used / raw <= 1.3 ? "met" : "NOT met");
    sat_close(&s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) || code ? 1 : 0;
}
