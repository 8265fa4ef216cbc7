/* daemon.h -- the parts of aegisd shared by its files: the daemon state,
 * the in-memory job table, and the entry points each file offers the
 * others. Not a public API: only src/daemon includes it.
 *
 *   daemon.c    the libuv loop: socket server, timer, signals, start/stop
 *   jobs.c      the table of unfinished jobs; a job's life in
 *               jobs_queue.c (submit, queue, finish), jobs_run.c (launch,
 *               exit, requeue, cancel), jobs_tick.c (the per-tick GPU
 *               work), jobs_recover.c (restart); what differs by kind of
 *               job in its d_job_kind (kinds.c lists them)
 *   handlers.c  one function per request op
 *   deps.c      the jobs a job waits for (--after)
 *   limits.c    what keeps a job or a GPU from running: holds, time
 *               limits (--time), drains
 *   gpushare.c  each GPU's sharing mode: its MPS control daemon, the
 *               environment and MIG instance a job gets from it
 *   feeds.c     a data feed's managed producer: started with its first
 *               consumer, restarted, stopped after its last
 *   pipelines.c a pipeline's supervisor: started at once as its owner,
 *               with no GPU, restarted with a back-off
 *   notify.c    the notifiers run at jobs' ends (notify.h)
 *   metrics.c   the Prometheus exposition of GPUs, jobs, users and the
 *               scheduler (docs/metrics.md)
 *   metrics_http.c  the HTTP endpoint that serves it (metrics_listen)
 *   lease.c     Slurm job steps as leases: the lease ops, their tasks'
 *               processes watched, their end
 *   scontrol.c  Slurm's scontrol run without blocking the loop
 *
 * Ownership: the d_daemon owns every d_job, d_conn and the core, store and
 * telemetry handles; d_run() creates and frees them all.
 */
#ifndef AEGIS_DAEMON_H
#define AEGIS_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <jansson.h>
#include <uv.h>

#include "acct.h"
#include "config.h"
#include "core.h"
#include "dlog.h"
#include "exec.h"
#include "cgroup.h"
#include "history.h"
#include "oom_seen.h"
#include "metrics_counts.h"
#include "proto.h"
#include "sharing.h"
#include "store.h"
#include "tel.h"

typedef struct d_options {
    const char *socket_path;
    const char *state_dir;
    const char *config_path;    /* NULL: CONFIG_DEFAULT_PATH if present */
    const char *nvml_path;      /* NULL: $AEGIS_NVML_LIBRARY or the driver */
    const char *dcgm_path;      /* NULL: $AEGIS_DCGM_LIBRARY or libdcgm.so.4 */
    bool foreground;
    bool drain_on_stop;         /* SIGTERM waits for running jobs */
    dlog_format log_format;     /* --log-format */
} d_options;

typedef enum d_state {
    D_HELD,         /* waiting for its --after jobs to end, or held */
    D_QUEUED,       /* in the core's queue */
    D_RUNNING       /* an attempt is running */
} d_state;

/* A Slurm job's lease (lease.c): what a job of kind "slurm" has besides
 * what every job has. aegisd does not start it: its GPUs go to the Slurm
 * task that asked (the grant), and it ends when the task's processes do. */
typedef struct d_pidwatch d_pidwatch;
typedef struct d_lease {
    uint32_t slurm_job;         /* 0: the job is aegisd's own */
    int restart;                /* its SLURM_RESTART_COUNT */
    d_pidwatch **pids;          /* the tasks' processes watched */
    size_t npids, cap;
    json_t *env;                /* the grant's variables, once granted */
    core_exit how;              /* the worst its tasks' exits said */
    int status;                 /*   with that task's wait status */
    char why[256];              /*   and why ("" while none said) */
    double gone_at;             /* d_now() when its last process went; it
                                   ends D_LEASE_GRACE_S later, time for the
                                   plugin's lease_exit to say how */
} d_lease;

/* What differs between kinds of job (below, after d_share_start). */
typedef struct d_job_kind d_job_kind;

/* One job a job waits for. */
typedef struct d_dep {
    int64_t id;
    proto_dep_kind kind;
} d_dep;

/* A job's notifier (notify.c): the config's, none, or its own. */
typedef enum d_notify_kind {
    D_NOTIFY_DEFAULT, D_NOTIFY_NONE, D_NOTIFY_OWN
} d_notify_kind;

typedef struct d_job {
    int64_t id;
    uid_t uid;
    gid_t gid;
    char user[64];
    char name[PROTO_MAX_NAME + 1]; /* its --name, "" when none */
    int num_gpus;
    double mem_mib;             /* estimate, < 0 when none */
    int nice;                   /* its submit's --nice */
    char feed[PROTO_MAX_FEED + 1]; /* the data feed it reads; "" none */
    bool producer;              /* the feed's managed producer */
    bool feed_stop;             /* a producer stopped: its last consumer
                                   ended (ends as done) */
    int restarts;               /* a producer's restarts (feeds.c), kept in
                                   the store as feed_stop is */
    char pipeline[PROTO_MAX_PIPELINE + 1]; /* the pipeline whose supervisor
                                   it is (pipelines.c); "" none */
    double restart_at;          /* held out its back-off (a supervisor's,
                                   or after watchers that did not start
                                   it): queued again at d_now() >= this */
    d_dep *deps;                /* ndeps jobs it waits for, allocated */
    size_t ndeps;               /*   with the job (d_job_new) */
    d_state state;              /* set by d_job_set_state() */
    size_t run_slot;            /* its place in d_daemon.running plus 1;
                                   0 while not running */
    bool in_core;               /* the core holds it (queued or placed):
                                   false while held, or once cancelled */
    bool held;                  /* by `aegis hold`: not placed until
                                   released */
    double time_limit_s;        /* each attempt's limit (--time); 0: none */
    int cpus;                   /* --cpus; 0: the per-GPU default */
    double host_mem_mib;        /* --host-mem, MiB; 0: the per-GPU default */
    cg_job *cg;                 /* the running attempt's cgroup (cgroup.h),
                                   allocated: NULL when it has none (a
                                   queued job keeps no room for one) */
    int attempts;               /* attempts started so far */
    double retry_floor;         /* its place on the recovery ladder, as */
    bool retry_alone;           /*   core_job_retry() gave it at a requeue */
    int lost;                   /* attempts lost in a row */
    int busy;                   /* launches put back in a row because its
                                   GPU was busy (D_SHARE_BUSY) */
    int unstarted;              /* watchers in a row that ended without
                                   starting it */
    /* the running attempt */
    int ngpus;
    int gpus[CORE_MAX_JOB_GPUS];
    bool exclusive;
    double floor_mib;
    pid_t shim_pid;             /* 0 until its spawn returned (spawn.c) */
    unsigned long long shim_start;
    pid_t job_pid;
    long long err_offset;
    exec_pending *spawning;     /* readied by its kind's grant, its shim not
                                   handed to d_spawn_later yet */
    double started;             /* Unix time the attempt started */
    double ended_at;            /* the attempt's end, Unix time, when it
                                   is known apart from now (exec_record:
                                   it ended while aegisd was down); 0 */
    bool active;                /* seen on its GPUs */
    double seen;                /* Unix time it was first seen; 0 before */
    bool cancelling;
    bool cancel_queued;         /* its cancel is committed, its end waits
                                   for its slice (cancel.c) */
    double cancel_at;           /* Unix time of its committed cancel; 0:
                                   none */
    double kill_at;             /* SIGKILL the session then (monotonic s) */
    double energy_j;            /* its share of its GPUs' energy so far */
    double co2_g, pue_j;        /* its CO2 and energy x PUE, at the figures
                                   in force as each part was charged
                                   (d_job_charge) */
    double energy_kept_j;       /* energy_j as last written to the store */
    double energy_from_j;       /* energy_j when this aegisd took the job
                                   (a restart's), for the per-user counters
                                   that start from 0 at each start */
    double counted_from;        /* Unix time its GPU-seconds count from for
                                   those counters: 0, its attempt's start;
                                   an adopted one's, the outage's start or
                                   this aegisd's */
    int last_status;            /* its last attempt's wait status; -1: none
                                   seen (for its notifier) */
    d_notify_kind notify;       /* which notifier its end runs */
    history_track hist;         /* its samples (history.h) */
    oom_seen oom_seen;          /* its GPUs at the last reading with the
                                   running attempt on them (oom_seen.h) */
    double used_mib;            /* its processes' memory on its GPUs, and */
    double sm_pct;              /*   their SM utilization summed (0..100
                                   a GPU; CORE_UNKNOWN: none known), at
                                   the latest tick */
    /* the running attempt's MIG instance on gpus[0] (gpushare.c) */
    const mig_profile *mig;     /* NULL: the attempt has none */
    int mig_start;              /* its first memory slice */
    unsigned int mig_gi, mig_ci; /* its GPU and compute instance ids */
    d_lease lease;              /* a Slurm job's (lease.slurm_job > 0) */
    const d_job_kind *kind;     /* what its kind does its own way; never
                                   NULL (d_kind_own by default) */
} d_job;

/* A job that finished while its end could not be saved: what `wait`,
 * `ls` and `show` say of it until it is (the database still says it runs). */
typedef struct d_unsaved {
    int64_t id;
    char state[16];
    char reason[400];
} d_unsaved;

/* An attempt whose outcome the open loop turn settled: its status file
 * goes once the turn is committed (d_turn_end). */
typedef struct d_settled {
    int64_t id;
    int n;
} d_settled;

/* One client connection: a line buffer and, for `wait`, what it awaits.
 * Its requests are answered in order, one at a time: none while a `wait`
 * is pending or its answer not yet sent, and none while the client leaves
 * more than D_MAX_UNREAD bytes of answers unread (daemon.c). */
typedef struct d_conn {
    uv_pipe_t pipe;
    struct d_daemon *d;
    uid_t uid;                  /* peer credentials (SO_PEERCRED) */
    gid_t gid;
    pid_t pid;
    char *buf;
    size_t len, cap;
    bool reading;               /* uv_read_start'ed */
    bool eof;                   /* no more requests: the client shut down
                                   its sending half, or was refused */
    bool shutting;              /* closes once its answers are written */
    int64_t *wait_ids;          /* ids still awaited, or NULL */
    size_t nwait;
    json_t *wait_result;        /* the awaited jobs' final states so far */
    json_t *later;              /* the wait's answer, sent on the loop's
                                   next turn (d_conn_answer_later) */
    bool cancel_waiting;        /* its cancel's answer waits for the end of
                                   the jobs it cancelled (cancel.c) */
    unsigned long commits_seen; /* store_commits() as its request came:
                                   its answer waits for later ones to be
                                   synced (d_wal_answer) */
    int64_t lease_id;           /* the lease job it waits to be granted */
    pid_t lease_pid;            /*   for its task's process; 0: none */
    struct d_conn *prev, *next;
} d_conn;

/* The store's log syncs (wal_sync.c). */
typedef struct d_wal {
    int fd;                     /* the store's -wal file; -1: not open yet */
    bool warned;                /*   it could not be opened, and was said */
    unsigned long synced;       /* store_commits() reached by the last sync */
    bool syncing;               /* a sync runs in the thread pool: */
    uv_work_t work;             /*   its request, */
    int work_fd, work_rc;       /*   its own descriptor, its errno (0: ok) */
    unsigned long work_upto;    /*   and the commits it covers */
} d_wal;

typedef struct d_gpu {
    tel_gpu_reading last;       /* the latest reading */
    bool ok;                    /* last read succeeded */
    double energy_seen_j;       /* energy counter at the previous tick */
    double energy_seen_at;      /* and when it was read (d_now) */
    int nshares;                /* its running jobs' shares of its energy */
    int64_t share_ids[TEL_MAX_PROCS]; /*   at the last tick: saved with */
    double shares[TEL_MAX_PROCS];     /*   the counter (d_jobs_keep_energy) */
    bool kept;                  /* its row saved by this aegisd: */
    bool kept_idle;             /*   with no job's share, */
    double kept_energy_j;       /*   and its counter there */
    bool drained;               /* by `aegis drain`, kept in the store */
    char drain_reason[PROTO_MAX_REASON + 1]; /* "" when none was given */
    char drained_by[64];        /* who drained it: a login name */
    double drained_at;          /* Unix time */
    double foreign_mib;         /* in use by processes no job of aegisd's
                                   placed there (core_gpu_foreign) */
    share_mode mode;            /* its sharing mode (aegis.yaml) */
    const mig_model *mig_model; /* its MIG table, NULL: none (no MIG) */
    bool mps_up;                /* its MPS control daemon runs: this aegisd
                                   started it, or found it running */
    unsigned int tel_flags;     /* the latest reading's TEL_F_*: changes
                                   are logged */
} d_gpu;

/* A job's end to notify (notify.c): what its notifier is told. */
typedef struct d_notice {
    int64_t id;
    uid_t uid;
    gid_t gid;
    char user[64];
    char state[16];
    char reason[400];
    int status;                 /* its last attempt's wait status, or -1 */
    double duration_s;
} d_notice;

/* A notifier running (notify.c). */
typedef struct d_notifier {
    pid_t pid;                  /* leader of its session */
    int64_t job_id;
    double limit_s;             /* its time limit (notify_timeout_s) */
    double kill_at;             /* past it then (d_now) */
    bool killed;                /* by aegisd, at its time limit */
} d_notifier;

/* A finished job whose dependents and feed producer still have to hear
 * of it (jobs_queue.c). */
typedef struct d_ended {
    int64_t id;
    int64_t producer_id;        /* its feed's producer, 0: none */
} d_ended;

typedef struct d_daemon {
    d_options opt;
    uv_loop_t *loop;
    uv_pipe_t server;
    uv_timer_t tick;
    uv_signal_t sig_chld, sig_term, sig_int, sig_hup;
    bool stopping;
    core_config cfg;
    acct_params acct;           /* the config's grid intensity and PUE */
    sharing_config share;       /* the config's sharing modes */
    char mps_dir[4096];         /* MPS pipe and log folders, per GPU */
    core_state *core;
    store *st;
    tel_state *tel;
    bool dcgm_failing;          /* DCGM open but its last read failed */
    bool mig_leftover;          /* a MIG instance outlived its attempt (its
                                   processes held it): retried each tick */
    int ngpus;
    d_gpu gpus[CORE_MAX_GPUS];
    char log_dir[4096], run_dir[4096];
    exec_spares spares;         /* run_dir's retired status files (exec.h) */
    char shim_path[4096];       /* aegis-shim (exec_shim_path) */
    int log_dirfd;              /* log_dir, opened once it was checked */
    config_keys keys;           /* the config's own keys: log cap, history
                                   period, notifier and its time limit,
                                   metrics address, Slurm's scontrol */
    double history_at;          /* d_now of the last history sample */
    double pruned_at;           /* d_now of the last retention pass */
    d_notifier *notifiers;      /* running, nnotifiers of them */
    size_t nnotifiers, capnotifiers;
    d_notice *notices;          /* ends waiting for their notifiers to */
    size_t notice_head;         /*   start, oldest first: those from */
    size_t nnotices, capnotices; /*   notice_head to nnotices */
    bool as_root;               /* run jobs as their submitters */
    d_job **jobs;               /* unfinished jobs, sorted by id */
    size_t njobs, capjobs;
    d_job **running;            /* the running ones, in no order, room */
    size_t nrunning;            /*   for capjobs (d_job_set_state): the
                                   tick's loops walk these, not a queue
                                   of 100,000 */
    d_unsaved *unsaved;         /* finished since the state was last all */
    size_t nunsaved, capunsaved; /*   saved (kept while it cannot be) */
    size_t ndependents;         /* jobs of the table with dependencies */
    d_ended *ended;             /* jobs finished whose dependents and */
    size_t ended_head;          /*   feed producer have not heard yet, */
    size_t nended, capended;    /*   from ended_head on (jobs_queue.c) */
    bool telling_ended;         /* d_job_finish() is telling them */
    d_settled *settled;         /* the open turn's settled attempts */
    size_t nsettled, capsettled;
    d_conn *conns;
    int nconns;
    uv_idle_t wake;             /* sends the answers of finished waits */
    uv_check_t reap;            /* after a turn's poll: reaps the children
                                   whose SIGCHLDs it caught (daemon.c) */
    uv_idle_t more;             /* a pass stopped at its launches' bound:
                                   the next turn starts more (daemon.c) */
    struct d_front *front;      /* answers `gpus` apart from the loop and
                                   accepts the connections (front.h) */
    uv_async_t handoff;         /* the front handed connections over */
    uv_prepare_t publish_before; /* before and after each poll: a fresh */
    uv_check_t publish_after;   /* `gpus` answer for the front, where it
                                   may have changed (daemon.c) */
    uint64_t gpus_changes;      /* what a `gpus` answer says may have
                                   changed: counted by each turn
                                   (d_turn_begin), each job's end, each
                                   request that is not read-only, a reload */
    uint64_t gpus_published;    /* gpus_changes when last published */
    struct d_cancels *cancels;  /* queued jobs whose cancel is committed,
                                   ended a slice per loop turn (cancel.c) */
    struct d_metrics_server *metrics; /* metrics_http.c's, NULL: none */
    metrics_counts counts;      /* what /metrics counts since the start */
    d_wal wal;                  /* how far the commits are synced (wal_sync.c) */
    struct d_scontrol_run *scontrols; /* keys.slurm_scontrol's runs not
                                       * reaped yet */
    double t0;                  /* uv_hrtime at start, for d_now */
    /* Told of each job's end once it left the table: the handlers'
     * waiters (d_handlers_register); NULL: no one. */
    void (*job_done)(struct d_daemon *d, int64_t id, const char *state,
                     const char *reason);
} d_daemon;

int d_run(const d_options *opt);

/* daemon.c */
double d_now(const d_daemon *d);            /* monotonic seconds */
/* wal_sync.c: an answer waits for the commits its request made to reach
 * the disk (commits_before: store_commits() when the request came);
 * the tick syncs the rest in the thread pool. */
void d_wal_answer(d_daemon *d, unsigned long commits_before);
int d_wal_sync_now(d_daemon *d);
void d_wal_sync_later(d_daemon *d);
void d_wal_close(d_daemon *d);

/* spawn.c: spawns the shim of attempt `attempt` of job id, readied by
 * exec_prepare, in the thread pool; d_job_spawned (jobs.c) takes the
 * outcome on the loop (err: why it failed, or NULL). */
void d_spawn_later(d_daemon *d, int64_t id, int attempt,
                   exec_pending *pending);
void d_job_spawned(d_daemon *d, int64_t id, int attempt, const exec_run *run,
                   const char *err);

/* Runs another scheduling pass in the next loop turn, after its poll has
 * read the clients (d_jobs_schedule starts a few jobs a turn). */
void d_schedule_more(d_daemon *d);
/* Stops accepting requests (why: for the log); aegisd then exits at its
 * next tick, once its running jobs have ended when drain (or
 * --drain-on-stop) asks it to wait for them. */
void d_stop(d_daemon *d, const char *why, bool drain);
double d_wall(void);                        /* Unix time */
void d_reply(d_conn *c, json_t *msg);       /* takes msg */
/* {"ok": false, "error": ...}: the request was refused (bad input, no
 * such job, not the peer's to touch). */
void d_reply_error(d_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same with "server_error": true: aegisd failed, or is busy; the
 * request itself may be fine. */
void d_reply_fault(d_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sends msg (taken) once the current callback has returned, so that what
 * it reports is committed, then answers the connection's next requests:
 * the end of a `wait`. */
void d_conn_answer_later(d_conn *c, json_t *msg);

/* jobs.c */
d_job *d_job_find(d_daemon *d, int64_t id);
/* When job's attempt ended: its ended_at where known and not past now nor
 * before its start (a clock set back), else now. */
static inline double d_job_end_time(const d_job *job, double now) {
    double at = job->ended_at;
    return at > 0 && at <= now && at >= job->started ? at : now;
}
/* A job's state, with the list of running jobs kept. */
void d_job_set_state(d_daemon *d, d_job *job, d_state state);
/* qsort's order of two int64_t job ids. */
int d_id_cmp(const void *a, const void *b);
/* The ids of the running jobs, in increasing order (malloc'd; NULL when
 * none or out of memory, *n then 0): for a loop that may end jobs. */
int64_t *d_running_ids(const d_daemon *d, size_t *n);
/* A JSON array of strings as a NULL-terminated vector pointing into it
 * (malloc'd; NULL when out of memory). */
const char **d_strings(json_t *arr);
/* A job's row's umask (its submit's, store_job_row) into *has and *mask:
 * *has false for a job whose submitter gave none. */
void d_row_umask(json_t *row, bool *has, unsigned *mask);
/* An attempt's GPU list as the store keeps it ("0,2") into gpus (room
 * for CORE_MAX_JOB_GPUS): how many. */
int d_gpus_parse(const char *text, int *gpus);
/* A finished job whose end the database does not have, kept while the
 * state cannot be written (store_failing), or NULL. */
const d_unsaved *d_job_unsaved(const d_daemon *d, int64_t id);
int d_jobs_submitted(d_daemon *d, const store_owner *owner,
                     const proto_request *req, int64_t first_id);
void d_jobs_recover(d_daemon *d);
/* Queues a job in the core, or holds it (its --after jobs unfinished, or
 * held by `aegis hold`), or cancels it when a job it runs after ended
 * otherwise than it asks. */
void d_job_enqueue(d_daemon *d, d_job *job);
/* Hands the job to the core's queue (a retry, or a job that must run
 * alone, to its recovery queue): 0, or -1 with the core's reason in err. */
int d_job_to_core(d_daemon *d, d_job *job, char *err, size_t errlen);
/* Starts a job of a kind outside placement now, with no GPU: its attempt
 * recorded and committed first, as a launch's is (jobs_run.c). */
void d_job_start_outside(d_daemon *d, d_job *job);
/* Ends a job: its state and reason committed, its waiters told. */
void d_job_finish(d_daemon *d, d_job *job, const char *state,
                  const char *reason);
/* A loop turn's job events (exits, launches, samples) share one
 * transaction, so one commit: its callback opens it and commits it at
 * its end; turns nest, the outer commits. */
void d_turn_begin(d_daemon *d);
void d_turn_end(d_daemon *d);
/* The pair that settled attempt n of job id ended with committed
 * (store_commit's answer): its status file goes once that is durable,
 * now or at the end of the turn. */
void d_status_settled(d_daemon *d, int64_t id, int n, int committed);
/* Removes the status files of the attempts settled so far in the open
 * turn, whose settling a commit has just made durable (store_commit_now):
 * a launch does, before its attempts make their own files. */
void d_status_retire_settled(d_daemon *d);
void d_jobs_schedule(d_daemon *d);
/* Each tick: the jobs held out a back-off (restart_at) that is over are
 * queued again (jobs_queue.c). */
void d_jobs_restart_due(d_daemon *d);
/* Ends of running jobs, read from their status files: every job's (the
 * tick: a job adopted after a restart is no child of this aegisd), or
 * after a SIGCHLD only those whose watcher may be among the n pids
 * reaped (a turn of a churn ends one job of many: reading every status
 * file was a sixth of aegisd's CPU). */
void d_jobs_check_exits(d_daemon *d);
void d_jobs_check_reaped(d_daemon *d, const pid_t *reaped, size_t n);
void d_jobs_tick(d_daemon *d);              /* telemetry, observation */
/* Most watts one GPU draws (the largest boards, 1.2 kW), with room: a
 * counter rising faster is a glitch, not energy to charge. */
#define D_GPU_MAX_W 3000.0
/* Where job's GPU-seconds count from for the per-user counters: its
 * attempt's start, or when this aegisd took it over (counted_from). */
double d_job_counted_from(const d_job *job);
/* Writes each running job's energy so far (with its CO2) and each GPU's
 * energy counter as last read to the store, in the open transaction: the
 * tick's, so that a kill -9 of aegisd loses no more than a tick of it,
 * and the two always agree. A job's energy is written only when it
 * changed, a GPU's only while a job is on it, as the last job leaves or
 * when its counter went back (an idle GPU keeps its row), and nothing is
 * while the store cannot be written (the writes kept meanwhile would grow
 * each tick); `all` writes every job's and GPU's, now. */
void d_jobs_keep_energy(d_daemon *d, bool all);
/* A key a reload leaves for the next start: when the file's value (value,
 * a buffer of size) differs from the one in force (kept), says so, showing
 * them as shown and kept_shown (shown may be value itself), and puts kept
 * back into value. Returns whether they differed. */
bool d_keep_for_restart(const char *key, char *value, size_t size,
                        const char *kept, const char *shown,
                        const char *kept_shown);
/* Whether job runs on GPU g. */
bool d_job_on(const d_job *job, int g);
/* Adds joules to job's energy, with their CO2 at the config's intensity
 * and PUE now. */
void d_job_charge(d_daemon *d, d_job *job, double joules);
/* The job's energy figures as the store keeps them. */
store_energy d_job_energy(const d_job *job);
/* At a restart, before the running jobs are adopted: charges each GPU's
 * energy-counter rise since the saved reading to the jobs that ran there
 * meanwhile (acct_gap.h's rule), those still running and those that
 * ended, and saves it (jobs_outage.c). */
void d_jobs_charge_outage(d_daemon *d);
/* While the state cannot be written, saves the writes kept meanwhile once
 * it can; outside any store_begin() pair. */
void d_jobs_state_retry(d_daemon *d);
/* Cancels the unfinished jobs among ids, once the cancel is committed:
 * 0, or -1 with why (nothing cancelled) when it cannot be. Running jobs
 * are signalled at once; queued ones end at once too when they are few,
 * else in slices over the next loop turns (d_cancel_answer). */
int d_jobs_cancel(d_daemon *d, const int64_t *ids, size_t nids, char *err,
                  size_t errlen);
/* Answers c (taking answer) once every job d_jobs_cancel queued so far
 * has ended: now when none waits. */
void d_cancel_answer(d_daemon *d, d_conn *c, json_t *answer);
/* c closes: its cancel's answer is dropped (the jobs still end). */
void d_cancel_conn_gone(d_daemon *d, d_conn *c);
void d_cancels_free(d_daemon *d);
/* Cancels a job whose cancel is committed (job->cancel_at): a queued one
 * is finished, a running one sent SIGTERM, and SIGKILL once its grace time
 * since the cancel is up; it keeps its GPUs until it has ended. */
void d_job_cancel(d_daemon *d, d_job *job);
/* Takes the job out of the core where it is there: its place in the
 * queue, or its GPUs, are the core's again. */
void d_job_leave_core(d_daemon *d, d_job *job);

/* deps.c */
typedef enum d_deps_verdict {
    D_DEPS_MET,             /* every job it waits for has ended as asked */
    D_DEPS_WAIT,            /* some have not ended yet */
    D_DEPS_NEVER            /* one ended otherwise: it can never run */
} d_deps_verdict;
/* The number of dependencies in a stored row ("deps"), and the row's
 * dependencies into out (room for that many). */
size_t d_deps_count(json_t *row);
void d_deps_from_row(json_t *row, d_dep *out);
/* A submitted job's dependencies into out (pj->nafter of them), an index
 * into the submit turned into its id (ids are consecutive from first_id). */
void d_deps_from_request(const proto_job *pj, int64_t first_id, d_dep *out);
/* Whether every job a submit names by id exists: 0, or -1 with why. */
int d_deps_check_submit(d_daemon *d, const proto_request *req, char *err,
                        size_t errlen);
/* Judges a job's dependencies; for D_DEPS_NEVER, says which in reason. */
d_deps_verdict d_deps_check(d_daemon *d, const d_job *job, char *reason,
                            size_t reasonlen);
bool d_deps_on(const d_job *job, int64_t id);   /* job waits for id */
/* The ids of the unfinished jobs it waits for, as a JSON array. */
json_t *d_deps_waiting(d_daemon *d, const d_job *job);

/* gpushare.c */
int d_share_open(d_daemon *d);              /* check modes, start MPS */
void d_share_close(d_daemon *d);            /* stop MPS where idle */
/* Whether a reloaded sharing config can be applied: 0, or -1 with why. */
int d_share_check_reload(d_daemon *d, const sharing_config *share,
                         char *err, size_t errlen);
/* Applies it: MPS stopped and started where a GPU's mode changed. */
void d_share_reload(d_daemon *d, const sharing_config *share);
/* Sharing-mode variables a job gets at most (MPS: pipe, log, pinned,
 * threads), and the NULL after them. */
#define D_SHARE_VARS 5

/* What a launch's sharing modes add to the job's start. */
typedef struct d_share_start {
    char visible[256];          /* CUDA_VISIBLE_DEVICES when a MIG device;
                                   "" for the GPUs' UUIDs */
    const char *env[D_SHARE_VARS]; /* "K=V" to set, NULL-terminated */
    char env_buf[D_SHARE_VARS][4400];
    char note[512];             /* for the job's events; "" for none */
} d_share_start;

/* d_share_prepare's answer when the GPU is busy for now (processes keep
 * MIG mode from changing, an instance on its way out holds the slices):
 * not the job's failure; launch it again later. */
#define D_SHARE_BUSY (-2)

/* A kind of job: what jobs*.c asks a job's kind to do where kinds differ,
 * so that they never branch on which kind a job is. aegisd's own jobs
 * (d_kind_own, jobs_run.c), Slurm leases (d_kind_lease, lease.c), feeds'
 * managed producers (d_kind_producer, feeds.c); a new kind adds a row to
 * kinds.c. A NULL hook means "as aegisd's own jobs": nothing more. */
struct d_job_kind {
    const char *name;
    bool watched;               /* aegisd watches its attempts: their shim,
                                   status file and session (exec.h); false:
                                   the kind does (a lease its tasks' pids) */
    bool outside;               /* needs no GPU and is outside placement:
                                   the core never holds it, d_job_enqueue
                                   starts it at once (d_job_start_outside)
                                   and its ends are its kind's (restart) */
    /* Whether the job (row: its store row after a restart; NULL at a
     * submit) is of this kind. */
    bool (*claims)(const d_job *job, json_t *row);
    /* After a restart (row: the job's store row, state its state): what
     * the kind keeps besides; false when it ended the job instead. */
    bool (*load)(d_daemon *d, d_job *job, json_t *row, const char *state);
    /* Starts the placed job on the GPUs `visible` (row: its store row, ss:
     * what the sharing modes add): 0, or -1 with why, as exec_start(). */
    int (*grant)(d_daemon *d, d_job *job, json_t *row, const char *visible,
                 d_share_start *ss, exec_run *run, char *err, size_t errlen);
    /* The start is recorded and the job running. */
    void (*granted)(d_daemon *d, d_job *job);
    /* Whether process pid is the job's (its memory and energy on its
     * GPUs are the job's). */
    bool (*owns)(const d_job *job, pid_t pid);
    /* The core requeued the job after an OOM at ladder place r: true when
     * the kind has it run again its own way (and ended this job). */
    bool (*requeue)(d_daemon *d, d_job *job, const core_retry *r,
                    const char *why);
    /* The job finishes (state, reason), still in the table. */
    void (*finish)(d_daemon *d, d_job *job, const char *state,
                   const char *reason);
    /* Whether the job sleeps (held) rather than join the queue. */
    bool (*dormant)(d_daemon *d, const d_job *job);
    /* A cancelled attempt ended: true when the kind keeps the job (it
     * sleeps again) rather than let it finish. */
    bool (*stopped)(d_daemon *d, d_job *job);
    /* Attempt failed or lost (how, why): true when it runs again at its
     * floor rather than count as lost. */
    bool (*restart)(d_daemon *d, d_job *job, core_exit how, const char *why);
};

extern const d_job_kind d_kind_own, d_kind_lease, d_kind_producer,
    d_kind_supervisor;
/* kinds.c: the kind of a job (row as in claims), d_kind_own when no other
 * claims it. */
const d_job_kind *d_job_kind_of(const d_job *job, json_t *row);
/* jobs_run.c: aegisd's own start and ownership of a job, for the kinds
 * that run their jobs as aegisd's own (a feed's producer). */
int d_own_grant(d_daemon *d, d_job *job, json_t *row, const char *visible,
                d_share_start *ss, exec_run *run, char *err, size_t errlen);
bool d_own_owns(const d_job *job, pid_t pid);

/* Readies the GPUs for a launch: the MIG instance the core chose is made
 * (MIG mode turned on first where needed), a whole-GPU job on a mig or
 * auto GPU gets MIG mode off, an MPS job its variables (with
 * mps_threads_pct, 1..100, its thread share; 0: none). Returns 0, or -1
 * (D_SHARE_BUSY: try later) with a message naming the GPU and the NVML
 * call (nothing is left). */
int d_share_prepare(d_daemon *d, d_job *job, const core_launch *l,
                    int mps_threads_pct, d_share_start *out, char *err,
                    size_t errlen);
/* Destroys the attempt's MIG instance, if any, noting it in its events.
 * One its processes still hold (IN_USE) stays in the store and is
 * retried by d_share_tick(). */
void d_share_release(d_daemon *d, d_job *job);
/* Each tick: destroys the instances that outlived their attempts, once
 * their processes are gone. */
void d_share_tick(d_daemon *d);
/* After a restart: gives the running attempts (loaded, not yet adopted)
 * their MIG instances back from the store, and destroys the others. */
void d_share_recover(d_daemon *d);

/* retention.c */
/* Each tick: once history_days allows, forgets the jobs that finished
 * more than history_days ago, with their logs. */
void d_retention_tick(d_daemon *d);

/* limits.c */
/* A recovered job's hold and time limit, from its stored row. */
void d_limits_load(d_job *job, json_t *row);
/* Holds a queued job (hold) or releases it, with an event naming user
 * (a login name); a released job is queued again, at the queue's end. */
void d_job_hold(d_daemon *d, d_job *job, bool hold, const char *user);
/* Each tick: the running attempts past their time limit are stopped as a
 * cancel stops them (SIGTERM, then SIGKILL after the grace). */
void d_limits_tick(d_daemon *d);
/* The state a stopped running job ends in, "cancelled" or "timeout",
 * with its reason in reason ("over its 10:00 limit"). */
const char *d_limits_stop_state(const d_job *job, char *reason,
                                size_t reasonlen);
/* Drains (drain) or resumes GPU g for user, keeping it in the store. */
void d_gpu_drain(d_daemon *d, int g, bool drain, const char *reason,
                 const char *user);
/* At start: the GPUs drained before, as the store kept them. */
void d_drains_recover(d_daemon *d);
/* Tells the core whether GPU g takes new jobs: not while it is drained,
 * nor while its readings fail (gpu->ok false). */
void d_gpu_tell_core(d_daemon *d, int g);

/* feeds.c */
/* User uid's unfinished managed producer of feed name, or NULL. A feed is
 * its owner's: each user may have a producer of one name. */
d_job *d_feed_producer(d_daemon *d, uid_t uid, const char *name);
/* The producer a job of a feed wakes: its own user's, else the oldest
 * other user's producer of that name where each of the two users names
 * the other in AEGIS_FEED_TRUST; NULL: none (or job is a producer). */
d_job *d_feed_producer_for(d_daemon *d, const d_job *job);
/* Whose feed a job of a feed is placed with (the core keeps feeds of one
 * name and different owners apart): its producer's user, else its own. */
uid_t d_feed_owner(d_daemon *d, const d_job *job);
/* The jobs that read producer p's feed and are queued or running. */
int d_feed_consumers(d_daemon *d, const d_job *p);
/* Whether a producer stays out of the queue: no consumer of its feed is
 * queued or running. */
bool d_feed_dormant(d_daemon *d, const d_job *producer);
/* A consumer joins the queue: its feed's dormant producer joins first. */
void d_feed_wake(d_daemon *d, const d_job *consumer);
/* A consumer of producer p's feed left (p NULL: it had none): when it was
 * the last, p stops (SIGTERM, then SIGKILL after the grace) or, never
 * started, sleeps. */
void d_feed_consumer_left(d_daemon *d, d_job *p);
/* A producer p stopped for its feed (feed_stop) has ended: whether it
 * sleeps again, jobs of its feed being held (or queued again while it
 * wound down), rather than ending as done. */
bool d_feed_stopped(d_daemon *d, d_job *p);
/* After a restart: the running producers whose consumers all ended while
 * aegisd was away are stopped. */
void d_feeds_recover(d_daemon *d);
/* Whether a producer whose attempt ended (how, why) is started again: its
 * consumers run, it failed or vanished, and it has restarts left. */
bool d_feed_restart(d_daemon *d, d_job *job, core_exit how, const char *why);

/* pipelines.c */
/* User uid's unfinished supervisor of pipeline name, or NULL: a pipeline
 * is its owner's, each user may run one of a name. */
d_job *d_pipeline_supervisor(d_daemon *d, uid_t uid, const char *name);
/* The running jobs of kinds outside placement (supervisors): a drain
 * does not wait for them. */
size_t d_pipelines_running(const d_daemon *d);

/* notify.c */
/* Which notifier a job's submit asked for (NULL: the config's). */
d_notify_kind d_notify_kind_of(const char *notify);
/* Starts the job's notifier, if it has one (its own, or the config's),
 * for its end in state (why: reason), or queues it while
 * D_NOTIFY_RUNNING run already; the job is still in the table. */
void d_notify_job_end(d_daemon *d, const d_job *job, const char *state,
                      const char *reason);
/* A child aegisd reaped: true when it was a notifier, whose end is
 * logged when it failed; the next one waiting starts. */
bool d_notify_reaped(d_daemon *d, pid_t pid, int status);
/* Each tick: notifiers past their time limit are killed with their
 * session. */
void d_notify_tick(d_daemon *d);
/* metrics.c: the exposition of d's state and counts, into t. */
void d_metrics_render(d_daemon *d, mtext *t);

/* metrics_http.c */
/* Serves /metrics on d->keys.metrics_listen when it is set: 0, or -1 with a
 * log line (the address cannot be bound). */
int d_metrics_open(d_daemon *d);
/* Stops serving and closes every metrics connection (at exit). */
void d_metrics_close(d_daemon *d);

/* handlers.c */
void d_handle(d_conn *c, const proto_request *req);
/* The login name of uid into user (its number when it has none), and its
 * group into *gid when gid is not NULL. */
void d_user_name(uid_t uid, char *user, size_t len, gid_t *gid);
/* Answers a request that would add a job while the state cannot be
 * written: true when it did. */
bool d_refuse_unwritable(d_conn *c);
/* Whether a job of gpus GPUs and mem_mib MiB can ever run here (the
 * server's GPUs, their memory, max_gpus_per_user): 0, or -1 with why
 * (naming the field as `where`). */
int d_job_fits(const d_daemon *d, int gpus, double mem_mib,
               const char *where, char *err, size_t errlen);
/* Whether the peer may `op` job id, unfinished and run by aegisd: 0, else
 * -1 with why in why. */
int d_may_act(d_conn *c, int64_t id, const char *op, char *why, size_t len);
/* queue_ctl.c: update, priority and fairshare. */
void d_on_update(d_conn *c, const proto_request *req);
void d_on_priority(d_conn *c, const proto_request *req);
void d_on_fairshare(d_conn *c, const proto_request *req);
void d_on_clear(d_conn *c, const proto_request *req);
/* The `gpus` answer: every GPU's readings and jobs, and the queue's counts
 * (handlers.c; the front serves a copy of it, front.h). */
json_t *d_gpus_answer(d_daemon *d);
/* Registers the handlers' hooks in d (d->job_done: answers the waits). */
void d_handlers_register(d_daemon *d);

/* jobs_queue.c, for the kinds that make their own jobs (lease.c) */
/* A new job (store row id) of owner, named name, of kind `kind`, in the
 * table and not queued: its kind sets what it keeps, then
 * d_job_submit_at() queues it. NULL when out of memory, with why. */
d_job *d_job_create(d_daemon *d, int64_t id, const store_owner *owner,
                    const char *name, int gpus, double mem_mib,
                    const d_job_kind *kind, char *err, size_t errlen);
/* Queues the job in the core; at retry->attempt > 1 it joins the recovery
 * queue with its floor (the ladder's place of an earlier run). -1 with
 * why in err when it ended at once (the core refused it). */
int d_job_submit_at(d_daemon *d, d_job *job, const core_retry *retry,
                    char *err, size_t errlen);
/* jobs_run.c, for lease.c */
/* A lease job's tasks have ended (how, the last status, why): settled as
 * an attempt's exit is (core_job_exit); its OOM climbs the ladder, kept by
 * Slurm job for its next run, and has Slurm requeue it. */
void d_job_lease_settle(d_daemon *d, d_job *job, core_exit how, int status,
                        const char *why);
/* Ends a lease job that was not granted (withdrawn, its Slurm job gone). */
void d_job_withdraw(d_daemon *d, d_job *job, const char *why);

/* lease.c */
/* Seconds a lease outlives its last process: time for the lease_exit the
 * plugin sends after the task's end (lease.md). */
#define D_LEASE_GRACE_S 3.0
void d_on_lease(d_conn *c, const proto_request *req);
void d_on_lease_exit(d_conn *c, const proto_request *req);
void d_on_lease_end(d_conn *c, const proto_request *req);
/* The grant of a placed lease job: its environment (ss: what the sharing
 * modes add), answered to the tasks waiting; run gets the
 * first task's session as the job's pid. 0, or -1 with why. visible:
 * CUDA_VISIBLE_DEVICES, as aegisd's own jobs get it. */
int d_lease_grant(d_daemon *d, d_job *job, const char *visible,
                  const d_share_start *ss, exec_run *run, char *err,
                  size_t errlen);
/* Has Slurm requeue the lease's job (its OOM), in the background. */
void d_lease_requeue(d_daemon *d, const d_job *job);
/* The lease job was placed and granted: its waiting tasks are answered. */
void d_lease_granted(d_daemon *d, d_job *job);
/* Whether pid is one of the lease's tasks' processes or descends from
 * one (its memory and energy on the GPUs are the lease's). */
bool d_lease_owns(const d_job *job, pid_t pid);
/* A connection waiting for a grant has closed. */
void d_lease_conn_gone(d_daemon *d, d_conn *c);
/* The job is finishing: its waiting tasks are told (state, reason) and
 * its processes no longer watched. */
void d_lease_finish(d_daemon *d, d_job *job, const char *state,
                    const char *reason);
/* Each tick: leases whose processes have all gone end. */
void d_leases_tick(d_daemon *d);
/* After a restart: each lease's Slurm job is asked about (listpids); its
 * processes are watched again, or the lease dropped when the job is gone.
 * A stored lease row (loaded by d_jobs_recover) gets its pids and env. */
void d_lease_load(d_daemon *d, d_job *job, json_t *row);
void d_leases_recover(d_daemon *d);
/* At exit, before the loop's last run: every watcher closed and freed. */
void d_leases_close(d_daemon *d);

/* scontrol.c */
/* Runs `scontrol VERB SLURM_JOB` (d->keys.slurm_scontrol) in the background; done
 * gets its exit status (-1: it could not run or was killed) and its
 * output (NUL-terminated, at most 64 KiB) once it has ended. ctx is
 * the job id it concerns. */
typedef void (*d_scontrol_done)(d_daemon *d, int64_t ctx, int status,
                                const char *out);
void d_scontrol(d_daemon *d, const char *verb, uint32_t slurm_job,
                int64_t ctx, d_scontrol_done done);
/* A child aegisd reaped (SIGCHLD): one of the runs, perhaps. */
void d_scontrol_reaped(d_daemon *d, pid_t pid, int status);
/* Each tick: runs past their time are killed. At exit, before the loop's
 * last run: their pipes closed, their memory freed (they are not waited
 * for). */
void d_scontrol_tick(d_daemon *d);
void d_scontrol_close(d_daemon *d);

#endif
