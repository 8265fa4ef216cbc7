/* cmd_ground.c -- `dipp ground`: the ground station's tool. It makes keys,
 * and over a CSP ZMQ hub uploads signed modules (whole or as a delta
 * against the version on board), rotates the key, writes pipeline and
 * configuration slots, and reads telemetry and images. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "csp_zmq.h"
#include "errors.h"
#include "ground.h"
#include "platform.h"
#include "proto.h"

static const char text[] =
    "Usage: dipp ground [--hub PORT] [--timeout-ms N] [--retry-ms N] COMMAND ...\n"
    "The ground station, node 10 on the CSP ZMQ hub PORT (default 6000).\n"
    "  --timeout-ms N      the whole wait for node 162: a command that hears no\n"
    "                      answer for N ms says \"no answer\" (default 120000); an\n"
    "                      upload or downlink that hears answers goes on\n"
    "  --retry-ms N        within that wait, ask again after at most N ms without\n"
    "                      the answer, as the link loses frames (default 3000, or\n"
    "                      a quarter of --timeout-ms when that is shorter)\n"
    "  keygen [--force] PREFIX\n"
    "                      write PREFIX.pub and PREFIX.key (Ed25519; the key\n"
    "                      0600); an existing pair is kept unless --force\n"
    "  upload --key K.key [--serial N] --version V [--base OLD.so]\n"
    "         [--in gray|rgb|bayer] [--out FMT] [--width W --height H] NAME FILE.so\n"
    "                      upload module NAME (a delta against OLD.so, the version\n"
    "                      on board, when given); waits until it is installed or\n"
    "                      refused, and prints the outcome and its number\n"
    "  rotate --key OLD.key --serial N NEW.pub\n"
    "                      install NEW.pub as key N, signed with the old key\n"
    "  slot --key K.key [--version V] (--pipeline|--config) N DEF.yaml\n"
    "                      write a definition into a slot on board, signed; V\n"
    "                      must be above the slot's (default: the clock, in s)\n"
    "  telemetry           print the satellite's status parameters\n"
    "  images --key K.key [--counter N] --out DIR [--max N]\n"
    "                      downlink the ring's images, best first (N at most)\n"
    "  ping                ask node 162 for an echo\n"
    "  proc upload|list|run|stop|delete|log ...\n"
    "                      DISH procedures on board (run, stop and delete\n"
    "                      signed: --key K.key [--counter N])\n"
    "`dipp ground COMMAND --help` tells a command's options.\n"
    "Exit status: 0 done, 1 refused or no answer (the number says why), 2 usage.\n";

/* The wait's default: 40 asks 3 s apart, which outlasts the simulator's
 * pauses between passes; a status of a few hundred bytes at 9600 bit/s
 * comes back well within an ask. */
#define TIMEOUT_MS 120000
#define RETRY_MS 3000

/* --retry-ms when not given: RETRY_MS, but at least 4 asks within a
 * shorter wait, as one lost frame must not end it. */
static double default_retry(double timeout) {
    double quarter = timeout / 4 >= 1 ? (double)(long)(timeout / 4) : 1;
    return quarter < RETRY_MS ? quarter : RETRY_MS;
}

/* The wait's options: 0, or -1 said on stderr. */
static int wait_opts(double timeout, double *retry) {
    if (!*retry)
        *retry = default_retry(timeout);
    if (*retry <= timeout)
        return 0;
    fprintf(stderr, "dipp ground: --retry-ms %.0f is over --timeout-ms %.0f: the "
            "question would never be asked again\n", *retry, timeout);
    return -1;
}

/* One of ground's own options (those before the command): 0, 1 when it
 * asked for the help, or -1 said on stderr. */
static int ground_opt(int ch, double *hub, double *timeout, double *retry) {
    if (ch == 'h')
        return 1;
    return ch == '?' ? -1
         : ch == 'u' ? cli_number("ground", "--hub", optarg, 1, 64535, hub)
         : ch == 'r' ? cli_whole("ground", "--retry-ms", optarg, 1, 3600000, retry)
                     : cli_whole("ground", "--timeout-ms", optarg, 1, 3600000, timeout);
}

int cmd_ground(int argc, char **argv) {
    static const struct option opts[] = {
        {"hub", 1, NULL, 'u'}, {"timeout-ms", 1, NULL, 't'}, {"retry-ms", 1, NULL, 'r'},
        {"help", 0, NULL, 'h'}, {NULL, 0, NULL, 0}};
    double hub = 6000, timeout = TIMEOUT_MS, retry = 0;
    int ch, rc = 0;
    optind = 1;
    /* "+": options end at the command, whose own --help is its own */
    while (!rc && (ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1)
        rc = ground_opt(ch, &hub, &timeout, &retry);
    if (rc == 1) {
        fputs(text, stdout);
        return 0;
    }
    if (!rc && optind < argc && wait_opts(timeout, &retry))
        return EXIT_USAGE;
    if (rc || optind >= argc) {
        fputs(text, stderr);
        return EXIT_USAGE;
    }
    if (sodium_init() < 0)
        return EXIT_BAD;
    ground g = {(unsigned)hub, (int)timeout, (int)retry, {0}};
    return ground_command(&g, argc - optind, argv + optind);
}
