/* config.c -- skeleton; the defaults table follows. */
#include "core.h"
#include <stdio.h>
#include <string.h>

void core_config_default(core_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->window_samples = 30;
    cfg->sample_period_s = 1;
    cfg->observe_s = 30;
    cfg->guard_min_mib = 512;
    cfg->guard_frac = 0.01;
    cfg->est_margin_mib = 2048;
    cfg->no_est_demand_mib = 5120;
    cfg->smact_max = 0.65;
    cfg->smocc_max = 0.35;
    cfg->drama_max = 0.50;
    cfg->util_max = 0.70;
    cfg->ladder_max_step_mib = 8192;
    cfg->lucid_reserve_mib = 2048;
    cfg->lucid_max_jobs = 2;
    cfg->lucid_max_score = 2;
    cfg->horus_max_util_pct = 100;
    cfg->policy = "aegis";
    cfg->placement = "magm";
}

int core_config_set(core_config *cfg, const char *name, const char *value,
                    char *err, size_t errlen) {
    snprintf(err, errlen, "config: '%s' not implemented yet", name);
    return -1;
}

static const char *const policy_names[] = {"exclusive", "aegis", "aegis-est",
    "aegis-oracle", "horus", "lucid", NULL};
static const char *const placement_names[] = {"magm", "lug", "bf", "ff", "rr",
    NULL};
const char *const *core_policy_names(void) { return policy_names; }
const char *const *core_placement_names(void) { return placement_names; }
