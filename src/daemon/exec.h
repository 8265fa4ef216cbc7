/* exec.h -- starting a job's process, and learning how it ended.
 *
 * Each attempt runs under a small watcher process (the shim) forked from
 * aegisd: the shim starts the job in a session of its own, waits for it
 * and writes its wait status to a file before exiting. aegisd may die and
 * come back meanwhile: the shim outlives it, so the exit status of a job
 * that was re-adopted after a restart is still collected -- aegisd only has
 * to notice the shim is gone (exec_alive) and read the file
 * (exec_status). A job's processes are its session, so a shell wrapper's
 * children are cancelled and observed with it.
 *
 * Ownership: exec_start() copies nothing it needs after returning; all
 * strings are the caller's.
 */
#ifndef AEGIS_EXEC_H
#define AEGIS_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

/* Bytes of the end of a job's stderr searched for an OOM message: the
 * frameworks print the error last, after at most a few KiB of traceback. */
#define EXEC_TAIL_BYTES 16384

typedef struct exec_spec {
    int64_t id;
    int attempt;
    const char *const *argv;    /* NULL-terminated */
    const char *cwd;
    const char *const *env;     /* the submitter's, NULL-terminated */
    const char *visible;        /* CUDA_VISIBLE_DEVICES: GPU UUIDs */
    const char *const *extra_env; /* more "K=V" set over the submitter's
                                   (the sharing mode's); NULL-terminated,
                                   or NULL */
    bool as_user;               /* switch to uid/gid (aegisd runs as root) */
    uid_t uid;
    gid_t gid;
    const char *user;           /* for initgroups */
    const char *log_dir;        /* holds ID.out and ID.err */
    const char *run_dir;        /* holds the shims' status files */
} exec_spec;

typedef struct exec_run {
    pid_t shim_pid;
    unsigned long long shim_start;  /* start time in clock ticks */
    pid_t job_pid;                  /* session leader of the job */
    long long err_offset;           /* stderr size before this attempt */
} exec_run;

/* Starts one attempt. Returns 0, or -1 with a message naming the job. */
int exec_start(const exec_spec *spec, exec_run *run, char *err,
               size_t errlen);

/* The start time of pid from /proc (clock ticks since boot), or 0 when it
 * does not exist or is a zombie. A pid with the start time recorded at
 * launch is the very process launched, not a recycled pid. */
unsigned long long exec_start_time(pid_t pid);
bool exec_alive(pid_t pid, unsigned long long start);

/* The wait status the shim of attempt `attempt` of job id wrote: 0 and
 * *status, or -1 when there is none (the shim was killed: the attempt is
 * lost). Removes the file. */
int exec_status(const char *run_dir, int64_t id, int attempt, int *status);

/* Classifies an ended attempt from its wait status and the tail of its
 * stderr file from err_offset on; writes a one-line reason to why. */
core_exit exec_classify(int status, const char *err_path,
                        long long err_offset, char *why, size_t whylen);

/* Is pid in the session of job_pid (the job or a descendant)? */
bool exec_in_job(pid_t pid, pid_t job_pid);

/* Signals the job's whole session. */
void exec_kill(pid_t job_pid, int sig);

/* The path of a job's log, "DIR/ID.out" or "DIR/ID.err". */
void exec_log_path(char *out, size_t outlen, const char *log_dir, int64_t id,
                   bool err_stream);

#endif
