/* store.h -- aegisd's durable state: jobs, their attempts and events in
 * one SQLite database in WAL mode.
 *
 * Commits use synchronous=NORMAL: a committed transaction is in the
 * kernel's copy of the log, so it survives a kill -9 of the daemon, and it
 * survives a power loss once the log file is synced. The daemon syncs it
 * before an answer that reports a commit (a submit is acknowledged only
 * then) and, for its own records, in the background (wal_sync.c).
 *
 * Writes that fail for want of space (or a read-only disk) are not lost:
 * they are kept in memory, in order, and saved by store_retry() once the
 * database can be written again (store.c); meanwhile store_failing() says
 * so, and aegisd takes no job.
 *
 * Rows come back as jansson objects with one key per column, so the daemon
 * answers `ls` and `show` without a second record type.
 *
 * Ownership: store_open() returns a store the caller closes with
 * store_close(); every json_t returned is the caller's (json_decref).
 */
#ifndef AEGIS_STORE_H
#define AEGIS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "proto.h"

typedef struct store store;

/* Who submitted: from the socket's peer credentials, never from the
 * request. */
typedef struct store_owner {
    uid_t uid;
    gid_t gid;
    const char *user;       /* login name, or the uid in decimal */
} store_owner;

/* One attempt as it starts (the executor's answer). */
typedef struct store_attempt {
    int n;                  /* 1, 2, ... */
    const char *gpus;       /* GPU indices, "0,2" */
    double floor_mib;       /* memory the core admitted it with */
    bool exclusive;
    pid_t shim_pid;         /* the aegisd-side watcher of the job */
    unsigned long long shim_start; /* its start time (/proc, clock ticks) */
    pid_t job_pid;          /* the job itself, leader of its session */
    long long err_offset;   /* its stderr log's size before it started */
} store_attempt;

store *store_open(const char *path, char *err, size_t errlen);
void store_close(store *st);

/* Inserts every job of a submit request in one committed transaction; ids
 * are consecutive from *first_id. Returns 0 or -1 with a message (also
 * inside a store_begin() pair: its commit is the client's answer). */
int store_submit(store *st, const store_owner *owner,
                 const proto_request *req, double now, int64_t *first_id,
                 char *err, size_t errlen);

/* A Slurm job step's lease (lease.c): the one job of req gets these. */
typedef struct store_lease {
    uint32_t slurm_job;
    int restart;
    const char *mode;       /* shared, mps, mig or exclusive */
} store_lease;

/* store_submit() of a request of one job that is a Slurm job's lease. */
int store_lease_submit(store *st, const store_owner *owner,
                       const proto_request *req, const store_lease *lease,
                       double now, int64_t *id, char *err, size_t errlen);
/* A lease's tasks' processes ("12,13") and its grant's variables (JSON
 * array text), for a restarted aegisd. */
void store_lease_pids(store *st, int64_t id, const char *pids);
void store_lease_env(store *st, int64_t id, const char *env);
/* A Slurm job's place on the recovery ladder after an OOM (core_retry's
 * attempt, floor_mib, alone), and whether one was kept for it. */
void store_ladder_set(store *st, uint32_t slurm_job, int attempt,
                      double floor_mib, bool alone);
bool store_ladder_get(store *st, uint32_t slurm_job, int *attempt,
                      double *floor_mib, bool *alone);

/* Several updates that belong together (an exit: the attempt, the job and
 * an event) go between store_begin() and store_commit(); nested pairs
 * join the outer one, so aegisd wraps a whole loop turn in one pair: one
 * commit (one fsync) for all the job events of the turn. store_commit()
 * returns 0 when saved (or joined to an outer pair), or -1 when the writes
 * are kept for store_retry(). store_commit_now() is for what must be
 * durable before aegisd acts on it (a launch, an answer): it commits at
 * once, an outer pair's writes so far with its own, and returns -1 when
 * that failed, its own writes forgotten (an outer pair's are kept). */
void store_begin(store *st);
int store_commit(store *st);
int store_commit_now(store *st);
/* Whether a store_begin() pair is open: a commit is still to come. */
bool store_in_transaction(const store *st);
/* Transactions committed since store_open(): how the grouping of a loop
 * turn's writes is checked. */
unsigned long store_commits(const store *st);
/* The database's path (its log is that path with "-wal"). */
const char *store_path(const store *st);

/* Whether writes fail (the disk is full or read-only), and why, naming the
 * database. */
bool store_failing(const store *st);
const char *store_failure(const store *st);
/* Saves the writes kept since they began to fail, and a probe row (so a
 * retry proves the database writable even with none kept): 0 when saved,
 * -1 while writes still fail. now: Unix time, for the probe row. */
int store_retry(store *st, double now);
/* Writes are to stop as if they failed, for a cause outside the database
 * (the state folder refuses a file); why names it. */
void store_fail_because(store *st, const char *why);

/* An attempt is recorded before it starts, with shim_pid 0 (its intent);
 * store_attempt_pids() adds its processes once it runs. */
void store_attempt_start(store *st, int64_t id, const store_attempt *a,
                         double now);
void store_attempt_pids(store *st, int64_t id, int n, pid_t shim_pid,
                        unsigned long long shim_start, pid_t job_pid,
                        long long err_offset);
/* Forgets attempt n, which never started. */
void store_attempt_drop(store *st, int64_t id, int n);
/* The owner cancelled the n jobs of ids at `now` (one statement): kept
 * until each is finished. */
void store_jobs_cancel(store *st, const int64_t *ids, size_t n, double now);
/* Attempt n of the job was first seen on its GPUs at `now`. */
void store_attempt_seen(store *st, int64_t id, int n, double now);
/* Closes attempt n of the job: how is "ok", "oom", "failed", "lost",
 * "cancelled" or "timeout"; status the wait status (or -1 when unknown). */
void store_attempt_end(store *st, int64_t id, int n, const char *how,
                       int status, double now);
/* The job's state ("queued", "running", "done", "failed", "cancelled",
 * "timeout"), with a one-line reason kept for `aegis show` (NULL keeps the
 * old one). */
void store_job_state(store *st, int64_t id, const char *state,
                     const char *reason, double now);
/* A job's energy so far, with its CO2 at the intensity and PUE in force
 * as each part was drawn, and that energy x PUE (acct.h, acct_row). */
typedef struct store_energy {
    double energy_j, co2_g, pue_j;
} store_energy;
void store_job_energy(store *st, int64_t id, const store_energy *e);
/* A GPU's energy counter as last read: saved with the jobs' energy in
 * the same transaction, so that the two agree after any crash. */
typedef struct store_gpu_energy {
    const char *uuid;       /* the GPU's, to tell it changed */
    double energy_j;        /* its counter */
    double t;               /* when it was read, Unix time */
    double power_w;         /* its power then; < 0 unknown (NULL) */
    const char *shares;     /* JSON {"job id": share of its energy}; NULL:
                               none */
} store_gpu_energy;
void store_gpu_energy_set(store *st, int gpu, const store_gpu_energy *r);
/* GPU gpu's saved reading {uuid, energy_j, t, power_w, shares (an
 * object)}, or NULL when none was saved (a first start, an older state). */
json_t *store_gpu_energy_get(store *st, int gpu);
/* `aegis hold` (true) or `release` (false) of a queued job. */
void store_job_held(store *st, int64_t id, bool held);
/* history_days: the ids of at most limit jobs that finished before
 * `before` (Unix time), a JSON array; and the removal of the jobs of ids
 * (that array as text) with their attempts, events, samples and unused
 * environments, in one transaction. */
json_t *store_prune_ids(store *st, double before, int limit);
void store_prune(store *st, const char *ids);
/* `aegis clear`: hides uid's finished jobs from ls and ls --all (reports
 * still count them). How many it hid, or -1 when it could not write. */
int64_t store_clear(store *st, uid_t uid);
/* `aegis db backup`: a copy of the database at path, a new file, by
 * SQLite's online backup (a consistent copy while aegisd runs). 0, or -1
 * with why in err. */
int store_backup(store *st, const char *path, char *err, size_t errlen);
/* `aegis update`: a queued job's limit (0: none), nice, memory (< 0:
 * none given) and name, all of them as they are now. */
void store_job_update(store *st, int64_t id, double time_limit_s, int nice,
                      double mem_mib, const char *name);
/* A managed producer's restarts and whether it is being stopped for its
 * feed's last consumer (d_job.restarts, d_job.feed_stop). */
void store_job_feed(store *st, int64_t id, int restarts, bool stop);
/* The job's place on the recovery ladder after a requeue (core_retry's
 * floor_mib and alone; its attempt is the attempt count + 1). */
void store_job_retry(store *st, int64_t id, double floor_mib, bool alone);
void store_event(store *st, int64_t id, double now, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A job's row, with its cmd, cwd and env when `full`, and its attempts and
 * events; NULL when the id is unknown. */
json_t *store_job(store *st, int64_t id, bool full);
/* The login name of job id's user as stored, byte for byte (a JSON row
 * holds null where it is not UTF-8): false when there is none. */
bool store_job_user(store *st, int64_t id, char *user, size_t len);
/* Which jobs store_list() gives. */
typedef struct store_query {
    bool all;           /* finished jobs too: the newest `limit` of them */
    int64_t limit;      /* at most this many rows (0: every one); without
                           `all`, the first by id: the head of the queue */
    const char *user;   /* only this login name's or uid's (decimal); NULL:
                           anyone's */
    const char *states; /* only jobs in these states, a JSON array text
                           ("held" is queued); NULL: any */
    bool cleared;       /* jobs their owner cleared (aegis clear) too */
} store_query;

/* Jobs (without env, attempts or events) in id order: all of them, or the
 * queued and running ones only, those that pass q's user and states, at
 * most q->limit of them. */
json_t *store_list(store *st, const store_query *q);
/* How many jobs store_list() would give without a limit. */
int64_t store_count(store *st, const store_query *q);

/* A report's jobs: submitted in [since, until) (Unix times; until 0: no
 * end), of user (a login name or a uid; NULL: anyone's). */
typedef struct store_report_query {
    double since, until;
    const char *user;
} store_report_query;

/* The jobs of q in id order, each with its attempts' start, end and GPUs
 * in "attempt_list": what a report needs, and no command. */
json_t *store_report(store *st, const store_report_query *q);

/* Calls fn for each queued or running job in id order with its row and,
 * for a running one, its latest attempt ("attempt" key): the daemon's
 * restart recovery. */
void store_each_active(store *st, void (*fn)(void *ctx, json_t *job),
                       void *ctx);

/* One sample of a running job's history (history.h); a figure < 0 is
 * unknown, kept as NULL. For a job on several GPUs, the GPU figures are
 * sums over its GPUs. */
typedef struct store_sample {
    double t;               /* Unix time */
    double mem_mib;         /* the job's processes' memory */
    double sm_pct;          /* their SM utilization, percent of one GPU */
    double gpu_used_mib;    /* its GPUs' memory in use, by anyone */
    double gpu_total_mib;   /* its GPUs' memory */
} store_sample;

void store_history_add(store *st, int64_t id, const store_sample *sample);
/* Drops every other sample of the job, by time (the first is kept), and
 * records step, the history periods between its samples from now on. */
void store_history_thin(store *st, int64_t id, int step);
/* The job's samples in time order, each [t, mem_mib, gpu_used_mib,
 * gpu_total_mib, sm_pct] with null for an unknown figure. */
json_t *store_history(store *st, int64_t id);
/* How many samples the job has and its step (1 for a job without). */
void store_history_state(store *st, int64_t id, int *count, int *step);

/* The last error of the database, with the system's reason where it gave
 * one, for a log line: a buffer in st, which the next call overwrites. */
const char *store_errmsg(store *st);

/* A MIG instance aegisd made for an attempt (gpushare.c): a row while it
 * exists, so that a restarted aegisd knows which are its own. */
typedef struct store_mig {
    int gpu;
    unsigned int gi, ci;        /* GPU and compute instance ids */
    int64_t job_id;
    int n;                      /* the attempt */
    char profile[32];           /* "3g.20gb" */
    int start;                  /* its first memory slice */
    char uuid[96];              /* the MIG device the job was given */
} store_mig;

void store_mig_add(store *st, const store_mig *m);
void store_mig_remove(store *st, int gpu, unsigned int gi);
/* Every instance recorded, by GPU and GI id, into out (at most max):
 * returns how many. */
int store_mig_list(store *st, store_mig *out, int max);

/* The drain of the GPU of that UUID, with its reason and who drained it
 * (their login name); cleared by a resume. */
void store_drain_set(store *st, const char *uuid, const char *reason,
                     const char *user, double now);
void store_drain_clear(store *st, const char *uuid);
/* The GPU's drain as {reason, user, t}, or NULL when it is not drained. */
json_t *store_drain(store *st, const char *uuid);

#endif
