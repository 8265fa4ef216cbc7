/* bench_estimate.c -- latency of aegis's memory estimate per description.
 *
 * For each description file it times, in the same run: reading and parsing
 * the JSON alone (the reference: the least any estimator reading this file
 * must do), parse + check + estimate (what `aegis estimate` and `aegis
 * submit --model` pay), and the estimate alone on a parsed description.
 * Each figure is the best of 5 rounds of enough calls to fill 20 ms, so a
 * busy shared machine inflates it less. Goal: under 1 ms per estimate.
 */
#include "estimate.h"

#include <stdio.h>
#include <time.h>

#define ROUNDS 5
#define ROUND_S 0.02

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef int (*bench_fn)(const char *path, const est_desc *parsed);

static volatile double sink; /* keeps the compiler from dropping the work */

static int just_parse(const char *path, const est_desc *parsed) {
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    if (!root) return -1;
    json_decref(root);
    return 0;
}

static int estimate_only(const est_desc *d) {
    est_components c;
    est_result r;
    est_physical(d, &c);
    est_correct(&c, &est_learned_shipped, EST_STACK_AEGIS, &r);
    sink = r.estimate_mib;
    return 0;
}

static int parse_and_estimate(const char *path, const est_desc *parsed) {
    char err[256];
    est_desc *d = est_desc_load(path, err, sizeof(err));
    if (!d) return -1;
    estimate_only(d);
    est_desc_free(d);
    return 0;
}

static int estimate_parsed(const char *path, const est_desc *parsed) {
    return estimate_only(parsed);
}

/* Seconds per call of fn: the best round. */
static double time_per_call(bench_fn fn, const char *path,
                            const est_desc *parsed) {
    double best = 1e9;
    for (int round = 0; round < ROUNDS; round++) {
        long calls = 0;
        double start = now_s(), t;
        do {
            if (fn(path, parsed) < 0) return -1;
            calls++;
        } while ((t = now_s() - start) < ROUND_S);
        if (t / (double)calls < best) best = t / (double)calls;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: bench_estimate DESC.json...\n", stderr);
        return 2;
    }
    printf("%-44s %7s %10s %10s %10s %8s\n", "description", "layers",
           "parse_us", "parse+est", "est_us", "ratio");
    double worst = 0;
    for (int i = 1; i < argc; i++) {
        char err[512];
        est_desc *d = est_desc_load(argv[i], err, sizeof(err));
        if (!d) {
            fprintf(stderr, "bench_estimate: %s\n", err);
            return 2;
        }
        double ref = time_per_call(just_parse, argv[i], d);
        double full = time_per_call(parse_and_estimate, argv[i], d);
        double est = time_per_call(estimate_parsed, argv[i], d);
        const char *base = argv[i];
        for (const char *p = argv[i]; *p; p++)
            if (*p == '/') base = p + 1;
        /* ratio: parse + estimate against parsing the JSON alone. */
        printf("%-44.44s %7zu %10.1f %10.1f %10.2f %8.2f\n", base, d->nlayers,
               ref * 1e6, full * 1e6, est * 1e6, full / ref);
        if (full > worst) worst = full;
        est_desc_free(d);
    }
    printf("slowest parse + estimate: %.3f ms (goal < 1 ms): %s\n",
           worst * 1e3, worst < 1e-3 ? "met" : "NOT met");
    return 0;
}
