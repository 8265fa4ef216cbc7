/* exclusive.c -- the baseline without sharing: one job per GPU, in FIFO
 * order. The core's exclusive-first step does all the placing; this policy
 * only says never to collocate. */
#include "policy.h"

/* Nothing shares the GPU, so the job demands nothing of its memory. */
static double exclusive_demand(const core_config *cfg, const core_job_spec *job) {
    return 0;
}

const policy policy_exclusive = {
    .name = "exclusive",
    .collocates = false,
    .uses_telemetry = false,
    .demand = exclusive_demand,
};
