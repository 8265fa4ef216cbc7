/* gen_prod.c -- writing production-shaped traces (gen_prod.h). */
#include "gen_prod.h"

#include "gen.h"
#include "prod_fit.h"

#include <math.h>
#include <stdlib.h>

/* An observed value and how often it was seen. */
typedef struct prod_bin {
    int value, count;
} prod_bin;

static const prod_bin widths[] = PROD_WIDTHS;
static const prod_bin shares[] = PROD_SHARES;
enum { NWIDTHS = sizeof(widths) / sizeof(*widths),
       NSHARES = sizeof(shares) / sizeof(*shares) };

double gen_prod_fitted_gap_s(void) {
    return PROD_GAP_SCALE_S * tgamma(1 + 1 / PROD_GAP_SHAPE);
}

/* The index of a bin drawn with the observed frequencies. */
static int draw_bin(const prod_bin *bins, int n, uint64_t *state) {
    long total = 0;
    for (int i = 0; i < n; i++) total += bins[i].count;
    long at = (long)(gen_next(state) % (uint64_t)total);
    int i = 0;
    while (at >= bins[i].count) at -= bins[i++].count;
    return i;
}

/* A standard normal draw (Box and Muller). */
static double normal(uint64_t *state) {
    const double two_pi = 6.283185307179586;
    double r = sqrt(-2 * log1p(-gen_uniform(state)));
    return r * cos(two_pi * gen_uniform(state));
}

/* The run-time fit of one class of jobs (prod_fit.h). */
typedef struct prod_runs {
    double p_long, mu, sigma, alpha;
} prod_runs;

static const prod_runs runs_narrow = PROD_RUN1, runs_wide = PROD_RUNW;

/* A run time of jobs of that width: from the Pareto tail above
 * PROD_LONG_S with its share, else from the log-normal body below it
 * (drawn again when above: a few percent of draws); cut at one second
 * and at the longest run seen. */
static double draw_run_s(int gpus, uint64_t *state) {
    const prod_runs *f = gpus == 1 ? &runs_narrow : &runs_wide;
    double run = PROD_LONG_S;
    if (gen_uniform(state) < f->p_long)
        run *= exp(-log1p(-gen_uniform(state)) / f->alpha);
    else
        for (int tries = 0; tries < 100 && run >= PROD_LONG_S; tries++)
            run = exp(f->mu + f->sigma * normal(state));
    return run < 1 ? 1 : run > PROD_RUN_MAX_S ? PROD_RUN_MAX_S : run;
}

/* The catalog's rows grouped by the widths the fit draws, so that a job
 * finds its own in one step however long the catalog. */
typedef struct prod_pool {
    const cat_workload **rows;
    int start[NWIDTHS], n[NWIDTHS];
} prod_pool;

/* Fills pool from cat; -2 with a message when a width has no row, -1
 * when memory runs out. */
static int pool_fill(prod_pool *pool, const cat_catalog *cat, char *err,
                     size_t errlen) {
    pool->rows = malloc((size_t)cat->count * sizeof(*pool->rows) + 1);
    if (!pool->rows) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int at = 0;
    for (int w = 0; w < NWIDTHS; w++) {
        pool->start[w] = at;
        for (int i = 0; i < cat->count; i++)
            if (cat->items[i].num_gpus == widths[w].value)
                pool->rows[at++] = &cat->items[i];
        pool->n[w] = at - pool->start[w];
        if (pool->n[w] == 0) {
            snprintf(err, errlen, "the catalog has no %d-GPU workload to "
                     "lend %d-GPU jobs their activity", widths[w].value,
                     widths[w].value);
            return -2;
        }
    }
    return 0;
}

/* A row of the pool of widths[w], drawn uniformly. */
static const cat_workload *draw_activity(const prod_pool *pool, int w,
                                         uint64_t *state) {
    return pool->rows[pool->start[w] +
                      (int)(gen_next(state) % (uint64_t)pool->n[w])];
}

/* An unknown catalog value is written as an empty cell. */
static void put_cell(FILE *out, double v, int decimals) {
    putc(',', out);
    if (v >= 0) fprintf(out, "%.*f", decimals, v);
}

/* Job i's catalog row: its run, its memory (the share asked: declared and
 * true peak alike, as the trace gives nothing else), and the activity of
 * the catalog row `like`, which activity_from names. */
static void put_row(FILE *out, long i, int gpus, double run, double mib,
                    const cat_workload *like) {
    fprintf(out, "prod%ld,%d,%.0f,%.0f", i, gpus, run, mib);
    put_cell(out, like->smact, 4);
    put_cell(out, like->smocc, 4);
    put_cell(out, like->drama, 4);
    put_cell(out, like->util_pct, 2);
    for (int e = 0; e < CAT_NEST; e++) fprintf(out, ",%.0f", mib);
    put_cell(out, like->sharing_score, 0);
    fprintf(out, ",%s\n", like->name);
}

/* The same job in the trace's per-job columns, which a simulator that
 * reads them takes over the catalog row's (docs/simulator.md). */
static void put_columns(FILE *out, int gpus, double run, double mib,
                        const cat_workload *like) {
    fprintf(out, ",%d,%.0f,%.0f,%.0f", gpus, mib, mib, run);
    put_cell(out, like->smact, 4);
    put_cell(out, like->smocc, 4);
    put_cell(out, like->drama, 4);
}

static const char catalog_header[] =
    "# one row per job of a trace written by aegis gen-trace --profile "
    "production\n"
    "name,num_gpus,solo_duration_s,peak_memory_mib,avg_smact,avg_smocc,"
    "avg_drama,horus_gpu_util_mean_pct,horus_mib,faketensor_mib,"
    "gpumemnet_mib,aegis_mib,lucid_ss,activity_from\n";

/* The jobs of gen_production(), from the grouped catalog. */
static void write_jobs(FILE *trace, FILE *catalog, const prod_pool *pool,
                       const gen_prod_opts *o) {
    /* Arrivals, job shapes, activity and users each have a stream, so
     * that another mean gap or user count leaves the jobs as they were. */
    uint64_t arrivals = o->seed, shape = o->seed ^ 0x9a0d5ea5ull,
             activity = o->seed ^ 0xac71717eull, users = o->seed ^ 0x5eed05e5ull;
    double scale = PROD_GAP_SCALE_S;
    if (o->mean_gap_s >= 0)
        scale *= o->mean_gap_s / gen_prod_fitted_gap_s();
    fputs(catalog_header, catalog);
    fprintf(trace, "job_index,submit_time_s,workload,num_gpus,mem_mib,"
            "peak_mib,duration_s,smact,smocc,drama%s\n",
            o->users > 0 ? ",user" : "");
    double t = 0;
    for (long i = 1; i <= o->jobs; i++) {
        int w = draw_bin(widths, NWIDTHS, &shape), gpus = widths[w].value;
        int milli = gpus == 1 ? shares[draw_bin(shares, NSHARES, &shape)].value
                              : 1000;
        double run = draw_run_s(gpus, &shape);
        const cat_workload *like = draw_activity(pool, w, &activity);
        double mib = ceil(milli * o->gpu_mem_mib / 1000);
        put_row(catalog, i, gpus, run, mib, like);
        fprintf(trace, "%ld,%.1f,prod%ld", i, t, i);
        put_columns(trace, gpus, run, mib, like);
        if (o->users > 0)
            fprintf(trace, ",user%d",
                    1 + (int)(gen_next(&users) % (uint64_t)o->users));
        putc('\n', trace);
        t += scale * pow(-log1p(-gen_uniform(&arrivals)), 1 / PROD_GAP_SHAPE);
    }
}

int gen_prod_check(const cat_catalog *cat, char *err, size_t errlen) {
    prod_pool pool;
    int rc = pool_fill(&pool, cat, err, errlen);
    free(pool.rows);
    return rc;
}

int gen_production(FILE *trace, FILE *catalog, const cat_catalog *cat,
                   const gen_prod_opts *o, char *err, size_t errlen) {
    prod_pool pool;
    int rc = pool_fill(&pool, cat, err, errlen);
    if (rc == 0) write_jobs(trace, catalog, &pool, o);
    free(pool.rows);
    if (rc < 0) return rc;
    if (ferror(trace) || ferror(catalog)) {
        snprintf(err, errlen, "cannot write the trace or its catalog");
        return -1;
    }
    return 0;
}
