/* aegis-plus -- AEGIS's gates and recovery, with backfill, fair share
 * between users, per-user limits, and a second job on any GPU that runs
 * one (docs/design.md, "aegis-plus").
 *
 * Its own part here is the demand: a job's estimate (the daemon's --mem,
 * the simulator's estimator column) plus est_margin_mib, counted up to
 * est_cap_mib; the flat no_est_demand_mib without one. Estimates above the
 * cap were mostly far above the peak a job reached (the catalog's Horus
 * column: dlrm 40000 MiB against 1364, vgg16 bs64 40000 against 11776), and
 * a job kept off every GPU by one waits for an idle GPU where it could
 * have shared; a job that did need more climbs the OOM ladder from there.
 * The rest -- queue order, backfill, the head's GPUs, the pair rule --
 * lives in the core behind the flags below.
 */
#include "policy.h"

static double aegis_plus_demand(const core_config *cfg,
                                const core_job_spec *job) {
    double demand = policy_margin_demand(cfg, job->est_mib);
    return cfg->est_cap_mib > 0 && demand > cfg->est_cap_mib ? cfg->est_cap_mib
                                                             : demand;
}

const policy policy_aegis_plus = {
    .name = "aegis-plus", .collocates = true, .uses_telemetry = true,
    .backfill = true, .pairs_unfiltered = true, .demand = aegis_plus_demand,
};
