/* gen_prod.h -- production-shaped synthetic traces.
 *
 * Arrivals, run times, GPU counts and GPU shares are drawn from
 * distributions fitted to Alibaba's cluster-trace-gpu-v2023 (prod_fit.h,
 * written by tools/fit_production.py; docs/simulator.md says how). The
 * trace names one catalog row per job, written to a catalog of its own,
 * because a trace line can only name a catalog workload; its rows carry
 * the same figures in the per-job columns too (num_gpus, mem_mib,
 * peak_mib, duration_s, smact, smocc, drama), for a simulator that reads
 * them.
 */
#ifndef AEGIS_GEN_PROD_H
#define AEGIS_GEN_PROD_H

#include "catalog.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gen_prod_opts {
    long jobs;
    uint64_t seed;
    double mean_gap_s;  /* mean seconds between arrivals; < 0: the fitted */
    double gpu_mem_mib; /* one GPU's memory: a job's share is of it */
    int users;          /* > 0: a user column, user1..userN */
} gen_prod_opts;

/* The mean gap between arrivals of the fitted Weibull, in seconds. */
double gen_prod_fitted_gap_s(void);

/* Whether cat can lend every width the fit draws its activity: 0, or -2
 * with a message in err (-1: out of memory). Checked before an output
 * file is opened, so a refused run leaves it as it was. */
int gen_prod_check(const cat_catalog *cat, char *err, size_t errlen);

/* Writes the trace to `trace` and its per-job catalog to `catalog`. Each
 * job takes its DCGM activity from a row of `cat` of its GPU count, drawn
 * uniformly. Returns 0; -1 on a write error or out of memory, -2 when
 * `cat` has no row of a width the fit draws (nothing written then), with
 * a message in err. */
int gen_production(FILE *trace, FILE *catalog, const cat_catalog *cat,
                   const gen_prod_opts *o, char *err, size_t errlen);

#endif
