/* cmd_defs.c -- `dipp encode`, `decode`, `store` and `slots`: pipeline
 * definitions between their YAML, their encoded uplink form and the
 * on-board slots. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "platform.h"
#include "slots.h"

int cli_read_def(const char *path, pdef *d) {
    return cli_read_def_for(path, 0, d);
}

int cli_read_def_for(const char *path, unsigned pipeline, pdef *d) {
    uint8_t *text;
    size_t len;
    char err[1024]; /* a path and a sentence saying how to write the file */
    struct stat st;
    /* Not read at all when it cannot be a definition: a device or FIFO
     * might never end. */
    if (stat(path, &st) == 0 &&
        (!S_ISREG(st.st_mode) || st.st_size > PDEF_YAML_MAX)) {
        fprintf(stderr, "dipp: %s: %s\n", path, S_ISREG(st.st_mode)
                ? "larger than a definition's YAML may be (16 KiB)"
                : "not a regular file");
        return -1;
    }
    int rc = plat_file_read(path, &text, &len);
    if (rc) {
        fprintf(stderr, "dipp: %s: %s\n", path, strerror(-rc));
        return -1;
    }
    rc = pdef_from_yaml_for(path, (const char *)text, len, pipeline, d, err, sizeof err);
    free(text);
    if (rc)
        fprintf(stderr, "dipp: %s\n", err);
    return rc;
}

/* Reads and encodes the definition at path into buf: bytes, or -1. */
static int encode_file(const char *path, pdef *d, uint8_t *buf) {
    char err[256];
    if (cli_read_def(path, d))
        return -1;
    int n = pdef_encode(d, buf, err, sizeof err);
    if (n < 0)
        fprintf(stderr, "dipp: %s: %s\n", path, err);
    return n;
}

int cli_help(int argc, char **argv, const char *text) {
    for (int k = 1; k < argc; k++)
        if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            fputs(text, stdout);
            return 1;
        }
    return 0;
}

/* After the options: need operands left, else usage on stderr. */
static int operands_ok(int argc, int need, const char *text) {
    if (argc - optind == need)
        return 1;
    fputs(text, stderr);
    return 0;
}

int cmd_encode(int argc, char **argv) {
    static const char text[] =
        "Usage: dipp encode DEF.yaml [-o FILE]\n"
        "Encodes a pipeline definition (CBOR, zstd when smaller) as uplinked and\n"
        "stored; fails when it is over the 188-byte parameter. Prints its size.\n"
        "Exit status: 0 encoded, 1 bad input (a YAML error, named by file, line and\n"
        "field; over 188 bytes; FILE not written), 2 usage.\n";
    const char *out = NULL;
    int ch;
    if (cli_help(argc, argv, text))
        return 0;
    optind = 1;
    while ((ch = getopt(argc, argv, "o:")) != -1)
        if (ch == 'o')
            out = optarg;
        else
            return EXIT_USAGE;
    if (!operands_ok(argc, 1, text))
        return EXIT_USAGE;
    pdef d;
    uint8_t buf[PDEF_MAX_BYTES];
    int n = encode_file(argv[optind], &d, buf);
    if (n < 0)
        return EXIT_BAD;
    FILE *f = out ? fopen(out, "wb") : NULL;
    if (out && (!f || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f))) {
        fprintf(stderr, "dipp: %s: cannot write\n", out);
        return EXIT_BAD;
    }
    printf("%s: %d bytes of %d\n", argv[optind], n, PDEF_MAX_BYTES);
    return 0;
}

int cmd_decode(int argc, char **argv) {
    static const char text[] =
        "Usage: dipp decode FILE\n"
        "Prints an encoded pipeline definition as YAML.\n"
        "Exit status: 0 printed, 1 bad input (FILE unread, or not an encoded\n"
        "definition: the reason said), 2 usage.\n";
    if (cli_help(argc, argv, text))
        return 0;
    optind = 1;
    if (!operands_ok(argc, 1, text))
        return EXIT_USAGE;
    int rc;
    uint8_t *data;
    size_t len;
    char err[256];
    pdef d;
    if ((rc = plat_file_read(argv[1], &data, &len))) {
        fprintf(stderr, "dipp: %s: %s\n", argv[1], strerror(-rc));
        return EXIT_BAD;
    }
    rc = pdef_decode(data, len, &d, err, sizeof err);
    free(data);
    if (rc) {
        fprintf(stderr, "dipp: %s: %s\n", argv[1], err);
        return EXIT_BAD;
    }
    pdef_print_yaml(&d, stdout);
    return 0;
}

/* --store DIR (and --config N for store) then need operands: -1 to go
 * on, else the exit status. */
static int store_args(int argc, char **argv, int need, const char **dir,
                      int *config, const char *text) {
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"config", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    if (cli_help(argc, argv, text))
        return 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
        if (ch == 's')
            *dir = optarg;
        else if (ch == 'c' && config && (*config = atoi(optarg)) < 1) {
            fprintf(stderr, "dipp: --config %s: a slot number from 1\n", optarg);
            return EXIT_USAGE;
        } else if (ch != 'c' || !config)
            return EXIT_USAGE;
    if (!operands_ok(argc, need, text) || !*dir)
        return EXIT_USAGE;
    return -1;
}

int cmd_store(int argc, char **argv) {
    static const char text[] =
        "Usage: dipp store --store DIR [--config N] DEF.yaml\n"
        "Writes the encoded definition into its pipeline slot (its `pipeline:`\n"
        "number), or with --config into module-configuration slot N (1-20).\n"
        "A slot is replaced whole: after a power cut it holds the old or the new.\n"
        "Its version becomes one above the slot's (1 for an empty or corrupt\n"
        "one): a signed write from the ground must carry a higher one still.\n"
        "Exit status: 0 stored, 1 bad input (a definition, or the slot not written),\n"
        "2 usage.\n";
    const char *dir = NULL;
    int config = 0, rc = store_args(argc, argv, 1, &dir, &config, text);
    if (rc >= 0)
        return rc;
    pdef d;
    uint8_t buf[PDEF_MAX_BYTES];
    char err[512];
    uint32_t version;
    int n = encode_file(argv[optind], &d, buf);
    slot_kind kind = config ? SLOT_CONFIG : SLOT_PIPELINE;
    unsigned slot_n = config ? (unsigned)config : d.id;
    if (n >= 0)
        slot_version(dir, kind, slot_n, &version, err, sizeof err);
    if (n < 0 || slot_write(dir, kind, slot_n, buf, (size_t)n, version + 1, err,
                            sizeof err)) {
        if (n >= 0)
            fprintf(stderr, "dipp: %s\n", err);
        return EXIT_BAD;
    }
    printf("%s-%u: %d bytes, version %u\n", slot_kind_name(kind), slot_n, n,
           (unsigned)version + 1);
    return 0;
}

static int list_kind(const char *dir, slot_kind kind) {
    int bad = 0;
    for (unsigned n = 1; n <= slot_count(kind); n++) {
        uint8_t buf[SLOT_MAX_BYTES];
        size_t len = 0;
        char err[512];
        pdef d;
        int rc = slot_read(dir, kind, n, buf, &len, err, sizeof err);
        if (rc == 0 && pdef_decode(buf, len, &d, err, sizeof err))
            rc = -1;
        printf("%s-%u: ", slot_kind_name(kind), n);
        if (rc == 1)
            printf("empty\n");
        else if (rc)
            printf("BAD: %s\n", err), bad = 1;
        else {
            printf("%zu bytes,", len);
            for (uint32_t k = 0; k < d.count; k++)
                printf(" %s", d.step[k].name);
            printf("\n");
        }
    }
    return bad;
}

int cmd_slots(int argc, char **argv) {
    static const char text[] =
        "Usage: dipp slots --store DIR\n"
        "Lists the 6 pipeline and 20 module-configuration slots: empty, the\n"
        "modules a definition names, or BAD with why.\n"
        "Exit status: 0 listed, 1 bad input (a slot BAD, or DIR no folder), 2 usage.\n";
    const char *dir = NULL;
    int rc = store_args(argc, argv, 0, &dir, NULL, text);
    if (rc >= 0)
        return rc;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "dipp slots: %s: %s\n", dir,
                errno ? strerror(errno) : "not a folder");
        return EXIT_BAD;
    }
    int bad = list_kind(dir, SLOT_PIPELINE) | list_kind(dir, SLOT_CONFIG);
    return bad ? EXIT_BAD : 0;
}
