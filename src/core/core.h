/* core.h -- the scheduling core: the one public interface of src/core/.
 *
 * The core is pure: it owns no clock, does no I/O, starts no threads and
 * keeps no global state. A driver (the simulator, later the daemon) feeds it
 * events -- a job was submitted, a GPU read a telemetry sample, a job became
 * active on its GPUs, a job exited -- each stamped with the driver's notion
 * of "now" in seconds, and asks it for decisions with core_schedule().
 * Because both drivers call the very same functions, a policy measured in
 * simulation is the policy that runs in production (DESIGN.md section 2).
 *
 * Ownership: core_create() allocates a core_state that the caller owns and
 * frees with core_destroy(). The core copies everything it is given; no
 * pointer passed in is kept after the call returns, except MIG tables
 * (core_gpu_share()), which are static data.
 */
#ifndef AEGIS_CORE_H
#define AEGIS_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../share/mig_profiles.h"
#include "../share/share_mode.h"

/* A job may span at most this many GPUs of one server. Eight is the largest
 * single server we target (DGX-class boxes have 8 GPUs). */
#define CORE_MAX_JOB_GPUS 8

/* The most GPUs one core (one server) manages. */
#define CORE_MAX_GPUS 64

/* A metric the driver cannot measure is passed as this value. */
#define CORE_UNKNOWN (-1.0)

/* ---- configuration ------------------------------------------------------
 * Every tunable of the loop. core_config_default() fills DESIGN.md's values;
 * the table in config.c names the source of each number. */
typedef struct core_config {
    int window_samples;        /* telemetry samples per risk window (30) */
    double sample_period_s;    /* seconds between telemetry samples (1) */
    double observe_s;          /* GPU stays closed this long after the new
                                  job is seen active on it (30) */
    double guard_min_mib;      /* memory guard: max(guard_min_mib, */
    double guard_frac;         /*   guard_frac * total) (512, 0.01) */
    double est_margin_mib;     /* added to an estimate to form the demand (2048) */
    double no_est_demand_mib;  /* demand when there is no estimate (5120) */
    double smact_max;          /* pressure filter: a GPU is skipped when */
    double smocc_max;          /*   smact >= smact_max and (smocc >= smocc_max */
    double drama_max;          /*   or drama >= drama_max) (0.65, 0.35, 0.50) */
    double util_max;           /* utilization-only filter, 0..1 (0.70) */
    double ladder_max_step_mib; /* OOM ladder: most MiB between buckets (8192) */
    int ladder_from_free;      /* 1: after an OOM, climb above the free memory
                                  the job was placed with, not just above its
                                  floor (1) */
    int recovery_collocates;   /* 1: a job in the recovery queue may join a
                                  busy GPU that shows its floor free; 0: it
                                  waits for idle GPUs (1) */
    double lucid_reserve_mib;  /* lucid: profiled memory <= total - this (2048) */
    int lucid_max_jobs;        /* lucid: jobs per GPU (2) */
    int lucid_max_score;       /* lucid: sum of sharing scores per GPU (2) */
    double horus_max_util_pct; /* horus: sum of profiled utilization (100) */
    /* aegis-plus only (docs/design.md, "aegis-plus"): */
    double est_cap_mib;        /* a demand from an estimate counts up to
                                  this; 0: no cap (12288) */
    int backfill_max_passes;   /* jobs that may start past a waiting head of
                                  the queue before the queue waits behind it
                                  (64) */
    double big_advance_s;      /* a first attempt demanding over half a GPU
                                  queues as if submitted this much earlier
                                  (900) */
    double big_advance_frac;   /* or this fraction of the oldest waiting
                                  first attempt's wait, when more (0.3) */
    double fairshare_half_life_s; /* a user's GPU time counts half after
                                  this long (86400) */
    int max_gpus_per_user;     /* GPUs a user's running jobs may hold; 0: no
                                  limit (0) */
    int max_jobs_per_user;     /* jobs a user may run at once; 0: no limit (0) */
    double default_time;       /* seconds: the time limit of a job that
                                  gives none (Slurm's DefaultTime); 0: such
                                  a job has none (0) */
    int feed_colocate;         /* 1: a job of a data feed goes beside the
                                  feed's running jobs first, and waits for
                                  their GPU while it only observes (feeds.c);
                                  0: placed as any job, after a queued
                                  producer still (1) */
    const char *policy;        /* a name from core_policy_names() ("aegis") */
    const char *placement;     /* magm, lug, bf, ff or rr ("magm") */
} core_config;

void core_config_default(core_config *cfg);

/* Sets one field by its name in the table ("smact_max", "observe_s", ...)
 * from text. Returns 0, or -1 with a message naming the field in err. The
 * CLI and the daemon's YAML config both go through this. */
int core_config_set(core_config *cfg, const char *name, const char *value,
                    char *err, size_t errlen);
/* Whether text is a number as core_config_set() takes one: plain decimal,
 * an optional sign, digits with an optional fraction, an optional
 * exponent, and nothing else (no hex, spaces, inf or nan, which strtod
 * alone takes). The daemon's own keys are read alike. */
bool core_config_decimal(const char *text);

/* Checks every number of cfg against its range in the table (the ranges
 * core_config_set() enforces). Returns 0, or -1 naming the field in err. */
int core_config_check(const core_config *cfg, char *err, size_t errlen);

/* NULL-terminated list of the policy names, for --help and validation. */
const char *const *core_policy_names(void);
const char *const *core_placement_names(void);

/* ---- jobs ---------------------------------------------------------------- */

/* What the core knows about a job when it is submitted. Unknown values are
 * CORE_UNKNOWN; each policy uses only the fields it needs. */
typedef struct core_job_spec {
    int64_t id;          /* caller-chosen, unique within this core */
    int num_gpus;        /* 1..CORE_MAX_JOB_GPUS */
    double est_mib;      /* memory estimate (aegis-est), MiB */
    bool mem_declared;   /* est_mib is the job's own declaration (aegisd's
                            --mem, a simulated trace's mem_mib), not an
                            estimator's guess: trusted whole, never capped
                            at est_cap_mib, and the demand of the
                            estimator-free aegis too */
    double peak_mib;     /* profiled peak memory (aegis-oracle, lucid), MiB */
    double util_pct;     /* profiled GPU utilization 0..100 (horus) */
    int sharing_score;   /* lucid: 0 tiny, 1 medium, 2 jumbo; -1 unknown */
    uint32_t user;       /* who submitted it (a uid): fair share and the
                            per-user limits of aegis-plus */
    int nice;            /* 0..CORE_NICE_MAX: lowers the job's priority
                            among the queue (aegis-plus) */
    const char *feed;    /* the data feed it reads (or, a producer, the
                            feed it writes); NULL or "": none. Copied. */
    bool feed_producer;  /* the feed's producer: the feed's other jobs wait
                            while it is queued */
    uint32_t feed_owner; /* whose feed of that name (a uid): feeds of one
                            name and different owners are apart */
    double time_limit_s; /* each attempt's limit (--time), seconds; 0: none
                            given, default_time applies. The driver stops
                            an attempt at it: the reservations of
                            aegis-plus count on that (reserve.c) */
    double cpus;         /* CPUs its data loading keeps busy (aegisd: its
                            --cpus or cpus_per_gpu times its GPUs; the
                            simulator: load_cpus); 0: none counted. A job
                            of a feed shares the feed's loader on its first
                            GPU and counts only when it opens it (cpus.c) */
} core_job_spec;

/* Seconds between SIGTERM and SIGKILL when aegisd stops a running job (a
 * cancel, a time limit): time for a training loop to write a checkpoint.
 * The reservations add it to every limit, since the GPU is the job's
 * until then. */
#define CORE_KILL_GRACE_S 10.0

/* The longest feed name the core keeps (the feed library's is shorter). */
#define CORE_FEED_NAME_MAX 63

/* The most a job may be niced: the priority a user's fair share gives is
 * at most this much (core_job_priority()). */
#define CORE_NICE_MAX 10000

/* ---- telemetry ------------------------------------------------------------ */

/* One reading of one GPU. DCGM fields are CORE_UNKNOWN when DCGM is absent,
 * util is CORE_UNKNOWN when NVML cannot tell. The type is `struct
 * core_sample` (or its alias core_reading): a typedef named core_sample
 * would clash with the function core_sample() below, which C forbids. */
typedef struct core_sample {
    double used_mib;
    double total_mib;
    double smact, smocc, drama; /* 0..1 */
    double util;                /* 0..1 */
} core_reading;

/* ---- decisions ------------------------------------------------------------ */

typedef struct core_launch {
    int64_t job_id;
    int attempt;                /* 1 for the first run, 2 after one OOM, ... */
    int num_gpus;
    int gpus[CORE_MAX_JOB_GPUS];
    double floor_mib;           /* memory the attempt was admitted with */
    bool exclusive;             /* placed on GPUs that were idle */
    share_mode share[CORE_MAX_JOB_GPUS]; /* how it runs on gpus[k]: see
                                   "sharing modes" below */
    const mig_profile *mig;     /* share[0] == SHARE_MIG: the GPU instance
                                   to create on gpus[0]; else NULL */
    int mig_start;              /* with mig: its first memory slice (NVML's
                                   placement start) */
} core_launch;

typedef enum core_exit {
    CORE_EXIT_OK,       /* finished successfully */
    CORE_EXIT_OOM,      /* classified as out of GPU memory */
    CORE_EXIT_FAILED,   /* any other failure: never retried */
    CORE_EXIT_LOST      /* the process vanished (daemon restart): requeued */
} core_exit;

typedef enum core_outcome {
    CORE_DONE,          /* the job is finished and forgotten */
    CORE_REQUEUED,      /* back in the recovery queue with a higher floor */
    CORE_STOPPED        /* gave up: failed, or OOM when it ran alone */
} core_outcome;

/* ---- why a job waits ------------------------------------------------------
 *
 * Every queued job has a reason, as Slurm's REASON column gives one:
 * core_job_reason() answers it for the queue as the last core_schedule()
 * left it. It is worked out when asked, not at each decision, so a driver
 * that never asks (the simulator without --json) pays nothing for it. */
typedef enum core_wait {
    CORE_WAIT_NONE,         /* not waiting: running, or unknown to the core */
    CORE_WAIT_BEHIND,       /* behind `job`, the head of the queue: the queue
                               waits for it (no backfill), or the GPUs that
                               would take this job are kept for it */
    CORE_WAIT_MEMORY,       /* no GPU shows need_mib free; the largest free
                               is free_mib, on `gpu` */
    CORE_WAIT_OBSERVING,    /* `gpu` is observing its newest job until
                               `until` (< 0: until that job is seen active) */
    CORE_WAIT_WINDOW,       /* `gpu`'s telemetry window fills at `until` */
    CORE_WAIT_PRESSURE,     /* `gpu` is under pressure: `metric` reads
                               `value` >= `limit` */
    CORE_WAIT_IDLE,         /* needs `count` idle GPUs: it runs alone */
    CORE_WAIT_POLICY,       /* the policy's own rule (horus, lucid) refuses
                               every open GPU */
    CORE_WAIT_MIG,          /* no MIG instance holding need_mib can be made */
    CORE_WAIT_DRAINED,      /* every GPU it could take is drained */
    CORE_WAIT_USER_LIMIT,   /* its user runs `count` jobs (metric "job") or
                               holds `count` GPUs ("GPU"), the limit; or,
                               `asked` > 0, it asks `asked` GPUs, over
                               the limit of `count`: it cannot start */
    CORE_WAIT_DEPENDENCY,   /* set by the daemon: waits for `job` to end */
    CORE_WAIT_HELD,         /* set by the daemon: held by its user */
    CORE_WAIT_FEED,         /* waits for its feed: the feed's producer,
                               job `job`, is queued (gpu -1), or `gpu`,
                               where the feed's jobs run, observes until
                               `until` (< 0: until its newest job is seen
                               active) */
    CORE_WAIT_MPS_USER,     /* `gpu` shares through MPS and runs jobs of
                               `user`, another user: MPS serves one user
                               at a time */
    CORE_WAIT_RESERVING,    /* the head of the queue, wide or alone, keeps
                               the GPUs `gpus`, where `count` jobs run:
                               it starts once they end, at `until` at the
                               latest by their time limits (< 0: unknown,
                               job `job` has none) */
    CORE_WAIT_CPUS,         /* aegis-plus: its data loading needs `value`
                               CPUs; of the server's `limit`, `free_cpus`
                               are neither committed to running jobs nor
                               kept (`kept_cpus` of them) for the head of
                               the queue, job `job` */
    CORE_WAIT_KINDS
} core_wait;

typedef struct core_reason {
    core_wait kind;
    int64_t job;            /* BEHIND, DEPENDENCY */
    int gpu;                /* MEMORY, OBSERVING, WINDOW, PRESSURE; -1 none */
    int count;              /* IDLE, USER_LIMIT */
    int asked;              /* USER_LIMIT: the GPUs the job asks when they
                               are over the limit; else 0 */
    double need_mib, free_mib; /* MEMORY, MIG */
    double until;           /* OBSERVING, WINDOW: in `now` units */
    double value, limit;    /* PRESSURE, CPUS */
    double free_cpus, kept_cpus; /* CPUS */
    const char *metric;     /* PRESSURE: "SMACT" or "utilization";
                               USER_LIMIT: "job" or "GPU" (the text adds
                               the plural) */
    const char *feed;       /* FEED: its name, held by the core */
    uint32_t user;          /* MPS_USER: the user whose jobs hold `gpu` */
    uint64_t gpus;          /* RESERVING: bit g for GPU g */
} core_reason;

/* The one-word name of a kind, as JSON keys and `aegis ls` read it:
 * "behind", "memory", "observing", ... ("" for CORE_WAIT_NONE). */
const char *core_wait_name(core_wait kind);

/* The reason as a line of text, "no GPU with 38000 MiB free (largest free:
 * 30720 MiB on GPU 1)"; a time is told as seconds from `now`, in the
 * clock the reason was asked in. Returns what snprintf returns. */
int core_reason_text(const core_reason *r, double now, char *buf, size_t len);

/* A CORE_WAIT_RESERVING reason as text, its expected start told as
 * `start` ("14:20" by aegisd's clock, "in 300 s" by core_reason_text()):
 * "reserving GPUs 0-7: 3 jobs on them, expected start 14:20". `start` is
 * not read when the start is unknown. Returns what snprintf returns. */
int core_reserve_text(const core_reason *r, const char *start, char *buf,
                      size_t len);

/* ---- the state ------------------------------------------------------------ */

typedef struct core_state core_state;

/* Creates a core for a server of num_gpus GPUs with the given memory each.
 * Returns NULL with a message in err when cfg is invalid (unknown policy,
 * a number out of its range). */
core_state *core_create(const core_config *cfg, int num_gpus,
                        const double *gpu_total_mib, char *err, size_t errlen);
void core_destroy(core_state *core);

/* Queues a job. Returns 0, or -1 (duplicate id, num_gpus out of range or
 * larger than the server) with a message. */
int core_submit(core_state *core, const core_job_spec *job, double now,
                char *err, size_t errlen);

/* Whether a job of num_gpus GPUs could ever start under cfg's per-user
 * limits: 0, or -1 with why in err ("2 GPUs asked, over max_gpus_per_user
 * 1"). Only a policy that applies the limits (aegis-plus) says -1. A
 * driver refuses such a job at submission, as Slurm's DenyOnLimit does,
 * rather than queue it for ever. core_submit() takes it all the same:
 * one queued before the limit was lowered (a driver restarted or
 * reconfigured) stays queued, with a reason that says it cannot start
 * (core_job_reason()), for someone to cancel. */
int core_job_within_limits(const core_config *cfg, int num_gpus, char *err,
                           size_t errlen);

/* ---- taking jobs back (a driver that restarts or rebuilds its state) ------
 *
 * A driver that outlives neither its process nor its core (the daemon
 * after a restart) keeps what the core knew of each job and hands it back
 * with the calls below, so a job keeps its rung of the recovery ladder, its
 * place in the recovery queue and its GPUs. */

/* A job's place on the recovery ladder: what core_job_retry() reports and
 * core_submit_retry() and core_adopt() take back. */
typedef struct core_retry {
    int attempt;            /* the attempt queued or running: 1, 2, ... */
    double floor_mib;       /* recovery floor; 0 before the first OOM, when
                               the policy's demand applies */
    bool alone;             /* the ladder is exhausted: must run alone */
} core_retry;

/* A job found already running, as the driver recorded its launch. */
typedef struct core_adopted {
    core_retry retry;       /* its attempt and place on the ladder */
    int gpus[CORE_MAX_JOB_GPUS]; /* spec.num_gpus distinct GPUs */
    double admitted_mib;    /* core_launch.floor_mib of the attempt: the
                               ladder climbs above it after an OOM */
    bool exclusive;         /* core_launch.exclusive of the attempt */
    bool active;            /* already seen active on its GPUs; when false,
                               call core_job_active() once it is */
    double active_at;       /* when it was first seen active (`now` units):
                               its GPUs stay closed until active_at +
                               observe_s; long ago means open at once */
    const mig_profile *mig; /* core_launch.mig of the attempt (NULL: not in
                               a MIG instance); a profile of the model given
                               to core_gpu_share(), matched by name */
    int mig_start;          /* core_launch.mig_start of the attempt */
    double started_at;      /* when the attempt started (`now` units): its
                               time limit runs from there */
} core_adopted;

/* Reports the place on the ladder of a job the core holds (queued or
 * running). Returns 0, or -1 when the id is unknown. A driver saves this
 * whenever core_job_exit() answers CORE_REQUEUED. */
int core_job_retry(const core_state *core, int64_t job_id, core_retry *r);

/* Queues a job at attempt r->attempt. A retry (attempt > 1) joins the
 * recovery queue behind the jobs already there, so calling this in the
 * order the jobs were requeued rebuilds that queue; attempt 1 is
 * core_submit(). Returns 0, or -1 as core_submit() does, or when attempt
 * < 1 or floor_mib < 0, with a message. */
int core_submit_retry(core_state *core, const core_job_spec *job,
                      const core_retry *r, double now, char *err,
                      size_t errlen);

/* Takes in a job that is already running on a->gpus. It is accounted on
 * them like a job core_schedule() launched (the policies' sums, placement
 * counts, the observation gate, a GPU held by a job that must run alone),
 * and core_job_active(), core_job_exit() and core_cancel() then treat it as
 * usual. Whether it shared its GPUs before adoption is unknown: a job
 * adopted as exclusive counts as having run alone unless a job is placed
 * (or adopted) beside it afterwards, or was adopted there before it.
 * Free memory at its launch is unknown too, so an OOM climbs from
 * admitted_mib alone (as with ladder_from_free off). Returns 0, or -1 with
 * a message (what core_submit() refuses, a GPU out of range or twice,
 * attempt < 1). */
int core_adopt(core_state *core, const core_job_spec *job,
               const core_adopted *a, double now, char *err, size_t errlen);

/* Applies cfg to a live core: thresholds, margins, the observation time,
 * the ladder, policy and placement all take effect at the next decision;
 * jobs already placed keep the floor and the observation time they got.
 * A change of window_samples or sample_period_s restarts every GPU's
 * telemetry window empty, so no GPU admits a collocated job until its
 * window has filled again (exclusive placement is unaffected). Returns 0,
 * or -1 with a message, the core unchanged, when cfg is invalid (as
 * core_create() checks it) or out of memory. */
int core_reconfigure(core_state *core, const core_config *cfg, char *err,
                     size_t errlen);

/* Removes a queued job, or forgets a running one (the driver kills it).
 * Returns 0, or -1 when the id is unknown. */
int core_cancel(core_state *core, int64_t job_id, double now);

/* From `now` on, GPU `gpu` reads `s` until the next call for that GPU: the
 * core treats telemetry as a step function sampled every sample_period_s,
 * so a driver may call this every period (the daemon) or only when the
 * reading changes (the simulator). */
void core_sample(core_state *core, int gpu, const struct core_sample *s,
                 double now);

/* The launched job is now seen active on its GPUs (its PID in the GPU's
 * process list, or its memory up by 64 MiB). Starts the observation time. */
void core_job_active(core_state *core, int64_t job_id, double now);

/* The job's attempt ended. Returns what the core did with it; for
 * CORE_REQUEUED, *next_floor_mib (if not NULL) gets the new floor, which is
 * 0 when the next attempt must run alone. */
core_outcome core_job_exit(core_state *core, int64_t job_id, core_exit how,
                           double now, double *next_floor_mib);

/* ---- sharing modes (issue 5) ----------------------------------------------
 *
 * Each GPU has a mode (share_mode.h); core_create() makes every GPU naive,
 * which is how the core always placed: whole-GPU jobs share a GPU through
 * the gates above, time-sliced by CUDA. How a job runs on a GPU is
 * core_launch.share[k]:
 *
 *   exclusive  Nothing is collocated: a job takes an idle GPU and holds it
 *              alone (share = SHARE_EXCLUSIVE).
 *   naive      The core's usual placement; share = SHARE_NAIVE.
 *   mps        The same placement; share = SHARE_MPS: the driver starts the
 *              job as a client of the GPU's MPS server, even when it is
 *              alone at first, since others may join it later. MPS serves
 *              one user at a time (one server per user; another user's
 *              client waits in CUDA initialisation until the server's
 *              clients have all ended), so while the GPU runs jobs only
 *              jobs of the same user join them (CORE_WAIT_MPS_USER): a
 *              feed whose producer and consumers are of different users
 *              shares only GPUs that do not share through MPS. The same
 *              holds for an auto GPU while it runs whole-GPU jobs.
 *   mig        A job gets a MIG instance of its own: the smallest profile
 *              whose memory holds its demand (the policy's demand, or its
 *              recovery floor after an OOM), at the lowest free start
 *              (mig_plan()); share = SHARE_MIG, core_launch.mig and
 *              mig_start name the instance to create. Instances do not
 *              interfere, so the telemetry, pressure and observation gates
 *              do not apply, nor a policy's own admission rule (horus's
 *              utilization budget, lucid's pair limits, which guard
 *              against interference); only the free slices do. When the instance
 *              cannot be made now, the job waits, whether the GPU is FULL
 *              or FRAGMENTED (the free slices would hold it, but not at a
 *              valid start). Since there is no backfill, no job behind it
 *              takes the slices that free meanwhile: the GPU drains until
 *              an instance at a valid start is free, at the latest when it
 *              is empty, which is its repartitioning (instances are made
 *              per job, so an empty GPU holds no partition to undo).
 *              A job MIG cannot hold takes the whole GPU with MIG off,
 *              alone, once the GPU is idle (share = SHARE_EXCLUSIVE): a
 *              demand above the largest profile (TOO_BIG), a job that must
 *              run alone (ladder exhausted), a multi-GPU job (MIG instances
 *              are never combined across GPUs: NCCL does not run across
 *              them), and every job under a policy that never collocates.
 *              An OOM in an instance requeues the job with the memory of
 *              the next larger profile as its floor; above the largest it
 *              must run alone, and an OOM alone stops it.
 *   auto       Per job: MIG when the smallest profile that holds the demand
 *              wastes at most MIG_AUTO_MAX_WASTE of memory (mig_auto()) and,
 *              when the job's profiled utilization is known (util_pct), the
 *              profile's share of the 7 compute slices covers it; else MPS.
 *              A GPU never mixes the two, so its first job fixes how it is
 *              used until it is idle again: while it holds MIG instances
 *              only MIG jobs join it (as on a mig GPU); while it runs
 *              whole-GPU jobs only MPS jobs join (as on an mps GPU). A job
 *              waiting for the other kind waits, like any head of queue.
 *              Multi-GPU jobs always run under MPS.
 *
 * Exclusive-first applies only to jobs that take a whole GPU: a MIG job
 * goes to an instance even on an idle GPU, since a whole idle GPU given to
 * it would keep every later small job off that GPU until it ends. Among
 * GPUs where the instance can be made, the one with the fewest free memory
 * slices is taken (best fit), keeping emptier GPUs for bigger profiles. */

/* Sets GPU `gpu` to `mode`. mig and auto need the GPU's MIG table (from
 * mig_model_find(); static data, so the core keeps the pointer); other
 * modes ignore `mig`. Only while no job is placed on the GPU: a driver
 * sets the modes after core_create(), before core_adopt(). Returns 0, or
 * -1 with a message (GPU out of range, unknown mode, mig or auto without a
 * table, jobs on the GPU). */
int core_gpu_share(core_state *core, int gpu, share_mode mode,
                   const mig_model *mig, char *err, size_t errlen);

/* ---- CPUs (cpus.c) --------------------------------------------------------
 *
 * Jobs placed beside each other share the server's CPUs too: a job's data
 * loaders starve when the loaders beside them want more CPUs than the
 * server has, and the job waits on its batches (docs/simulator.md, "Data
 * loading"). The core counts the CPUs committed to running jobs (each
 * job's spec.cpus, a feed's loader once per GPU) under every policy;
 * aegis-plus places no job whose CPUs would take the committed ones past
 * the server's, unless none are committed (a job wanting more than the
 * server has runs without other loaders beside it), and keeps the CPUs of
 * the head of its queue from the jobs behind it, as it keeps its GPUs. */

/* The server's CPUs; 0 (what core_create() sets): not counted. Returns
 * 0, or -1 with a message when cpus is negative or not finite. */
int core_set_cpus(core_state *core, double cpus, char *err, size_t errlen);

/* The CPUs committed to running jobs' data loading now. */
double core_cpus_committed(const core_state *core);

/* Keeps GPU `gpu` out of (drained) or back in placement. */
void core_gpu_drain(core_state *core, int gpu, bool drained);

/* Whether telemetry shows memory of GPU `gpu` in use by processes the
 * driver did not place (another job's leftovers, a program run outside the
 * scheduler), and their user: a uid, or CORE_USERS_UNKNOWN when they are
 * several users' or it is not known. While it does, the GPU is never
 * idle: no exclusive placement takes it, since the job would not have it
 * alone; collocation still may, through the telemetry gates, which count
 * that memory, but not beside another user's processes on a GPU that
 * shares through MPS (one user at a time: CORE_WAIT_MPS_USER). */
#define CORE_USERS_UNKNOWN (-1)
void core_gpu_foreign(core_state *core, int gpu, bool in_use, int64_t user);

/* Places as many queued jobs as the policy allows at `now`, in queue order
 * (recovery queue first, then FIFO; under aegis-plus, then by priority,
 * with backfill). Writes at most `max` launches to out and returns how
 * many. The caller must start them. */
int core_schedule(core_state *core, double now, core_launch *out, int max);

/* Why job job_id waits, as of the last core_schedule() (call it at that
 * call's `now`, before other events). A running or unknown job gets
 * CORE_WAIT_NONE; returns 0, or -1 when the core does not know the job. */
int core_job_reason(core_state *core, int64_t job_id, double now,
                    core_reason *r);

/* How far down the queue one backfill pass looks, and so the most jobs
 * core_reason_front() gives: Slurm's backfill stops at 500 jobs
 * (bf_max_job_test) for the same reason, the cost of a pass. */
#define CORE_BACKFILL_DEPTH 256

/* The queued jobs whose reason may be other than "behind the head", at
 * most max of them, into ids: the head under FIFO, the jobs the last
 * backfill pass reached (those it tried, and where it stopped for want of
 * room, not at the head's quota, those it would have tried next, as far
 * as a pass looks). Every other queued job waits behind the head, so
 * a driver counting reasons asks about these alone. Returns how many. */
int core_reason_front(core_state *core, int64_t *ids, int max);

/* The reason of the i-th job core_reason_front() gave (0 <= i < what it
 * returned), as core_job_reason() tells it, without looking the job up
 * again: a driver that counts time by reason asks the whole front at most
 * moments. Call it at the same `now`, with no job ended or cancelled
 * since core_reason_front() (asserted). */
void core_front_reason(core_state *core, int i, double now, core_reason *r);

/* A number that stays the same while the front of the queue
 * (core_reason_front()) stays and none of its jobs' reasons can change
 * kind (their figures may: a pressure reading, seconds left); every other
 * queued job waits behind the head. It compares what core_job_reason()
 * reads at `now` (the head, the last pass, each GPU's gates as time moves
 * its window and observation) with what it read at the last call, and
 * counts a new version when anything differs; an arrival no pass reached
 * changes none of it. Most moments of a busy replay change no reason (a
 * window sliding past a step that moves no gate), so a driver counting
 * time by reason asks again only when this changes. Call it where
 * core_job_reason() may be called, after core_schedule(). */
uint64_t core_reasons_version(core_state *core, double now);

/* The earliest time after `now` at which core_schedule() could decide
 * differently without any new event (an observation ending, a telemetry
 * window filling or sliding past a change), or a negative value when
 * nothing is pending. The simulator sleeps until then. */
double core_next_wakeup(core_state *core, double now);

/* True when a job that joins a waiting queue cannot start before the
 * queue's head does (every policy but aegis-plus): a driver need not ask
 * core_schedule() again for it. */
bool core_queue_blocks(const core_state *core);

/* ---- priorities (aegis-plus; `aegis priority`, `aegis fairshare`) -------- */

/* A queued first attempt's priority as a backfill pass orders users'
 * next jobs: fair_share - nice, the higher first. head_start_s is how much
 * earlier than its submission it stands in its user's queue (a job
 * demanding over half a GPU, big_advance_s). */
typedef struct core_priority {
    double priority;
    double fair_share;      /* its user's factor times CORE_NICE_MAX */
    int nice;
    double head_start_s;
} core_priority;

/* Whether the policy orders the queue by priority (aegis-plus); the
 * others run it in submit order and have none. */
bool core_has_priorities(const core_state *core);

/* Job job_id's priority at now: 0, or -1 when the policy has none, the
 * job is unknown, running, or a retry (the recovery queue goes first). */
int core_job_priority(core_state *core, int64_t job_id, double now,
                      core_priority *p);

/* A user's fair share at now (Slurm's sshare): raw and decayed
 * GPU-seconds, the share (the mean decayed usage of the users with jobs
 * queued or running) and the factor 2^(-decayed/share). */
typedef struct core_user_usage {
    uint32_t uid;
    double raw_gpu_s, decayed_gpu_s, share_gpu_s, factor;
    int running_jobs, queued_jobs;
} core_user_usage;

/* Every user the core has seen, up to max, into out; returns how many
 * there are. */
int core_fairshare(core_state *core, double now, core_user_usage *out,
                   int max);

/* Changes a queued job's nice, memory estimate and time limit to spec's
 * (its other fields are kept): it keeps its place in submit order and
 * moves in its user's queue as nice says. 0, or -1 when the job is not
 * queued. */
int core_job_update(core_state *core, int64_t job_id,
                    const core_job_spec *spec);

/* Jobs waiting (both queues) and jobs placed, for dispatchers and listings. */
int core_queued_count(const core_state *core);
int core_running_count(const core_state *core);
int core_idle_gpu_count(const core_state *core);

/* The recovery ladder for a GPU of total_mib: fills buckets (ascending) and
 * returns how many, at most max. 40960 MiB gives 10240, 18432, 20480, 28672,
 * 30720 with the default step. Exposed for tests and for `aegis show`. */
int core_ladder(double total_mib, double max_step_mib, double *buckets,
                int max);

/* Recounts, from the jobs themselves, every sum and count the events keep
 * (per GPU: njobs, util_pct_sum, score_sum, peak_sum_mib, peak_unknown,
 * unseen, MIG instances, the idle bit; the running count, both queues'
 * links and membership, each user's and feed's counts, the CPUs committed
 * and each feed's loaders). Returns 0, or -1 with the first difference
 * in err, naming the GPU, job, user or feed, the field and both values.
 * Reads every job: for tests, `aegis sim --check` and the
 * sanitizer build's daemon (check.c). */
int core_check(const core_state *core, char *err, size_t errlen);

/* The allocator the core takes its memory from: the C library's unless
 * a test swaps in one that fails on purpose, as SQLite's fault injection
 * does, to walk the out-of-memory paths. NULL restores the C library's.
 * Not thread-safe: set it before any core exists. */
typedef struct core_allocator {
    void *(*malloc)(size_t size);
    void *(*calloc)(size_t n, size_t size);
    void *(*realloc)(void *p, size_t size);
} core_allocator;
void core_set_allocator(const core_allocator *a);

#endif
