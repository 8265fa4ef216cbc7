/* lucid.c -- the Lucid baseline: at most two jobs per GPU, a sum of
 * sharing scores (0 tiny, 1 medium, 2 jumbo) of at most 2, and profiled
 * memory within capacity minus 2048 MiB.
 *
 * Facts from AEGIS placement/policies.py select_lucid: the three checks
 * count the new job in; no telemetry is read; only GPUs the observation
 * gate left available are considered; GPUs rank by projected score sum,
 * then projected memory, ties in GPU order.
 */
#include "policy.h"

/* Unknown inputs are taken at their most cautious: a jumbo job whose
 * memory fills the usable capacity, so it only ever runs alone; on its
 * GPU it weighs the same once running (policy.h). */
static int lucid_score(const core_job_spec *job) {
    return policy_sharing_score(job);
}

static double lucid_demand(const core_config *cfg, const core_job_spec *job) {
    return job->peak_mib >= 0 ? job->peak_mib : 0;
}

static bool lucid_admits(const core_config *cfg, const policy_gpu *g,
                         const core_job_spec *job) {
    return g->njobs + 1 <= cfg->lucid_max_jobs &&
           g->score_sum + lucid_score(job) <= cfg->lucid_max_score &&
           policy_peak_sum_mib(cfg, g) + policy_peak_mib(cfg, g, job) <=
               g->total_mib - cfg->lucid_reserve_mib;
}

/* Score first, memory second: the score sum is a small integer and the
 * memory sum is under 2^30 MiB, so score * 2^30 + memory orders both.
 * The newcomer's unknown peak adds nothing: it would add each GPU's own
 * usable memory and so rank the larger GPU last. */
static double lucid_rank(const core_config *cfg, const policy_gpu *g,
                         const core_job_spec *job) {
    double score = g->score_sum + lucid_score(job);
    double mib = policy_peak_sum_mib(cfg, g) +
                 (job->peak_mib >= 0 ? job->peak_mib : 0);
    return score * 1073741824.0 + mib;
}

const policy policy_lucid = {
    .name = "lucid", .collocates = true, .uses_telemetry = false,
    .demand = lucid_demand, .admits = lucid_admits, .rank = lucid_rank,
};
