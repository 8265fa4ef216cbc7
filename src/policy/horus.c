/* horus.c -- the Horus baseline: share a GPU while the profiled GPU
 * utilization of its jobs, the new one included, stays within 100%, and
 * prefer the GPU with the least projected utilization.
 *
 * Facts from AEGIS placement/policies.py select_horus: the memory estimate
 * is ignored (no memory gate), no telemetry is read, only GPUs the
 * observation gate left available are considered, the budget is 100, and
 * ties keep GPU order (a stable sort). Exclusive-first applies to every
 * AEGIS policy (placement/admission.py).
 */
#include "policy.h"

/* A job without a profile is assumed to fill the GPU, so it never shares:
 * guessing low would collocate blindly (policy_util_pct()). */
static double horus_util(const core_job_spec *job) {
    return policy_util_pct(job);
}

static double horus_demand(const core_config *cfg, const core_job_spec *job) {
    return 0;
}

static bool horus_admits(const core_config *cfg, const policy_gpu *g,
                         const core_job_spec *job) {
    return g->util_pct_sum + horus_util(job) <= cfg->horus_max_util_pct;
}

static double horus_rank(const core_config *cfg, const policy_gpu *g,
                         const core_job_spec *job) {
    return g->util_pct_sum + horus_util(job);
}

const policy policy_horus = {
    .name = "horus", .collocates = true, .uses_telemetry = false,
    .demand = horus_demand, .admits = horus_admits, .rank = horus_rank,
};
