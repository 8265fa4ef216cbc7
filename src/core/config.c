/* config.c -- the defaults of every tunable and setting them by name.
 *
 * One table holds each field's name, type, place in core_config, default,
 * valid range and the source of that number, so the CLI, the daemon's
 * YAML and --help all read the same list, and core_create() refuses what
 * core_config_set() would.
 */
#include "core.h"
#include "../policy/policy.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum config_type { CONFIG_INT, CONFIG_DOUBLE, CONFIG_NAME } config_type;

typedef struct config_field {
    const char *name;
    config_type type;
    size_t offset;          /* place in core_config */
    double num;             /* default of a number */
    double lo, hi;          /* the range of a number, both ends in */
    const char *text;       /* default of a name */
} config_field;

#define NUM(field, type, value, lo, hi) \
    {#field, type, offsetof(core_config, field), value, lo, hi, NULL}
#define NAME(field, value) \
    {#field, CONFIG_NAME, offsetof(core_config, field), 0, 0, 0, value}

/* Memory figures, MiB: 1 TiB, above any GPU made (the daemon's bound on a
 * job's --mem too). */
#define MIB_MAX (1024.0 * 1024.0)
/* A risk window costs each GPU about 100 bytes per sample (a step and the
 * scratch of its scores: window.c) and a pass over its samples at each
 * score, so 3600 (an hour at 1 s) keeps 64 GPUs within 25 MB. */
#define WINDOW_SAMPLES_MAX 3600
/* The baselines' per-GPU limits: jobs, and Lucid's scores (2 at most
 * each) and Horus's utilization (100% at most each) of that many jobs. */
#define JOBS_PER_GPU_MAX 1000

static const config_field config_table[] = {
    /* 30 samples at 1 s: AEGIS config/settings.py monitor.window "30";
     * DESIGN.md section 3. */
    NUM(window_samples, CONFIG_INT, 30, 1, WINDOW_SAMPLES_MAX),
    NUM(sample_period_s, CONFIG_DOUBLE, 1, 0.001, 3600),
    /* 30 s after first activity: DESIGN.md 3 (first activity itself
     * took median 8.2 s, p95 20.6 s, max 55.5 s). */
    NUM(observe_s, CONFIG_DOUBLE, 30, 0, 86400),
    /* Guard max(512 MiB, 1% of total): DESIGN.md 3. */
    NUM(guard_min_mib, CONFIG_DOUBLE, 512, 0, MIB_MAX),
    NUM(guard_frac, CONFIG_DOUBLE, 0.01, 0, 1),
    /* +2048 MiB on an estimate, 5120 MiB without: AEGIS
     * placement/policies.py (select_est_magm, select_or_magm). */
    NUM(est_margin_mib, CONFIG_DOUBLE, 2048, 0, MIB_MAX),
    NUM(no_est_demand_mib, CONFIG_DOUBLE, 5120, 0, MIB_MAX),
    /* 0.65 / 0.35 / 0.50 and 70% utilization: AEGIS config/settings.py
     * risk.* defaults (a sweep favoured 0.50 / 0.20 / 0.40, DESIGN.md 3). */
    NUM(smact_max, CONFIG_DOUBLE, 0.65, 0, 1),
    NUM(smocc_max, CONFIG_DOUBLE, 0.35, 0, 1),
    NUM(drama_max, CONFIG_DOUBLE, 0.50, 0, 1),
    NUM(util_max, CONFIG_DOUBLE, 0.70, 0, 1),
    /* AEGIS config/settings.py recovery.max_step_mib 8192; 0: no extra
     * buckets between the fractions. */
    NUM(ladder_max_step_mib, CONFIG_DOUBLE, 8192, 0, MIB_MAX),
    /* AEGIS recovery/manager.py: the failed floor is raised to the free
     * memory of the GPU at dispatch before the next bucket is chosen. */
    NUM(ladder_from_free, CONFIG_INT, 1, 0, 1),
    /* 1 is DESIGN.md 3's ladder: a retried job may share a GPU that shows
     * its floor free. AEGIS's scheduler.py collocates only while its
     * recovery queue is empty, so in the measured runs a retried job waited
     * for an idle GPU: 0 replays them (README, "How close the simulator is
     * to the real runs"). */
    NUM(recovery_collocates, CONFIG_INT, 1, 0, 1),
    /* Lucid as AEGIS runs it: placement/policies.py select_lucid
     * (memory_guard_mib 2048, max_jobs_per_gpu 2, gss_capacity 2). */
    NUM(lucid_reserve_mib, CONFIG_DOUBLE, 2048, 0, MIB_MAX),
    NUM(lucid_max_jobs, CONFIG_INT, 2, 1, JOBS_PER_GPU_MAX),
    NUM(lucid_max_score, CONFIG_INT, 2, 0, 2 * JOBS_PER_GPU_MAX),
    /* Horus: AEGIS select_horus utilization_budget 100. */
    NUM(horus_max_util_pct, CONFIG_DOUBLE, 100, 0, 100 * JOBS_PER_GPU_MAX),
    /* aegis-plus (docs/design.md, "aegis-plus"): estimates count up to
     * 12288 MiB and a job over half a GPU goes 900 s ahead, tuned on the
     * three real traces and seeds 1-6 of gen-trace (bench/policy); 64
     * jobs may pass a waiting head, chosen on seeds 10000-10599 once none
     * passed a head that must run alone (16 had been best before); a
     * day's half-life keeps yesterday's runs in a lab's memory, as
     * Slurm's fair share does with its week; no per-user limit unless
     * the administrator sets one. */
    NUM(est_cap_mib, CONFIG_DOUBLE, 12288, 0, MIB_MAX),
    NUM(backfill_max_passes, CONFIG_INT, 64, 0, 1000000),
    NUM(big_advance_s, CONFIG_DOUBLE, 900, 0, 1e9),
    /* 0.3: with none passing a head that must run alone, it keeps
     * venus's p95 JCT under aegis's (0.2 does not) and philly's (0.35
     * does not), and makes synthetic traces faster (docs/design.md,
     * "aegis-plus"). */
    NUM(big_advance_frac, CONFIG_DOUBLE, 0.3, 0, 1),
    NUM(fairshare_half_life_s, CONFIG_DOUBLE, 86400, 1, 1e9),
    NUM(max_gpus_per_user, CONFIG_INT, 0, 0, 1000000),
    NUM(max_jobs_per_user, CONFIG_INT, 0, 0, 1000000),
    /* No limit for a job that gives none unless the site sets one, as
     * Slurm's DefaultTime; at most a year, aegisd's bound on --time. */
    NUM(default_time, CONFIG_DOUBLE, 0, 0, 365 * 86400.0),
    /* Jobs of one data feed together: a feed's batches on one GPU reach
     * its consumers there by CUDA IPC, not through host memory
     * (docs/feed.md, "The feed in the scheduler"). */
    NUM(feed_colocate, CONFIG_INT, 1, 0, 1),
    /* Estimator-free AEGIS with MAGM placement is the paper's default. */
    NAME(policy, "aegis"),
    NAME(placement, "magm"),
};
#define CONFIG_FIELDS (sizeof(config_table) / sizeof(config_table[0]))

static void config_store(core_config *cfg, const config_field *f, double num,
                         const char *text) {
    char *at = (char *)cfg + f->offset;
    switch (f->type) {
    case CONFIG_INT: *(int *)at = (int)num; break;
    case CONFIG_DOUBLE: *(double *)at = num; break;
    case CONFIG_NAME: *(const char **)at = text; break;
    }
}

void core_config_default(core_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < CONFIG_FIELDS; i++)
        config_store(cfg, &config_table[i], config_table[i].num,
                     config_table[i].text);
}

/* The entry of `names` equal to value: the config then points at a string
 * that lives as long as the program, never at the caller's buffer. */
static const char *config_known_name(const char *const *names,
                                     const char *value) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], value) == 0) return names[i];
    return NULL;
}

/* "config NAME: unknown name 'VALUE' (valid: a, b, c)": the valid names
 * with the error, so that a typo is fixed without a trip to the docs. */
static void config_unknown_name(const char *name, const char *value,
                                const char *const *names, char *err,
                                size_t errlen) {
    int n = snprintf(err, errlen, "config %s: unknown name '%s' (valid:",
                     name, value);
    for (int i = 0; names[i] && n >= 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "",
                      names[i]);
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, ")");
}

/* Whether num is a value of f: in its range, and whole for an integer. */
static bool config_in_range(const config_field *f, double num) {
    return num >= f->lo && num <= f->hi &&
           (f->type != CONFIG_INT || num == floor(num));
}

/* "config NAME: 'VALUE' is not a ... in [LO, HI]". */
static int config_range_error(const config_field *f, const char *value,
                              char *err, size_t errlen) {
    snprintf(err, errlen, "config %s: '%s' is not a %s in [%.15g, %.15g]",
             f->name, value,
             f->type == CONFIG_INT ? "whole number" : "number", f->lo, f->hi);
    return -1;
}

bool core_config_decimal(const char *text) {
    const char *c = text + (*text == '+' || *text == '-');
    size_t digits = strspn(c, "0123456789");
    c += digits;
    if (*c == '.') {
        size_t frac = strspn(c + 1, "0123456789");
        digits += frac;
        c += 1 + frac;
    }
    if (digits == 0) return false;
    if (*c == 'e' || *c == 'E') {
        c += 1 + (c[1] == '+' || c[1] == '-');
        size_t exp = strspn(c, "0123456789");
        if (exp == 0) return false;
        c += exp;
    }
    return *c == '\0';
}

static int config_parse_number(const config_field *f, const char *value,
                               double *num, char *err, size_t errlen) {
    char *end;
    errno = 0;
    *num = strtod(value, &end);
    if (!core_config_decimal(value) || *end != '\0' || errno != 0 ||
        !config_in_range(f, *num))
        return config_range_error(f, value, err, errlen);
    return 0;
}

/* The number field f holds in cfg. */
static double config_number(const core_config *cfg, const config_field *f) {
    const char *at = (const char *)cfg + f->offset;
    return f->type == CONFIG_INT ? *(const int *)at : *(const double *)at;
}

int core_config_check(const core_config *cfg, char *err, size_t errlen) {
    for (size_t i = 0; i < CONFIG_FIELDS; i++) {
        const config_field *f = &config_table[i];
        if (f->type == CONFIG_NAME || config_in_range(f, config_number(cfg, f)))
            continue;
        char value[32];
        snprintf(value, sizeof(value), "%.15g", config_number(cfg, f));
        return config_range_error(f, value, err, errlen);
    }
    return 0;
}

int core_config_set(core_config *cfg, const char *name, const char *value,
                    char *err, size_t errlen) {
    for (size_t i = 0; i < CONFIG_FIELDS; i++) {
        const config_field *f = &config_table[i];
        if (strcmp(f->name, name) != 0) continue;
        if (f->type == CONFIG_NAME) {
            const char *const *names = f->offset == offsetof(core_config, policy)
                                           ? core_policy_names()
                                           : core_placement_names();
            const char *known = config_known_name(names, value);
            if (!known) {
                config_unknown_name(name, value, names, err, errlen);
                return -1;
            }
            config_store(cfg, f, 0, known);
            return 0;
        }
        double num;
        if (config_parse_number(f, value, &num, err, errlen) != 0) return -1;
        config_store(cfg, f, num, NULL);
        return 0;
    }
    snprintf(err, errlen, "config: unknown field '%s'", name);
    return -1;
}
