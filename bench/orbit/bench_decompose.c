/* bench_decompose.c -- what decomposing costs: the 5-module mission
 * pipeline (debayer, 224x224 tiles, cloud cover, downsample, JPEG) on
 * 4512x4512 camera frames, run by DIPP (each module in its sandboxed worker,
 * a child of the fork server) against the same modules called one after another in
 * this one process (the monolithic reference), frame by frame alternating,
 * in the same run. Both write each step's output where that step wrote it
 * the frame before (a step pool), and the camera shoots into one kept
 * buffer, as flight code would. Prints each one's median time per frame
 * and the ratio (goal: DIPP within 5 %, ratio <= 1.05), and splits each
 * frame into the modules' runs alone (timed around `run`, in the worker
 * for DIPP) and what the frame took beyond them.
 *
 * Usage: bench_decompose MODULE_DIR [FRAMES] [SIZE] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera.h"
#include "pipeline.h"
#include "platform.h"
#include "runner.h"
#include "runner_child.h"
#include "step_pool.h"

static const char *const steps[] = {"debayer", "crop_tile", "cloud", "downsample",
                                    "encode_jpeg"};
#define NSTEPS 5

static int load(const char *dir, const dipp_module_info **mods, pdef *d) {
    memset(d, 0, sizeof *d);
    d->id = 1, d->count = NSTEPS;
    for (int k = 0; k < NSTEPS; k++) {
        char path[1024], err[256];
        snprintf(path, sizeof path, "%s/%s.so", dir, steps[k]);
        snprintf(d->step[k].name, sizeof d->step[k].name, "%s", steps[k]);
        void *lib = plat_lib_open(path, err, sizeof err);
        mods[k] = lib ? plat_lib_sym(lib, DIPP_MODULE_SYMBOL) : NULL;
        if (!mods[k]) {
            fprintf(stderr, "bench_decompose: %s: %s\n", path, lib ? "no symbol" : err);
            return -1;
        }
    }
    return 0;
}

/* Milliseconds each step took, summed over the frames. */
static double step_mono[NSTEPS], step_dipp[NSTEPS];
/* Milliseconds the modules' runs alone took, this frame. */
static double run_mono, run_dipp;

static void failed_in_process(unsigned k) {
    fprintf(stderr, "bench_decompose: %s failed in process\n", steps[k]);
    exit(1);
}

/* The monolithic reference: each module's run, in turn, in this process,
 * each step writing where DIPP's does (pipeline_step_output): its kept
 * output, the last one into a fresh batch. */
static double mono(const dipp_module_info **mods, const pdef *d, step_pool *pool,
                   const dbatch *in) {
    static const dipp_params none;
    uint64_t t0 = plat_now_ms(), t = t0;
    const dbatch *src = in;
    for (unsigned k = 0; k < NSTEPS; k++) {
        dipp_params p;
        char err[256];
        static dbatch fresh;
        dbatch *dst = pipeline_step_output(pool, d, k, src, &fresh);
        if (!dst || runner_resolve(mods[k], &none, &p, err, sizeof err))
            failed_in_process(k);
        uint64_t run_start = plat_now_us();
        int rc = mods[k]->run(&src->api, &p, &dst->api);
        run_mono += (double)(plat_now_us() - run_start) / 1000;
        if (rc || batch_commit(dst, err, sizeof err))
            failed_in_process(k);
        src = dst;
        step_mono[k] += (double)(plat_now_ms() - t);
        t = plat_now_ms();
    }
    batch_close((dbatch *)src);
    return (double)(plat_now_ms() - t0);
}

static double dipp(runner *r, const pdef *d, const dbatch *in) {
    dbatch out;
    pipe_report rep;
    uint64_t t0 = plat_now_ms();
    if (pipeline_run(r, d, in, &out, &rep)) {
        fprintf(stderr, "bench_decompose: %s: %s\n", rep.name, rep.detail);
        exit(1);
    }
    batch_close(&out);
    for (int k = 0; k < NSTEPS; k++) {
        step_dipp[k] += rep.ms[k];
        run_dipp += rep.run_us[k] / 1000.0;
    }
    return (double)(plat_now_ms() - t0);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Per frame, each way: the frame's time, and its modules' runs alone. */
typedef struct frame_times {
    double mono[1000], dipp[1000], run_mono[1000], run_dipp[1000];
} frame_times;

/* The median of frame - run over n frames. */
static double median_beyond(const double *frame, const double *run, int n) {
    double beyond[1000];
    for (int f = 0; f < n; f++)
        beyond[f] = frame[f] - run[f];
    return median(beyond, n);
}

static void report(frame_times *t, int frames, unsigned size) {
    /* first: median() sorts the arrays it is given in place */
    double bm = median_beyond(t->mono, t->run_mono, frames);
    double bd = median_beyond(t->dipp, t->run_dipp, frames);
    double m = median(t->mono, frames), p = median(t->dipp, frames);
    printf("bench_decompose: %d frames of %ux%u, 5 modules\n", frames, size, size);
    printf("monolithic (one process): %.0f ms/frame (median)\n", m);
    printf("DIPP (sandboxed workers): %.0f ms/frame (median)\n", p);
    for (int k = 0; k < NSTEPS; k++)
        printf("  %-12s %6.0f ms in process, %6.0f ms in its worker\n", steps[k],
               step_mono[k] / frames, step_dipp[k] / frames);
    printf("modules' runs alone: %.1f ms/frame in process, %.1f in their workers (median)\n",
           median(t->run_mono, frames), median(t->run_dipp, frames));
    printf("the frame beyond its runs: %.1f ms in process, %.1f by DIPP (median)\n", bm, bd);
    printf("DIPP/monolithic %.3f (goal <= 1.05): %s\n", p / m, p / m <= 1.05 ? "met" : "NOT met");
}

int main(int argc, char **argv) {
    int frames = argc > 2 ? atoi(argv[2]) : 5;
    unsigned size = argc > 3 ? (unsigned)atoi(argv[3]) : CAMERA_SIZE;
    const dipp_module_info *mods[NSTEPS];
    pdef d;
    runner r;
    if (argc < 2 || frames < 1 || frames > 1000 || size < 224) {
        fprintf(stderr, "usage: bench_decompose MODULE_DIR [FRAMES 1-1000] [SIZE >= 224]\n");
        return 2;
    }
    if (runner_start(&r, argv[1], (plat_limits){60000, 4096ull << 20}) ||
        load(argv[1], mods, &d))
        return 1;
    static frame_times t;
    static step_pool mono_pool;
    dbatch in;
    if (batch_create(&in, (uint64_t)size * size))
        return 1;
    in.kept = 1;
    for (int f = 0; f < frames; f++) {
        batch_reset(&in);
        if (camera_shoot(&in, size, 1u + (unsigned)f))
            return 1;
        int dipp_first = f % 2; /* alternate, so neither always runs warm */
        run_mono = run_dipp = 0;
        if (dipp_first)
            t.dipp[f] = dipp(&r, &d, &in);
        t.mono[f] = mono(mods, &d, &mono_pool, &in);
        if (!dipp_first)
            t.dipp[f] = dipp(&r, &d, &in);
        t.run_mono[f] = run_mono, t.run_dipp[f] = run_dipp;
    }
    batch_close(&in);
    step_pool_free(&mono_pool);
    runner_stop(&r);
    report(&t, frames, size);
    return 0;
}
