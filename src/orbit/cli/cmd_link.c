/* cmd_link.c -- `dipp link`: the link simulator between a ground hub and
 * a satellite hub. Each side looks like a libcsp zmqproxy (nodes publish
 * to its port P, subscribe at P+1000); every frame crosses the simulated
 * radio (link_model.h: bit rate, loss, corruption, latency, passes),
 * whose clock runs --speed times faster than the wall clock. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "cli.h"
#include "cli_opts.h"
#include "csp.h"
#include "link_model.h"
#include "platform.h"

static const char text[] =
    "Usage: dipp link --ground PORT --sat PORT [OPTIONS]\n"
    "Simulates the radio link between two CSP ZMQ hubs: the ground's nodes use\n"
    "hub PORT (publish to PORT, subscribe at PORT+1000), the satellite's its own.\n"
    "  --bit-rate N     bit/s each way (default 9600)\n"
    "  --loss P         probability a frame is lost (default 0)\n"
    "  --corrupt P      probability a bit of a frame flips (default 0)\n"
    "  --latency-ms N   one way (default 0)\n"
    "  --pass-s S --period-s S\n"
    "                   a contact window of S s every period (default: always)\n"
    "  --speed X        simulated seconds per wall second (default 1)\n"
    "  --seed N         the loss and corruption draws (default 1)\n"
    "Prints the frames each way, sent and lost, when stopped (SIGTERM).\n"
    "Exit status: 0 stopped, 1 a port not bound, 2 usage.\n";

#define QUEUE 4096

typedef struct in_flight {
    uint64_t arrive; /* simulated ms */
    int to;          /* side: 0 ground, 1 satellite */
    size_t len;
    uint8_t frame[CSP_HEADER_BYTES + CSP_MTU];
} in_flight;

typedef struct sim {
    void *ctx, *in[2], *out[2];
    link_model model;
    double speed;
    uint64_t t0;
    in_flight q[QUEUE];
    unsigned n;
} sim;

static uint64_t sim_now(const sim *s) {
    return (uint64_t)((double)(plat_now_ms() - s->t0) * s->speed);
}

static int bind_side(sim *s, int side, unsigned port) {
    char sub[64], pub[64];
    cli_hub(port, sub, pub, sizeof sub);
    s->in[side] = zmq_socket(s->ctx, ZMQ_SUB);
    s->out[side] = zmq_socket(s->ctx, ZMQ_PUB);
    int linger = 0;
    zmq_setsockopt(s->out[side], ZMQ_LINGER, &linger, sizeof linger);
    return zmq_setsockopt(s->in[side], ZMQ_SUBSCRIBE, NULL, 0) ||
           zmq_bind(s->in[side], sub) || zmq_bind(s->out[side], pub) ? -1 : 0;
}

/* A frame from side `from` goes on the air toward the other side; with
 * QUEUE frames in flight it is received and lost, as a radio's full
 * transmit queue loses it. */
static void take(sim *s, int from) {
    static in_flight overflow;
    in_flight *f = s->n < QUEUE ? &s->q[s->n] : &overflow;
    int len = zmq_recv(s->in[from], f->frame, sizeof f->frame, 0);
    uint64_t done;
    if (len < 0 || (size_t)len > sizeof f->frame)
        return;
    if (f == &overflow) {
        s->model.sent[from]++, s->model.lost[from]++;
        return;
    }
    f->len = (size_t)len, f->to = !from;
    if (link_model_send(&s->model, from == 0 ? LINK_UP : LINK_DOWN, sim_now(s),
                        f->frame, f->len, &f->arrive, &done) == 0)
        s->n++;
}

/* Hands over what has arrived; the wall ms until the next arrival. */
static long deliver(sim *s) {
    uint64_t now = sim_now(s), next = UINT64_MAX;
    for (unsigned k = 0; k < s->n;) {
        if (s->q[k].arrive <= now) {
            zmq_send(s->out[s->q[k].to], s->q[k].frame, s->q[k].len, 0);
            s->q[k] = s->q[--s->n];
            continue;
        }
        next = s->q[k].arrive < next ? s->q[k].arrive : next;
        k++;
    }
    if (next == UINT64_MAX)
        return 100;
    long ms = (long)((double)(next - now) / s->speed);
    return ms < 100 ? ms : 100;
}

static void run(sim *s) {
    while (!cli_stop) {
        zmq_pollitem_t items[2] = {{s->in[0], 0, ZMQ_POLLIN, 0}, {s->in[1], 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, deliver(s)) < 0)
            continue; /* a signal */
        for (int side = 0; side < 2; side++)
            if (items[side].revents & ZMQ_POLLIN)
                take(s, side);
    }
}

int cmd_link(int argc, char **argv) {
    static const struct option opts[] = {
        {"ground", 1, NULL, 'g'}, {"sat", 1, NULL, 's'}, {"bit-rate", 1, NULL, 'b'},
        {"loss", 1, NULL, 'l'}, {"corrupt", 1, NULL, 'c'}, {"latency-ms", 1, NULL, 'L'},
        {"pass-s", 1, NULL, 'p'}, {"period-s", 1, NULL, 'P'}, {"speed", 1, NULL, 'x'},
        {"seed", 1, NULL, 'r'}, {NULL, 0, NULL, 0}};
    static sim s;
    double g = 0, sp = 0, rate = 9600, loss = 0, corrupt = 0, lat = 0, pass = 0,
           period = 0, speed = 1, seed = 1;
    int ch, bad = 0;
    if (cli_help(argc, argv, text))
        return 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'g' ? cli_number("link", "--ground", optarg, 1, 64535, &g)
            : ch == 's' ? cli_number("link", "--sat", optarg, 1, 64535, &sp)
            : ch == 'b' ? cli_number("link", "--bit-rate", optarg, 1, 1e9, &rate)
            : ch == 'l' ? cli_number("link", "--loss", optarg, 0, 1, &loss)
            : ch == 'c' ? cli_number("link", "--corrupt", optarg, 0, 1, &corrupt)
            : ch == 'L' ? cli_number("link", "--latency-ms", optarg, 0, 1e7, &lat)
            : ch == 'p' ? cli_number("link", "--pass-s", optarg, 0, 1e7, &pass)
            : ch == 'P' ? cli_number("link", "--period-s", optarg, 0, 1e7, &period)
            : ch == 'x' ? cli_number("link", "--speed", optarg, 0.001, 1e6, &speed)
                        : cli_number("link", "--seed", optarg, 0, 1e9, &seed);
    if (!bad && (!g || !sp || optind != argc || (period > 0 && pass > period))) {
        fputs(text, stderr);
        bad = -1;
    }
    if (bad)
        return EXIT_USAGE;
    link_cfg cfg = {rate, loss, corrupt, (uint64_t)lat, (uint64_t)(pass * 1000),
                    (uint64_t)(period * 1000)};
    link_model_init(&s.model, &cfg, (uint64_t)seed);
    s.speed = speed, s.t0 = plat_now_ms(), s.ctx = zmq_ctx_new();
    if (bind_side(&s, 0, (unsigned)g) || bind_side(&s, 1, (unsigned)sp)) {
        fprintf(stderr, "dipp link: cannot bind ports %u and %u (+1000)\n", (unsigned)g,
                (unsigned)sp);
        return EXIT_BAD;
    }
    printf("dipp link: ground hub %u, satellite hub %u\n", (unsigned)g, (unsigned)sp);
    fflush(stdout);
    cli_on_stop();
    run(&s);
    printf("dipp link: up %llu frames (%llu lost), down %llu (%llu lost)\n",
           (unsigned long long)s.model.sent[0], (unsigned long long)s.model.lost[0],
           (unsigned long long)s.model.sent[1], (unsigned long long)s.model.lost[1]);
    for (int side = 0; side < 2; side++)
        zmq_close(s.in[side]), zmq_close(s.out[side]);
    zmq_ctx_term(s.ctx);
    return 0;
}
