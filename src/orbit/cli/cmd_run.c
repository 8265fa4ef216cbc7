/* cmd_run.c -- `dipp run`: the pipeline daemon's work loop on the ground
 * or in a test: for each simulated camera frame, each definition runs on
 * it in turn; a failing module loses that pipeline's batch, reported with
 * its code, and the loop goes on with the next. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"
#include "cli.h"
#include "errors.h"
#include "pipeline.h"
#include "platform.h"
#include "runner.h"
#include "slots.h"

static const char text[] =
    "Usage: dipp run --modules DIR [OPTIONS] [DEF.yaml...]\n"
    "Runs each pipeline definition on each frame of the simulated camera\n"
    "(synthetic Earth with clouds, raw RGGB Bayer). Prints one line a\n"
    "pipeline and frame: ok with its images, or lost with the error number\n"
    "code*1000 + pipeline*100 + module and why. A lost batch never stops the\n"
    "run; the exit status is 3 when one was lost.\n"
    "  --modules DIR    folder of the modules (NAME.so)\n"
    "  --store DIR      also run the definitions in the store's pipeline slots\n"
    "                   (as on board; a bad slot is reported and skipped)\n"
    "  --frames N       camera frames (default 1)\n"
    "  --size N         frame side in pixels (default 4512, the flight camera's)\n"
    "  --seed N         scene of the first frame (default 1; then seed+1...)\n"
    "  --timeout-ms N   a module's time limit (default 10000)\n"
    "  --mem-mib N      private memory a module may add once sandboxed (default 512)\n"
    "  --out DIR        write each pipeline's output images there\n"
    "Exit status: 0 every batch processed, 1 bad input (a definition, the module\n"
    "folder, the store), 2 usage, 3 a batch lost (each one reported).\n";

typedef struct run_opts {
    const char *modules, *out, *store;
    unsigned frames, size, seed;
    plat_limits lim;
} run_opts;

static const struct option opts[] = {
    {"modules", required_argument, NULL, 'm'}, {"frames", required_argument, NULL, 'f'},
    {"size", required_argument, NULL, 's'},    {"seed", required_argument, NULL, 'e'},
    {"timeout-ms", required_argument, NULL, 't'}, {"mem-mib", required_argument, NULL, 'M'},
    {"out", required_argument, NULL, 'o'},     {"store", required_argument, NULL, 'S'},
    {NULL, 0, NULL, 0},
};

/* s as a whole number lo..hi into *v; else -1, saying the range as the
 * other commands do (it said only "not a number in range"). */
static int number(const char *what, const char *s, unsigned lo, unsigned hi, unsigned *v) {
    char *end;
    unsigned long x = strtoul(s, &end, 10);
    if (*s && !*end && x >= lo && x <= hi) {
        *v = (unsigned)x;
        return 0;
    }
    fprintf(stderr, "dipp run: %s %s: not a number from %u to %u\n", what, s, lo, hi);
    return -1;
}

static int parse(int argc, char **argv, run_opts *o) {
    unsigned mib = 512, ms = 10000;
    *o = (run_opts){NULL, NULL, NULL, 1, CAMERA_SIZE, 1, {0, 0}};
    int ch, bad = 0;
    optind = 1;
    while (!bad && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        const char *what = ch == 'f' ? "--frames" : ch == 's' ? "--size" : ch == 'e' ? "--seed"
                         : ch == 't' ? "--timeout-ms" : "--mem-mib";
        bad = ch == '?' ? 1
            : ch == 'm' ? (o->modules = optarg, 0)
            : ch == 'o' ? (o->out = optarg, 0)
            : ch == 'S' ? (o->store = optarg, 0)
            : ch == 'f' ? number(what, optarg, 1, 1000000, &o->frames)
            : ch == 's' ? number(what, optarg, 2, 16384, &o->size)
            : ch == 'e' ? number(what, optarg, 0, 4000000000u, &o->seed)
            : ch == 't' ? number(what, optarg, 1, 3600000, &ms)
                        : number(what, optarg, 1, 1u << 20, &mib);
    }
    o->lim = (plat_limits){ms, (uint64_t)mib << 20};
    if (!bad && (!o->modules || (optind == argc && !o->store))) {
        fputs(text, stderr);
        bad = 1;
    }
    return bad ? -1 : 0;
}

static const char *suffix(uint32_t format) {
    static const char *const s[] = {"bin", "bayer.pgm", "ppm", "pgm", "jpg", "png"};
    return format <= DIPP_FMT_PNG ? s[format] : s[0];
}

static void save(const run_opts *o, unsigned frame, unsigned pipe, const dbatch *b) {
    for (uint32_t k = 0; k < b->api.count; k++) {
        const dipp_image *img = &b->api.images[k];
        char path[4096];
        snprintf(path, sizeof path, "%s/f%u-p%u-%u.%s", o->out, frame, pipe, (unsigned)k,
                 suffix(img->format));
        FILE *f = fopen(path, "wb");
        if (f && dipp_format_bpp(img->format))
            fprintf(f, "P%d\n%u %u\n255\n", img->format == DIPP_FMT_RGB8 ? 6 : 5,
                    (unsigned)img->width, (unsigned)img->height);
        if (!f || fwrite(img->data, 1, img->size, f) != img->size || fclose(f))
            fprintf(stderr, "dipp run: %s: cannot write\n", path);
    }
}

static int one(runner *r, const run_opts *o, const pdef *d, unsigned frame,
               const dbatch *in) {
    dbatch out;
    pipe_report rep;
    uint32_t number = pipeline_run(r, d, in, &out, &rep);
    if (number) {
        printf("frame %u pipeline %u: lost: error %u (%s) in module %u '%s': %s\n",
               frame, (unsigned)d->id, (unsigned)number, dipp_code_name(rep.code),
               rep.module, rep.name, rep.detail);
        return 1;
    }
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < out.api.count; k++)
        bytes += out.api.images[k].size;
    printf("frame %u pipeline %u: ok: %u images, %llu bytes; ms:", frame,
           (unsigned)d->id, (unsigned)out.api.count, (unsigned long long)bytes);
    for (uint32_t k = 0; k < d->count; k++)
        printf(" %s %u", d->step[k].name, (unsigned)rep.ms[k]);
    putchar('\n');
    if (o->out)
        save(o, frame, d->id, &out);
    batch_close(&out);
    return 0;
}

/* Each frame is shot into one camera buffer, kept as a camera's is, so
 * that the first module's worker keeps it mapped. */
static int frames(runner *r, const run_opts *o, const pdef *defs, int ndefs) {
    int lost = 0;
    dbatch in;
    if (batch_create(&in, (uint64_t)o->size * o->size)) {
        fprintf(stderr, "dipp run: no shared memory for a %ux%u frame\n", o->size, o->size);
        return EXIT_BAD;
    }
    in.kept = 1;
    for (unsigned f = 0; f < o->frames; f++) {
        batch_reset(&in);
        if (camera_shoot(&in, o->size, o->seed + f)) {
            fprintf(stderr, "dipp run: the camera's frame does not fit its buffer\n");
            batch_close(&in);
            return EXIT_BAD;
        }
        for (int k = 0; k < ndefs; k++)
            lost |= one(r, o, &defs[k], f + 1, &in);
        fflush(stdout);
    }
    batch_close(&in);
    return lost ? EXIT_LOST : 0;
}

static void skipped(void *ctx, const char *why) {
    (void)ctx;
    fprintf(stderr, "dipp run: %s: slot skipped\n", why);
}

/* The YAML files' definitions, then the store's: how many, or -1. */
static int load_defs(const run_opts *o, int nfiles, char **files, pdef *defs) {
    char err[512];
    for (int k = 0; k < nfiles; k++) {
        if (cli_read_def(files[k], &defs[k]))
            return -1;
        if (pdef_apply_configs(&defs[k], o->store, err, sizeof err)) {
            fprintf(stderr, "dipp run: %s: %s\n", files[k], err);
            return -1;
        }
    }
    int n = nfiles + (o->store ? pdef_load_slots(o->store, defs + nfiles, skipped, NULL) : 0);
    if (n == 0)
        fprintf(stderr, "dipp run: no definition to run in %s\n", o->store);
    return n ? n : -1;
}

int cmd_run(int argc, char **argv) {
    run_opts o;
    runner r;
    if (cli_help(argc, argv, text))
        return 0;
    if (parse(argc, argv, &o))
        return EXIT_USAGE;
    int nfiles = argc - optind;
    pdef *defs = calloc((size_t)nfiles + SLOT_PIPELINES, sizeof *defs);
    int ndefs = defs ? load_defs(&o, nfiles, argv + optind, defs) : -1;
    int rc = ndefs > 0 ? runner_start(&r, o.modules, o.lim) : -1;
    if (rc) {
        if (ndefs > 0)
            fprintf(stderr, "dipp run: cannot start the fork server\n");
        free(defs);
        return EXIT_BAD;
    }
    if (plat_sandbox_loosening())
        fprintf(stderr, "dipp run: note: %s\n", plat_sandbox_loosening());
    rc = frames(&r, &o, defs, ndefs);
    runner_stop(&r);
    free(defs);
    return rc;
}
