/* replay.h -- one server's replay: its jobs through its own core.
 *
 * The engine (engine.h) hands each server the jobs the dispatcher sent it
 * and replays the servers independently, possibly in parallel threads.
 * A replay reads the read-only trace and writes only its own records, its
 * server's log in the result and its own jobs' entries there, so no
 * locking is needed. It writes its jobs' records into the result when it
 * ends; its GPUs' energy stays in the replay until the engine sums the
 * servers' figures, in server order.
 *
 * Inside a replay, jobs are numbered 0..njobs-1 in submit order (the core
 * knows them by that number) and GPUs 0..gpus-1.
 *
 * replay_run() replays a server's jobs given up front. Slurm's dispatch
 * (engine.c) steps all servers together instead: replay_start(), then at
 * each moment replay_events(), replay_add() of the jobs Slurm starts on
 * the server then, and replay_settle(), and finally replay_finish().
 */
#ifndef AEGIS_REPLAY_H
#define AEGIS_REPLAY_H

#include "core.h"
#include "engine.h"
#include "heap.h"
#include "loaders.h"
#include "meter.h"
#include "waits.h"

#include <stdbool.h>
#include <stdint.h>

/* A job active on a GPU, with what it adds to the GPU's readings: fixed
 * for its attempt, so worked out once when it joins rather than at every
 * change on the GPU. */
typedef struct gpu_entry {
    int32_t job;
    double mark;                /* meter_mark() when it joined */
    double mem_mib;             /* its peak memory on this GPU */
    /* Its profiled activity, scaled to what the GPU reads of it (the
     * share_model_scale() of its attempt): */
    double smact, smocc, drama, util_pct;
} gpu_entry;

typedef struct sim_gpu {
    gpu_entry *active;          /* active jobs, oldest first */
    int njobs, cap;
    energy_meter meter;         /* splits the GPU's energy among them */
    double used_mib;            /* sums over the active jobs */
    double smact, smocc, drama, util_pct;
    double since;               /* energy and busy time counted up to here */
} sim_gpu;

/* A launched job's progress, and its attempt as the loop reads it: the
 * replay's own, not part of the result. Every change on a GPU recomputes
 * the rates of all its jobs, and each reached its attempt through the
 * server's log, three loads one after the other; here it is one record. */
typedef struct job_progress {
    double remaining;           /* solo-seconds of work left at `since` */
    double since;               /* when remaining was last brought up to date */
    double rate;                /* solo-seconds done per second now */
    const cat_workload *work;
    const mig_profile *mig;     /* the attempt's MIG instance, or NULL */
    double deadline;            /* when its time limit stops the attempt
                                   (its launch + the job's limit, or the
                                   site's default_time); 0: never */
    uint8_t share;              /* the attempt's share_mode */
    uint8_t ngpus;              /* the attempt's GPUs: */
    uint8_t gpus[CORE_MAX_JOB_GPUS];
} job_progress;

typedef struct replay {
    /* Given by the engine. */
    const sim_options *opt;
    const char *policy;
    int server;
    const trace_job *trace;     /* the whole trace's rows */
    const int32_t *ids;         /* this server's jobs' trace indexes */
    int njobs;                  /* (replay_add() grows both) */
    int jobs_room;              /* jobs the per-job arrays are made for, at
                                   least: the most any server has
                                   (engine_init()), so that the replays after
                                   this one on its thread take the arrays
                                   over as they are (replay_reuse()) */
    double start_s;             /* the trace's first submit */

    sim_job *out;               /* the result's jobs, by trace index */
    double *wait_by_reason;     /* the result's, or NULL (engine.h) */
    sim_server_log *log;        /* the result's log of this server, empty:
                                   the replay fills it (attempts[].job is
                                   the trace index) */

    /* Results, kept until the engine has summed them. */
    sim_gpu *gpu;               /* opt->gpus of them */
    double energy_j, busy_gpu_s;
    double last_end_s;          /* latest attempt end, or start_s */
    double load_cpu_s;          /* CPU-seconds of data loading (loaders.h) */
    int ooms, stopped, timeouts, finished;

    /* Working state of replay_run(). */
    sim_job *jobs;              /* by the replay's job number */
    job_progress *progress;     /* likewise */
    trace_job *rows;            /* copies of their trace rows, so that the
                                   loop reads arrivals from consecutive
                                   memory, not from every servers-th row of
                                   the trace: that miss was a sixth of a
                                   replay */
    core_state *core;
    sim_heap heap;
    double wake_t;              /* the core's pending wakeup, or -1 */
    bool dirty;                 /* ask the core at the end of this moment */
    bool rewake;                /* ask it only for its next wakeup */
    int running;                /* jobs launched or active */
    int next;                   /* the next job to arrive */
    int cap;                    /* jobs the arrays have room for */
    int32_t *own_ids;           /* ids, when replay_add() grows them */
    double left_mib;            /* the aegis_mem (dispatch.h) of the jobs
                                   that left since replay_take_left() */
    bool only_wakeups;          /* what the moment being replayed held */
    bool only_arrivals;
    bool stuck;                 /* the core asks for wakeups forever */
    int idle_wakeups;
    sim_waits waits;            /* waiting time by reason, when counted */
    sim_loaders loaders;        /* the data loaders running */
    double cpu_share;           /* sim_loaders_share() as the jobs' rates
                                   last took it */
    core_job_spec spec;         /* the spec of the job that arrives next,
                                   written ahead (on_arrival()) */
    char spec_feed[16];         /* its feed's name */
    int32_t spec_job;           /* that job + 1; 0: none written */

    char err[512];              /* why replay_run() failed */
} replay;

/* Replays r's jobs, given the fields under "Given by the engine", and
 * frees its working state but its per-job arrays (jobs, rows, progress).
 * Returns 0, or -1 with r->err set. Either way replay_free() releases the
 * rest. */
int replay_run(replay *r);

/* Hands the per-job arrays of `from`, a replay that has run, to `to`,
 * about to: the next server replayed on a thread writes over the pages
 * the last one mapped. Left to malloc, each server's progress records
 * took fresh pages, as the log of the server before now lay where they
 * were (60% of a million-job run's page faults), and arrays grown by
 * realloc() were copied to fresh pages (a fifth). */
void replay_reuse(replay *to, replay *from);

/* Stepping a replay from outside, moment by moment: */
int replay_start(replay *r);
/* The time of r's next moment, INFINITY when none is due: every job given
 * to it has left, or its core is stuck. */
double replay_next_t(const replay *r);
/* Handles r's events at t, its next moment. */
int replay_events(replay *r, double t);
/* Trace job `id` arrives at t, no earlier than the moment last replayed.
 * Returns 0, or -1 with r->err set. */
int replay_add(replay *r, int32_t id, double t);
/* Handles the arrivals at t and asks the core for its decisions. */
int replay_settle(replay *r, double t);
/* The aegis_mem the jobs that left since the last call held. */
double replay_take_left(replay *r);
/* Writes r's jobs' records into the result and frees the working state
 * but the per-job arrays, after rc, the replay's status so far; returns
 * rc. */
int replay_finish(replay *r, int rc);

/* Counts each GPU's energy (idle by now) up to t, the run's last end. */
void replay_close_books(replay *r, double t);

/* Frees r's results; a replay never run holds none. */
void replay_free(replay *r);

#endif
