/* ground_cmds.c -- the ground station's commands that change the
 * satellite's code: keygen, upload, rotate (ground.h). */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "errors.h"
#include "ground.h"
#include "pdef.h"
#include "platform.h"
#include "proto.h"

int ground_read_file(const char *path, uint8_t **data, size_t *len, size_t want) {
    int rc = plat_file_read(path, data, len);
    if (rc || (want && *len != want)) {
        fprintf(stderr, "dipp ground: %s: %s\n", path,
                rc ? strerror(-rc) : "not a key of the right size");
        if (!rc)
            free(*data);
        return -1;
    }
    return 0;
}

/* Creates path with mode (never over an existing file: O_EXCL) holding
 * data[len]; says why not, naming the file. */
static int write_new(const char *path, mode_t mode, const uint8_t *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    size_t done = 0;
    while (fd >= 0 && done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO; /* no reason given: not a stale errno's */
            break;
        }
        done += (size_t)n;
    }
    if (fd < 0 || done < len || fsync(fd) || close(fd)) {
        int e = errno;
        fprintf(stderr, "dipp ground keygen: %s: cannot write: %s\n", path, strerror(e));
        if (fd >= 0)
            unlink(path);
        return -1;
    }
    return 0;
}

/* Whether path may be written: it does not exist, or force removed it. A
 * key pair is never overwritten by accident: the old private key would be
 * lost, and with it the satellite's trust in uploads (the board holds the
 * matching public key). */
static int may_write(const char *path, int force) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : (fprintf(stderr, "dipp ground keygen: %s: %s\n",
                                              path, strerror(errno)), -1);
    if (!force) {
        fprintf(stderr,
                "dipp ground keygen: %s: exists; not overwritten (its key would be "
                "lost): --force replaces it\n",
                path);
        return -1;
    }
    if (unlink(path) != 0) {
        fprintf(stderr, "dipp ground keygen: %s: cannot remove: %s\n", path,
                strerror(errno));
        return -1;
    }
    return 0;
}

int ground_keygen(int argc, char **argv) {
    uint8_t pk[UP_PK_BYTES], sk[UP_SK_BYTES];
    char pub[4096], key[4096];
    int force = argc == 3 && strcmp(argv[1], "--force") == 0;
    if (argc != 2 + force || argv[argc - 1][0] == '-') {
        fprintf(stderr, "Usage: dipp ground keygen [--force] PREFIX "
                "(dipp ground keygen --help)\n");
        return EXIT_USAGE;
    }
    snprintf(pub, sizeof pub, "%s.pub", argv[argc - 1]);
    snprintf(key, sizeof key, "%s.key", argv[argc - 1]);
    /* both checked before either is written: a refusal changes nothing */
    if (may_write(pub, force) || may_write(key, force))
        return EXIT_BAD;
    crypto_sign_keypair(pk, sk);
    /* the private key is the owner's alone from its first byte (0600, not
     * the umask's 0644); the public key is meant to be shared */
    int rc = write_new(key, 0600, sk, sizeof sk) || write_new(pub, 0644, pk, sizeof pk);
    sodium_memzero(sk, sizeof sk);
    return rc ? EXIT_BAD : 0;
}

/* ZMQ transport of ground_upload: port 20, replies to port 20. */
static int io_send(void *ctx, const uint8_t *msg, size_t len) {
    ground *g = ctx;
    return csp_node_send(&g->node, DIPP_NODE, DIPP_PORT_UPLOAD, DIPP_PORT_UPLOAD, msg, len);
}

/* A frame on another port is passed over within the wait, not by
 * waiting the whole of it again: a stream of them held the upload. */
static int io_recv(void *ctx, int timeout_ms, uint8_t *msg, size_t cap, size_t *len) {
    ground *g = ctx;
    csp_id id;
    int got;
    uint64_t end = plat_now_ms() + (uint64_t)timeout_ms;
    while ((got = csp_node_recv(&g->node, timeout_ms, &id, msg, cap, len)) == 1) {
        if (id.dport == DIPP_PORT_UPLOAD)
            return 1;
        if (timeout_ms >= 0 && (timeout_ms = plat_ms_left(end)) == 0)
            return 0; /* < 0: for ever, as csp_node_recv's */
    }
    return got;
}

static uint8_t format_of(const char *s) {
    return !strcmp(s, "gray") ? DIPP_FMT_GRAY8 : !strcmp(s, "rgb") ? DIPP_FMT_RGB8
         : !strcmp(s, "bayer") ? DIPP_FMT_BAYER_RGGB8 : !strcmp(s, "jpeg") ? DIPP_FMT_JPEG
         : !strcmp(s, "png") ? DIPP_FMT_PNG : 0;
}

/* An image format option's value: 0, or -1 said on stderr. */
static int format_opt(const char *opt, const char *value, uint8_t *format) {
    *format = format_of(value);
    if (*format) return 0;
    fprintf(stderr, "dipp ground: %s %s: not gray, rgb, bayer, jpeg or png\n",
            opt, value);
    return -1;
}

typedef struct upload_opts {
    const char *key, *base;
    double serial, version, base_version, width, height;
    uint8_t in, out;
    int base_given; /* --base-version given, not taken as version - 1 */
} upload_opts;

static int upload_parse(int argc, char **argv, upload_opts *o) {
    static const struct option opts[] = {
        {"key", 1, NULL, 'k'}, {"serial", 1, NULL, 's'}, {"version", 1, NULL, 'v'},
        {"base", 1, NULL, 'b'}, {"base-version", 1, NULL, 'B'}, {"in", 1, NULL, 'i'},
        {"out", 1, NULL, 'o'}, {"width", 1, NULL, 'w'}, {"height", 1, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    *o = (upload_opts){NULL, NULL, 1, 0, 0, 0, 0, DIPP_FMT_GRAY8, DIPP_FMT_GRAY8, 0};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        bad = ch == '?' ? -1
            : ch == 'k' ? (o->key = optarg, 0)
            : ch == 'b' ? (o->base = optarg, 0)
            : ch == 'i' ? format_opt("--in", optarg, &o->in)
            : ch == 'o' ? format_opt("--out", optarg, &o->out)
            : ch == 's' ? cli_whole("ground", "--serial", optarg, 1, 4e9, &o->serial)
            : ch == 'v' ? cli_whole("ground", "--version", optarg, 1, 4e9, &o->version)
            : ch == 'B' ? cli_whole("ground", "--base-version", optarg, 1, 4e9, &o->base_version)
            : ch == 'w' ? cli_whole("ground", "--width", optarg, 0, 65535, &o->width)
                        : cli_whole("ground", "--height", optarg, 0, 65535, &o->height);
    if (bad || !o->key || !o->version || argc - optind != 2) {
        fputs("Usage: dipp ground upload --key K.key --version V [OPTIONS] NAME FILE.so\n"
              "(dipp ground upload --help)\n", stderr);
        return -1;
    }
    o->base_given = o->base_version > 0;
    if (o->base && !o->base_given)
        o->base_version = o->version - 1;
    return 0;
}

/* After a delta's refusal for its base: where the base version the board
 * compared came from. The ground cannot know which version OLD.so is; it
 * takes the one before --version unless --base-version says, and the
 * board's "a delta against v18" named a number the user never gave. */
static void explain_base(const upload_opts *o, const char *name) {
    if (o->base_given)
        printf("  --base %s is %s v%.0f as --base-version said; a delta needs a copy "
               "of the version active on board\n", o->base, name, o->base_version);
    else
        printf("  --base %s was taken for %s v%.0f, the version before --version %.0f; "
               "--base-version N says which version it is, and must be the one active "
               "on board\n", o->base, name, o->base_version, o->version);
}

int ground_upload_cmd(ground *g, int argc, char **argv) {
    upload_opts o;
    uint8_t *sk, *mod, *base = NULL, *payload;
    size_t sk_len, len, base_len = 0;
    char err[256];
    if (upload_parse(argc, argv, &o))
        return EXIT_USAGE;
    const char *name = argv[optind], *file = argv[optind + 1];
    if (!up_name_ok(name)) {
        fprintf(stderr, "dipp ground: module name '%s': 1 to %d lowercase "
                "letters, digits and '_'\n", name, UP_NAME_MAX - 1);
        return EXIT_USAGE;
    }
    if (ground_read_file(o.key, &sk, &sk_len, UP_SK_BYTES) ||
        ground_read_file(file, &mod, &len, 0) ||
        (o.base && ground_read_file(o.base, &base, &base_len, 0)))
        return EXIT_BAD;
    up_manifest m = {1, 0, 1900, {0}, (uint32_t)o.version, DIPP_ABI_VERSION,
                     up_board_arch(), o.in, o.out, (uint16_t)o.width, (uint16_t)o.height,
                     (uint32_t)o.base_version, 0, 0, (uint32_t)o.serial, {0}, {0}, {0}};
    snprintf(m.name, sizeof m.name, "%s", name);
    int rc = up_prepare(&m, mod, len, base, base_len, 19, sk, &payload, err, sizeof err);
    free(sk), free(mod), free(base);
    if (rc) {
        fprintf(stderr, "dipp ground: %s: %s\n", file, err);
        return EXIT_BAD;
    }
    int code;
    rc = ground_send_update(g, &m, payload, &code);
    free(payload);
    if (code == DIPP_E_UP_DELTA)
        explain_base(&o, name);
    return rc;
}

int ground_send_update(ground *g, const up_manifest *m, const uint8_t *payload,
                       int *code_out) {
    /* asks as ground_ask does: nothing heard for the whole wait is no answer */
    ground_io io = {io_send, io_recv, g, ground_ask_ms(g), ground_asks(g), ground_seq()};
    uint64_t sent;
    proto_status st;
    int code = ground_upload(&io, m, payload, &sent, &st);
    if (code_out)
        *code_out = code;
    if (code == 0 && sent == 0) /* on board already: the sentence says how */
        printf("%s v%u installed: no chunk needed sending\n", m->name, m->version);
    else if (code == 0)
        printf("%s v%u installed: %u bytes sent as %llu chunks\n", m->name, m->version,
               m->payload_size, (unsigned long long)sent);
    else if (code > 0)
        printf("%s v%u refused: error %u (%s)\n", m->name, m->version,
               dipp_error_number(code, 0, 0), dipp_code_name(code));
    else if (code == PROTO_STALLED && st.missing == 0) /* answers, installs not */
        printf("%s v%u: not installed: the board answered %d times that no chunk "
               "was missing, without installing it\n", m->name, m->version,
               PROTO_STALL_RESTARTS + 1);
    else if (code == PROTO_STALLED) /* it answers, but keeps none of them */
        printf("%s v%u: not installed: %u chunks still missing on board after %d "
               "rounds of resending them without one kept\n", m->name, m->version,
               st.missing, PROTO_STALL_ROUNDS);
    else {
        char what[64];
        snprintf(what, sizeof what, "%s v%u", m->name, m->version);
        ground_no_answer(g, what);
    }
    if (code >= 0 && st.detail[0])
        printf("  %s\n", st.detail);
    return code ? EXIT_BAD : 0;
}

int ground_rotate(ground *g, int argc, char **argv) {
    uint8_t *sk, *pk, msg[3 + UP_ROTATE_BYTES], reply[2048];
    size_t sk_len, pk_len;
    double serial = 0;
    if (argc != 6 || strcmp(argv[1], "--key") || strcmp(argv[3], "--serial") ||
        cli_whole("ground", "--serial", argv[4], 2, 4e9, &serial)) {
        fprintf(stderr, "Usage: dipp ground rotate --key OLD.key --serial N NEW.pub "
                "(dipp ground rotate --help)\n");
        return EXIT_USAGE;
    }
    if (ground_read_file(argv[2], &sk, &sk_len, UP_SK_BYTES))
        return EXIT_BAD;
    if (ground_read_file(argv[5], &pk, &pk_len, UP_PK_BYTES)) {
        free(sk);
        return EXIT_BAD;
    }
    if (sodium_init() < 0 || !crypto_core_ed25519_is_valid_point(pk)) {
        fprintf(stderr, "dipp ground: %s: not an Ed25519 public key (the "
                "satellite would refuse it)\n", argv[5]);
        free(sk), free(pk);
        return EXIT_BAD;
    }
    msg[0] = 'R';
    proto_put16(msg + 1, ground_seq());
    up_rotate_build((uint32_t)serial, pk, sk, msg + 3);
    free(sk), free(pk);
    long n = ground_ask(g, DIPP_PORT_UPLOAD, msg, sizeof msg, 'S', reply, sizeof reply);
    proto_status st;
    if (n < 0 || proto_status_parse(reply, (size_t)n, &st)) {
        ground_no_answer(g, "rotation");
        return EXIT_BAD;
    }
    if (st.code) {
        printf("rotation refused: error %u (%s)\n", dipp_error_number((int)st.code, 0, 0),
               dipp_code_name((int)st.code));
        return EXIT_BAD;
    }
    printf("key %u installed\n", (unsigned)serial);
    return 0;
}
