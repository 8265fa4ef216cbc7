/* ground_read.c -- the ground station's commands that set parameters and
 * read the satellite (slot, telemetry, images, ping), and the dispatch of
 * `dipp ground`'s commands (ground.h). */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"
#include "errors.h"
#include "ground.h"
#include "pdef.h"
#include "platform.h"
#include "proto.h"
#include "slot_msg.h"

typedef struct slot_opts {
    const char *key;
    double version, pipeline, config;
} slot_opts;

/* --key K.key [--version V] (--pipeline N | --config N) DEF.yaml; the
 * version defaults to the ground's clock in seconds, which only rises. */
static int slot_parse(int argc, char **argv, slot_opts *o) {
    static const struct option opts[] = {
        {"key", 1, NULL, 'k'}, {"version", 1, NULL, 'v'}, {"pipeline", 1, NULL, 'p'},
        {"config", 1, NULL, 'c'}, {NULL, 0, NULL, 0}};
    *o = (slot_opts){NULL, (double)time(NULL), 0, 0};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'k' ? (o->key = optarg, 0)
            : ch == 'v' ? cli_whole("ground", "--version", optarg, 1, 4e9, &o->version)
            : ch == 'p' ? cli_whole("ground", "--pipeline", optarg, 1, PDEF_PIPELINES,
                                    &o->pipeline)
                        : cli_whole("ground", "--config", optarg, 1, PDEF_CONFIGS, &o->config);
    if (bad || !o->key || !o->pipeline == !o->config || argc - optind != 1) {
        fputs("Usage: dipp ground slot --key K.key [--version V] "
              "(--pipeline 1-6|--config 1-20) DEF.yaml\n(dipp ground slot --help)\n", stderr);
        return -1;
    }
    return 0;
}

static int slot(ground *g, int argc, char **argv) {
    uint8_t def[PDEF_MAX_BYTES], msg[SLOT_MSG_MAX], reply[CSP_MTU + 1], *sk;
    char err[512];
    size_t sk_len;
    slot_opts o;
    pdef d;
    if (slot_parse(argc, argv, &o))
        return EXIT_USAGE;
    const char *file = argv[optind];
    if (cli_read_def_for(file, (unsigned)o.pipeline, &d))
        return EXIT_BAD;
    int len = pdef_encode(&d, def, err, sizeof err);
    if (len < 0) {
        fprintf(stderr, "dipp ground: %s: %s\n", file, err);
        return EXIT_BAD;
    }
    if (ground_read_file(o.key, &sk, &sk_len, UP_SK_BYTES))
        return EXIT_BAD;
    slot_msg m = {ground_seq(), o.pipeline ? SLOT_PIPELINE : SLOT_CONFIG,
                  (uint8_t)(o.pipeline ? o.pipeline : o.config), (uint32_t)o.version, def,
                  (size_t)len};
    size_t n = slot_msg_build(&m, sk, msg);
    free(sk);
    long got = ground_ask(g, DIPP_PORT_PARAM, msg, n, 'A', reply, CSP_MTU);
    uint32_t code = got >= 7 ? proto_get32(reply + 3) : 0;
    if (got < 7) {
        ground_no_answer(g, file);
        return EXIT_BAD;
    }
    reply[got] = 0;
    proto_printable((char *)reply + 7, (size_t)got - 7, 0);
    if (code)
        printf("%s: refused: error %u (%s): %s\n", file, dipp_error_number((int)code, 0, 0),
               dipp_code_name((int)code), (char *)reply + 7);
    else
        printf("%s: %d bytes in %s slot %u, version %u: %s\n", file, len,
               slot_kind_name(m.kind), (unsigned)m.slot, (unsigned)m.version,
               (char *)reply + 7);
    return code ? EXIT_BAD : 0;
}

static int telemetry(ground *g) {
    uint8_t msg[3] = {'T', 0, 0}, reply[CSP_MTU + 1];
    proto_put16(msg + 1, ground_seq());
    long n = ground_ask(g, DIPP_PORT_PARAM, msg, sizeof msg, 'V', reply, CSP_MTU);
    if (n < 0) {
        ground_no_answer(g, "telemetry");
        return EXIT_BAD;
    }
    reply[n] = 0;
    proto_printable((char *)reply + 3, (size_t)n - 3, 1); /* text from the link */
    fputs((char *)reply + 3, stdout);
    return 0;
}

static const char *suffix(uint8_t format) {
    return format == DIPP_FMT_JPEG ? "jpg" : format == DIPP_FMT_PNG ? "png" : "raw";
}

#define PART 1800 /* an image part's bytes, the last one shorter */
#define PART_HEAD 14 /* 'I' id part parts priority format */

typedef struct image_in {
    uint32_t id, parts, got, priority;
    uint8_t format, *bytes, *have; /* have: parts flags */
    size_t len;
} image_in;

/* Whether a part of len bytes (head included) is one image_in can take:
 * whole parts but the last, which is not longer. */
static int part_fits(const image_in *in, uint32_t p, size_t len) {
    size_t n = len - PART_HEAD;
    return p < in->parts && !in->have[p] &&
           (p + 1 == in->parts ? n <= PART : n == PART);
}

/* The best image's facts, from its first part: 0, or -1 out of memory
 * (in as it was). */
static int image_begin(image_in *in, const uint8_t *part, uint32_t id) {
    uint32_t parts = proto_get16(part + 7);
    uint8_t *bytes = calloc(parts, PART), *have = calloc(parts, 1);
    if (!bytes || !have) {
        free(bytes), free(have);
        return -1;
    }
    in->id = id, in->parts = parts, in->bytes = bytes, in->have = have;
    in->priority = proto_get32(part + 9), in->format = part[13];
    return 0;
}

/* Whether the parts asked for from `from` on have all come. */
static int ask_answered(const image_in *in, uint32_t from) {
    uint32_t end = from + PROTO_PARTS_PER_ASK < in->parts
                       ? from + PROTO_PARTS_PER_ASK : in->parts;
    for (uint32_t p = from; p < end; p++)
        if (!in->have[p])
            return 0;
    return 1;
}

/* Asks for image in->id (0: the best) from its first missing part, and
 * keeps the parts that come: 1 when whole, 0 when the ring is empty,
 * -1 when parts are still missing, -2 when the image is gone, -3 out of
 * memory for it. A reply
 * unlike what the satellite sends (shorter than its head, a part longer
 * than PART) is passed over. */
static int fetch(ground *g, image_in *in) {
    uint8_t msg[9] = {'D'}, part[CSP_MTU];
    uint32_t from = 0;
    while (from < in->parts && in->have[from])
        from++;
    proto_put16(msg + 1, ground_seq()), proto_put32(msg + 3, in->id), proto_put16(msg + 7, from);
    csp_node_send(&g->node, DIPP_NODE, DIPP_PORT_IMAGES, DIPP_PORT_IMAGES, msg, sizeof msg);
    csp_id id;
    size_t len;
    /* a part kept begins the wait again (the parts of one ask come as a
     * stream); a frame passed over does not: a stream of them (answers
     * on other ports) held the command for as long as they came */
    uint64_t end = plat_now_ms() + (uint64_t)ground_ask_ms(g);
    int left;
    while ((left = plat_ms_left(end)) > 0 &&
           csp_node_recv(&g->node, left, &id, part, sizeof part, &len) == 1) {
        if (len < PART_HEAD || id.dport != DIPP_PORT_IMAGES || part[0] != 'I')
            continue;
        uint32_t pid = proto_get32(part + 1), p = proto_get16(part + 5);
        if (in->id && pid != in->id)
            continue;
        if (pid == 0)
            return 0;
        if (proto_get16(part + 7) == 0)
            return -2; /* gone: downlinked already (our ack came late) */
        if (!in->id && image_begin(in, part, pid) != 0)
            return -3;
        if (!part_fits(in, p, len))
            continue;
        memcpy(in->bytes + (size_t)p * PART, part + PART_HEAD, len - PART_HEAD);
        in->have[p] = 1, in->got++;
        end = plat_now_ms() + (uint64_t)ground_ask_ms(g);
        if (p + 1 == in->parts)
            in->len = (size_t)p * PART + len - PART_HEAD;
        if (in->got == in->parts)
            return 1;
        if (ask_answered(in, from))
            return -1; /* ask for the next ones now, not after a timeout */
    }
    return -1;
}

/* Writes the whole image in into dir: 0, or -1 said on stderr. */
static int save_image(const image_in *in, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/image-%u-p%u.%s", dir, in->id, in->priority,
             suffix(in->format));
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(in->bytes, 1, in->len, f) == in->len;
    if ((f && fclose(f) != 0) || !ok) {
        fprintf(stderr, "dipp ground: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Acknowledges image id, signed with sg ('K' on port 22), so that the
 * satellite drops it: 0 taken, or -5 refused or unanswered (said). */
static int acknowledge(ground *g, ground_signer *sg, uint32_t id) {
    uint8_t ack[7 + CMD_SIG_TRAILER] = {'K'}, reply[CSP_MTU + 1];
    char what[48], *text;
    proto_put32(ack + 3, id);
    snprintf(what, sizeof what, "image %u: acknowledgement", id);
    if (!ground_ask_text(g, DIPP_PORT_IMAGES, sg, ack, 7, what, reply, &text))
        return 0;
    printf("image %u: saved, but it stays on board\n", id);
    return -5;
}

/* Downlinks the best image into dir and acknowledges it once it is saved
 * (acknowledge): its id, 0 when the ring is empty, -1 when it did not
 * come whole, -2 when it went, -3 when it could not be held or saved, -4
 * when nothing was heard for the whole wait, -5 when the acknowledgement
 * was refused or not answered. Parts come PROTO_PARTS_PER_ASK an ask: it asks again as
 * soon as they are in, and while they come. */
static long one_image(ground *g, ground_signer *sg, const char *dir) {
    image_in in;
    int rc = -1;
    memset(&in, 0, sizeof in);
    for (unsigned t = 0; t < ground_asks(g) && rc == -1; t++) {
        uint32_t had = in.got;
        rc = fetch(g, &in);
        t = in.got > had ? 0 : t; /* progress: the tries start again */
    }
    if (rc == 1 && save_image(&in, dir) != 0)
        rc = -3;
    int acked = rc == 1 ? acknowledge(g, sg, in.id) : 0;
    if (acked < 0)
        rc = acked;
    free(in.bytes);
    free(in.have);
    if (rc == -1 && !in.id)
        rc = -4; /* no part at all: not an image lost, no answer */
    return rc == 1 ? (long)in.id : rc;
}

typedef struct images_opts {
    const char *key, *out;
    uint64_t counter;
    double max;
} images_opts;

/* --key K.key [--counter N] --out DIR [--max N]: 0, or -1 said. */
static int images_parse(int argc, char **argv, images_opts *o) {
    static const struct option opts[] = {
        {"key", 1, NULL, 'k'}, {"counter", 1, NULL, 'c'}, {"out", 1, NULL, 'o'},
        {"max", 1, NULL, 'm'}, {NULL, 0, NULL, 0}};
    *o = (images_opts){NULL, NULL, 0, 1e9};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'k' ? (o->key = optarg, 0)
            : ch == 'o' ? (o->out = optarg, 0)
            : ch == 'c' ? ground_counter_arg(optarg, &o->counter)
                        : cli_number("ground", "--max", optarg, 1, 1e9, &o->max);
    if (bad || !o->key || !o->out || optind != argc) {
        fprintf(stderr, "Usage: dipp ground images --key K.key [--counter N] --out DIR "
                "[--max N]\n(dipp ground images --help)\n");
        return -1;
    }
    return 0;
}

static int images(ground *g, int argc, char **argv) {
    unsigned count = 0, failures = 0;
    images_opts o;
    ground_signer sg;
    if (images_parse(argc, argv, &o))
        return EXIT_USAGE;
    struct stat st;
    errno = 0;
    if (stat(o.out, &st) != 0 || !S_ISDIR(st.st_mode) || access(o.out, W_OK) != 0) {
        fprintf(stderr, "dipp ground: --out %s: %s\n", o.out,
                errno ? strerror(errno) : "not a folder");
        return EXIT_BAD;
    }
    if (ground_signer_open(&sg, o.key, o.counter))
        return EXIT_BAD;
    long id = 1;
    /* a silent satellite ends it at once (another image would only wait
     * the whole --timeout-ms again), and so does a refused acknowledgement
     * (the same image would come down again and again) */
    while (failures < 3 && count < o.max && id > -3 &&
           (id = one_image(g, &sg, o.out)) != 0) {
        failures += id == -1;
        count += id > 0 || id == -5; /* saved, though still on board */
    }
    ground_signer_close(&sg);
    if (id <= -3)
        failures = 3;
    if (id == -4)
        ground_no_answer(g, "images");
    printf("%u images downlinked to %s\n", count, o.out);
    return failures < 3 ? 0 : EXIT_BAD;
}

static int ping(ground *g) {
    uint8_t msg[3] = {'p', 0, 0}, reply[16];
    proto_put16(msg + 1, ground_seq());
    if (ground_ask(g, CSP_PORT_PING, msg, sizeof msg, 'p', reply, sizeof reply) < 0) {
        ground_no_answer(g, "ping");
        return EXIT_BAD;
    }
    printf("ping: node %d answers\n", DIPP_NODE);
    return 0;
}

int ground_command(ground *g, int argc, char **argv) {
    char sub[64], pub[64];
    if (ground_help(argc, argv))
        return 0;
    if (!strcmp(argv[0], "keygen"))
        return ground_keygen(argc, argv);
    cli_hub(g->hub, sub, pub, sizeof sub);
    if (csp_node_open(&g->node, GROUND_NODE, sub, pub, 0)) {
        fprintf(stderr, "dipp ground: cannot join the hub at %s / %s\n", sub, pub);
        return EXIT_BAD;
    }
    int rc = !strcmp(argv[0], "upload")      ? ground_upload_cmd(g, argc, argv)
           : !strcmp(argv[0], "rotate")      ? ground_rotate(g, argc, argv)
           : !strcmp(argv[0], "slot")        ? slot(g, argc, argv)
           : !strcmp(argv[0], "telemetry")   ? telemetry(g)
           : !strcmp(argv[0], "images")      ? images(g, argc, argv)
           : !strcmp(argv[0], "ping")        ? ping(g)
           : !strcmp(argv[0], "proc")        ? ground_procs(g, argc - 1, argv + 1)
                                             : -1;
    csp_node_close(&g->node);
    if (rc == -1)
        fprintf(stderr, "dipp ground: unknown command '%s' (dipp ground --help)\n", argv[0]);
    return rc == -1 ? EXIT_USAGE : rc;
}
