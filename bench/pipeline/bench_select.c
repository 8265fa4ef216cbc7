/* bench_select.c -- the selection goal (issue 28): building a 10M-key
 * trigger training set (NewDataStrategy's pool of all data, Random
 * presampling at 50%, from a pool of 20M samples) takes <= 3x the time of
 * writing 10M keys and weights sequentially (pl_trainset_write of an
 * array already in memory: the raw cost of the output). Both write, fsync
 * and rename a file in the same folder; the fastest of 3 interleaved runs
 * of each is compared.
 *
 *   bench_select [--keys N] [--dir DIR]   (N: keys in the set, 10M)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "select.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *err)
{
    fprintf(stderr, "bench_select: %s\n", err);
    exit(1);
}

static double time_write(const pl_trainset_item *items, size_t n,
                         const char *path)
{
    char err[512];
    double t0 = now_s();
    if (pl_trainset_write(path, items, n, 1, 0, err, sizeof err) < 0)
        die(err);
    return now_s() - t0;
}

static double time_build(const pl_sample *samples, size_t pool,
                         const char *path)
{
    static const char config[] =
        "{\"name\": \"CoresetStrategy\", \"tail_triggers\": null, "
        "\"presampling_config\": {\"strategy\": \"Random\", \"ratio\": 50}}";
    char err[512];
    json_t *section = json_loads(config, 0, NULL);
    double t0 = now_s();
    pl_selector *sel = pl_selector_new(section, 1, err, sizeof err);
    if (!sel || pl_selector_build(sel, samples, pool, NULL, 0, path, err,
                                  sizeof err) < 0)
        die(err);
    pl_selector_free(sel);
    double t = now_s() - t0;
    json_decref(section);
    return t;
}

int main(int argc, char **argv)
{
    size_t keys = 10000000;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--keys") == 0)
            keys = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[i + 1];
    }
    size_t pool = 2 * keys;
    pl_sample *samples = calloc(pool, sizeof *samples);
    pl_trainset_item *items = malloc(keys * sizeof *items);
    if (!samples || !items)
        die("out of memory");
    for (size_t i = 0; i < pool; i++)
        samples[i] = (pl_sample){.key = i, .ts = (int64_t)i, .label = (int64_t)(i % 10)};
    for (size_t i = 0; i < keys; i++)
        items[i] = (pl_trainset_item){2 * i, 1.0f, 0};
    char path[4096];
    snprintf(path, sizeof path, "%s/aegis-bench-select-%d.set", dir, (int)getpid());
    double best_write = 1e9, best_build = 1e9;
    for (int run = 0; run < 3; run++) {
        double w = time_write(items, keys, path);
        double b = time_build(samples, pool, path);
        best_write = w < best_write ? w : best_write;
        best_build = b < best_build ? b : best_build;
    }
    unlink(path);
    printf("write %zu keys and weights: %.3f s (%.1f M keys/s)\n", keys,
           best_write, keys / best_write / 1e6);
    printf("build a %zu-key set (Random 50%% of %zu): %.3f s\n", keys, pool,
           best_build);
    double ratio = best_build / best_write;
    printf("ratio %.2f (goal: <= 3)\n", ratio);
    free(samples);
    free(items);
    return ratio <= 3.0 ? 0 : 1;
}
