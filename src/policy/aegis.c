/* aegis.c -- AEGIS: collocate behind the telemetry gates, with three ways
 * to size a job's memory demand.
 *
 *  aegis         estimator-free (AEGIS "OR-*"): a flat demand, 5120 MiB
 *                (AEGIS placement/policies.py select_or_magm, min_free_mib),
 *                except for a job that declares its memory (aegisd's
 *                --mem, a trace's mem_mib): that is the job's own
 *                request, trusted whole (aegis-est and aegis-plus take
 *                it as their estimate), so it gets
 *                aegis-est's demand, the declaration + 2048 MiB;
 *  aegis-est     an estimate + 2048 MiB margin (AEGIS select_est_magm);
 *  aegis-oracle  profiled peak memory + 2048 MiB, the same margin as the
 *                estimate (AEGIS select_oracle_magm: gpu_memory_requirement
 *                + 2048);
 *  aegis-plus    aegis-est's demand, with backfill, fair share between
 *                users, per-user limits, a second job on any GPU running
 *                one, and the estimate capped at est_cap_mib beside other
 *                jobs on a whole GPU (an idle GPU or a MIG instance is
 *                chosen by the whole estimate): estimates above the cap
 *                were mostly far above the peak a job reached (the
 *                catalog's Horus column: dlrm 40000 MiB against 1364,
 *                vgg16 bs64 40000 against 11776), and a job kept off every
 *                busy GPU by one waits for an idle GPU where it could have
 *                shared; one that did need more climbs the OOM ladder;
 *                and the server's CPUs counted, so that collocated
 *                jobs' data loaders do not starve each other. All
 *                of that lives in the core behind the policy's flags
 *                (docs/design.md, "aegis-plus").
 * A job without the number its policy needs falls back to the flat demand:
 * AEGIS refuses such a job instead, but a scheduler that drops work for a
 * missing hint is worse than one that is merely less tight.
 * Ranking is the configured placement rule (magm by default).
 */
#include "policy.h"

static double aegis_margin_demand(const core_config *cfg, double mib) {
    return mib >= 0 ? mib + cfg->est_margin_mib : cfg->no_est_demand_mib;
}

static double aegis_demand(const core_config *cfg, const core_job_spec *job) {
    return job->mem_declared ? aegis_margin_demand(cfg, job->est_mib)
                             : cfg->no_est_demand_mib;
}

static double aegis_est_demand(const core_config *cfg, const core_job_spec *job) {
    return aegis_margin_demand(cfg, job->est_mib);
}

static double aegis_oracle_demand(const core_config *cfg,
                                  const core_job_spec *job) {
    return aegis_margin_demand(cfg, job->peak_mib);
}

const policy policy_aegis = {
    .name = "aegis", .collocates = true, .uses_telemetry = true,
    .demand = aegis_demand,
};

const policy policy_aegis_est = {
    .name = "aegis-est", .collocates = true, .uses_telemetry = true,
    .demand = aegis_est_demand,
};

const policy policy_aegis_oracle = {
    .name = "aegis-oracle", .collocates = true, .uses_telemetry = true,
    .demand = aegis_oracle_demand,
};

const policy policy_aegis_plus = {
    .name = "aegis-plus", .collocates = true, .uses_telemetry = true,
    .backfill = true, .pairs_unfiltered = true, .caps_estimates = true,
    .counts_cpus = true, .demand = aegis_est_demand,
};
