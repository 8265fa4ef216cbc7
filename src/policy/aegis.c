/* aegis.c -- AEGIS: collocate behind the telemetry gates, with three ways
 * to size a job's memory demand.
 *
 *  aegis         estimator-free (AEGIS "OR-*"): a flat demand, 5120 MiB
 *                (AEGIS placement/policies.py select_or_magm, min_free_mib);
 *  aegis-est     an estimate + 2048 MiB margin (AEGIS select_est_magm);
 *  aegis-oracle  profiled peak memory + 2048 MiB, the same margin as the
 *                estimate (AEGIS select_oracle_magm: gpu_memory_requirement
 *                + 2048).
 * A job without the number its policy needs falls back to the flat demand:
 * AEGIS refuses such a job instead, but a scheduler that drops work for a
 * missing hint is worse than one that is merely less tight.
 * Ranking is the configured placement rule (magm by default).
 */
#include "policy.h"

static double aegis_demand(const core_config *cfg, const core_job_spec *job) {
    return cfg->no_est_demand_mib;
}

double policy_margin_demand(const core_config *cfg, double mib) {
    return mib >= 0 ? mib + cfg->est_margin_mib : cfg->no_est_demand_mib;
}

static double aegis_est_demand(const core_config *cfg, const core_job_spec *job) {
    return policy_margin_demand(cfg, job->est_mib);
}

static double aegis_oracle_demand(const core_config *cfg,
                                  const core_job_spec *job) {
    return policy_margin_demand(cfg, job->peak_mib);
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
