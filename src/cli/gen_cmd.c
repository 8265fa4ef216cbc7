/* gen_cmd.c -- `aegis gen-trace`: a synthetic trace on stdout. */
#include "cli.h"

#include "catalog.h"
#include "gen.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
"usage: aegis gen-trace --jobs N [--seed S] [--catalog FILE] [--mean-gap-s X]\n"
"                       [--workloads NAME[,NAME...]] [--users N] [--feeds K]\n"
"       aegis gen-trace --list [--catalog FILE]\n"
"\n"
"Writes a job trace in CSV (job_index,submit_time_s,workload) to stdout:\n"
"N jobs whose arrivals form a Poisson process (exponential gaps of mean X\n"
"seconds, first job at 0) and whose workloads are drawn uniformly from the\n"
"catalog, or from the named ones. The same seed gives the same trace on\n"
"every machine.\n"
"\n"
"  --jobs N          number of jobs (required)\n"
"  --seed S          random seed (default 1)\n"
"  --catalog FILE    workload catalog (default: the bundled data/catalog.csv)\n"
"  --mean-gap-s X    mean seconds between arrivals (default 60; 0 submits\n"
"                    every job at time 0)\n"
"  --workloads LIST  draw only from these catalog workloads (comma-separated;\n"
"                    a name given twice is drawn twice as often); an\n"
"                    unknown name is refused with the nearest known ones\n"
"  --users N         add a user column, each job's user drawn uniformly\n"
"                    from user1..userN (aegis sim's fair share reads it)\n"
"  --feeds K         hyper-parameter sweeps on K shared data sets: feed1..K\n"
"                    each train one workload drawn from the pool, with a\n"
"                    data-loading cost of 1 to 4 CPU cores; each job runs\n"
"                    a feed drawn uniformly (feed and load_cpus columns,\n"
"                    which aegis sim reads: docs/simulator.md)\n"
"  --list            print the catalog's workload names, one per line\n"
"  --help            this text\n"
"\n"
"To load a cluster of G GPUs to about a fraction u of its exclusive\n"
"capacity, take X = (mean GPU-seconds per job) / (u * G); the bundled\n"
"catalog's mean is about 2164 GPU-seconds per job.\n"
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
        for (int i = 0; i < cat->count; i++) pool[n++] = &cat->items[i];
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

int cli_gen_trace(int argc, char **argv) {
    static const struct option options[] = {
        {"jobs", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"catalog", required_argument, NULL, 'c'},
        {"mean-gap-s", required_argument, NULL, 'g'},
        {"workloads", required_argument, NULL, 'w'},
        {"users", required_argument, NULL, 'u'},
        {"feeds", required_argument, NULL, 'f'},
        {"list", no_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    long jobs = -1, seed = 1, users = 0, feeds = 0;
    double gap = 60;
    const char *catalog = cli_default_catalog();
    char *workloads = NULL;
    bool list = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case 'n': rc = cli_parse_long("gen-trace", "jobs", optarg, 1,
                                      100000000, &jobs); break;
        case 's': rc = cli_parse_long("gen-trace", "seed", optarg, 0,
                                      0x7fffffffL, &seed); break;
        case 'c': catalog = optarg; break;
        case 'g': rc = cli_parse_double("gen-trace", "mean-gap-s", optarg, 0,
                                        1e9, &gap); break;
        case 'w': workloads = optarg; break;
        case 'u': rc = cli_parse_long("gen-trace", "users", optarg, 1,
                                      1000000, &users); break;
        case 'f': rc = cli_parse_long("gen-trace", "feeds", optarg, 1,
                                      GEN_MAX_FEEDS, &feeds); break;
        case 'l': list = true; break;
        case 'h': fputs(help, stdout); return CLI_OK;
        default: rc = -1;
        }
        if (rc < 0) {
            fputs("(see 'aegis gen-trace --help')\n", stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc || (jobs < 0 && !list)) {
        fprintf(stderr, "aegis gen-trace: %s (see 'aegis gen-trace --help')\n",
                jobs < 0 ? "--jobs is required" : "unexpected argument");
        return CLI_USAGE;
    }
    char err[512];
    cat_catalog *cat = cat_load(catalog, err, sizeof(err));
    if (!cat) {
        fprintf(stderr, "aegis gen-trace: %s\n", err);
        return CLI_USAGE;
    }
    if (list) return gen_list(cat);
    int npool;
    const cat_workload **pool = gen_pool(cat, workloads, &npool);
    int rc = pool ? gen_trace(stdout, pool, npool, jobs, (uint64_t)seed, gap,
                                (int)users, (int)feeds)
                    : 0;
    free(pool);
    cat_free(cat);
    if (!pool) return CLI_USAGE;
    if (rc < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "aegis gen-trace: cannot write the trace\n");
        return CLI_FAIL;
    }
    return CLI_OK;
}
