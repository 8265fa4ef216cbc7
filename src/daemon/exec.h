/* exec.h -- starting a job's process, and learning how it ended.
 *
 * Each attempt runs under a small watcher process (the shim): aegisd
 * spawns the program aegis-shim (posix_spawn, which copies none of
 * aegisd's memory, unlike a fork of the daemon), which switches to the
 * job's user only in the job's own process; the shim starts the job in a session of its own, waits for it
 * and records its wait status before exiting. aegisd may die and come back
 * meanwhile: the shim outlives it, so the exit status of a job that was
 * re-adopted after a restart is still collected. A job's processes are its
 * session, so a shell wrapper's children are cancelled and observed with
 * it; when the job ends, the shim kills what is left of them (it is their
 * subreaper, so even those that left the session) before recording it.
 *
 * The attempt's status file, RUN_DIR/ID.N.status, is the single source of
 * what became of it (exec_probe). aegisd creates it, at its full size,
 * and locks it before spawning the shim, which inherits the lock and holds
 * it for its life: a locked file is a live attempt, whatever aegisd knew
 * of it; the job records its pids in it before it runs, the shim its wait
 * status in place (space already taken: a full disk cannot lose it; the
 * shim retries while the disk is read-only). aegisd removes it only once
 * the outcome is committed, so an aegisd killed in between reads the same
 * outcome again.
 *
 * The job writes its stdout and stderr into pipes, never into its logs:
 * the shim copies them into LOG_DIR/ID.out and ID.err and keeps each one
 * to its last log_max_bytes on disk, so no job fills the state disk with
 * output, and none holds its log open (to take a lease on it, say).
 * aegisd opens the logs relative to the folder's descriptor, never
 * through a link, and never waits on a lease (fcntl F_SETLEASE) some
 * process took on one: a job must not stall the daemon.
 *
 * Ownership: exec_prepare() copies all it needs from its spec; all
 * strings are the caller's.
 */
#ifndef AEGIS_EXEC_H
#define AEGIS_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "oom_check.h"

/* Bytes of the end of a job's stderr searched for an OOM message: the
 * frameworks print the error last, after at most a few KiB of traceback. */
#define EXEC_TAIL_BYTES 16384

/* Status files whose attempts are settled, kept in run_dir as
 * "K.spare" for K below count, to be renamed into the next attempts'. A
 * file made and removed for every job cost aegisd's loop most of its time
 * when short jobs churned: ext4 without a journal, picking an inode for a
 * new file, skips every one freed in the last minute (six minutes while
 * its inode table block is unwritten), so each create walked the inodes
 * of the jobs that had ended before it. A rename frees none. Touched on
 * the loop only. */
#define EXEC_SPARES 64
typedef struct exec_spares {
    int count;
} exec_spares;

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
    int log_dirfd;              /* the folder of ID.out and ID.err */
    const char *log_dir;        /* its path, for messages */
    long long log_max_bytes;    /* each log keeps its last this many bytes
                                   on disk */
    const char *run_dir;        /* holds the shims' status files */
    exec_spares *spares;        /* run_dir's retired status files, taken
                                   for this attempt's; NULL: a new one */
    const char *shim_path;      /* the aegis-shim program (exec_shim_path) */
    const char *cgroups;        /* cgroup.procs files its process joins
                                   (cgroup.h); NULL or "": none */
    const char *out_path;       /* its -o and -e files, expanded, relative */
    const char *err_path;       /*   to cwd (outfile.h); NULL or "": none */
    bool has_umask;             /* umask is the submitter's, for the files
                                   the job makes; false: aegisd's own */
    unsigned umask;             /*   0 to 0777 */
    int session_nice;           /* what its session and its watcher's weigh
                                   as (autogroup.h); 0: as a login's */
} exec_spec;

typedef struct exec_run {
    pid_t shim_pid;
    unsigned long long shim_start;  /* start time in clock ticks */
    pid_t job_pid;                  /* session leader of the job: 0 from
                                       exec_spawn, which does not wait for
                                       the shim to fork it; the status
                                       record names it (exec_probe) */
    long long err_offset;           /* stderr size before this attempt */
} exec_run;

/* exec_prepare's answer when the attempt's status file cannot be made (the
 * state disk is full or read-only): nothing was started. Not -2, which
 * d_share_prepare gives on the same path (D_SHARE_BUSY). */
#define EXEC_NO_STATUS (-3)

/* Starting an attempt takes two steps, so that the slow one (the spawn:
 * the caller waits until the shim has exec'd, 10 ms and more on a loaded
 * machine) can run off aegisd's loop.
 *
 * exec_prepare makes the attempt's status file, locked (exec_probe sees
 * the attempt live from then on), and builds the shim's arguments; it
 * copies all it needs from spec. Returns 0 with *out (run all 0: the
 * status record names the job once the shim forked it), -1 with a message
 * naming the job, or EXEC_NO_STATUS.
 *
 * exec_spawn opens the attempt's logs and spawns the shim, from any
 * thread: 0 with run's shim_pid, shim_start and err_offset, or -1 with a
 * message (a log that cannot be opened, the spawn). Creating the logs
 * belongs here, off the loop, with the spawn: see exec_spares.
 * The lock passes to the shim. exec_pending_free closes aegisd's copies
 * of the descriptors (after the spawn, or instead of it: the attempt then
 * never started). */
typedef struct exec_pending exec_pending;
int exec_prepare(const exec_spec *spec, exec_run *run, exec_pending **out,
                 char *err, size_t errlen);
int exec_spawn(exec_pending *p, exec_run *run, char *err, size_t errlen);
void exec_pending_free(exec_pending *p);

/* The shim program's main: the attempt exec_prepare describes in its
 * arguments, with its logs and status file as descriptors 3 to 5, or the
 * notifier exec_notify_start does. Exits 2 when aegisd did not start
 * it. */
int exec_shim_main(int argc, char **argv);

/* Moves each of the n descriptors above the shim's 3 to 5, so that
 * putting them in place in order (dup2, posix_spawn's actions) overwrites
 * none before its turn. 0, or -1 with errno. */
int exec_fds_above_shim(int *fds, int n);

/* Spawns the shim program at path (posix_spawn) in a session of its own,
 * with argv shown, environment env, and the nfds of fds as its
 * descriptors 3 onwards (above the shim's already: exec_fds_above_shim,
 * or no more than one). 0, or an errno. */
int exec_posix_spawn_shim(const char *path, char *const *shown,
                          char *const *env, const int *fds, int nfds,
                          pid_t *pid);

/* Where aegisd finds aegis-shim: next to its own program (a build tree),
 * else where it is installed. Writes the path to out; 0, or -1 with why. */
int exec_shim_path(char *out, size_t outlen, char *err, size_t errlen);

/* A job's notifier (notify.h): `/bin/sh -c cmd` in the job's directory,
 * as its user, with the job's environment and vars set over it. */
typedef struct exec_notify_spec {
    int64_t id;                 /* the job, for messages */
    const char *cmd;
    const char *cwd;            /* "/" when it is gone */
    const char *const *env;     /* the submitter's, NULL-terminated */
    const char *const *vars;    /* "K=V" set over it, NULL-terminated */
    bool as_user;               /* switch to uid/gid (aegisd runs as root) */
    uid_t uid;
    gid_t gid;
    const char *user;           /* for initgroups */
    bool has_umask;             /* as exec_spec's */
    unsigned umask;
    const char *shim_path;      /* aegis-shim, which runs it (exec_shim_path) */
} exec_notify_spec;

/* Starts a notifier in a session of its own, its output discarded, and
 * returns its pid without waiting for it (the caller reaps it), or -1
 * with a message naming the job. Spawned as aegis-shim (no fork of
 * aegisd), which becomes the notifier's supervisor: the pid is its; it
 * ends once the shell and every process the shell started have, and ends
 * as the shell did; SIGTERM makes it kill them all, wherever they went
 * (setsid), and end. */
pid_t exec_notify_start(const exec_notify_spec *spec, char *err,
                        size_t errlen);

/* Whether a status file can be made in run_dir now (made and removed):
 * 0, or -1 with why. */
int exec_run_dir_check(const char *run_dir, char *err, size_t errlen);

/* What an attempt's status file says. */
typedef enum exec_state {
    EXEC_ABSENT,        /* no file: the attempt never got to its start */
    EXEC_UNSTARTED,     /* a file no shim holds, without a job: it never
                           ran and never will */
    EXEC_LIVE,          /* its shim lives (or the file cannot be read) */
    EXEC_ENDED,         /* the job ended with `status` */
    EXEC_LOST           /* the shim died before recording the end */
} exec_state;

typedef struct exec_record {
    exec_state state;
    long long err_offset;       /* as in exec_run */
    pid_t shim_pid;             /* 0 until the job has started */
    unsigned long long shim_start;
    pid_t job_pid;
    int status;                 /* EXEC_ENDED: its wait status */
    int left;                   /* EXEC_ENDED: processes of the job still
                                   there when it ended, which the shim
                                   killed */
    double ended_at;            /* EXEC_ENDED (exec_probe): when the job
                                   ended, Unix seconds, as the shim read
                                   the clock (an older shim's record: the
                                   file's last write); 0 unknown */
} exec_record;

void exec_probe(const char *run_dir, int64_t id, int attempt,
                exec_record *rec);

/* Retires the status file, once its outcome is committed: renamed to a
 * spare of run_dir while spares has room (the next attempt's status file
 * is made from it), else removed. */
void exec_status_retire(const char *run_dir, exec_spares *spares, int64_t id,
                        int attempt);

/* Removes the spares an earlier aegisd left in run_dir: spares counts none
 * at the start. */
void exec_spares_clear(const char *run_dir);

/* Calls fn for each status file in run_dir with its job id and attempt. */
void exec_status_each(const char *run_dir,
                      void (*fn)(void *ctx, int64_t id, int attempt),
                      void *ctx);

/* The start time of pid from /proc (clock ticks since boot), or 0 when it
 * does not exist or is a zombie. A pid with the start time recorded at
 * launch is the very process launched, not a recycled pid. */
unsigned long long exec_start_time(pid_t pid);
bool exec_alive(pid_t pid, unsigned long long start);

/* Classifies an ended attempt of job id from its wait status and the
 * tail of its stderr log from err_offset on, read only when the log is a
 * regular file of owner (job_file_open), as exec_classify_tail does; an
 * OOM message is then checked against its GPUs' nmem last readings with
 * it on them (oom_check.h; none: trusted), and one they contradict makes
 * it failed. Writes a one-line reason to why. */
core_exit exec_classify(int status, int log_dirfd, int64_t id, uid_t owner,
                        long long err_offset, const oom_gpu_mem *mem,
                        int nmem, char *why, size_t whylen);

/* The same from a stderr tail already read (n bytes, NUL bytes allowed):
 * exit 0 is ok; else a framework's OOM message in the tail (oom_text.h:
 * not the words inside a usage text) makes it oom, anything else failed.
 * No GPU readings are consulted. */
core_exit exec_classify_tail(int status, const char *tail, size_t n,
                             char *why, size_t whylen);

/* exec_classify_tail, then an OOM checked against the nmem readings as
 * exec_classify does: what a Slurm task's lease_exit is classified by. */
core_exit exec_classify_checked(int status, const char *tail, size_t n,
                                const oom_gpu_mem *mem, int nmem, char *why,
                                size_t whylen);

/* The variables aegisd sets for an attempt, as "K=V" strings (malloc'd,
 * NULL-terminated, *nvars of them): CUDA_VISIBLE_DEVICES (spec->visible),
 * AEGIS_JOB_ID, AEGIS_ATTEMPT, then spec->extra_env (the sharing mode's),
 * then the test GPU's AEGIS_TEST_GPU* that aegisd's own environment sets.
 * Only id, attempt, visible and extra_env of spec are read. A Slurm
 * task's lease gets exactly these. NULL when out of memory. */
char **exec_job_vars(const exec_spec *spec, size_t *nvars);
void exec_job_vars_free(char **vars);

/* The session of pid, or -1 when there is no such process. */
pid_t exec_session(pid_t pid);

/* Is pid in the session of job_pid (the job or a descendant)? */
bool exec_in_job(pid_t pid, pid_t job_pid);
/* The parent of pid, or -1 when there is no such process. */
pid_t exec_parent(pid_t pid);
/* Is job_pid still the leader of the job that the watcher shim_pid
 * (started at shim_start) runs: its child, the watcher alive? Once the
 * watcher has reaped the leader, its pid may name another process, which
 * may lead a process group too, before the watcher's record says so. */
bool exec_leads_job(pid_t job_pid, pid_t shim_pid,
                    unsigned long long shim_start);

/* May the watcher shim_pid have ended, now that the n children in
 * reaped were reaped? Yes if it is one of them, or unknown yet (0: its
 * spawn has not reported it, and a watcher may end before that). A job
 * ends with its watcher's exit, so any other watcher still runs, and its
 * status file need not be read. */
bool exec_watcher_may_have_ended(pid_t shim_pid, const pid_t *reaped,
                                 size_t n);

/* Is pid's command name (/proc/PID/comm, at most 15 bytes) name? */
bool exec_named(pid_t pid, const char *name);

/* Signals the job's whole session. */
void exec_kill(pid_t job_pid, int sig);

/* Removes job id's logs (history_days: the job is forgotten). */
void exec_log_remove(int log_dirfd, int64_t id);

/* Reads up to len bytes of a job's log from *offset on. Bytes the cap
 * dropped are skipped: *offset moves to the first byte kept after it.
 * Returns how many (0 at the end, or when there is no log yet), or -1
 * with errno: EWOULDBLOCK when a lease holds the log, EPERM when owner
 * (the job's user; aegisd's, for a non-root aegisd) does not own it: a
 * log left from an earlier database is not the job's. */
ssize_t exec_log_read(int log_dirfd, int64_t id, bool err_stream, uid_t owner,
                      long long *offset, char *buf, size_t len);

/* A failed open of a log in words: job_file_error's, but for another
 * user's log. */
const char *exec_log_error(int err);

#endif
