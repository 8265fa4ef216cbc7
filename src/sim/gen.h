/* gen.h -- synthetic traces: Poisson arrivals of catalog workloads.
 *
 * Used for the benchmark and the demo trace. The generator has its own
 * PRNG (splitmix64) so a seed gives the same trace on every platform.
 */
#ifndef AEGIS_GEN_H
#define AEGIS_GEN_H

#include "catalog.h"

#include <stdint.h>
#include <stdio.h>

/* Writes a trace CSV (job_index, submit_time_s, workload) of `jobs` jobs
 * whose gaps are exponential with mean mean_gap_s and whose workloads are
 * drawn uniformly from the npool workloads of pool (npool >= 1); with
 * users > 0, a user column too, each job's user drawn uniformly from
 * user1..userN. With feeds > 0, the jobs are sweeps on shared data sets:
 * feed1..feedK each train one workload drawn from the pool, whose data
 * loading keeps a number of cores busy drawn in [GEN_LOAD_CPUS_MIN,
 * GEN_LOAD_CPUS_MAX]; each job runs a feed drawn uniformly, with feed and
 * load_cpus columns. Returns 0, or -1 on a write error. */
int gen_trace(FILE *out, const cat_workload *const *pool, int npool, long jobs,
              uint64_t seed, double mean_gap_s, int users, int feeds);

/* The generators' PRNG, splitmix64: the next 64 random bits of a stream,
 * and a uniform draw in [0, 1) of 53 of them. */
uint64_t gen_next(uint64_t *state);
double gen_uniform(uint64_t *state);

/* The CPU cores one job's data loading keeps busy, docs/simulator.md
 * ("Data loading"): bench/feed's cost per JPEG sample times the samples
 * per second a GPU trains. */
#define GEN_LOAD_CPUS_MIN 1.0
#define GEN_LOAD_CPUS_MAX 4.0

/* The most feeds a trace is written with. */
#define GEN_MAX_FEEDS 10000

#endif
