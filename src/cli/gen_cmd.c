/* gen_cmd.c -- `aegis gen-trace`: a synthetic trace on stdout. */
#include "cli.h"

#include "catalog.h"
#include "gen.h"
#include "gen_prod.h"
#include "trace.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
"usage: aegis gen-trace --jobs N [--seed S] [--catalog FILE] [--mean-gap-s X]\n"
"                       [--workloads NAME[,NAME...]] [--users N] [--feeds K]\n"
"       aegis gen-trace --profile production --catalog-out FILE --jobs N\n"
"                       [--seed S] [--catalog FILE] [--mean-gap-s X]\n"
"                       [--gpu-mem-mib M] [--users N]\n"
"       aegis gen-trace --list [--catalog FILE]\n"
"\n"
"Writes a job trace in CSV (job_index,submit_time_s,workload) to stdout:\n"
"N jobs whose arrivals form a Poisson process (exponential gaps of mean X\n"
"seconds, first job at 0) and whose workloads are drawn uniformly from the\n"
"catalog's measured rows, or from the named ones. The same seed gives the\n"
"same trace on every machine.\n"
"\n"
"With --profile production, arrivals, run times, GPU counts (1, 2, 4, 8)\n"
"and memory follow a fit to Alibaba's GPU cluster trace of 2023: Weibull\n"
"gaps (mean 479 s unless X is given), run times of median 650 s (1 GPU;\n"
"log-normal, with a heavy tail past a day), each job asking for a share\n"
"of one GPU's M MiB as those pods did (58% of 1-GPU jobs a whole one).\n"
"Every job gets a catalog row of its own, written to FILE, which the\n"
"trace names: run it with 'aegis sim --trace TRACE --catalog FILE\n"
"--gpus 8'. The trace's lines also carry num_gpus, mem_mib, peak_mib,\n"
"duration_s, smact, smocc and drama. A job's GPU activity is that of a\n"
"catalog workload of its GPU count, drawn uniformly.\n"
"\n"
"  --jobs N          number of jobs (required)\n"
"  --seed S          random seed (default 1)\n"
"  --catalog FILE    workload catalog (default: the bundled data/catalog.csv)\n"
"  --mean-gap-s X    mean seconds between arrivals (default 60, production\n"
"                    479; 0 submits every job at time 0)\n"
"  --workloads LIST  draw only from these catalog workloads (comma-separated;\n"
"                    a name given twice is drawn twice as often); an\n"
"                    unknown name is refused with the nearest known ones.\n"
"                    Without it, the rows derived from others (the 4- and\n"
"                    8-GPU data-parallel ones) are not drawn\n"
"  --profile P       uniform (the default) or production (above)\n"
"  --catalog-out FILE  production: where the jobs' catalog goes (required)\n"
"  --gpu-mem-mib M   production: memory of the GPU whose share a job asks\n"
"                    for (default 40960)\n"
"  --users N         add a user column, each job's user drawn uniformly\n"
"                    from user1..userN (aegis sim's fair share reads it)\n"
"  --feeds K         uniform only: hyper-parameter sweeps on K shared data\n"
"                    sets: feed1..K each train one workload drawn from the\n"
"                    pool, with a data-loading cost of 1 to 4 CPU cores;\n"
"                    each job runs a feed drawn uniformly (feed and\n"
"                    load_cpus columns, which aegis sim reads:\n"
"                    docs/simulator.md)\n"
"  --list            print the catalog's workload names, one per line\n"
"  --help            this text\n"
"\n"
"To load a cluster of G GPUs to about a fraction u of its exclusive\n"
"capacity, take X = (mean GPU-seconds per job) / (u * G); the bundled\n"
"catalog's mean is about 2164 GPU-seconds per job, the production\n"
"profile's about 9600 (a few very long jobs decide it in a short trace).\n"
"\n"
"Exit status: 0 success, 1 write error, 2 bad usage, bad catalog or an\n"
"unknown workload.\n";

/* The workloads to draw from: the whole catalog, or the names in `list`
 * (modified in place). NULL after a message when a name is unknown or
 * memory runs out. The caller frees the array. */
static const cat_workload **gen_pool(const cat_catalog *cat, char *list,
                                     int *npool) {
    size_t cap = list ? strlen(list) / 2 + 1 : (size_t)cat->count;
    const cat_workload **pool = malloc(cap * sizeof(*pool));
    if (!pool) {
        fprintf(stderr, "aegis gen-trace: out of memory\n");
        return NULL;
    }
    int n = 0;
    if (!list)
        for (int i = 0; i < cat->count; i++)
            if (!cat->items[i].derived) pool[n++] = &cat->items[i];
    for (char *name = list ? strtok(list, ",") : NULL; name;
         name = strtok(NULL, ",")) {
        pool[n] = cat_find(cat, name, strlen(name));
        if (!pool[n++]) {
            char near[512];
            cat_suggest(cat, name, strlen(name), near, sizeof(near));
            fprintf(stderr, "aegis gen-trace: --workloads: '%s' is not in "
                    "the catalog%s (aegis gen-trace --list lists them)\n",
                    name, near);
            free(pool);
            return NULL;
        }
    }
    if (n == 0) {
        fprintf(stderr, "aegis gen-trace: --workloads: no workload named\n");
        free(pool);
        return NULL;
    }
    *npool = n;
    return pool;
}

/* --list: the catalog's names, in its order; frees cat. */
static int gen_list(cat_catalog *cat) {
    for (int i = 0; i < cat->count; i++) puts(cat->items[i].name);
    cat_free(cat);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "aegis gen-trace: cannot write the list\n");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* What the command line asks for. */
typedef struct gen_args {
    long jobs, seed, users, feeds;
    double gap;                 /* < 0: the profile's default */
    double gpu_mem_mib;
    const char *catalog, *catalog_out;
    char *workloads;
    bool list, production;
} gen_args;

/* One option into a; 0, -1 on a bad value, 1 for --help. */
static int gen_option(int opt, gen_args *a) {
    switch (opt) {
    case 'n': return cli_parse_long("gen-trace", "jobs", optarg, 1, 100000000,
                                    &a->jobs);
    case 's': return cli_parse_long("gen-trace", "seed", optarg, 0,
                                    0x7fffffffL, &a->seed);
    case 'c': a->catalog = optarg; return 0;
    case 'g': return cli_parse_double("gen-trace", "mean-gap-s", optarg, 0,
                                      1e9, &a->gap);
    case 'w': a->workloads = optarg; return 0;
    case 'u': return cli_parse_long("gen-trace", "users", optarg, 1, 1000000,
                                    &a->users);
    case 'f': return cli_parse_long("gen-trace", "feeds", optarg, 1,
                                    GEN_MAX_FEEDS, &a->feeds);
    case 'p':
        a->production = strcmp(optarg, "production") == 0;
        if (a->production || strcmp(optarg, "uniform") == 0) return 0;
        fprintf(stderr, "aegis gen-trace: --profile: '%s' is neither "
                "uniform nor production\n", optarg);
        return -1;
    case 'o': a->catalog_out = optarg; return 0;
    case 'm': return cli_parse_double("gen-trace", "gpu-mem-mib", optarg, 1,
                                      1e9, &a->gpu_mem_mib);
    case 'l': a->list = true; return 0;
    case 'h': return 1;
    default: return -1;
    }
}

/* The combination of options that cannot be: its message, or NULL. */
static const char *gen_misuse(const gen_args *a, int extra) {
    if (extra) return "unexpected argument";
    if (a->jobs < 0 && !a->list) return "--jobs is required";
    /* Half the span a trace may have (TRACE_MAX_SUBMIT_S): random gaps
     * add up to about their mean times the jobs, a little more or less. */
    if ((double)a->jobs * a->gap > TRACE_MAX_SUBMIT_S / 2)
        return "--jobs times --mean-gap-s is over 5e11 s, half the 1e12 s "
               "a trace may span";
    if (!a->production)
        return a->catalog_out || a->gpu_mem_mib > 0
                   ? "--catalog-out and --gpu-mem-mib need --profile production"
                   : NULL;
    if (!a->catalog_out) return "--profile production needs --catalog-out";
    if (a->workloads || a->feeds) return "--profile production draws its "
                                         "own jobs: no --workloads or --feeds";
    return NULL;
}

/* --profile production: the trace on stdout, its catalog in a file. */
/* Copies what was written to `from` to stdout: 0, or -1 when a read or
 * the write fails. */
static int copy_to_stdout(FILE *from) {
    char buf[65536];
    size_t n;
    rewind(from);
    while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
        if (fwrite(buf, 1, n, stdout) != n) return -1;
    return ferror(from) ? -1 : 0;
}

/* The production profile: the trace and its per-job catalog, written in
 * one pass. The trace is held in a temporary file until the catalog is
 * safely written, so a catalog that cannot be written leaves no trace on
 * stdout naming workloads of a catalog that does not exist. */
static int gen_production_run(const gen_args *a, const cat_catalog *cat) {
    char err[256];
    int rc = gen_prod_check(cat, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "aegis gen-trace: %s\n", err);
        return rc == -2 ? CLI_USAGE : CLI_FAIL;
    }
    FILE *out = fopen(a->catalog_out, "w");
    FILE *held = out ? tmpfile() : NULL;
    if (!held) {
        fprintf(stderr, "aegis gen-trace: %s: %s\n",
                out ? "a temporary file for the trace" : a->catalog_out,
                strerror(errno));
        if (out) fclose(out);
        return CLI_FAIL;
    }
    gen_prod_opts o = {.jobs = a->jobs, .seed = (uint64_t)a->seed,
                       .mean_gap_s = a->gap, .users = (int)a->users,
                       .gpu_mem_mib = a->gpu_mem_mib > 0 ? a->gpu_mem_mib
                                                         : 40960};
    rc = gen_production(held, out, cat, &o, err, sizeof(err));
    if (fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof(err), "%s: %s", a->catalog_out, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && copy_to_stdout(held) < 0) {
        snprintf(err, sizeof(err), "cannot write the trace");
        rc = -1;
    }
    fclose(held);
    if (rc < 0) fprintf(stderr, "aegis gen-trace: %s\n", err);
    return rc == -2 ? CLI_USAGE : rc < 0 ? CLI_FAIL : CLI_OK;
}

/* The default profile: workloads drawn uniformly from the pool. */
static int gen_uniform_run(gen_args *a, const cat_catalog *cat) {
    int npool;
    const cat_workload **pool = gen_pool(cat, a->workloads, &npool);
    if (!pool) return CLI_USAGE;
    int rc = gen_trace(stdout, pool, npool, a->jobs, (uint64_t)a->seed,
                       a->gap < 0 ? 60 : a->gap, (int)a->users,
                       (int)a->feeds);
    free(pool);
    if (rc < 0) fprintf(stderr, "aegis gen-trace: cannot write the trace\n");
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cli_gen_trace(int argc, char **argv) {
    static const struct option options[] = {
        {"jobs", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"catalog", required_argument, NULL, 'c'},
        {"mean-gap-s", required_argument, NULL, 'g'},
        {"workloads", required_argument, NULL, 'w'},
        {"users", required_argument, NULL, 'u'},
        {"feeds", required_argument, NULL, 'f'},
        {"profile", required_argument, NULL, 'p'},
        {"catalog-out", required_argument, NULL, 'o'},
        {"gpu-mem-mib", required_argument, NULL, 'm'},
        {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    gen_args a = {.jobs = -1, .seed = 1, .gap = -1,
                  .catalog = cli_default_catalog()};
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        int rc = gen_option(opt, &a);
        if (rc > 0) {
            fputs(help, stdout);
            return CLI_OK;
        }
        if (rc < 0) {
            fputs("(see 'aegis gen-trace --help')\n", stderr);
            return CLI_USAGE;
        }
    }
    const char *misuse = gen_misuse(&a, optind < argc);
    if (misuse) {
        fprintf(stderr, "aegis gen-trace: %s (see 'aegis gen-trace --help')\n",
                misuse);
        return CLI_USAGE;
    }
    const char *const inputs[] = {"catalog", a.catalog, NULL};
    if (cli_output_apart("gen-trace", "catalog-out", a.catalog_out, inputs) < 0)
        return CLI_USAGE;
    char err[512];
    cat_catalog *cat = cat_load(a.catalog, err, sizeof(err));
    if (!cat) {
        fprintf(stderr, "aegis gen-trace: %s\n", err);
        return CLI_USAGE;
    }
    if (a.list) return gen_list(cat);
    int rc = a.production ? gen_production_run(&a, cat)
                          : gen_uniform_run(&a, cat);
    cat_free(cat);
    if (rc == CLI_OK && fflush(stdout) != 0) {
        fprintf(stderr, "aegis gen-trace: cannot write the trace\n");
        return CLI_FAIL;
    }
    return rc;
}
