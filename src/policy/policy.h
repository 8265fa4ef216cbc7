/* policy.h -- the policy interface of the scheduling core, and the one
 * table of policies.
 *
 * The core owns the loop: queue order, exclusive-first, the observation
 * gate, telemetry windows and the recovery ladder. A policy only answers
 * three questions about a job it may collocate: how much memory it demands,
 * whether a GPU admits it beyond the core's gates, and how to rank the GPUs
 * that do. Adding a policy is one file and one line in POLICY_LIST.
 */
#ifndef AEGIS_POLICY_H
#define AEGIS_POLICY_H

#include <stdbool.h>
#include "core.h"

/* What a policy sees of one GPU when it decides. */
typedef struct policy_gpu {
    int index;              /* the GPU's number in the server */
    double total_mib;       /* memory of the GPU */
    double free_mib;        /* total minus the window's most used memory;
                               set only when the telemetry gates run */
    double smact, smocc, drama, util; /* risk scores, CORE_UNKNOWN if unknown */
    int njobs;              /* jobs placed on it and not yet exited */
    double util_pct_sum;    /* horus: profiled utilization of those jobs */
    int score_sum;          /* lucid: sum of their sharing scores */
    double peak_sum_mib;    /* lucid: sum of their profiled peak memory */
    int peak_unknown;       /* lucid: how many of them have no profiled
                               peak (policy_peak_sum_mib()) */
} policy_gpu;

/* An unprofiled job's figures, at their most cautious: horus takes a job
 * of unknown utilization as filling its GPU (100%), lucid one of unknown
 * sharing score as jumbo (2). The core's per-GPU sums count a running job
 * by the same figures, so the job weighs alike whether it is placed first
 * or joins. */
static inline double policy_util_pct(const core_job_spec *job) {
    return job->util_pct >= 0 ? job->util_pct : 100.0;
}

static inline int policy_sharing_score(const core_job_spec *job) {
    return job->sharing_score >= 0 ? job->sharing_score : 2;
}

/* Lucid takes a job of unknown peak memory as filling what GPU g leaves
 * usable, its total less cfg->lucid_reserve_mib (never below nothing).
 * That figure hangs on the GPU and on a setting a reload may change, so
 * the core sums no MiB for such a job, which would then leave the sum
 * with another figure than it came in with: it counts the job in
 * peak_unknown, and the figure is taken here, when placing. */
static inline double policy_usable_mib(const core_config *cfg,
                                       const policy_gpu *g) {
    double usable = g->total_mib - cfg->lucid_reserve_mib;
    return usable > 0 ? usable : 0;
}

static inline double policy_peak_mib(const core_config *cfg,
                                     const policy_gpu *g,
                                     const core_job_spec *job) {
    return job->peak_mib >= 0 ? job->peak_mib : policy_usable_mib(cfg, g);
}

/* The peak memory of the jobs on g, each taken as policy_peak_mib() takes
 * it: a running job of unknown peak weighs as it would if it came next. */
static inline double policy_peak_sum_mib(const core_config *cfg,
                                         const policy_gpu *g) {
    return g->peak_sum_mib + g->peak_unknown * policy_usable_mib(cfg, g);
}

typedef struct policy {
    const char *name;
    bool collocates;        /* false: every job runs alone (exclusive) */
    bool uses_telemetry;    /* window-full, memory and pressure gates */
    bool backfill;          /* jobs behind a waiting head may start, by
                               priority, with fair share and the per-user
                               limits (aegis-plus); false: one FIFO that
                               waits behind its head, users ignored */
    bool pairs_unfiltered;  /* a GPU running one job takes a second
                               whatever its pressure (aegis-plus) */
    bool caps_estimates;    /* a first attempt joins a busy GPU with its
                               demand capped at est_cap_mib (aegis-plus) */
    bool counts_cpus;       /* a job starts only where the server's CPUs
                               hold its data loading beside the running
                               jobs' (core.h, "CPUs"; aegis-plus) */
    /* Memory a first attempt demands and is admitted with (MiB). */
    double (*demand)(const core_config *cfg, const core_job_spec *job);
    /* The policy's own constraint on a GPU; NULL for none. */
    bool (*admits)(const core_config *cfg, const policy_gpu *g,
                   const core_job_spec *job);
    /* Rank key of a GPU, lower first; NULL to use cfg->placement. */
    double (*rank)(const core_config *cfg, const policy_gpu *g,
                   const core_job_spec *job);
} policy;

/* Every policy, once: X(name string, struct defined in its own file). */
#define POLICY_LIST(X)                          \
    X("exclusive", policy_exclusive)            \
    X("aegis", policy_aegis)                    \
    X("aegis-est", policy_aegis_est)            \
    X("aegis-oracle", policy_aegis_oracle)      \
    X("horus", policy_horus)                    \
    X("lucid", policy_lucid)                    \
    X("aegis-plus", policy_aegis_plus)

#define POLICY_DECLARE(str, sym) extern const policy sym;
POLICY_LIST(POLICY_DECLARE)
#undef POLICY_DECLARE

/* The policy named `name`, or NULL. */
const policy *policy_find(const char *name);

/* ---- placement rules (placement.c) ---------------------------------------- */

typedef enum policy_placement {
    POLICY_PLACE_MAGM,      /* most available GPU memory */
    POLICY_PLACE_LUG,       /* least utilized GPU (SMACT score) */
    POLICY_PLACE_BF,        /* best fit: least free memory that fits */
    POLICY_PLACE_FF,        /* first fit: lowest index */
    POLICY_PLACE_RR         /* round robin from the last GPU placed on */
} policy_placement;

/* The rule named `name`, or -1. */
int policy_placement_find(const char *name);

/* Rank key of GPU g under rule `rule`, lower first. rr_next is the GPU the
 * round robin starts from, num_gpus the server's GPU count. */
double policy_placement_key(policy_placement rule, const policy_gpu *g,
                            int rr_next, int num_gpus);

#endif
