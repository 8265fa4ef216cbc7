/* dataset_gen_cmd.c -- `aegis dataset gen`: a synthetic stream with known
 * drift (src/pipeline/dsgen.h) written as dataset files. */
#include "cli.h"
#include "dataset_cmd.h"

#include "dsgen.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char help[] =
"usage: aegis dataset gen KIND --out DIR [--format FORMAT] [--samples N]\n"
"                         [--files F] [--dim D] [--classes K] [--seed S]\n"
"                         [--start-ts T] [--interval-s X]\n"
"\n"
"Writes a synthetic timestamped stream with known drift into DIR, and\n"
"DIR/drift.json: its drift points (by key and timestamp) and the options\n"
"of 'aegis dataset add' that read the files. KIND is tabular (Gaussian\n"
"mixtures whose means rotate) or image (32x32 gratings whose style\n"
"shifts). Over N samples: an abrupt drift at N/4, a gradual drift from\n"
"N/2 to 5N/8, a label shift at 3N/4 (class 0 then takes 70%). One drift\n"
"step moves every tabular class mean by 2 standard deviations in each\n"
"pair of features. The same options and seed give the same files.\n"
"\n"
"  --format FORMAT  binary (label int32, then float32 features; the\n"
"                   default), csv (header label,ts,f0,...) or file (one\n"
"                   sample per file, NAME.bin and NAME.bin.label)\n"
"  --samples N      samples (default 20000)\n"
"  --files F        binary/csv: files the samples are split over, at most\n"
"                   N (default 20, or N when fewer)\n"
"  --dim D          tabular: features per sample (default 8; 39 gives\n"
"                   160-byte records, as Criteo's)\n"
"  --classes K      classes (default 4)\n"
"  --seed S         random seed (default 1)\n"
"  --start-ts T     first sample's timestamp (default 1700000000)\n"
"  --interval-s X   seconds between samples (default 60); binary and file\n"
"                   samples take their file's mtime, the last sample's time\n"
"  --help           this text\n"
"\n"
"DIR is made when missing. One already there must be an empty folder of\n"
"yours that no one else can write to: the files of another stream left\n"
"beside this one would be registered with it.\n"
"\n"
"Exit status: 0 success, 1 write error, 2 bad usage or an --out DIR that\n"
"cannot be used (not a folder, not yours, writable by others, not empty).\n";

static int parse_kind(const char *text, pl_gen_kind *kind) {
    if (strcmp(text, "tabular") == 0)
        *kind = PL_GEN_TABULAR;
    else if (strcmp(text, "image") == 0)
        *kind = PL_GEN_IMAGE;
    else {
        fprintf(stderr, "aegis dataset gen: KIND: '%s' is not tabular or "
                        "image\n", text);
        return -1;
    }
    return 0;
}

/* One option's value into o; -1 after a message. */
static int gen_option(int c, const char *arg, pl_gen_opts *o) {
    const char *cmd = "dataset gen";
    long v;
    switch (c) {
    case 'o': o->out = arg; return 0;
    case 'F':
        if (pl_format_parse(arg, &o->format) == 0)
            return 0;
        fprintf(stderr, "aegis dataset gen: --format: '%s' is not binary, "
                        "csv or file\n", arg);
        return -1;
    case 'n':
        if (cli_parse_long(cmd, "samples", arg, 1, 1L << 40, &v) < 0)
            return -1;
        o->samples = (uint64_t)v;
        return 0;
    case 'f':
        if (cli_parse_long(cmd, "files", arg, 1, 1000000, &v) < 0)
            return -1;
        o->files = (uint32_t)v;
        return 0;
    case 'd':
        if (cli_parse_long(cmd, "dim", arg, 1, 100000, &v) < 0)
            return -1;
        o->dim = (uint32_t)v;
        return 0;
    case 'k':
        if (cli_parse_long(cmd, "classes", arg, 1, 1000000, &v) < 0)
            return -1;
        o->classes = (uint32_t)v;
        return 0;
    case 's':
        if (cli_parse_long(cmd, "seed", arg, 0, __LONG_MAX__, &v) < 0)
            return -1;
        o->seed = (uint64_t)v;
        return 0;
    case 't':
        if (cli_parse_long(cmd, "start-ts", arg, 0, 1L << 40, &v) < 0)
            return -1;
        o->start_ts = v;
        return 0;
    case 'i':
        if (cli_parse_long(cmd, "interval-s", arg, 0, 1L << 30, &v) < 0)
            return -1;
        o->interval_s = v;
        return 0;
    }
    return -1;
}

/* Whether the options given (given[c] set) apply to the stream asked
 * for, and --files fits --samples; the default --files is cut to the
 * samples. Each was taken and ignored, drift.json saying otherwise:
 * --dim of an image (32x32 always), --files past --samples ("files": 100
 * over 10 files written), --files of one sample per file. */
static int gen_options_fit(pl_gen_opts *o, const char *given) {
    if (given['d'] && o->kind == PL_GEN_IMAGE) {
        fputs("aegis dataset gen: --dim is for tabular streams: an image is "
              "32x32, 1024 features\n", stderr);
        return -1;
    }
    if (given['f'] && o->format == PL_FORMAT_FILE) {
        fputs("aegis dataset gen: --files is for --format binary and csv: "
              "--format file writes a file a sample\n", stderr);
        return -1;
    }
    if (given['f'] && o->files > o->samples) {
        fprintf(stderr, "aegis dataset gen: --files %u is more than "
                "--samples %llu: each file holds one sample or more\n",
                (unsigned)o->files, (unsigned long long)o->samples);
        return -1;
    }
    if (o->files > o->samples)
        o->files = (uint32_t)o->samples;
    return 0;
}

int cli_dataset_gen(int argc, char **argv) {
    static const struct option longopts[] = {
        {"out", required_argument, 0, 'o'},
        {"format", required_argument, 0, 'F'},
        {"samples", required_argument, 0, 'n'},
        {"files", required_argument, 0, 'f'},
        {"dim", required_argument, 0, 'd'},
        {"classes", required_argument, 0, 'k'},
        {"seed", required_argument, 0, 's'},
        {"start-ts", required_argument, 0, 't'},
        {"interval-s", required_argument, 0, 'i'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    pl_gen_opts o = {.format = PL_FORMAT_BINARY, .samples = 20000,
                     .files = 20, .dim = 8, .classes = 4, .seed = 1,
                     .start_ts = 1700000000, .interval_s = 60};
    int c;
    char given[128] = {0};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            fputs(help, stdout);
            return CLI_OK;
        }
        if (c == '?' || gen_option(c, optarg, &o) < 0)
            return CLI_USAGE;
        given[c] = 1;
    }
    if (optind != argc - 1 || !o.out) {
        fputs("aegis dataset gen: KIND and --out DIR are required (see "
              "--help)\n", stderr);
        return CLI_USAGE;
    }
    if (parse_kind(argv[optind], &o.kind) < 0 ||
        gen_options_fit(&o, given) < 0)
        return CLI_USAGE;
    char err[512];
    int rc = pl_gen_write(&o, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "aegis dataset gen: %s\n", err);
    /* an --out it cannot use is bad input; a write that failed, a failure */
    return rc == 0 ? CLI_OK : rc == PL_GEN_BAD_OUT ? CLI_USAGE : CLI_FAIL;
}
