/* bench_drift.c -- the drift trigger's goal (issue 28): on generated
 * streams with known drift, with the default configuration and threshold,
 * it fires within 2 windows after every abrupt drift point and after the
 * end of every gradual drift, and at most once per 20 windows where there
 * is no drift. Prints each seed's fires and scores, then the worst ratios
 * against the goal; exits 1 when a seed misses it.
 *
 * A gradual drift counts as caught by a fire in its second half too
 * (caught() says why). The stream (docs/benchmarks.md): 4 classes of priors 40/30/20/10%,
 * Gaussian (sigma 1) around means on a circle of radius 3 in features 0-1
 * and radius 1.5 in features 2-3; a drift rotates the means by 45 degrees
 * (abrupt: at once; gradual:
 * each sample from the new concept with a probability rising linearly over
 * 4 windows). Layout, in windows of 1,000 samples: 20 stable, abrupt,
 * 20 stable, gradual over 4, 20 stable, abrupt, 20 stable (85 windows).
 *
 * With --stream DIR it reads instead a stream `aegis dataset gen tabular
 * --format binary` wrote: its records (int32 label, float32 features) in
 * DIR/part-*.bin and its drift points in DIR/drift.json (an abrupt drift,
 * a gradual one and a label shift, scored as an abrupt drift).
 *
 *   bench_drift [--seeds N] [--threshold X] [--stream DIR]...
 */
#include <glob.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_rng.h"
#include "trigger.h"

enum { WINDOW = 1000, DIM = 4, CLASSES = 4, GRADUAL_WINDOWS = 4,
       MAX_DRIFTS = 8 };
/* 45 degrees, the farthest from the 4 classes' own symmetry (90). */
#define ROTATION 0.7853981633974483
/* Unequal priors: with equal ones the mixture is 4-fold symmetric and a
 * rotation barely moves its low moments, which no unsupervised test of
 * 1,000 samples sees; label shift is part of the generator's drift. */
static const double priors[CLASSES] = {0.4, 0.3, 0.2, 0.1};

/* A drift: from sample `start`, over `length` samples (0: abrupt). */
typedef struct drift {
    size_t start, length;
} drift;

/* A stream: samples, their dim features and its drift points. */
typedef struct stream {
    size_t n, dim;
    pl_sample *s;
    float *f;
    drift drifts[MAX_DRIFTS];
    int ndrifts;
} stream;

static const drift builtin_drifts[] = {
    {20 * WINDOW, 0},
    {41 * WINDOW, GRADUAL_WINDOWS * WINDOW},
    {65 * WINDOW, 0},
};
enum { BUILTIN_SAMPLES = 85 * WINDOW };

static double normal(pl_rng *r)
{
    double u = pl_rng_unit(r), v = pl_rng_unit(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * 3.141592653589793 * v);
}

/* The concept (number of rotations) sample i is drawn from. */
static int concept_of(size_t i, pl_rng *r)
{
    int concept = 0;
    for (int d = 0; d < 3; d++) {
        const drift *dr = &builtin_drifts[d];
        if (i < dr->start)
            break;
        size_t into = i - dr->start;
        if (into >= dr->length ||
            pl_rng_unit(r) < (double)into / (double)dr->length)
            concept++;
    }
    return concept;
}

static int draw_label(pl_rng *r)
{
    double u = pl_rng_unit(r);
    int label = 0;
    while (label < CLASSES - 1 && u >= priors[label])
        u -= priors[label++];
    return label;
}

static void make_stream(uint64_t seed, stream *st)
{
    pl_rng r;
    pl_rng_seed(&r, seed, 0);
    st->n = BUILTIN_SAMPLES;
    st->dim = DIM;
    st->ndrifts = 3;
    memcpy(st->drifts, builtin_drifts, sizeof builtin_drifts);
    pl_sample *s = st->s;
    float *f = st->f;
    for (size_t i = 0; i < st->n; i++) {
        int label = draw_label(&r);
        double angle = 2.0 * 3.141592653589793 * label / CLASSES +
                       ROTATION * concept_of(i, &r);
        s[i] = (pl_sample){.key = i, .ts = (int64_t)i, .label = label};
        float *row = f + i * DIM;
        row[0] = (float)(3.0 * cos(angle) + normal(&r));
        row[1] = (float)(3.0 * sin(angle) + normal(&r));
        row[2] = (float)(1.5 * cos(angle) + normal(&r));
        row[3] = (float)(1.5 * sin(angle) + normal(&r));
    }
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_drift: %s: %s\n", what, detail);
    exit(2);
}

/* The drift points of DIR/drift.json: gradual ones with their length,
 * the others (abrupt, label shift) as abrupt. */
static void read_drifts(const json_t *doc, stream *st)
{
    size_t i;
    const json_t *d;
    json_array_foreach(json_object_get(doc, "drifts"), i, d) {
        if (st->ndrifts == MAX_DRIFTS)
            break;
        json_int_t start = json_integer_value(json_object_get(d, "key"));
        json_int_t end = start;
        if (json_object_get(d, "start_key")) {
            start = json_integer_value(json_object_get(d, "start_key"));
            end = json_integer_value(json_object_get(d, "end_key"));
        }
        st->drifts[st->ndrifts++] = (drift){(size_t)start, (size_t)(end - start)};
    }
}

/* Appends the records of one part file to the stream. */
static void read_part(const char *path, size_t record, size_t label_size,
                      stream *st, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, "cannot open");
    unsigned char buf[65536];
    if (record > sizeof buf)
        die(path, "records too large");
    while (st->n < cap && fread(buf, record, 1, f) == 1) {
        int32_t label;
        memcpy(&label, buf, sizeof label);
        st->s[st->n] = (pl_sample){.key = st->n, .ts = (int64_t)st->n, .label = label};
        memcpy(st->f + st->n * st->dim, buf + label_size, st->dim * sizeof(float));
        st->n++;
    }
    fclose(f);
}

static void read_stream(const char *dir, stream *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/drift.json", dir);
    json_t *doc = json_load_file(path, 0, NULL);
    const char *format = json_string_value(json_object_get(doc, "format"));
    if (!doc || !format || strcmp(format, "binary") != 0)
        die(path, "not a binary stream's drift.json");
    size_t cap = (size_t)json_integer_value(json_object_get(doc, "samples"));
    st->dim = (size_t)json_integer_value(json_object_get(doc, "dim"));
    size_t record = (size_t)json_integer_value(json_object_get(doc, "record_size"));
    size_t label_size = (size_t)json_integer_value(json_object_get(doc, "label_size"));
    if (record != label_size + 4 * st->dim || label_size != 4)
        die(path, "record_size is not a 4-byte label and float32 features");
    st->s = malloc(cap * sizeof *st->s);
    st->f = malloc(cap * st->dim * sizeof *st->f);
    st->n = 0;
    st->ndrifts = 0;
    read_drifts(doc, st);
    json_decref(doc);
    glob_t parts;
    snprintf(path, sizeof path, "%s/part-*.bin", dir);
    if (glob(path, 0, NULL, &parts) != 0)
        die(path, "no part files");
    for (size_t i = 0; i < parts.gl_pathc; i++)  /* glob sorts: key order */
        read_part(parts.gl_pathv[i], record, label_size, st, cap);
    globfree(&parts);
}

/* The end of the span in which drift d may (and must) be detected: two
 * windows after the drift ends. */
static size_t allowed_end(const stream *st, int d)
{
    return st->drifts[d].start + st->drifts[d].length + 2 * WINDOW;
}

/* Whether sample i lies in a drift's span, from its start to 2 windows
 * after its end. */
static bool in_drift(const stream *st, size_t i)
{
    for (int d = 0; d < st->ndrifts; d++)
        if (i >= st->drifts[d].start && i < allowed_end(st, d))
            return true;
    return false;
}

/* Whether some fire lies in [from, to). */
static bool fired_in(const size_t *fires, size_t n, size_t from, size_t to)
{
    for (size_t i = 0; i < n; i++)
        if (fires[i] >= from && fires[i] < to)
            return true;
    return false;
}

static size_t run_trigger(const char *config, const stream *st, size_t *fires)
{
    json_t *section = json_loads(config, 0, NULL);
    char err[256];
    pl_trigger *t = section ? pl_trigger_new(section, err, sizeof err) : NULL;
    if (!t) {
        fprintf(stderr, "bench_drift: %s\n", section ? err : "bad config");
        exit(2);
    }
    size_t n = 0;
    if (pl_trigger_inform(t, st->s, st->f, st->dim, st->n, fires, &n, err,
                          sizeof err) < 0) {
        fprintf(stderr, "bench_drift: %s\n", err);
        exit(1);
    }
    pl_trigger_free(t);
    json_decref(section);
    return n;
}

/* A drift is caught by a fire no later than 2 windows after its end whose
 * current window is mostly the new concept (its samples' mean chance of
 * the new concept at least one half): the model that trigger trains
 * learns the new concept. For an abrupt drift that is any fire in the 2
 * windows after it; a gradual drift may also be caught in its second
 * half, after which what is left of it is too small to fire again. */
static bool caught(const stream *st, int d, const size_t *fires, size_t n)
{
    const drift *dr = &st->drifts[d];
    size_t from = dr->start + dr->length / 2 + WINDOW / 2 - 1;
    return fired_in(fires, n, from, allowed_end(st, d));
}

typedef struct score {
    int caught;            /* drifts caught (of the stream's) */
    size_t false_fires;    /* fires outside every drift's span */
    size_t quiet_windows;  /* windows outside every drift's span */
} score;

static score score_run(const stream *st, const size_t *fires, size_t n)
{
    score sc = {0};
    for (int d = 0; d < st->ndrifts; d++)
        sc.caught += caught(st, d, fires, n);
    for (size_t i = 0; i < n; i++)
        sc.false_fires += !in_drift(st, fires[i]);
    for (size_t w = 0; w < st->n / WINDOW; w++)
        sc.quiet_windows += !in_drift(st, w * WINDOW) &&
                            !in_drift(st, w * WINDOW + WINDOW - 1);
    return sc;
}

static void print_run(const char *name, const stream *st, const size_t *fires,
                      size_t n, score sc)
{
    printf("%s: fires at window", name);
    for (size_t i = 0; i < n; i++)
        printf(" %.2f", (double)(fires[i] + 1) / WINDOW);
    printf("; caught %d/%d drifts; %zu fires in %zu no-drift windows\n",
           sc.caught, st->ndrifts, sc.false_fires, sc.quiet_windows);
}

/* The goal's totals over all streams scored. */
typedef struct totals {
    int drifts, missed;
    double worst_false;    /* the highest false-fire rate of a stream */
} totals;

static void score_stream(const char *name, const char *config, const stream *st,
                         size_t *fires, totals *tot)
{
    size_t n = run_trigger(config, st, fires);
    score sc = score_run(st, fires, n);
    print_run(name, st, fires, n, sc);
    tot->drifts += st->ndrifts;
    tot->missed += st->ndrifts - sc.caught;
    double rate = sc.quiet_windows ? (double)sc.false_fires / sc.quiet_windows : 0;
    tot->worst_false = rate > tot->worst_false ? rate : tot->worst_false;
}

int main(int argc, char **argv)
{
    int seeds = 5;
    char config[256] = "{\"id\": \"DataDriftTrigger\"}";
    const char *dirs[16];
    int ndirs = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--seeds") == 0)
            seeds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--stream") == 0 && ndirs < 16)
            dirs[ndirs++] = argv[i + 1];
        else if (strcmp(argv[i], "--threshold") == 0)
            snprintf(config, sizeof config, "{\"id\": \"DataDriftTrigger\", "
                     "\"metrics\": {\"mmd\": {\"id\": \"AlibiDetectMmdDriftMetric\", "
                     "\"threshold\": %s}}}", argv[i + 1]);
    }
    printf("trigger: %s\n", config);
    totals tot = {0};
    stream st = {.s = malloc(BUILTIN_SAMPLES * sizeof *st.s),
                 .f = malloc(BUILTIN_SAMPLES * DIM * sizeof *st.f)};
    size_t *fires = malloc(BUILTIN_SAMPLES * sizeof *fires);
    for (int seed = 1; seed <= seeds; seed++) {
        char name[32];
        snprintf(name, sizeof name, "seed %d", seed);
        make_stream((uint64_t)seed, &st);
        score_stream(name, config, &st, fires, &tot);
    }
    free(st.s);
    free(st.f);
    for (int d = 0; d < ndirs; d++) {
        read_stream(dirs[d], &st);
        fires = realloc(fires, (st.n ? st.n : 1) * sizeof *fires);
        score_stream(dirs[d], config, &st, fires, &tot);
        free(st.s);
        free(st.f);
    }
    printf("drifts caught within 2 windows: %d/%d (goal: all)\n",
           tot.drifts - tot.missed, tot.drifts);
    printf("worst no-drift fire rate: %.4f per window, ratio %.2f of the goal "
           "1/20 (goal: <= 1)\n", tot.worst_false, tot.worst_false * 20);
    free(fires);
    return tot.missed == 0 && tot.worst_false <= 1.0 / 20 ? 0 : 1;
}
