/* jobs.h -- what the files of aegisd's job table share with each other:
 * jobs.c (the table), jobs_queue.c, jobs_run.c, jobs_tick.c,
 * jobs_recover.c and jobs_oom.c. Not for the rest of aegisd, which has
 * daemon.h.
 */
#ifndef AEGIS_DAEMON_JOBS_H
#define AEGIS_DAEMON_JOBS_H

#include "daemon.h"

/* ---- jobs.c ---- */
/* The place of id in the table, or where it would go. */
size_t d_job_index(const d_daemon *d, int64_t id);
/* Where a walk over the table goes on after acting on job id: the place
 * of the first job after it, though the act moved jobs or ended id. */
size_t d_job_index_after(const d_daemon *d, int64_t id);
/* Whether aegisd holds job back until its restart_at (a back-off after
 * watchers that did not start it, a supervisor's restart, an outside
 * start that could not be recorded), as REASON and /metrics say. */
bool d_job_backing_off(const d_job *job);
/* Into the table; -1 when out of memory. */
int d_job_add(d_daemon *d, d_job *job);
/* Out of the table, and freed. */
void d_job_remove(d_daemon *d, d_job *job);
/* Notes a job's end until the state is saved: its commit may yet fail. */
void d_unsaved_add(d_daemon *d, int64_t id, const char *state,
                   const char *reason);
/* A job of aegisd's own kind with room for ndeps dependencies after it,
 * freed with it; NULL when out of memory. */
d_job *d_job_new(int64_t id, uid_t uid, gid_t gid, const char *user,
                 const char *name, int num_gpus, double mem_mib,
                 size_t ndeps);

/* The login name of a stored job's row as submitted, byte for byte: one
 * that is not UTF-8 is null in the row (a JSON string holds no such
 * bytes), and is read again from the store (a recovered job ran as user
 * "(null)"); the row's uid when there is none. */
void d_row_user(d_daemon *d, json_t *row, char *user, size_t len);

/* ---- jobs_queue.c ---- */
/* What the core is told of the job. */
core_job_spec d_job_spec(d_daemon *d, const d_job *job);

/* ---- jobs_run.c ---- */
/* The CPUs of the job's cgroup: its --cpus, else cpus_per_gpu times its
 * GPUs; 0: no limit, and none counted by the core. */
int d_job_cpus(const d_daemon *d, const d_job *job);
/* What the attempt's status file says (exec_probe), the pids of a live
 * attempt taken into the job. */
void d_job_probe(d_daemon *d, d_job *job, exec_record *rec);
/* Attempt job->attempts never ran (why): forgotten, the job queued again. */
void d_job_unstarted(d_daemon *d, d_job *job, const char *why);
/* The attempt's shim is gone (rec: its status file): classified, settled. */
void d_job_ended(d_daemon *d, d_job *job, const exec_record *rec);
/* Keeps a copy of cg, the running attempt's cgroup, in job->cg when it
 * names a folder (none kept otherwise): 0, or -1 when out of memory. */
int d_job_keep_cg(d_job *job, const cg_job *cg);
/* Removes the attempt's cgroup folders, and forgets them. */
void d_job_drop_cg(d_job *job);

/* ---- jobs_oom.c ---- */
/* The readings the running attempt's OOM message is checked against at
 * its end (*out; oom_check.h), and their count: 0, for the message to be
 * trusted, when none showed it, when it had only part of a GPU (MIG, MPS
 * pinned memory), or when the kernel killed it for host memory. */
int d_job_oom_readings(const d_daemon *d, const d_job *job,
                       const oom_gpu_mem **out);

/* ---- jobs_tick.c ---- */
/* Notes memory on GPU g held by processes aegisd did not place there. */
void d_gpu_note_foreign(d_daemon *d, int g);
/* exec_status_each()'s callback: removes the status file of an attempt
 * not running. */
void d_status_sweep(void *ctx, int64_t id, int attempt);

#endif
