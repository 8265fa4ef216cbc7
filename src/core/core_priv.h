/* core_priv.h -- the scheduling core's state, shared by the files of
 * src/core that make up the core (core.c, place.c, fifo.c, backfill.c,
 * reason.c, ...); nothing outside src/core includes it: core.h is the
 * interface.
 */
#ifndef AEGIS_CORE_PRIV_H
#define AEGIS_CORE_PRIV_H

#include "core.h"
#include "share_gpu.h"
#include "window.h"
#include "../policy/policy.h"

/* A question asked of the GPUs for a reason (reason.c): a job's demand,
 * GPU count and the GPUs it may take, at a moment. The jobs at the front
 * of a queue mostly ask alike, and each answer reads every GPU's window.
 * A job's whole reason, past the head included, is asked too (whole), for
 * its user and limit as the last pass left them: a simulated front of 256
 * jobs asks again after every change. */
typedef struct core_question {
    uint64_t changes;       /* core_state.changes when worked out; 0: none */
    uint64_t passes;        /* core_state.passes then (whole reasons) */
    double now, demand;
    double cpus;            /* the CPUs its loader would need */
    uint64_t allowed;
    uint64_t shape;         /* GPU count, core_may_share(), a retry's
                               telemetry gates, whole, the user and its
                               limit, packed (reason.c) */
} core_question;

typedef struct core_explained {
    core_question q;
    core_reason reason;
} core_explained;

/* How many of them a core keeps: more than the catalog has workloads, each
 * asked for its whole reason and past the head, so the front of a
 * simulated queue rarely asks twice at one moment. */
#define CORE_EXPLAINED 256

/* What a GPU's gates read for a reason's kind at one moment, beyond the
 * counts that change only with core_state.changes (reason.c). */
typedef struct core_gpu_mark {
    double free_now;        /* core_gpu_free_now() */
    double view_free, view_smact, view_smocc, view_drama, view_util;
                            /* policy_gpu's telemetry, as the last
                               placement left it, for a policy's admits() */
    bool full, pressure;    /* window full; the pressure filter refuses */
    bool observing;         /* no job unseen, now < open_at */
    bool unseen;            /* a job unseen and now < placed_at +
                               observe_s, with feeds (a feed's wait) */
} core_gpu_mark;

/* Everything core_job_reason() reads besides the job, as the last
 * core_reasons_version() found it (reason.c). */
typedef struct core_reasons_mark {
    uint64_t changes;
    uint64_t departed;      /* jobs submitted and no longer queued: an
                               arrival past the front changes no reason */
    int64_t first;          /* core_head()'s id, -1: none */
    uint64_t producers;     /* a digest of the feeds' queued producers */
    int64_t head_id;
    uint64_t reserved;
    double head_need_mib;
    double head_cpus;
    int64_t drain_id;
    uint64_t drain_kept;
    int nreached;
    int64_t reached[CORE_BACKFILL_DEPTH];
    core_gpu_mark gpus[CORE_MAX_GPUS];
    uint64_t version;
} core_reasons_mark;

/* JOB_SPARE: a forgotten job's record, kept for the next (core_forget()). */
typedef enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_SPARE } job_state;

typedef struct core_job {
    core_job_spec spec;
    job_state state;
    int attempt;            /* 1 for the first run */
    double floor_mib;       /* recovery floor; 0 before the first OOM */
    bool alone;             /* must run alone (ladder exhausted) */
    /* while running; core_start() or core_adopt() and core_occupy() set
     * these before any read, so a reused record keeps its old values until
     * then (core_job_alloc()): */
    int gpus[CORE_MAX_JOB_GPUS];
    double admitted_mib;    /* the demand or floor it was admitted with */
    double dispatch_free_mib; /* least free memory among its GPUs when
                                 placed; CORE_UNKNOWN without telemetry */
    bool exclusive;         /* placed on idle GPUs */
    bool active;            /* seen active on its GPUs */
    mig_instance mig;       /* its MIG instance; profile NULL when it runs
                               on whole GPUs */
    uint64_t placed_seen[CORE_MAX_JOB_GPUS]; /* GPU placement counts at launch */
    double started_at;      /* its attempt's start: its limit runs from here */
    /* the jobs on each of its GPUs, gpus[k]'s through on_next[k] and
     * on_prev[k] (reserve.c) */
    struct core_job *on_next[CORE_MAX_JOB_GPUS], *on_prev[CORE_MAX_JOB_GPUS];
    /* backfill (aegis-plus): */
    int user;               /* its user's place in core_state.users */
    uint64_t seq;           /* submit order */
    double submitted_at;
    double queued_at;       /* its time in its user's queue: submitted,
                               less the advance of a big job (users.c) */
    struct core_job *uprev, *unext; /* its user's queue (users.c) */
    int passed;             /* jobs started past it while it was the head */
    uint64_t tried_in;      /* the last backfill pass that reached it
                               (tried it, or stopped before it for want
                               of room: backfill.c) */
    bool over_limit;        /* its user was at a limit then */
    bool behind_drain;      /* that pass reached it after the job behind
                               the head that waits for 2 empty GPUs or
                               more (core_state.drain_id, backfill.c) */
    int feed;               /* its feed's place in core_state.feeds; -1:
                               none */
    struct core_job *prev, *next; /* queue links */
    struct core_job *hnext;       /* hash chain */
} core_job;

typedef struct core_queue {
    core_job *head, *tail;
    int len;
} core_queue;

/* The telemetry gates' last answer on a GPU. The gates read only the
 * window, the demand and the configuration, and a busy server asks them of
 * every GPU at every attempt while most windows stay as they were. */
typedef struct core_gate {
    uint64_t version;       /* win_version_at() when asked; 0: never */
    double demand;          /* the demand asked about */
    bool pressure;          /* and whether the pressure filter applied */
    bool admits;            /* the answer */
} core_gate;

/* A data feed, as feeds.c keeps it: where its jobs run, and whether its
 * producer waits in the queue. Kept once seen, as users are. */
typedef struct core_feed {
    char name[CORE_FEED_NAME_MAX + 1];
    uint32_t owner;         /* the spec's feed_owner */
    int producers_queued;   /* its producers in the queue */
    int64_t producer;       /* the last of them queued */
    uint64_t gpus;          /* GPUs where its jobs run: on_gpu[g] > 0 */
    int on_gpu[CORE_MAX_GPUS];
    /* Its data loader on GPU g, shared by its running jobs whose first
     * GPU is g (cpus.c): how many, and the CPUs of the job that opened
     * it, committed until the last of them ends. */
    int loader_jobs[CORE_MAX_GPUS];
    double loader_cpus[CORE_MAX_GPUS];
} core_feed;

/* A user's next job in a pass, on the pass's heap (users.c), with its
 * priority: the heap compares it most, from there rather than through
 * the job and its user. */
typedef struct core_order_entry {
    double priority;
    core_job *job;
} core_order_entry;

/* A user, as users.c keeps it. */
typedef struct core_user {
    uint32_t uid;
    int jobs, gpus;         /* its jobs running, the GPUs they hold */
    double usage;           /* decayed GPU-seconds, as of usage_at */
    double usage_at;
    double raw_usage;       /* GPU-seconds held since the core began,
                               undecayed, as of raw_at (`aegis fairshare`) */
    double raw_at;
    core_job *head, *tail;  /* its first attempts waiting: nice, then submit */
    int queued;
    bool active;            /* on core_state.active: queued or running */
} core_user;

typedef struct core_gpu {
    policy_gpu view;        /* what policies see */
    win win;                /* telemetry window */
    core_gate gate;         /* remembered telemetry gates; core_reconfigure()
                               forgets it */
    bool drained;           /* kept out of placement */
    bool foreign;           /* memory in use by processes not placed here */
    int64_t foreign_user;   /* their uid; CORE_USERS_UNKNOWN: several, or
                               not known */
    bool alone;             /* runs a job that must not share */
    int unseen;             /* jobs placed here, not yet seen active */
    double open_at;         /* observation ends: no new job before */
    double placed_at;       /* its newest job's placement: a feed's job
                               waits for an unseen one observe_s at most
                               (feeds.c) */
    uint64_t placements;    /* jobs ever placed here: tells a job it shared */
    uint32_t user;          /* the user of its first job while it has jobs:
                               an MPS GPU's (share_gpu_mps()) jobs are all
                               that user's */
    share_gpu share;        /* sharing mode and MIG instances */
    struct core_job *jobs;  /* the jobs placed here (reserve.c) */
} core_gpu;

struct core_state {
    core_config cfg;
    const policy *pol;
    policy_placement placement;
    int num_gpus;
    double half_gpu_mib;    /* half the memory of the largest GPU: a job
                               demanding more is big (users.c) */
    core_gpu gpus[CORE_MAX_GPUS];
    core_queue recovery;    /* requeued after an OOM or loss: served first */
    core_queue fifo;
    int running;
    int mig_gpus;           /* GPUs in mig or auto mode: with none, no job
                               runs in a MIG instance, and placement skips
                               asking each GPU whether one would */
    int mps_gpus;           /* GPUs in mps mode: with any, a reason depends
                               on the job's user (core_gpu_other_user()) */
    uint64_t idle;          /* bit g: GPU g is idle (gpu_idle()) */
    double cpus;            /* the server's CPUs; 0: not counted (cpus.c) */
    double cpus_used;       /* committed to running jobs' data loading */
    int rr_next;            /* round robin: next GPU to start from */
    /* The last backfill pass: reasons are told from it (core_job_reason). */
    uint64_t passes;        /* backfill passes so far */
    int64_t head_id;        /* the head it left waiting; -1: none */
    uint64_t reserved;      /* GPUs it kept for that head */
    double head_need_mib;   /* what the head demands beside other jobs;
                               0 when it waits for idle GPUs or keeps its
                               GPUs whole */
    bool reserve_whole;     /* the head is wide or must run alone: its
                               GPUs take no partner (reserve.c) */
    double reserve_start;   /* when the head starts at the latest, by the
                               limits of the jobs on its GPUs; < 0:
                               unknown */
    double head_cpus;       /* the CPUs it keeps from the jobs behind it
                               (cpus.c); 0: none */
    double reserve_room_s;  /* reserve_start less the pass's now: a job
                               whose limit and grace fit in it may start
                               on the head's GPUs; < 0: none may */
    int64_t newest_empty_id; /* the job submitted last that waited for
                               empty GPUs then (core_needs_empty()); -1:
                               none (core_queued_at()) */
    int64_t drain_id;       /* the first job behind the head that waits
                               for 2 empty GPUs or more and could not
                               start; -1: none (backfill.c) */
    uint64_t drain_kept;    /* the GPUs it keeps from the jobs the pass
                               reached after it */
    int64_t reached[CORE_BACKFILL_DEPTH]; /* the jobs it reached, in order */
    /* Their records, as reached: a record may outlive its job
     * (core_forget() keeps it spare for the next), so one still of id
     * reached[i] and not spare is that job, found without the hash; NULL
     * where the record was freed (core_forget() past CORE_SPARE_MAX). */
    core_job *reached_job[CORE_BACKFILL_DEPTH];
    int nreached;
    /* What core_reason_front() last gave, for core_front_reason(): the
     * records stay valid while no job is forgotten (core_forget()). */
    core_job *front[CORE_BACKFILL_DEPTH];
    int nfront;
    uint64_t forgotten;     /* jobs forgotten so far */
    uint64_t front_forgotten; /* forgotten when the front was given */
    uint64_t changes;       /* events that can change a gate's answer */
    uint64_t submits;       /* jobs submitted so far: core_job.seq */
    core_user *users;       /* everyone who submitted, never forgotten */
    int nusers, users_cap;
    int *user_slots;        /* users by uid: open addressing, each slot a
                               place in users plus 1, 0 when empty */
    int user_slots_size;    /* a power of two, at least twice nusers */
    core_feed **feeds;      /* every feed a job named, never forgotten; */
    int nfeeds, feeds_cap;  /*   each alone, so a reason's name stays */
    int *active;            /* the users with jobs queued or running, by
                               place in users: only they count in a pass */
    int nactive;
    core_order_entry *order_heap; /* a pass's place in each active
                               user's queue: a binary heap, best first */
    int order_len;
    double *order_base;     /* each active user's priority in that pass */
    core_explained explained[CORE_EXPLAINED]; /* reasons lately told, by
                               a hash of what they were asked for */
    core_reasons_mark reasons_mark; /* core_reasons_version() */
    core_job **table;       /* hash table of every job by id */
    size_t table_size;      /* a power of two */
    size_t njobs;
    core_job *spare;        /* forgotten jobs' records, chained by hnext,
                               for the next submits: a simulated server
                               submits thousands, and malloc and free of
                               each was a twentieth of a replay */
    size_t nspare;          /* on that chain, at most CORE_SPARE_MAX */
};

/* The most spare job records kept (core_state.spare); a job forgotten
 * past them has its record freed. 4096 records, 2 MiB at 488 bytes each,
 * are more than a full server (CORE_MAX_GPUS GPUs, a few jobs on each)
 * ends between one burst of submits and the next, so a steady stream of
 * jobs, a replay's or aegisd's, still reuses a record for nearly every
 * submit; a burst past them (an array of 100,000 jobs, queued at once and
 * drained) gives the rest back, where it kept 49 MB for good. */
#define CORE_SPARE_MAX 4096

_Static_assert(CORE_MAX_GPUS <= 64, "core_state.idle holds a bit per GPU");

/* Every GPU of a core: a mask of GPUs the placements may take. */
#define CORE_ALL_GPUS (~(uint64_t)0)

/* ---- the gates' small parts, inline: every placement asks them of every
 * GPU ---------------------------------------------------------------------- */

/* Closed to a new job: drained, held by a job that must run alone, or
 * still observing its last newcomer. */
static inline bool core_gpu_open(const core_gpu *gpu, double now) {
    return !gpu->drained && !gpu->alone && gpu->unseen == 0 &&
           now >= gpu->open_at;
}

/* Whether the GPU serves another user's MPS clients than the job's: MPS
 * runs one user's clients at a time, and the job would wait in CUDA
 * initialisation until they have all ended (share_gpu_mps()). They may be
 * the GPU's jobs or processes not placed here (foreign), whose user is
 * counted as another when it is not known. */
static inline bool core_gpu_other_user(const core_gpu *gpu,
                                       const core_job *job) {
    if (!share_gpu_mps(&gpu->share)) return false;
    return (gpu->view.njobs > 0 && gpu->user != job->spec.user) ||
           (gpu->foreign && gpu->foreign_user != (int64_t)job->spec.user);
}

/* The other user core_gpu_other_user found on the GPU, for job's reason:
 * its jobs' where they are another's, else its foreign processes'
 * (UINT32_MAX when not known). */
static inline uint32_t core_gpu_mps_user(const core_gpu *gpu,
                                         const core_job *job) {
    if (gpu->view.njobs > 0 && gpu->user != job->spec.user) return gpu->user;
    return gpu->foreign_user >= 0 ? (uint32_t)gpu->foreign_user : UINT32_MAX;
}

/* Asked for every GPU at every collocation attempt: a compare, not a call
 * to libm's fmax(). */
static inline double core_guard(const core_state *core, const core_gpu *gpu) {
    double by_frac = core->cfg.guard_frac * gpu->view.total_mib;
    return by_frac > core->cfg.guard_min_mib ? by_frac : core->cfg.guard_min_mib;
}

/* The runtime-pressure filter on risk scores: SMACT with SMOCC or DRAMA
 * when DCGM reads them, utilization alone when only NVML does (AEGIS
 * candidate_selection.py and config/settings.py runtime_pressure_backend). */
static inline bool core_under_pressure(const core_config *cfg, const policy_gpu *g) {
    if (g->smact >= 0 && (g->smocc >= 0 || g->drama >= 0))
        return g->smact >= cfg->smact_max &&
               (g->smocc >= cfg->smocc_max || g->drama >= cfg->drama_max);
    if (g->util >= 0) return g->util >= cfg->util_max;
    return false;
}

/* Whether the pressure filter applies to a new job on this GPU. */
static inline bool core_filters_pressure(const core_state *core,
                                         const core_gpu *gpu) {
    return core->pol->uses_telemetry &&
           !(core->pol->pairs_unfiltered && gpu->view.njobs == 1);
}

/* ---- core.c: the job table, queues and events ------------------------------ */

core_job *core_find(const core_state *core, int64_t id);
/* The first job in queue order: the recovery queue's, else the FIFO's. */
core_job *core_head(core_state *core);
/* The memory the job is admitted with on this attempt. */
double core_demand(const core_state *core, const core_job *job);
/* Starts the job as l (core_place()) says: off its queue, onto its GPUs. */
void core_launch_job(core_state *core, core_job *job, core_launch *l,
                     double now);

/* ---- place.c: where a job would go ------------------------------------------ */

/* The demand, core_demand(), with which a first attempt joins a busy
 * whole GPU: capped at est_cap_mib under a policy that caps estimates,
 * unless the job declared it (mem_declared). An idle GPU or a MIG
 * instance is chosen by the whole demand. */
double core_shared_demand(const core_state *core, const core_job *job,
                          double demand);
/* Whether the job may join a busy GPU; if not, it waits for idle ones. */
bool core_may_share(const core_state *core, const core_job *job);
/* Tries to place the job on GPUs of `allowed` (beside its feed's jobs,
 * exclusive, then a MIG instance, then beside others); fills l either
 * way, and changes no job or count. */
bool core_place(core_state *core, const core_job *job, double now,
                uint64_t allowed, core_launch *l);
bool core_wants_mig(const core_state *core, const core_job *job,
                    double demand, const core_gpu *gpu);
/* Free memory as the telemetry shows it at `now`. */
double core_gpu_free_now(core_gpu *gpu, double now);

/* ---- users.c ---------------------------------------------------------------- */

/* The place of user uid in core->users, added when new; -1 when out of
 * memory. */
int core_user_index(core_state *core, uint32_t uid);
/* Its time in its user's queue (core_job.queued_at) when submitted at
 * `now`. */
double core_queued_at(const core_state *core, const core_job *job,
                      double now);
/* Onto and off its user's queue (first attempts only). */
void core_user_enqueue(core_state *core, core_job *job);
void core_user_dequeue(core_state *core, core_job *job);
/* The job starts (sign +1) or stops (-1) holding its GPUs at `now`. */
void core_user_runs(core_state *core, const core_job *job, int sign,
                    double now);
/* Whether the job asks more GPUs than max_gpus_per_user, so that it can
 * never start; if so and r is not NULL, r says so. */
bool core_user_cannot_start(const core_state *core, const core_job *job,
                            core_reason *r);
/* Whether starting the job would take its user past a limit (or it can
 * never start); if so and r is not NULL, r says which. */
bool core_user_over_limit(const core_state *core, const core_job *job,
                          core_reason *r);
/* The first attempts waiting, by priority (fair share less nice, then
 * submit order): core_order_start() at the start of a pass, then
 * core_order_next() until it gives NULL. */
void core_order_start(core_state *core, double now);
/* A user's decayed GPU-seconds at now (users.c). */
double core_user_usage_at(const core_state *core, const core_user *u,
                          double now);
/* Each active user's share at now: the mean of their decayed usage. It
 * leaves each one's usage in core->order_base, a pass's scratch. */
double core_users_share(core_state *core, double now);
/* Slurm's fair-share factor, 2^(-usage/share); 1 while no one used any. */
double core_fair_factor(double usage, double share);
core_job *core_order_next(core_state *core);

/* ---- feeds.c ------------------------------------------------------------------ */

/* The place of the spec's feed in core->feeds, added when new; -1 when it
 * names none; -2 with a message when the name is too long or memory
 * ran out. */
int core_feed_index(core_state *core, const core_job_spec *spec, char *err,
                    size_t errlen);
void core_feeds_free(core_state *core);
/* The job joins (sign +1) or leaves (-1) the queue, or its GPUs. */
void core_feed_queued(core_state *core, const core_job *job, int sign);
void core_feed_runs(core_state *core, const core_job *job, int sign);
/* The GPUs of `allowed` where the job's feed has jobs running, when the
 * job should go beside them; 0 when its feed does not matter. */
uint64_t core_feed_gpus(const core_state *core, const core_job *job,
                        uint64_t allowed);
/* Whether the job waits for its feed (its producer queued, or the feed's
 * GPU observing) rather than go elsewhere, the feed's GPUs kept for a
 * waiting head of the queue included; if so and r is not NULL, r says
 * why. */
bool core_feed_waits(core_state *core, const core_job *job, double now,
                     core_reason *r);

/* ---- cpus.c ------------------------------------------------------------------ */

/* The CPUs the job's data loading would commit with `first` as its first
 * GPU: 0 where its feed's loader runs there already; first < 0: on the
 * GPU of `allowed` that commits the fewest. */
double core_cpus_need(const core_state *core, const core_job *job, int first,
                      uint64_t allowed);
/* Whether the policy lets the job start with `first` as its first GPU,
 * as far as CPUs go (core.h, "CPUs"). */
bool core_cpus_fit(const core_state *core, const core_job *job, int first);
/* Whether the policy counts this job's CPUs at all: a failure to place it
 * may then be for want of CPUs, not of GPUs (backfill.c). */
bool core_cpus_counted(const core_state *core, const core_job *job);
/* The job starts (sign +1) or stops (-1) committing its CPUs. */
void core_cpus_runs(core_state *core, const core_job *job, int sign);
/* The head of a pass keeps its CPUs from the jobs behind it. */
void core_cpus_keep(core_state *core, const core_job *head);
/* Why the job cannot start on the GPUs of `allowed` for want of CPUs, into
 * r; false when CPUs do not keep it. */
bool core_cpus_reason(const core_state *core, const core_job *job,
                      uint64_t allowed, core_reason *r);

/* ---- reserve.c ------------------------------------------------------------- */

/* The job starts (sign +1) or stops (-1) running on its GPUs' lists. */
void core_reserve_link(core_state *core, core_job *job, int sign);
/* The job's time limit, its own or default_time; 0: none. */
double core_job_limit(const core_state *core, const core_job *job);
/* Whether the head is wide (2 GPUs or more) or must run alone: its GPUs
 * are kept whole, with no partner. */
bool core_needs_empty(const core_state *core, const core_job *job);
bool core_reserve_whole(const core_state *core, const core_job *head);
/* How long the longest-running job on GPU g has run at `now`; 0 when the
 * GPU runs none. */
double core_gpu_oldest_run(const core_state *core, int g, double now);
/* Sets core->reserve_start and reserve_room_s for the head's GPUs
 * (core->reserved) at `now`. */
void core_reserve_plan(core_state *core, double now);
/* Whether the job's limit and grace end before the head's start. */
bool core_reserve_fits(const core_state *core, const core_job *job);
/* The head's reason while it keeps GPUs whole with jobs on them; false
 * when it has none such. */
bool core_reserve_reason(const core_state *core, const core_job *job,
                         core_reason *r);

/* ---- backfill.c ------------------------------------------------------------ */

/* The GPUs a job behind the head of the last pass may take. */
uint64_t core_backfill_allowed(const core_state *core, const core_job *job);
/* The GPUs the last pass's job waiting for empty GPUs behind the head
 * (core_state.drain_id) keeps from the job: 0 unless the pass reached the
 * job after it. */
uint64_t core_drain_held(const core_state *core, const core_job *job);
/* core_schedule() of a policy with backfill. */
int core_schedule_backfill(core_state *core, double now, core_launch *out,
                           int max);

#endif
