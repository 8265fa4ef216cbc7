/* ground_procs.c -- `dipp ground proc`: DISH procedures on board. An
 * upload is an update of kind 2 (signed, chunked, resumed, as a module's:
 * proto.c's loop), the rest are questions on the procedure port 24, and
 * the log pages through the run records the telemetry carries. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "dish.h"
#include "dish_compile.h"
#include "dish_verify.h"
#include "errors.h"
#include "ground.h"
#include "proto.h"

/* ---- upload ---- */

typedef struct upload_opts {
    const char *key, *name;
    double serial, version;
} upload_opts;

static int upload_parse(int argc, char **argv, upload_opts *o) {
    static const struct option opts[] = {
        {"key", 1, NULL, 'k'}, {"serial", 1, NULL, 's'}, {"version", 1, NULL, 'v'},
        {"name", 1, NULL, 'n'}, {NULL, 0, NULL, 0}};
    *o = (upload_opts){NULL, NULL, 1, 0};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'k' ? (o->key = optarg, 0)
            : ch == 'n' ? (o->name = optarg, 0)
            : ch == 's' ? cli_whole("ground", "--serial", optarg, 1, 4e9, &o->serial)
                        : cli_whole("ground", "--version", optarg, 1, 4e9, &o->version);
    if (bad || !o->key || !o->version || argc - optind != 1) {
        fputs("Usage: dipp ground proc upload --key K.key --version V [--serial N] "
              "[--name NAME] FILE.dish|FILE.dbc\n", stderr);
        return -1;
    }
    return 0;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* The image: a .dish compiled (and verified) here, anything else (a .dbc
 * of `dish compile`) verified here as the board will, so that a file that
 * is no image is said so, not refused on board for a "bytecode version"
 * read from its fifth byte. Its length, or -1. */
static int image_of(const char *path, uint8_t *img) {
    uint8_t *data;
    size_t len;
    char err[512], why[256];
    dish_image checked;
    if (ground_read_file(path, &data, &len, 0))
        return -1;
    int n = -1;
    if (ends_with(path, ".dish"))
        n = dish_compile(path, (const char *)data, len, img, DISH_MAX_IMAGE, err, sizeof err);
    else if (len > DISH_MAX_IMAGE)
        snprintf(err, sizeof err, "%s: %zu bytes, a DISH image has at most %d",
                 path, len, DISH_MAX_IMAGE);
    else if (dish_verify(data, len, NULL, &checked, why, sizeof why) != 0)
        snprintf(err, sizeof err, "%s: not a DISH image the board would take: %s",
                 path, why);
    else
        memcpy(img, data, (size_t)(n = (int)len));
    if (n < 0)
        fprintf(stderr, "dipp ground: %s\n", err);
    free(data);
    return n;
}

/* NAME from FILE: its base name up to the first dot. */
static void name_of(const char *path, char *name, size_t cap) {
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    snprintf(name, cap, "%.*s", (int)strcspn(base, "."), base);
}

static int upload(ground *g, int argc, char **argv) {
    static uint8_t img[UP_MAX_SIZE];
    uint8_t *sk, *payload, wire[UP_MANIFEST_BYTES];
    size_t sk_len;
    char err[256];
    upload_opts o;
    if (upload_parse(argc, argv, &o))
        return EXIT_USAGE;
    int n = image_of(argv[optind], img);
    if (n < 0 || ground_read_file(o.key, &sk, &sk_len, UP_SK_BYTES))
        return EXIT_BAD;
    /* the ABI field carries the bytecode's version; no architecture, no
     * test-run formats */
    up_manifest m = {.kind = UP_KIND_PROCS, .chunk_size = DISH_PACKET,
                     .version = (uint32_t)o.version, .abi = n > 4 ? img[4] : 0,
                     .key_serial = (uint32_t)o.serial};
    if (o.name)
        snprintf(m.name, sizeof m.name, "%s", o.name);
    else
        name_of(argv[optind], m.name, sizeof m.name);
    int rc = up_prepare(&m, img, (size_t)n, NULL, 0, 0, sk, &payload, err, sizeof err);
    free(sk);
    up_manifest_encode(&m, wire);
    if (!rc && up_manifest_decode(wire, sizeof wire, &m, err, sizeof err)) { /* the name */
        free(payload);
        rc = -1;
    }
    if (rc) {
        fprintf(stderr, "dipp ground: %s: %s\n", argv[optind], err);
        return EXIT_BAD;
    }
    rc = ground_send_update(g, &m, payload, NULL);
    free(payload);
    return rc;
}

/* ---- questions on the procedure port ---- */

static void print_text(const char *text) {
    fputs(text, stdout);
    if (*text && text[strlen(text) - 1] != '\n')
        putchar('\n');
}

/* Asks msg, signed with sg, and prints the answer's text: an exit
 * status. sg's key is freed. */
static int ask_signed(ground *g, ground_signer *sg, uint8_t *msg, size_t len,
                      const char *what) {
    uint8_t reply[CSP_MTU + 1];
    char *text;
    int rc = ground_ask_text(g, DIPP_PORT_PROCS, sg, msg, len, what, reply, &text);
    ground_signer_close(sg);
    if (!rc)
        print_text(text);
    return rc;
}

/* `list` ('L' seq from): from slot 0, and again from K while an answer
 * ends with the line "more from slot K" (a full board's listing is longer
 * than a frame). K must be past the slot asked from and a slot, so no
 * answer keeps the ground asking: DISH_SLOTS questions at most. */
static int list(ground *g) {
    uint8_t msg[4] = {'L'}, reply[CSP_MTU + 1];
    unsigned from = 0, more;
    int listed = 0;
    do {
        char *text, *last;
        msg[3] = (uint8_t)from;
        int rc = ground_ask_text(g, DIPP_PORT_PROCS, NULL, msg, sizeof msg, "list", reply,
                                 &text);
        if (rc)
            return rc;
        size_t n = strlen(text);
        last = text + (n && text[n - 1] == '\n' ? n - 1 : n); /* the last line */
        while (last > text && last[-1] != '\n')
            last--;
        char *end;
        more = 0;
        if (!strncmp(last, "more from slot ", 15)) {
            unsigned long k = strtoul(last + 15, &end, 10);
            if (end > last + 15 && (*end == '\n' || !*end) && k > from && k < DISH_SLOTS) {
                more = (unsigned)k;
                *last = 0;
            }
        }
        print_text(text);
        listed |= *text != 0;
    } while (more && (from = more));
    if (!listed)
        fputs("no procedures on board\n", stdout);
    return 0;
}

static int slot_arg(const char *s, unsigned *slot) {
    double v;
    if (cli_whole("ground", "SLOT", s, 0, DISH_SLOTS - 1, &v))
        return -1;
    *slot = (unsigned)v;
    return 0;
}

/* An argument: an integer, or with a point a Q16.16 fix, in int32. */
static int value_arg(const char *s, int32_t *v) {
    double x;
    if (cli_number("ground", "ARG", s, -2147483648.0, 2147483647.0, &x))
        return -1;
    if (strchr(s, '.')) /* to the nearest fix */
        x = x * DISH_FIX_ONE + (x < 0 ? -0.5 : 0.5);
    if (x < -2147483648.0 || x > 2147483647.0) {
        fprintf(stderr, "dipp ground: ARG %s: out of a fix's range\n", s);
        return -1;
    }
    *v = (int32_t)x;
    return 0;
}

/* The signer of a command changing the board, from the options
 * --key K.key [--counter N] before its other words (argv[0] its name;
 * an argument such as -5 after SLOT stays an argument): the index of the
 * first other word, or a negative exit status (its usage, or the key's
 * error, said). */
static int signer_of(int argc, char **argv, ground_signer *sg, const char *usage) {
    static const struct option opts[] = {
        {"key", 1, NULL, 'k'}, {"counter", 1, NULL, 'c'}, {NULL, 0, NULL, 0}};
    const char *key = NULL;
    uint64_t counter = 0;
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "+", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'k' ? (key = optarg, 0)
                        : ground_counter_arg(optarg, &counter);
    if (bad || !key) {
        fprintf(stderr, "Usage: dipp ground proc %s %s\n%s", argv[0], usage,
                bad ? "" : "  (the board takes it only signed with the key that signs "
                           "uploads)\n");
        return -EXIT_USAGE;
    }
    return ground_signer_open(sg, key, counter) ? -EXIT_BAD : optind;
}

#define KEY_OPTS "--key K.key [--counter N]"

static int run(ground *g, int argc, char **argv) {
    uint8_t msg[5 + 4 * DISH_MAX_LOCALS + CMD_SIG_TRAILER] = {'X'};
    ground_signer sg;
    unsigned slot;
    int at = signer_of(argc, argv, &sg, KEY_OPTS " SLOT [ARG...]");
    if (at < 0)
        return -at;
    int nargs = argc - at - 1;
    if (nargs < 0 || nargs > DISH_MAX_LOCALS || slot_arg(argv[at], &slot)) {
        fprintf(stderr, "Usage: dipp ground proc run " KEY_OPTS " SLOT [ARG...] "
                "(at most %d)\n", DISH_MAX_LOCALS);
        ground_signer_close(&sg);
        return EXIT_USAGE;
    }
    msg[3] = (uint8_t)slot, msg[4] = (uint8_t)nargs;
    for (int k = 0; k < nargs; k++) {
        int32_t v;
        if (value_arg(argv[at + 1 + k], &v)) {
            ground_signer_close(&sg);
            return EXIT_USAGE;
        }
        proto_put32(msg + 5 + 4 * k, (uint32_t)v);
    }
    return ask_signed(g, &sg, msg, 5 + 4 * (size_t)nargs, "run");
}

/* `delete SLOT` ('E') or `stop SLOT` ('S'): a message of the slot alone. */
static int slot_cmd(ground *g, int argc, char **argv, uint8_t kind) {
    uint8_t msg[4 + CMD_SIG_TRAILER] = {kind};
    ground_signer sg;
    unsigned slot;
    int at = signer_of(argc, argv, &sg, KEY_OPTS " SLOT");
    if (at < 0)
        return -at;
    if (argc - at != 1 || slot_arg(argv[at], &slot)) {
        fprintf(stderr, "Usage: dipp ground proc %s " KEY_OPTS " SLOT\n", argv[0]);
        ground_signer_close(&sg);
        return EXIT_USAGE;
    }
    msg[3] = (uint8_t)slot;
    return ask_signed(g, &sg, msg, 4, argv[0]);
}

/* ---- the run records ---- */

/* Prints the records of one telemetry answer from *from on: how many;
 * *from moves past them, *next is the board's count. */
static int print_records(char *text, uint32_t *from, uint32_t *next) {
    int printed = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long k;
        int at = 0;
        if (sscanf(line, "dish.next=%lu", &k) == 1)
            *next = (uint32_t)k;
        /* past 2^32 - 2 the next record's number wraps to 0: a rogue
         * record there had the log asked from 0 again for ever */
        else if (sscanf(line, "dish.%lu=%n", &k, &at) == 1 && at && k >= *from &&
                 k < UINT32_MAX) {
            printf("%lu %s\n", k, line + at);
            *from = (uint32_t)k + 1, printed++;
        }
    }
    return printed;
}

static int log_cmd(ground *g, int argc, char **argv) {
    uint8_t msg[7] = {'T'}, reply[CSP_MTU + 1];
    double start = 0;
    if ((argc != 1 && argc != 3) ||
        (argc == 3 && (strcmp(argv[1], "--from") ||
                       cli_whole("ground", "--from", argv[2], 0, 4e9, &start)))) {
        fprintf(stderr, "Usage: dipp ground proc log [--from N]\n");
        return EXIT_USAGE;
    }
    uint32_t from = (uint32_t)start, next = UINT32_MAX;
    do {
        proto_put16(msg + 1, ground_seq()), proto_put32(msg + 3, from);
        long n = ground_ask(g, DIPP_PORT_PARAM, msg, sizeof msg, 'V', reply, CSP_MTU);
        if (n < 0) {
            ground_no_answer(g, "log");
            return EXIT_BAD;
        }
        reply[n] = 0;
        proto_printable((char *)reply + 3, (size_t)n - 3, 1); /* text from the link */
        if (!print_records((char *)reply + 3, &from, &next) && from < next)
            from = next; /* gone from the board's log: nothing more to read */
    } while (from < next);
    printf("next %u\n", next);
    return 0;
}

int ground_procs(ground *g, int argc, char **argv) {
    if (argc < 1) {
        fputs(ground_proc_help, stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[0], "list") && argc == 1)
        return list(g);
    return !strcmp(argv[0], "upload") ? upload(g, argc, argv)
         : !strcmp(argv[0], "run")    ? run(g, argc, argv)
         : !strcmp(argv[0], "delete") ? slot_cmd(g, argc, argv, 'E')
         : !strcmp(argv[0], "stop")   ? slot_cmd(g, argc, argv, 'S')
         : !strcmp(argv[0], "log")    ? log_cmd(g, argc, argv)
                                      : (fputs(ground_proc_help, stderr), EXIT_USAGE);
}
