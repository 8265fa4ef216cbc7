/* jobs_run.c -- a queued job's attempts: launched as the core decides
 * (recorded, then started by its kind: aegisd's own under a shim, a lease
 * granted to its Slurm task), their exits classified and settled (done,
 * requeued by the OOM ladder, failed), and cancels.
 *
 * Crashes: an attempt is committed before it starts and its outcome read
 * from its status file (exec.h), which goes only once the outcome is
 * committed, so a restarted aegisd neither starts a second copy nor runs a
 * finished attempt again; a cancel is committed before it is answered.
 * While the state cannot be written (store_failing), no job starts.
 */
#include "daemon.h"
#include "launcher.h"
#include "jobs.h"
#include "outfile.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Attempts lost in a row (their watcher died, or aegisd found them gone
 * after a restart) before the job is failed instead of requeued: a job
 * that keeps vanishing must not loop forever. */
#define D_MAX_LOST 5

/* Launches put back in a row because the GPU was busy (D_SHARE_BUSY)
 * before the job is failed: about a minute of ticks, for processes to
 * leave a GPU whose MIG mode must change, or a MIG instance. */
#define D_MAX_BUSY 60

/* A job outside placement whose start cannot be recorded now (the state
 * cannot be written, aegisd stops) or never happened is started again
 * this much later (d_jobs_restart_due). */
#define D_OUTSIDE_RETRY_S 5.0

/* A watcher that ended without starting its job (it could not fork: out
 * of processes, say) is replaced at once the first time. After the second
 * in a row the job waits this long before it is queued again, doubled at
 * each more up to D_UNSTARTED_MAX_PAUSE_S: replaced at once every time,
 * it made hundreds of watchers, events and log lines a second. */
#define D_UNSTARTED_PAUSE_S 1.0
#define D_UNSTARTED_MAX_PAUSE_S 60.0

/* ---- launching ------------------------------------------------------------ */

const char **d_strings(json_t *arr) {
    size_t n = json_array_size(arr);
    const char **v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    return v;
}

void d_row_umask(json_t *row, bool *has, unsigned *mask) {
    json_t *v = json_object_get(row, "umask");
    *has = json_is_integer(v);
    *mask = *has ? (unsigned)json_integer_value(v) & 0777u : 0;
}

static void d_gpu_list(char *out, size_t outlen, const int *gpus, int n,
                       const tel_state *tel) {
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n && at < outlen; i++) {
        int w = tel ? snprintf(out + at, outlen - at, "%s%s", i ? "," : "",
                               tel_gpu_uuid(tel, gpus[i]))
                    : snprintf(out + at, outlen - at, "%s%d", i ? "," : "",
                               gpus[i]);
        if (w < 0) break;
        at += (size_t)w;
    }
}

/* Readies the GPUs for the attempt as its sharing modes ask (ss: what
 * they add to its start), then has its kind start it. */
static int d_job_exec(d_daemon *d, d_job *job, const core_launch *l,
                      d_share_start *ss, exec_run *run, char *err,
                      size_t errlen) {
    json_t *row = store_job(d->st, job->id, true);
    int pct = (int)json_integer_value(json_object_get(row, "mps_threads_pct"));
    int prepared = d_share_prepare(d, job, l, pct, ss, err, errlen);
    if (prepared != 0) {
        json_decref(row);
        return prepared;
    }
    char visible[CORE_MAX_JOB_GPUS * 48];
    if (ss->visible[0])
        snprintf(visible, sizeof(visible), "%s", ss->visible);
    else
        d_gpu_list(visible, sizeof(visible), l->gpus, l->num_gpus, d->tel);
    int rc = job->kind->grant(d, job, row, visible, ss, run, err, errlen);
    json_decref(row);
    return rc;
}

int d_job_cpus(const d_daemon *d, const d_job *job) {
    return job->cpus > 0 ? job->cpus
                         : (int)d->keys.cpus_per_gpu * job->num_gpus;
}

/* The limits of the job's cgroup: its own, else the per-GPU defaults
 * times its GPUs (0: none). */
static void d_job_limits(const d_daemon *d, const d_job *job, int *cpus,
                         double *mem_mib) {
    *cpus = d_job_cpus(d, job);
    *mem_mib = job->host_mem_mib > 0
                   ? job->host_mem_mib
                   : d->keys.host_mem_per_gpu_mib * job->num_gpus;
}

/* cg_v2_delegate's arguments, for launcher_locked. */
typedef struct d_delegation {
    const char *root;
    char *base, *why;
    size_t len, whylen;
} d_delegation;

static int d_delegate(void *arg, pid_t launcher) {
    d_delegation *g = arg;
    return cg_v2_delegate(g->root, launcher, g->base, g->len, g->why,
                          g->whylen);
}

/* The attempt's cgroup, made when it has limits; its cgroup.procs files
 * into procs ("" when none). 0, or -1 with why in err. */
static int d_job_cgroup(d_daemon *d, d_job *job, char *procs, size_t len,
                        char *err, size_t errlen) {
    int cpus;
    double mem_mib;
    d_job_limits(d, job, &cpus, &mem_mib);
    char why[1024], base[512];
    snprintf(base, sizeof(base), "%s", d->keys.cgroup_root);
    cg_version v = cg_detect(base);
    bool limited = cpus > 0 || mem_mib > 0;
    d_delegation g = {.root = d->keys.cgroup_root, .base = base,
                      .len = sizeof(base), .why = why,
                      .whylen = sizeof(why)};
    cg_job made;
    if ((limited && v == CG_V2 && launcher_locked(d_delegate, &g) != 0) ||
        cg_job_create(base, v, job->id, job->attempts + 1, cpus, mem_mib,
                      &made, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "job %lld: its limits (%d CPUs, %.0f MiB of "
                 "host memory): %s", (long long)job->id, cpus, mem_mib, why);
        return -1;
    }
    if (d_job_keep_cg(job, &made) != 0) {
        cg_job_remove(&made);
        snprintf(err, errlen, "job %lld: its cgroup: out of memory",
                 (long long)job->id);
        return -1;
    }
    cg_job_procs(&made, procs, len);
    return 0;
}

int d_job_keep_cg(d_job *job, const cg_job *cg) {
    assert(!job->cg); /* the last attempt's was dropped at its end */
    if (!cg_job_any(cg)) return 0;
    job->cg = malloc(sizeof(*job->cg));
    if (!job->cg) return -1;
    *job->cg = *cg;
    return 0;
}

void d_job_drop_cg(d_job *job) {
    cg_job_remove(job->cg);
    free(job->cg);
    job->cg = NULL;
}

/* The job's -o and -e patterns of row, expanded into out and err (""
 * for none): 0, or -1 with why in why. aegisd only makes the names; the
 * job's process opens them, as its user (outfile.h). */
static int d_job_outfiles(const d_job *job, json_t *row,
                          const char *const *argv, char *out, char *err,
                          size_t len, char *why, size_t whylen) {
    outfile_job of = {.id = job->id, .name = job->name, .user = job->user,
                      .array_index = outfile_array_index(argv)};
    const char *keys[2] = {"stdout_path", "stderr_path"};
    char *into[2] = {out, err};
    for (int i = 0; i < 2; i++) {
        const char *pattern = json_string_value(json_object_get(row, keys[i]));
        into[i][0] = '\0';
        if (pattern && outfile_expand(pattern, &of, into[i], len, why,
                                      whylen) != 0)
            return -1;
    }
    return 0;
}

/* aegisd's own start of a placed job: its command, as its user, under a
 * shim that watches it (exec.h). The shim is spawned off the loop
 * (job->spawning, handed to d_spawn_later by d_job_launch). */
int d_own_grant(d_daemon *d, d_job *job, json_t *row, const char *visible,
                d_share_start *ss, exec_run *run, char *err, size_t errlen) {
    const char **argv = d_strings(json_object_get(row, "cmd"));
    const char **env = d_strings(json_object_get(row, "env"));
    exec_spec spec = {
        .id = job->id, .attempt = job->attempts + 1,
        .argv = argv, .cwd = json_string_value(json_object_get(row, "cwd")),
        .env = env, .visible = visible, .extra_env = ss->env,
        .as_user = d->as_root,
        .uid = job->uid, .gid = job->gid, .user = job->user,
        .log_dirfd = d->log_dirfd, .log_dir = d->log_dir,
        .log_max_bytes = (long long)(d->keys.log_max_mib * 1048576),
        .session_nice = (int)d->keys.job_session_nice,
        .run_dir = d->run_dir, .spares = &d->spares,
        .shim_path = d->shim_path,
    };
    d_row_umask(row, &spec.has_umask, &spec.umask);
    int rc = -1;
    char procs[1100], out[4096], errfile[4096];
    if (!row || !argv || !env || !argv[0] || !spec.cwd)
        snprintf(err, errlen, "job %lld: its row is unreadable: %s",
                 (long long)job->id, store_errmsg(d->st));
    else if (d_job_outfiles(job, row, argv, out, errfile, sizeof(out), err,
                            errlen) == 0 &&
             d_job_cgroup(d, job, procs, sizeof(procs), err, errlen) == 0) {
        spec.cgroups = procs;
        spec.out_path = out;
        spec.err_path = errfile;
        rc = exec_prepare(&spec, run, &job->spawning, err, errlen);
    }
    free(argv);
    free(env);
    return rc;
}

/* Whether process pid is in the job's session. */
bool d_own_owns(const d_job *job, pid_t pid) {
    return exec_in_job(pid, job->job_pid);
}

const d_job_kind d_kind_own = {
    .name = "own", .watched = true, .grant = d_own_grant,
    .owns = d_own_owns,
};

/* Forgets attempt n of job id, recorded before its start, which did not
 * happen: the job is queued again in the store. */
static void d_job_unrecord(d_daemon *d, int64_t id, int n) {
    store_begin(d->st);
    store_attempt_drop(d->st, id, n);
    store_job_state(d->st, id, "queued", NULL, d_wall());
    store_commit(d->st);
}

/* Back to the core's queue at the attempt it was placed for: its start
 * could not be recorded, or it never happened. */
static void d_job_requeue_unstarted(d_daemon *d, d_job *job) {
    char err[256];
    if (job->kind->outside) {
        d_job_set_state(d, job, D_HELD);
        job->restart_at = d_now(d) + D_OUTSIDE_RETRY_S;
        return;
    }
    d_job_leave_core(d, job);
    job->ngpus = 0;
    if (d_job_to_core(d, job, err, sizeof(err)) != 0)
        d_job_finish(d, job, "failed", err);
}

/* The attempt of a launch, recorded before its start: an aegisd killed in
 * between finds it, and by its status file whether it started. */
static void d_job_record_start(d_daemon *d, const d_job *job,
                               const core_launch *l, double now) {
    char gpus[CORE_MAX_JOB_GPUS * 4];
    d_gpu_list(gpus, sizeof(gpus), l->gpus, l->num_gpus, NULL);
    store_attempt a = {.n = job->attempts + 1, .gpus = gpus,
                       .floor_mib = l->floor_mib, .exclusive = l->exclusive};
    store_attempt_start(d->st, job->id, &a, now);
    store_job_state(d->st, job->id, "running", NULL, now);
    if (l->num_gpus == 0)
        store_event(d->st, job->id, now, "attempt %d started, with no GPU",
                    a.n);
    else
        store_event(d->st, job->id, now,
                    "attempt %d started on GPU %s, %s, admitted with %.0f MiB",
                    a.n, gpus, l->exclusive ? "alone" : "shared", l->floor_mib);
}

/* Attempt n of job could not start (why: err): the job fails. */
static void d_job_start_failed(d_daemon *d, d_job *job, int n,
                               const char *err) {
    int64_t id = job->id;
    d_log("job %lld: %s", (long long)id, err);
    d_share_release(d, job);
    core_job_exit(d->core, id, CORE_EXIT_FAILED, d_now(d), NULL);
    store_begin(d->st);
    store_attempt_end(d->st, id, n, "failed", -1, d_wall());
    d_job_finish(d, job, "failed", err);
    d_status_settled(d, id, n, store_commit(d->st));
}

/* Starts the attempt d_job_record_start recorded (committed) at now. */
static void d_job_launch(d_daemon *d, d_job *job, const core_launch *l,
                         double now) {
    int n = job->attempts + 1;
    exec_run run = {0};
    char err[1024];
    static d_share_start ss; /* big; the loop runs one launch at a time */
    int rc = d_job_exec(d, job, l, &ss, &run, err, sizeof(err));
    if (rc == D_SHARE_BUSY && ++job->busy < D_MAX_BUSY) {
        /* not the job's failure: back to the queue, same floor */
        store_begin(d->st);
        if (job->busy == 1) {
            d_log("job %lld: not started, its GPU is busy (retried): %s",
                  (long long)job->id, err);
            store_event(d->st, job->id, d_wall(), "not started, its GPU is "
                        "busy (retried): %s", err);
        }
        d_job_unrecord(d, job->id, n);
        store_commit(d->st);
        core_job_exit(d->core, job->id, CORE_EXIT_LOST, d_now(d), NULL);
        return;
    }
    job->busy = 0;
    if (rc == EXEC_NO_STATUS) { /* the state disk refuses its status file */
        d_log("job %lld: %s: not started", (long long)job->id, err);
        store_fail_because(d->st, err);
        d_job_set_state(d, job, D_RUNNING);
        job->attempts = n;
        d_job_unstarted(d, job, err);
        return;
    }
    if (rc != 0) {
        d_job_start_failed(d, job, n, err);
        return;
    }
    d_job_set_state(d, job, D_RUNNING);
    job->attempts = n;
    d->counts.placements++;
    job->ngpus = l->num_gpus;
    memcpy(job->gpus, l->gpus, sizeof(job->gpus));
    job->exclusive = l->exclusive;
    job->floor_mib = l->floor_mib;
    job->shim_pid = run.shim_pid;
    job->shim_start = run.shim_start;
    job->job_pid = run.job_pid;
    job->err_offset = run.err_offset;
    job->active = false;
    job->seen = 0;
    job->used_mib = 0; /* the tick measures this attempt's */
    job->sm_pct = CORE_UNKNOWN;
    job->started = now;
    job->ended_at = 0;
    /* Its pids are not written here: the job records them in its status
     * file, where the next look at it takes them (d_job_probe), and a
     * write now would cost the turn a second commit. */
    if (ss.note[0])
        store_event(d->st, job->id, now, "attempt %d: %s", n, ss.note);
    if (job->kind->granted) job->kind->granted(d, job);
    if (job->spawning) d_spawn_later(d, job->id, n, job->spawning);
    job->spawning = NULL;
}

/* Reads job's status file, and ends the job where it says it has ended
 * (or its watcher is gone). */
static void d_job_look(d_daemon *d, d_job *job) {
    exec_record rec;
    d_job_probe(d, job, &rec);
    if (rec.state != EXEC_LIVE) d_job_ended(d, job, &rec);
}

void d_job_spawned(d_daemon *d, int64_t id, int n, const exec_run *run,
                   const char *err) {
    d_job *job = d_job_find(d, id);
    if (!job || job->state != D_RUNNING || job->attempts != n) return;
    if (err) {
        d_turn_begin(d);
        d_job_start_failed(d, job, n, err);
        d_turn_end(d);
        return;
    }
    job->shim_pid = run->shim_pid;
    job->shim_start = run->shim_start;
    job->err_offset = run->err_offset;
    if (exec_alive(job->shim_pid, job->shim_start)) return;
    /* Its watcher ended, and was reaped, before this report: that turn
     * read the job live (aegisd's own descriptor still held the status
     * file's lock), and no SIGCHLD is left to name the watcher, so its
     * end is read now, not at the next tick. */
    d_turn_begin(d);
    d_job_look(d, job);
    d_turn_end(d);
    d_schedule_more(d);
}

/* Commits the launches recorded (and all of the turn before them): 0, or
 * -1 when that could not be saved. The status files of the attempts the
 * turn settled go now, not at its end: an attempt that never started is
 * queued again at its number, and when it is started again in the same
 * turn its new status file takes the old one's name, which the turn's end
 * would then take from under the new watcher (whose end, not found, read
 * as a watcher vanished: the job ran as a second attempt, or failed after
 * five). */
static int d_commit_launches(d_daemon *d) {
    if (store_commit_now(d->st) != 0) return -1;
    d_status_retire_settled(d);
    return 0;
}

void d_job_start_outside(d_daemon *d, d_job *job) {
    core_launch l = {.job_id = job->id, .num_gpus = 0};
    double now = d_wall();
    d_job_set_state(d, job, D_HELD);
    job->restart_at = d_now(d) + D_OUTSIDE_RETRY_S;
    if (d->stopping || store_failing(d->st)) return;
    d_turn_begin(d);
    store_begin(d->st);
    d_job_record_start(d, job, &l, now);
    if (d_commit_launches(d) == 0) {
        job->restart_at = 0;
        d_job_launch(d, job, &l, now);
    }
    d_turn_end(d);
}

/* Carries out one pass's n launches: their attempts recorded, all in one
 * commit, then each started (its pids and events join the loop turn's
 * commit). When that commit fails, none starts: back to the queue. */
static void d_jobs_launch(d_daemon *d, const core_launch *out, int n) {
    double now = d_wall();
    store_begin(d->st);
    for (int i = 0; i < n; i++) {
        d_job *job = d_job_find(d, out[i].job_id);
        if (job) d_job_record_start(d, job, &out[i], now);
        else core_cancel(d->core, out[i].job_id, d_now(d));
    }
    bool saved = d_commit_launches(d) == 0;
    for (int i = 0; i < n; i++) {
        /* by id: a launch that failed may have changed the table */
        d_job *job = d_job_find(d, out[i].job_id);
        if (job && saved) d_job_launch(d, job, &out[i], now);
        else if (job) d_job_requeue_unstarted(d, job);
    }
}

/* At most this many jobs start in one loop turn. Each start (a spawn
 * and its commit) keeps every client waiting; when short jobs churn, a
 * pass of 16 starts kept root's `aegis gpus` waiting 100 ms and more.
 * More are started in the next turn (d_schedule_more), after the loop
 * has read its clients. */
#define D_LAUNCHES_PER_TURN 2

/* The sanitizer build (AEGIS_CORE_CHECK) recounts the core's bookkeeping
 * after every pass: a count kept wrong stops aegisd there, the difference
 * in its log, instead of misplacing jobs long after the event that broke
 * it. Other builds spare the walk over every job. */
static void d_core_check(const d_daemon *d) {
#ifdef AEGIS_CORE_CHECK
    char why[512];
    if (core_check(d->core, why, sizeof(why)) == 0) return;
    d_log("core_check after a scheduling pass: %s", why);
    abort();
#else
    (void)d;
#endif
}

void d_jobs_schedule(d_daemon *d) {
    core_launch out[D_LAUNCHES_PER_TURN];
    /* No job starts while its start cannot be recorded. */
    if (d->stopping || store_failing(d->st)) /* a draining aegisd starts */
        return;                               /* no new job */
    d_turn_begin(d);
    uint64_t began = uv_hrtime();
    int n = core_schedule(d->core, d_now(d), out, D_LAUNCHES_PER_TURN);
    /* the pass's decisions take this long (the launches aside) */
    mtext_hist_observe(&d->counts.pass_s, (double)(uv_hrtime() - began) / 1e9);
    if (n > 0) d_jobs_launch(d, out, n);
    d_core_check(d);
    d_turn_end(d);
    if (n == D_LAUNCHES_PER_TURN) d_schedule_more(d);
}

/* ---- exits ---------------------------------------------------------------- */

/* What the attempt's status file says (exec_probe), with what an attempt
 * an older aegisd started says instead (its shim wrote the file only at
 * its end); pids of a live attempt that aegisd did not know yet (it
 * stopped before committing them) are taken into the job. */
/* Signals a running job's session. A watched job's only while its
 * leader is still the job's (exec_leads_job): its pid, reaped by the
 * watcher, may already name another user's process group. Another kind's
 * pid is its own (a lease's: lease.c). */
static void d_job_signal(const d_job *job, int sig) {
    if (!job->kind->watched ||
        exec_leads_job(job->job_pid, job->shim_pid, job->shim_start))
        exec_kill(job->job_pid, sig);
}

void d_job_probe(d_daemon *d, d_job *job, exec_record *rec) {
    exec_probe(d->run_dir, job->id, job->attempts, rec);
    if (rec->state == EXEC_ABSENT && job->shim_pid > 0) {
        rec->state = exec_alive(job->shim_pid, job->shim_start) ? EXEC_LIVE
                                                                : EXEC_LOST;
        rec->job_pid = job->job_pid;
    }
    if (rec->err_offset == 0) rec->err_offset = job->err_offset;
    /* a live shim's record may be read half-written: pids that do not
     * name it are not taken */
    if (job->job_pid > 0 || rec->job_pid <= 0 ||
        !exec_alive(rec->shim_pid, rec->shim_start))
        return;
    job->shim_pid = rec->shim_pid;
    job->shim_start = rec->shim_start;
    job->job_pid = rec->job_pid;
    job->err_offset = rec->err_offset;
    store_attempt_pids(d->st, job->id, job->attempts, job->shim_pid,
                       job->shim_start, job->job_pid, job->err_offset);
    if (job->cancelling) d_job_signal(job, SIGTERM); /* not sent yet */
}

/* Attempt job->attempts never ran (why: what stopped it): it is
 * forgotten, and the job queued again at that attempt. */
void d_job_unstarted(d_daemon *d, d_job *job, const char *why) {
    int64_t id = job->id;
    int n = job->attempts;
    double now = d_wall();
    d_share_release(d, job);
    d_job_drop_cg(job); /* nothing ran in it; the next attempt makes its own */
    job->attempts = n - 1;
    d_job_set_state(d, job, D_QUEUED);
    store_begin(d->st);
    d_job_unrecord(d, id, n);
    store_event(d->st, id, now, "attempt %d never started (%s): queued again",
                n, why);
    if (job->cancelling) {
        d_job_leave_core(d, job);
        d_job_finish(d, job, "cancelled", "cancelled while queued");
    } else {
        d_job_requeue_unstarted(d, job);
    }
    d_status_settled(d, id, n, store_commit(d->st));
}

/* Records how attempt n ended (how, its wait status, why) and what becomes
 * of the job: finished, or requeued by the core's ladder. */
static void d_job_settle(d_daemon *d, d_job *job, core_exit how, int status,
                         const char *why) {
    static const char *const how_names[] = {"ok", "oom", "failed", "lost"};
    int n = job->attempts;
    double now = d_job_end_time(job, d_wall());
    job->last_status = status;
    if (job->started > 0) /* 0: an attempt recorded without its start */
        metrics_count_attempt(&d->counts, job->user, job->ngpus,
                              now - d_job_counted_from(job));
    if (job->cancelling) { /* by `aegis cancel`, or its time limit */
        d_job_leave_core(d, job);
        char reason[128];
        const char *state = d_limits_stop_state(job, reason, sizeof(reason));
        store_attempt_end(d->st, job->id, n, state, status, now);
        if (!job->kind->stopped || !job->kind->stopped(d, job))
            d_job_finish(d, job, state, reason);
        return;
    }
    store_attempt_end(d->st, job->id, n, how_names[how], status, now);
    if (how == CORE_EXIT_OOM) d->counts.oom_crashes++;
    double floor = 0;
    bool was_alone = job->exclusive;
    bool restart = job->kind->restart && job->kind->restart(d, job, how, why);
    job->lost = how == CORE_EXIT_LOST && !restart ? job->lost + 1 : 0;
    if (restart) how = CORE_EXIT_LOST; /* requeued at its floor */
    if (job->lost >= D_MAX_LOST) {
        d_job_leave_core(d, job);
        d_job_finish(d, job, "failed", "lost 5 attempts in a row");
        return;
    }
    if (job->kind->outside) { /* the core never held it */
        if (!restart)
            d_job_finish(d, job, how == CORE_EXIT_OK ? "done" : "failed", why);
        return;
    }
    core_retry r;
    switch (core_job_exit(d->core, job->id, how, d_now(d), &floor)) {
    case CORE_DONE:
        d_job_finish(d, job, "done", why);
        break;
    case CORE_REQUEUED:
        d->counts.recoveries++;
        core_job_retry(d->core, job->id, &r);
        if (job->kind->requeue && job->kind->requeue(d, job, &r, why))
            break; /* its kind runs it again its own way */
        d_job_set_state(d, job, D_QUEUED);
        job->retry_floor = r.floor_mib;
        job->retry_alone = r.alone;
        store_job_retry(d->st, job->id, r.floor_mib, r.alone);
        store_energy e = d_job_energy(job);
        store_job_energy(d->st, job->id, &e);
        store_job_state(d->st, job->id, "queued", why, now);
        if (floor > 0)
            store_event(d->st, job->id, now, "attempt %d: %s; requeued with "
                        "%.0f MiB", n, why, floor);
        else
            store_event(d->st, job->id, now, "attempt %d: %s; requeued to run "
                        "alone", n, why);
        break;
    case CORE_STOPPED: {
        char reason[400];
        if (how == CORE_EXIT_OOM)
            snprintf(reason, sizeof(reason), "%s; stopped: it ran out of "
                     "memory %s", why, was_alone ? "on its exclusive attempt"
                                                 : "with nowhere left to climb");
        else
            snprintf(reason, sizeof(reason), "%s", why);
        d_job_finish(d, job, "failed", reason);
        break;
    }
    }
}

/* A job the kernel killed in its cgroup for its memory ran out of host
 * RAM, not GPU memory: a failure of its own, which a retry on another
 * GPU would not cure. */
static void d_host_oom(const d_daemon *d, const d_job *job, core_exit *how,
                       char *why, size_t len) {
    if (!cg_oom_killed(job->cg)) return;
    int cpus;
    double mem_mib;
    d_job_limits(d, job, &cpus, &mem_mib);
    char code[128];
    snprintf(code, sizeof(code), "%s", why);
    char *oom = strstr(code, ", out of GPU memory");
    if (oom) *oom = '\0';
    snprintf(why, len, "%s, over its host memory limit (%.0f MiB, "
             "--host-mem): killed by the kernel", code, mem_mib);
    *how = CORE_EXIT_FAILED;
}

/* Holds job, queued again after watchers in a row that ended without
 * starting it, for its pause; d_jobs_restart_due queues it once that is
 * over. */
static void d_job_pause_unstarted(d_daemon *d, d_job *job) {
    double pause = D_UNSTARTED_PAUSE_S; /* after the second */
    for (int k = 2; k < job->unstarted && pause < D_UNSTARTED_MAX_PAUSE_S; k++)
        pause *= 2;
    if (pause > D_UNSTARTED_MAX_PAUSE_S) pause = D_UNSTARTED_MAX_PAUSE_S;
    d_job_leave_core(d, job);
    d_job_set_state(d, job, D_HELD);
    job->restart_at = d_now(d) + pause;
    store_begin(d->st);
    store_event(d->st, job->id, d_wall(), "queued again in %.0f s: %d "
                "watchers in a row ended without starting it", pause,
                job->unstarted);
    store_commit(d->st);
}

/* The attempt's shim is gone (rec: its status file): classify, decide, and
 * once that is committed, remove the file. */
void d_job_ended(d_daemon *d, d_job *job, const exec_record *rec) {
    if (rec->state == EXEC_UNSTARTED || rec->state == EXEC_ABSENT) {
        /* it could not fork the job, or an earlier aegisd stopped before
         * letting it (launcher_main.c); the watcher says which in the log */
        int64_t id = job->id;
        job->unstarted++;
        d_job_unstarted(d, job, "its watcher ended without starting it");
        job = d_job_find(d, id); /* NULL: it ended (a cancel, say) */
        if (job && job->unstarted > 1 && job->state == D_QUEUED)
            d_job_pause_unstarted(d, job);
        return;
    }
    job->unstarted = 0;
    int64_t id = job->id;
    int n = job->attempts, status = -1;
    char why[256];
    core_exit how;
    if (rec->state == EXEC_ENDED) {
        status = rec->status;
        job->ended_at = rec->ended_at;
        /* the log is the job's user's, or a non-root aegisd's */
        uid_t owner = d->as_root ? job->uid : geteuid();
        const oom_gpu_mem *mem;
        int nmem = d_job_oom_readings(d, job, &mem);
        how = exec_classify(status, d->log_dirfd, id, owner, rec->err_offset,
                            mem, nmem, why, sizeof(why));
        d_host_oom(d, job, &how, why, sizeof(why));
    } else {
        /* The shim died without a word: make sure the job died with it. */
        if (rec->job_pid > 1 && exec_in_job(rec->job_pid, rec->job_pid))
            exec_kill(rec->job_pid, SIGKILL);
        how = CORE_EXIT_LOST;
        snprintf(why, sizeof(why), "its watcher process vanished");
    }
    d_job_drop_cg(job);
    /* before the core hears of it: it may give the slices away at once */
    d_share_release(d, job);
    store_begin(d->st);
    if (rec->left > 0)
        store_event(d->st, id, d_wall(), "attempt %d left %d processes behind: "
                    "killed", n, rec->left);
    d_job_settle(d, job, how, status, why);
    d_status_settled(d, id, n, store_commit(d->st));
}

/* In id order, the running jobs as they were at the start: an end may
 * end others (a feed's producer), or requeue its job. Each one's status
 * file is read where reaped is NULL, else only those whose watcher may
 * be among the nreaped children reaped. */
static void d_jobs_check(d_daemon *d, const pid_t *reaped, size_t nreaped) {
    double now = d_now(d);
    d_turn_begin(d);
    size_t n;
    int64_t *ids = d_running_ids(d, &n);
    for (size_t i = 0; i < n; i++) {
        d_job *job = d_job_find(d, ids[i]);
        if (!job || job->state != D_RUNNING || !job->kind->watched)
            continue; /* its kind watches it (a lease: lease.c) */
        if (job->cancelling && now >= job->kill_at) {
            d_job_signal(job, SIGKILL);
            job->kill_at = now + CORE_KILL_GRACE_S;
        }
        if (!reaped ||
            exec_watcher_may_have_ended(job->shim_pid, reaped, nreaped))
            d_job_look(d, job);
    }
    free(ids);
    d_turn_end(d);
}

void d_jobs_check_exits(d_daemon *d) { d_jobs_check(d, NULL, 0); }

void d_jobs_check_reaped(d_daemon *d, const pid_t *reaped, size_t n) {
    d_jobs_check(d, reaped, n);
}

void d_job_leave_core(d_daemon *d, d_job *job) {
    if (job->in_core) core_cancel(d->core, job->id, d_now(d));
    job->in_core = false;
}

/* A running job keeps its GPUs in the core until its processes have
 * gone (d_job_settle() gives them back): a job saving a checkpoint as it
 * stops, or one ignoring SIGTERM for its grace time, still holds its GPU
 * memory, and a job placed there at once ran out of memory (failed for
 * good where it had the GPU alone). A MIG instance's slices are given
 * back only once the instance is destroyed, at the same end. */
void d_job_cancel(d_daemon *d, d_job *job) {
    if (job->state != D_RUNNING) {
        d_job_leave_core(d, job);
        d_job_finish(d, job, "cancelled", "cancelled while queued");
        return;
    }
    job->cancelling = true;
    double grace = job->cancel_at + CORE_KILL_GRACE_S - d_wall();
    job->kill_at = d_now(d) + (grace > 0 ? grace : 0);
    bool unknown = job->job_pid <= 0 && job->kind->watched;
    exec_record rec = {.state = EXEC_LIVE};
    if (unknown) {
        /* started since the last look: its pids are in its status file
         * only. Read now, they get the SIGTERM at once (d_job_probe sends
         * it), not at the next look, up to a second later. */
        d_job_probe(d, job, &rec);
    } else {
        d_job_signal(job, SIGTERM);
    }
    if (job->job_pid > 0 || !unknown)
        store_event(d->st, job->id, d_wall(),
                    "cancel: SIGTERM sent to session %d", (int)job->job_pid);
    else if (rec.state == EXEC_LIVE)
        store_event(d->st, job->id, d_wall(), "cancel: SIGTERM to be sent "
                    "once its watcher has started it");
    else
        store_event(d->st, job->id, d_wall(),
                    "cancel: its watcher had ended already (no SIGTERM sent)");
}

/* ---- ends its kind reports ------------------------------------------------- */

void d_job_lease_settle(d_daemon *d, d_job *job, core_exit how, int status,
                        const char *why) {
    d_share_release(d, job);
    store_begin(d->st);
    d_job_settle(d, job, how, status, why);
    store_commit(d->st);
}

void d_job_withdraw(d_daemon *d, d_job *job, const char *why) {
    bool ran = job->state == D_RUNNING;
    if (ran) d_share_release(d, job);
    d_job_leave_core(d, job);
    store_begin(d->st);
    if (ran)
        store_attempt_end(d->st, job->id, job->attempts, "lost", -1, d_wall());
    d_job_finish(d, job, ran ? "done" : "cancelled", why);
    store_commit(d->st);
}
