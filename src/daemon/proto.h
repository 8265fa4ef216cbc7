/* proto.h -- the aegisd wire protocol: one JSON object per line.
 *
 * A client writes one request line and reads one response line (a `wait`
 * answers when its jobs have finished). proto_parse() turns a line into a
 * typed, fully validated proto_request, so the daemon never looks at raw
 * JSON and a fuzzer can drive the parser alone: it is pure (no I/O, no
 * global state).
 *
 * Requests ("op" and its fields):
 *   submit  cwd, env [..."K=V"], umask, jobs [{cmd [...], gpus, mem_mib, name, feed,
 *           after, mps_threads_pct, meta, time_limit_s, nice, notify, cpus,
 *           host_mem_mib, stdout_path, stderr_path,
 *           pipeline}]
 *           after: [{id or index, kind}...] -- the jobs it waits for: an
 *           existing job by id, or an earlier job of the same submit by
 *           its index in jobs; kind is afterok, afterany or afternotok
 *           (Slurm's). A bare id is [{id, "afterok"}], as older clients
 *           send it. meta: a JSON object kept with the job as it is (an
 *           AEGIS spec's estimates and profile). time_limit_s: the
 *           seconds an attempt may run before it is stopped (--time).
 *           notify: a shell command run at the job's end ("": none, even
 *           where the config names one). array: [indices...] -- the job
 *           stands for one job per index, in order, its cmd run as
 *           ["/usr/bin/env", "AEGIS_ARRAY_INDEX=N", cmd...] (aegis submit
 *           --array: the command travels once, not once per index)
 *   ls      all (bool), limit (optional: the first rows only, or with
 *           all the newest, and the count of them all), user (optional:
 *           a login name or a uid), states (optional: [queued, held,
 *           running, done, failed, cancelled, timeout...]; held: held by
 *           `aegis hold`, which queued no longer matches)
 *   show    id, history (bool: its samples)
 *   cancel  ids [...]           wait   ids [...]
 *   hold    ids [...]           release ids [...]
 *   log     id, offset, stderr (bool)
 *   gpus                        drain  gpu, reason (optional)
 *   resume  gpu
 *   report  since, until (Unix times; optional: every job), user
 *           (optional: a login name or a uid)
 *   shutdown  drain (bool: wait for running jobs first)
 *   lease   slurm_job, restart, uid, mem_mib, mode, pid, gpus, name -- a
 *           Slurm job step's task asks for its GPUs (root only; answered
 *           once they are granted, with id, gpus and env)
 *   lease_exit  slurm_job, restart, pid, status, stderr_tail -- a task of
 *           a lease ended (root only): answered with its class
 *   lease_end   slurm_job -- the node's Epilog: every lease of that job ends
 *           (docs/slurm.md, "How aegisd serves Slurm jobs")
 *   update  id, and one or more of time_limit_s, nice, mem_mib, name: a
 *           queued or held job's new values (its owner may only lower
 *           its priority and its limit; root may raise either)
 *   priority   each queued job's priority and its parts (aegis-plus)
 *   fairshare  each user's GPU time, decayed usage, share and factor
 *   db_backup  path (absolute, new): a copy of the database (root or
 *           aegisd's user only)
 *   clear   the peer's finished jobs leave ls and ls --all (tsp -C)
 * Responses: {"ok":true, ...} or {"ok":false, "error":"..."}, the latter
 * with "server_error":true when aegisd is busy or failed, not the request.
 * A `log` answer carries the bytes in "base64": logs need not be text.
 *
 * Ownership: proto_parse() fills a caller-owned proto_request whose strings
 * point into a JSON tree it owns; proto_request_free() releases both.
 */
#ifndef AEGIS_PROTO_H
#define AEGIS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The longest request line, newline excluded. A 10,000-job array of
 * commands of ~300 bytes plus a large environment fits; a client cannot
 * make the daemon buffer more than this per connection. */
#define PROTO_MAX_REQUEST (4u << 20)

/* Jobs in one submit (an array of 10,000 is the benchmark's size). */
#define PROTO_MAX_JOBS 100000
/* The largest `ls` limit: rows past a billion are "every one" anyway. */
#define PROTO_MAX_LS_LIMIT 1000000000
/* Words of one command and entries of one environment (ARG_MAX-like). */
#define PROTO_MAX_ARGS 4096
#define PROTO_MAX_ENV 4096
/* Job ids in one cancel or wait. */
#define PROTO_MAX_IDS 100000
/* A job name: short enough for one column of `aegis ls`. */
#define PROTO_MAX_NAME 128
/* A feed name: the feed library's own limit (FEED_NAME_MAX). */
#define PROTO_MAX_FEED 48
/* A pipeline's name (docs/pipelines.md): a file name in its owner's
 * state folder, as a feed's is under /dev/shm. */
#define PROTO_MAX_PIPELINE 48
/* Jobs one job may wait for. */
#define PROTO_MAX_DEPS 64
/* A job's meta object, serialized: a spec's estimates and profile are a
 * few hundred bytes. */
#define PROTO_MAX_META 65536
/* A drain's reason: one line of `aegis gpus`. */
#define PROTO_MAX_REASON 200
/* A job's notifier, a shell command line. */
#define PROTO_MAX_NOTIFY 4096
/* Memory a job may ask for, MiB: from 1 MiB (under it, 0 or 1e-9, a job
 * would be admitted as if it needed none; "none" is the key left out) to
 * 1 TiB (above any GPU made). */
#define PROTO_MIN_MEM_MIB 1.0
#define PROTO_MAX_MEM_MIB (1024.0 * 1024.0)
/* CPUs a job may ask for its cgroup. */
#define PROTO_MAX_CPUS 4096
/* The end of a Slurm task's stderr a lease_exit carries (lease.md). */
#define PROTO_MAX_TAIL 8192

typedef enum proto_op {
    PROTO_SUBMIT, PROTO_LS, PROTO_SHOW, PROTO_CANCEL, PROTO_WAIT, PROTO_LOG,
    PROTO_GPUS, PROTO_DRAIN, PROTO_RESUME, PROTO_REPORT, PROTO_HOLD,
    PROTO_RELEASE, PROTO_SHUTDOWN, PROTO_LEASE, PROTO_LEASE_EXIT,
    PROTO_LEASE_END, PROTO_UPDATE, PROTO_PRIORITY, PROTO_FAIRSHARE,
    PROTO_DB_BACKUP, PROTO_CLEAR
} proto_op;

/* What a dependency waits for (Slurm's names): its job's success, its end
 * whatever it was, or its failure or cancellation. */
typedef enum proto_dep_kind {
    PROTO_AFTER_OK, PROTO_AFTER_ANY, PROTO_AFTER_NOTOK
} proto_dep_kind;

typedef struct proto_dep {
    int64_t id;             /* an existing job; 0 when index is meant */
    int64_t index;          /* else a job of this submit, before this one */
    proto_dep_kind kind;
} proto_dep;

typedef struct proto_job {
    const char **argv;      /* argc words, NULL-terminated */
    size_t argc;
    const char *name;       /* "" when not given */
    const char *feed;       /* shared data feed it reads; "" for none */
    bool feed_producer;     /* the feed's managed producer: aegisd starts
                               it with the feed's first consumer and stops
                               it after the last (feeds.c) */
    const char *pipeline;   /* the pipeline whose supervisor it is; ""
                               for none. A supervisor takes no GPU (gpus
                               0) and starts outside placement
                               (daemon/pipelines.c) */
    int gpus;               /* 1..CORE_MAX_JOB_GPUS (1); 0 for a
                               pipeline's supervisor */
    double mem_mib;         /* memory estimate, MiB; < 0 when not given */
    int mps_threads_pct;    /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under MPS,
                               1..100; 0 when not given */
    proto_dep *after;       /* nafter jobs it waits for (all of them) */
    size_t nafter;
    json_t *meta;           /* an object kept with the job; NULL: none */
    double time_limit_s;    /* each attempt's time limit, seconds, up to
                               TIMELIMIT_MAX_S; 0 when not given */
    int nice;               /* lowers it among the queue, 0..CORE_NICE_MAX
                               (aegis-plus); 0 when not given */
    const char *notify;     /* run at its end; NULL when not given */
    int cpus;               /* CPUs its cgroup may use (--cpus); 0: the
                               config's per-GPU default */
    double host_mem_mib;    /* host RAM its cgroup may hold, MiB
                               (--host-mem); 0: the per-GPU default */
    const char *stdout_path; /* -o and -e patterns (outfile.h); NULL: */
    const char *stderr_path; /*   none */
} proto_job;

/* An update's new values: each field only when has_* (name: NULL). */
typedef struct proto_update {
    bool has_time, has_nice, has_mem;
    double time_limit_s;
    int nice;
    double mem_mib;
    const char *name;
} proto_update;

/* A lease, lease_exit or lease_end: one Slurm job's task (the SPANK
 * plugin's side of the protocol). */
typedef struct proto_lease {
    uint32_t slurm_job;     /* SLURM_JOB_ID, >= 1 */
    int restart;            /* SLURM_RESTART_COUNT (0) */
    int64_t uid;            /* lease: the Slurm job's owner */
    double mem_mib;         /* lease: its memory; < 0 when not given */
    const char *mode;       /* lease: shared, mps, mig or exclusive */
    int64_t pid;            /* lease, lease_exit: the task's process */
    int gpus;               /* lease: 1..CORE_MAX_JOB_GPUS (1) */
    const char *name;       /* lease: the Slurm job's name, "" for none */
    int status;             /* lease_exit: the task's wait status */
    const char *stderr_tail; /* lease_exit: its stderr's end, "" for none */
} proto_lease;

typedef struct proto_request {
    proto_op op;
    /* submit */
    const char *cwd;        /* absolute path */
    const char **env;       /* nenv "K=V" strings, NULL-terminated */
    size_t nenv;
    int umask;              /* the submitter's, 0 to 0777; -1: not given
                               (a request made in aegisd must say -1: 0
                               is a umask, and a permissive one) */
    proto_job *jobs;
    size_t njobs;
    /* show, log (one id); cancel, wait, hold, release (many) */
    int64_t *ids;
    size_t nids;
    bool all;               /* ls: finished jobs too */
    bool cleared;           /* ls: jobs their owner cleared too */
    int64_t limit;          /* ls: at most this many rows, the first by
                               id (with all: the newest); 0: every one */
    const char *user;       /* ls, report: one user's jobs only; NULL:
                               anyone's */
    json_t *states;         /* ls: jobs in these states only (an array of
                               known states, in root); NULL: any */
    bool history;           /* show: with the job's samples */
    int64_t offset;         /* log: first byte wanted */
    bool err_stream;        /* log: stderr instead of stdout */
    int gpu;                /* drain, resume */
    const char *reason;     /* drain: why, "" when not given */
    const char *path;       /* db_backup: the copy's file */
    bool drain_jobs;        /* shutdown: once running jobs have ended */
    double since;           /* report: jobs submitted at or after; 0 all */
    double until;           /* report: and before; 0: no end */
    proto_lease lease;      /* lease, lease_exit, lease_end */
    proto_update update;    /* update (its job: ids[0]) */
    json_t *root;           /* owns every string above */
} proto_request;

/* Parses and validates one request of len bytes (no newline). Returns 0, or
 * -1 with a message naming the offending field in err; req needs
 * proto_request_free() either way. */
int proto_parse(const char *line, size_t len, proto_request *req, char *err,
                size_t errlen);
void proto_request_free(proto_request *req);

/* The name of an op as it appears on the wire. */
const char *proto_op_name(proto_op op);
/* Whether an op only reads aegisd's state (ls, show, wait, log, gpus,
 * report): answering it tells a client of no change. */
bool proto_read_only(proto_op op);
/* The name of a dependency kind ("afterok"...), and the kind of a name
 * (-1 when none). */
const char *proto_dep_kind_name(proto_dep_kind kind);
int proto_dep_kind_of(const char *name);
/* Whether a lease's mode is one of shared, mps, mig and exclusive. */
bool proto_lease_mode_known(const char *mode);

#endif
