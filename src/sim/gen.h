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
 * user1..userN. Returns 0, or -1 on a write error. */
int gen_trace(FILE *out, const cat_workload *const *pool, int npool, long jobs,
              uint64_t seed, double mean_gap_s, int users);

#endif
