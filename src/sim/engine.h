/* engine.h -- the discrete-event simulator that drives the scheduling core.
 *
 * sim_run() replays a trace on modelled servers under one policy: each
 * server has its own core_state, fed the same events the daemon would feed
 * it (submit, telemetry, first activity, exit) in virtual time. Time jumps
 * from event to event; between events every job drains its remaining work
 * (in solo-seconds) at a constant rate, 1 / slowdown (model.h).
 *
 * Each server's replay (replay.h) depends only on the jobs the dispatcher
 * (dispatch.h) sent it, so servers are replayed in parallel threads: the
 * result is the same on any number of threads. Slurm's dispatch
 * (slurm_step.h) depends on when jobs end, so it steps the servers
 * together on one thread. The result keeps each
 * server's attempts where its replay wrote them, in a log per server
 * (sim_server_log), and a job names its server: copying a million attempts
 * into one array, and renumbering them, took a tenth of a big run.
 *
 * Ownership: sim_run() allocates a sim_result the caller frees with
 * sim_result_free(); it points into the trace, which must outlive it.
 */
#ifndef AEGIS_ENGINE_H
#define AEGIS_ENGINE_H

#include "core.h"
#include "dispatch.h"
#include "model.h"
#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sim_options {
    int servers;                /* identical servers behind the dispatcher */
    sim_dispatch_mode dispatch; /* how jobs reach them (dispatch.h) */
    int gpus;                   /* GPUs per server */
    double gpu_mem_mib;         /* memory of each GPU */
    double server_cpus;         /* CPUs of each server, shared by its jobs'
                                   data loaders (loaders.h) and counted by
                                   the core; 0: as many as they want */
    int estimator;              /* CAT_EST_* fed to the core as est_mib */
    core_config config;         /* the core's settings; policy set per run */
    sim_model model;
    share_mode sharing;         /* every GPU's sharing mode */
    const mig_model *mig;       /* the GPUs' MIG table (mig and auto) */
    int threads;                /* servers replayed at once; 0: one per CPU */
    bool reasons;               /* count each job's waiting time by reason
                                   (sim_result.wait_by_reason) */
    bool check;                 /* core_check() after every event: the run
                                   fails at the first count the core keeps
                                   wrong (aegis sim --check) */
} sim_options;

/* One run of a job on its GPUs; one that finds no room at its first
 * activity crashes later (sim_model_crash_s()) with oom set. 40 bytes: a
 * million-job run writes a million of these to fresh pages, so the
 * attempt's sharing mode and MIG instance, which no report reads, stay in
 * the replay's progress records (replay.h). */
typedef struct sim_attempt {
    double start_s;             /* launched by the core */
    double active_s;            /* first GPU activity */
    double end_s;               /* finished or crashed; < 0 while running */
    int32_t gpu_off;            /* its GPUs: its log's gpus[gpu_off...] */
    int32_t next;               /* the job's next attempt in its log, or -1 */
    int32_t job;                /* index in sim_result.jobs */
    uint8_t ngpus;
    bool oom;
} sim_attempt;

typedef enum sim_job_state {
    SIM_PENDING,                /* not yet arrived */
    SIM_QUEUED,                 /* in its server's core queue */
    SIM_LAUNCHED,               /* placed, not yet active */
    SIM_ACTIVE,                 /* running on its GPUs */
    SIM_DONE,                   /* finished */
    SIM_STOPPED,                /* the core gave up on it */
    SIM_TIMEOUT                 /* stopped at its time limit */
} sim_job_state;

typedef struct sim_job {
    const trace_job *src;       /* its trace row */
    double end_s;               /* when it finished or was stopped */
    double exec_s;              /* sum of its attempts' durations */
    double energy_j;            /* its share of its GPUs' energy (meter.h) */
    int32_t first_attempt;      /* in its server's log; -1 before the */
    int32_t last_attempt;       /*   first launch */
    int32_t server;             /* the server the dispatcher sent it to */
    uint8_t state;              /* sim_job_state */
} sim_job;

/* One server's attempts, in launch order. */
typedef struct sim_server_log {
    sim_attempt *attempts;
    int nattempts, attempts_cap;
    int32_t *gpus;              /* the attempts' GPUs, numbered within the
                                   server: GPU k of server s is s * gpus +
                                   k across servers (sim_attempt_gpu) */
    int ngpus_used, gpus_cap;
} sim_server_log;

typedef struct sim_result {
    const trace *trace;         /* the trace replayed (its user names) */
    const char *policy;
    const char *sharing;        /* the GPUs' sharing mode, by name */
    const char *dispatch;       /* sim_dispatch_name() of its dispatch */
    int servers, gpus_per_server;
    sim_job *jobs;              /* in trace order (sorted by submit) */
    int njobs;
    sim_server_log *logs;       /* one per server */
    double start_s;             /* first submit */
    double makespan_s;          /* last end - first submit */
    double energy_j;            /* all GPUs, start_s to the last end */
    double busy_gpu_s;          /* GPU-seconds with at least one job active */
    double load_cpu_s;          /* CPU-seconds of data loading (loaders.h) */
    bool loads;                 /* the trace gives some job's load_cpus */
    int ooms, stopped, timeouts, unfinished;
    double *wait_by_reason;     /* with sim_options.reasons: seconds each job
                                   waited for each core_wait kind, at
                                   [job * SIM_WAIT_KINDS + kind] (waits.h);
                                   else NULL */
} sim_result;

/* Simulates the whole trace under `policy`. Returns NULL with a message in
 * err when the core refuses the configuration or misbehaves. */
sim_result *sim_run(const trace *t, const sim_options *opt, const char *policy,
                    char *err, size_t errlen);
void sim_result_free(sim_result *r);

/* Attempt a of the job (its first_attempt, or a next link). */
const sim_attempt *sim_attempt_of(const sim_result *r, const sim_job *job,
                                  int32_t a);
/* The number across servers of GPU k of an attempt in server s's log. */
int sim_attempt_gpu(const sim_result *r, int s, const sim_attempt *at, int k);

#endif
