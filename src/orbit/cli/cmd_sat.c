/* cmd_sat.c -- `dipp sat`: the satellite's DIPP daemon on a CSP ZMQ hub:
 * it answers the ground (updates, parameters, telemetry, images,
 * procedures), shoots and processes a camera frame at an interval, and
 * runs the DISH procedures on board on a simulated clock. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_opts.h"
#include "csp_zmq.h"
#include "platform.h"
#include "sat.h"

static const char text[] =
    "Usage: dipp sat --store DIR --modules DIR --key GROUND.pub [OPTIONS]\n"
    "The satellite's DIPP: joins the CSP ZMQ hub as node 162 and serves the\n"
    "ground (port 20 updates, 10 parameters and telemetry, 22 images, 24\n"
    "procedures, 1 ping);\n"
    "every --frame-ms it shoots a camera frame and runs the stored pipelines.\n"
    "Stops on SIGTERM or SIGINT.\n"
    "  --store DIR       slots (pipeline-N, config-N) and DIR/updates\n"
    "  --modules DIR     the modules built in (NAME.so); uploads come first\n"
    "  --key FILE        the ground's Ed25519 public key (32 bytes), installed\n"
    "                    as key 1 when the update store is new\n"
    "  --hub PORT        the hub's subscribe port (default 6000; publish +1000)\n"
    "  --frame-ms N      a frame every N ms (default 1000; 0: none)\n"
    "  --frame-size N    frame side in pixels (default 448)\n"
    "  --timeout-ms N    a module's time limit (default 5000)\n"
    "  --fail-limit N    failures in a row before a rollback (default 3)\n"
    "  --quota-mib N     update store quota (default 16)\n"
    "DISH procedures (uploaded by `dipp ground proc`, kept in DIR/procedures):\n"
    "  --speed X         the simulated clock's seconds per wall second (default 1)\n"
    "  --pipe-s S        a pipeline a procedure starts reports its end after S\n"
    "                    simulated seconds (default 20)\n"
    "  --asleep          the main processor starts suspended: no frame is\n"
    "                    processed until a procedure wakes it\n"
    "Exit status: 0 stopped, 1 bad input (the key, the store, the hub), 2 usage.\n";

typedef struct sat_opts {
    const char *store, *modules, *key;
    double hub, frame_ms, frame_size, timeout_ms, fail_limit, quota_mib;
    double speed, pipe_s;
    int asleep;
} sat_opts;

static int parse(int argc, char **argv, sat_opts *o) {
    static const struct option opts[] = {
        {"store", 1, NULL, 's'}, {"modules", 1, NULL, 'm'}, {"key", 1, NULL, 'k'},
        {"hub", 1, NULL, 'h'}, {"frame-ms", 1, NULL, 'f'}, {"frame-size", 1, NULL, 'z'},
        {"timeout-ms", 1, NULL, 't'}, {"fail-limit", 1, NULL, 'l'},
        {"quota-mib", 1, NULL, 'q'}, {"speed", 1, NULL, 'x'}, {"pipe-s", 1, NULL, 'p'},
        {"asleep", 0, NULL, 'a'}, {NULL, 0, NULL, 0}};
    *o = (sat_opts){NULL, NULL, NULL, 6000, 1000, 448, 5000, 3, 16, 1, 20, 0};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        bad = ch == '?' ? -1
            : ch == 's' ? (o->store = optarg, 0)
            : ch == 'm' ? (o->modules = optarg, 0)
            : ch == 'k' ? (o->key = optarg, 0)
            : ch == 'h' ? cli_number("sat", "--hub", optarg, 1, 64535, &o->hub)
            : ch == 'f' ? cli_number("sat", "--frame-ms", optarg, 0, 86400000, &o->frame_ms)
            : ch == 'z' ? cli_number("sat", "--frame-size", optarg, 2, 8192, &o->frame_size)
            : ch == 't' ? cli_number("sat", "--timeout-ms", optarg, 1, 3600000, &o->timeout_ms)
            : ch == 'l' ? cli_number("sat", "--fail-limit", optarg, 1, 1000, &o->fail_limit)
            : ch == 'x' ? cli_number("sat", "--speed", optarg, 0.001, 1e6, &o->speed)
            : ch == 'p' ? cli_number("sat", "--pipe-s", optarg, 0.001, 86400, &o->pipe_s)
            : ch == 'a' ? (o->asleep = 1, 0)
                        : cli_number("sat", "--quota-mib", optarg, 1, 4096, &o->quota_mib);
    }
    if (!bad && (!o->store || !o->modules || !o->key || optind != argc)) {
        fputs(text, stderr);
        bad = -1;
    }
    return bad;
}

/* Where a reply goes: back to the asking node's port, from the port it
 * asked. */
typedef struct asker {
    csp_node *node;
    csp_id id;
} asker;

static void reply(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    asker *a = ctx;
    csp_node_send(a->node, a->id.src, port, a->id.dport, msg, len);
}

static int serve(sat *s, csp_node *n, const sat_opts *o) {
    uint8_t msg[CSP_MTU];
    uint64_t next_frame = plat_now_ms() + (uint64_t)o->frame_ms;
    printf("dipp sat: node %d on hub %u\n", DIPP_NODE, (unsigned)o->hub);
    fflush(stdout);
    while (!cli_stop) {
        asker a = {n, {0}};
        size_t len;
        int got = csp_node_recv(n, sat_idle_ms(s, 50), &a.id, msg, sizeof msg, &len);
        if (got < 0 && !cli_stop) {
            fprintf(stderr, "dipp sat: hub %u: receiving failed: %s\n",
                    (unsigned)o->hub, strerror(errno));
            return EXIT_BAD;
        }
        if (got == 1 && a.id.dst == DIPP_NODE)
            sat_handle(s, &a.id, msg, len, reply, &a);
        sat_step(s);
        if (o->frame_ms > 0 && plat_now_ms() >= next_frame) {
            sat_process_frame(s);
            next_frame = plat_now_ms() + (uint64_t)o->frame_ms;
        }
    }
    return 0;
}

static int read_key(const char *path, uint8_t pk[UP_PK_BYTES]) {
    uint8_t *data;
    size_t len;
    int rc = plat_file_read(path, &data, &len);
    if (rc == 0 && len == UP_PK_BYTES)
        memcpy(pk, data, UP_PK_BYTES);
    if (rc == 0)
        free(data);
    if (rc || len != UP_PK_BYTES)
        fprintf(stderr, "dipp sat: %s: not a %d-byte public key\n", path, UP_PK_BYTES);
    return rc || len != UP_PK_BYTES ? -1 : 0;
}

int cmd_sat(int argc, char **argv) {
    sat_opts o;
    uint8_t pk[UP_PK_BYTES];
    char updates[4096], sub[64], pub[64];
    if (cli_help(argc, argv, text))
        return 0;
    if (parse(argc, argv, &o))
        return EXIT_USAGE;
    if (read_key(o.key, pk))
        return EXIT_BAD;
    snprintf(updates, sizeof updates, "%s/updates", o.store);
    mkdir(o.store, 0755); /* both may exist */
    mkdir(updates, 0755);
    sat_cfg cfg = {o.store, updates, o.modules, (uint32_t)o.frame_size,
                   {(uint32_t)o.timeout_ms, 256u << 20}, up_config_default()};
    cfg.up.fail_limit = (uint32_t)o.fail_limit;
    cfg.up.quota_bytes = (uint64_t)o.quota_mib << 20;
    static sat s; /* DISH's runtime and store are large: not on the stack */
    if (sat_open(&s, &cfg, pk))
        return EXIT_BAD;
    sat_dish_configure(&s.dish, &(sat_dish_cfg){o.speed, o.pipe_s, o.asleep}, plat_now_ms());
    csp_node n;
    cli_hub((unsigned)o.hub, sub, pub, sizeof sub);
    if (csp_node_open(&n, DIPP_NODE, sub, pub, 0)) {
        fprintf(stderr, "dipp sat: cannot join the hub at %s / %s\n", sub, pub);
        sat_close(&s);
        return EXIT_BAD;
    }
    cli_on_stop();
    int rc = serve(&s, &n, &o);
    csp_node_close(&n);
    sat_close(&s);
    return rc;
}
