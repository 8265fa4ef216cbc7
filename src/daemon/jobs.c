/* jobs.c -- a job's life inside aegisd: held for its --after jobs, queued
 * in the core, launched by the executor, observed on its GPUs, ended and
 * classified, requeued by the OOM ladder or finished.
 *
 * The core places jobs; this file only carries out its decisions and
 * feeds it events. What the core knows of a job that must outlive aegisd
 * is in the store: each attempt's GPUs, floor and the time it was first
 * seen, and the job's place on the recovery ladder (saved at each
 * requeue). After a restart, d_jobs_recover() hands it all back: running
 * attempts are adopted (core_adopt), retries rejoin the recovery queue in
 * the order they were requeued (core_submit_retry).
 *
 * Crashes: an attempt is committed before it starts and its outcome read
 * from its status file (exec.h), which goes only once the outcome is
 * committed, so a restarted aegisd neither starts a second copy nor runs a
 * finished attempt again; a cancel is committed before it is answered.
 * While the state cannot be written (store_failing), no job starts and
 * each tick retries the writes kept meanwhile.
 */
#include "daemon.h"

#include "exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds between SIGTERM and SIGKILL when a running job is cancelled:
 * time for a training loop to write a checkpoint. */
#define D_KILL_GRACE_S 10.0

/* Attempts lost in a row (their watcher died, or aegisd found them gone
 * after a restart) before the job is failed instead of requeued: a job
 * that keeps vanishing must not loop forever. */
#define D_MAX_LOST 5

/* Launches put back in a row because the GPU was busy (D_SHARE_BUSY)
 * before the job is failed: about a minute of ticks, for processes to
 * leave a GPU whose MIG mode must change, or a MIG instance. */
#define D_MAX_BUSY 60

/* Why an attempt recorded as started at a restart never ran. */
#define D_STOPPED_STARTING "aegisd stopped while starting it"

/* ---- the table of unfinished jobs ----------------------------------------- */

static size_t d_job_index(const d_daemon *d, int64_t id) {
    size_t lo = 0, hi = d->njobs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->jobs[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

d_job *d_job_find(d_daemon *d, int64_t id) {
    size_t i = d_job_index(d, id);
    return i < d->njobs && d->jobs[i]->id == id ? d->jobs[i] : NULL;
}

/* The list of running jobs has room for every job of the table, so that
 * a job can always join it. */
static int d_job_add(d_daemon *d, d_job *job) {
    if (d->njobs == d->capjobs) {
        size_t cap = d->capjobs ? d->capjobs * 2 : 256;
        d_job **grown = realloc(d->jobs, cap * sizeof(*grown));
        if (!grown) return -1;
        d->jobs = grown;
        grown = realloc(d->running, cap * sizeof(*grown));
        if (!grown) return -1;
        d->running = grown;
        d->capjobs = cap;
    }
    size_t i = d_job_index(d, job->id); /* new ids come last: i == njobs */
    memmove(d->jobs + i + 1, d->jobs + i, (d->njobs - i) * sizeof(*d->jobs));
    d->jobs[i] = job;
    d->njobs++;
    d->ndependents += job->ndeps > 0;
    return 0;
}

void d_job_set_state(d_daemon *d, d_job *job, d_state state) {
    if (state == D_RUNNING && !job->run_slot) {
        d->running[d->nrunning++] = job;
        job->run_slot = d->nrunning;
    } else if (state != D_RUNNING && job->run_slot) {
        d_job *last = d->running[--d->nrunning]; /* takes its place */
        d->running[job->run_slot - 1] = last;
        last->run_slot = job->run_slot;
        job->run_slot = 0;
    }
    job->state = state;
}

int d_id_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t *d_running_ids(const d_daemon *d, size_t *n) {
    int64_t *ids = d->nrunning ? malloc(d->nrunning * sizeof(*ids)) : NULL;
    *n = ids ? d->nrunning : 0;
    for (size_t i = 0; i < *n; i++) ids[i] = d->running[i]->id;
    if (ids) qsort(ids, *n, sizeof(*ids), d_id_cmp);
    return ids;
}

static void d_job_remove(d_daemon *d, d_job *job) {
    d->ndependents -= job->ndeps > 0;
    d_job_set_state(d, job, D_QUEUED); /* off the running list */
    size_t i = d_job_index(d, job->id);
    memmove(d->jobs + i, d->jobs + i + 1, (d->njobs - i - 1) * sizeof(*d->jobs));
    d->njobs--;
    free(job);
}

/* ---- finished jobs not saved yet ------------------------------------------ */

const d_unsaved *d_job_unsaved(const d_daemon *d, int64_t id) {
    for (size_t i = 0; i < d->nunsaved; i++)
        if (d->unsaved[i].id == id) return &d->unsaved[i];
    return NULL;
}

/* Notes a job's end until the state is saved: its commit may yet fail. */
static void d_unsaved_add(d_daemon *d, int64_t id, const char *state,
                          const char *reason) {
    if (d->nunsaved == d->capunsaved) {
        size_t cap = d->capunsaved ? d->capunsaved * 2 : 64;
        d_unsaved *grown = realloc(d->unsaved, cap * sizeof(*grown));
        if (!grown) return; /* ls and show say what the database says */
        d->unsaved = grown;
        d->capunsaved = cap;
    }
    d_unsaved *u = &d->unsaved[d->nunsaved++];
    u->id = id;
    snprintf(u->state, sizeof(u->state), "%s", state);
    snprintf(u->reason, sizeof(u->reason), "%s", reason);
}

/* ---- one commit per loop turn ------------------------------------------- */

void d_turn_begin(d_daemon *d) { store_begin(d->st); }

/* Removes the status files of the attempts settled in the turn once it is
 * committed; when it is not, the sweep at the next save does (d_status_sweep). */
void d_turn_end(d_daemon *d) {
    int rc = store_commit(d->st);
    if (store_in_transaction(d->st)) return; /* an outer turn commits */
    for (size_t i = 0; rc == 0 && i < d->nsettled; i++)
        exec_status_remove(d->run_dir, d->settled[i].id, d->settled[i].n);
    d->nsettled = 0;
}

void d_status_settled(d_daemon *d, int64_t id, int n, int committed) {
    if (!store_in_transaction(d->st)) { /* that was the commit */
        if (committed == 0) exec_status_remove(d->run_dir, id, n);
        return;
    }
    if (d->nsettled == d->capsettled) {
        size_t cap = d->capsettled ? d->capsettled * 2 : 64;
        d_settled *grown = realloc(d->settled, cap * sizeof(*grown));
        if (!grown) return; /* the sweep removes it */
        d->settled = grown;
        d->capsettled = cap;
    }
    d->settled[d->nsettled++] = (d_settled){.id = id, .n = n};
}

/* ---- queueing ------------------------------------------------------------- */

/* A finished job leaves the table; its waiters and dependents hear of it,
 * and its feed's producer when it was the feed's last consumer. */
void d_job_finish(d_daemon *d, d_job *job, const char *state,
                  const char *reason) {
    int64_t id = job->id;
    const d_job *producer = d_feed_producer_for(d, job);
    int64_t producer_id = producer ? producer->id : 0;
    store_begin(d->st);
    store_job_energy(d->st, id, job->energy_j);
    store_job_state(d->st, id, state, reason, d_wall());
    store_event(d->st, id, d_wall(), "%s: %s", state, reason);
    d_notify_job_end(d, job, state, reason);
    store_commit(d->st);
    d_unsaved_add(d, id, state, reason);
    metrics_count_finished(&d->counts, job->user, state, job->energy_j);
    if (job->lease.slurm_job) d_lease_finish(d, job, state, reason);
    d_job_remove(d, job);
    d_waiters_job_done(d, id, state, reason);
    /* Dependents come later in id order (deps.c); enqueueing one may
     * finish it and so change the table: go by id. None without a job
     * that has dependencies (a bulk cancel must not scan the table for
     * each job). */
    for (size_t i = d_job_index(d, id); d->ndependents > 0 && i < d->njobs;
         i++) {
        d_job *dep = d->jobs[i];
        if (dep->state != D_HELD || !d_deps_on(dep, id)) continue;
        int64_t dep_id = dep->id;
        d_job_enqueue(d, dep);
        i = d_job_index(d, dep_id);
        if (i < d->njobs && d->jobs[i]->id != dep_id) i--;
    }
    if (producer_id) d_feed_consumer_left(d, d_job_find(d, producer_id));
}

static core_job_spec d_job_spec(d_daemon *d, const d_job *job) {
    core_job_spec spec = {
        .id = job->id, .num_gpus = job->num_gpus,
        .est_mib = job->mem_mib >= 0 ? job->mem_mib : CORE_UNKNOWN,
        .peak_mib = CORE_UNKNOWN, .util_pct = CORE_UNKNOWN,
        .sharing_score = -1, .user = (uint32_t)job->uid, .nice = job->nice,
        .feed = job->feed, .feed_producer = job->producer,
        .feed_owner = job->feed[0] ? (uint32_t)d_feed_owner(d, job) : 0,
    };
    return spec;
}

/* The next attempt's place on the ladder. */
static core_retry d_job_retry(const d_job *job) {
    core_retry r = {.attempt = job->attempts + 1,
                    .floor_mib = job->retry_floor, .alone = job->retry_alone};
    return r;
}

/* A job that must run alone from the start (an exclusive lease) joins
 * the recovery queue too, with its place on the ladder. */
int d_job_to_core(d_daemon *d, d_job *job, char *err, size_t errlen) {
    d_feed_wake(d, job); /* the producer is queued ahead of its consumers */
    core_job_spec spec = d_job_spec(d, job);
    core_retry r = d_job_retry(job);
    int rc = job->attempts > 0 || job->retry_alone
                 ? core_submit_retry(d->core, &spec, &r, d_now(d), err, errlen)
                 : core_submit(d->core, &spec, d_now(d), err, errlen);
    if (rc != 0) return -1;
    job->in_core = true;
    d_job_set_state(d, job, D_QUEUED);
    return 0;
}

void d_job_enqueue(d_daemon *d, d_job *job) {
    char reason[256];
    switch (d_deps_check(d, job, reason, sizeof(reason))) {
    case D_DEPS_WAIT: d_job_set_state(d, job, D_HELD); return;
    case D_DEPS_NEVER: d_job_finish(d, job, "cancelled", reason); return;
    case D_DEPS_MET: break;
    }
    if (job->held || d_feed_dormant(d, job)) {
        d_job_set_state(d, job, D_HELD);
        return;
    }
    char err[256];
    if (d_job_to_core(d, job, err, sizeof(err)) != 0)
        d_job_finish(d, job, "failed", err);
}

/* A job with room for ndeps dependencies after it, freed with it. */
static d_job *d_job_new(int64_t id, uid_t uid, gid_t gid, const char *user,
                        const char *name, int num_gpus, double mem_mib,
                        size_t ndeps) {
    d_job *job = calloc(1, sizeof(*job) + ndeps * sizeof(d_dep));
    if (!job) return NULL;
    job->deps = (d_dep *)(job + 1);
    job->ndeps = ndeps;
    job->id = id;
    job->uid = uid;
    job->gid = gid;
    snprintf(job->user, sizeof(job->user), "%s", user);
    snprintf(job->name, sizeof(job->name), "%s", name ? name : "");
    job->num_gpus = num_gpus;
    job->mem_mib = mem_mib;
    job->last_status = -1;
    job->sm_pct = CORE_UNKNOWN; /* none measured yet */
    history_track_init(&job->hist, HISTORY_MAX_SAMPLES, 0, 1);
    return job;
}

int d_jobs_submitted(d_daemon *d, const store_owner *owner,
                     const proto_request *req, int64_t first_id) {
    for (size_t i = 0; i < req->njobs; i++) {
        const proto_job *pj = &req->jobs[i];
        d_job *job = d_job_new(first_id + (int64_t)i, owner->uid, owner->gid,
                               owner->user, pj->name, pj->gpus, pj->mem_mib,
                               pj->nafter);
        if (job) {
            d_deps_from_request(pj, first_id, job->deps);
            job->time_limit_s = pj->time_limit_s;
            job->nice = pj->nice;
            job->notify = d_notify_kind_of(pj->notify);
            snprintf(job->feed, sizeof(job->feed), "%s", pj->feed);
            job->producer = pj->feed_producer;
        }
        if (!job || d_job_add(d, job) != 0) {
            free(job);
            d_log("job %lld: out of memory; it runs after a restart",
                  (long long)first_id + (long long)i);
            return -1;
        }
        d_job_enqueue(d, job);
    }
    return 0;
}

/* ---- launching ------------------------------------------------------------ */

static void d_job_unstarted(d_daemon *d, d_job *job, const char *why);

const char **d_strings(json_t *arr) {
    size_t n = json_array_size(arr);
    const char **v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    return v;
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
 * they add to its start), then starts it. */
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
    if (job->lease.slurm_job) { /* the Slurm task runs it: granted */
        json_decref(row);
        return d_lease_grant(d, job, visible, ss, run, err, errlen);
    }
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
        .run_dir = d->run_dir, .shim_path = d->shim_path,
    };
    int rc = -1;
    if (!row || !argv || !env || !argv[0] || !spec.cwd)
        snprintf(err, errlen, "job %lld: its row is unreadable: %s",
                 (long long)job->id, store_errmsg(d->st));
    else
        rc = exec_start(&spec, run, err, errlen);
    free(argv);
    free(env);
    json_decref(row);
    return rc;
}

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
    if (job->in_core) core_cancel(d->core, job->id, d_now(d));
    job->in_core = false;
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
    store_event(d->st, job->id, now,
                "attempt %d started on GPU %s, %s, admitted with %.0f MiB",
                a.n, gpus, l->exclusive ? "alone" : "shared", l->floor_mib);
}

/* Starts the attempt d_job_record_start recorded (committed) at now. */
static void d_job_launch(d_daemon *d, d_job *job, const core_launch *l,
                         double now) {
    int n = job->attempts + 1;
    exec_run run;
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
        int64_t id = job->id;
        d_log("job %lld: %s", (long long)id, err);
        d_share_release(d, job);
        core_job_exit(d->core, id, CORE_EXIT_FAILED, d_now(d), NULL);
        store_begin(d->st);
        store_attempt_end(d->st, id, n, "failed", -1, d_wall());
        d_job_finish(d, job, "failed", err);
        d_status_settled(d, id, n, store_commit(d->st));
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
    /* Its pids are not written here: the job records them in its status
     * file, where the next look at it takes them (d_job_probe), and a
     * write now would cost the turn a second commit. */
    if (ss.note[0])
        store_event(d->st, job->id, now, "attempt %d: %s", n, ss.note);
    if (job->lease.slurm_job) d_lease_granted(d, job);
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
    bool saved = store_commit_now(d->st) == 0;
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
static void d_job_probe(d_daemon *d, d_job *job, exec_record *rec) {
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
    if (job->cancelling) exec_kill(job->job_pid, SIGTERM); /* not sent yet */
}

/* Attempt job->attempts never ran (why: what stopped it): it is
 * forgotten, and the job queued again at that attempt. */
static void d_job_unstarted(d_daemon *d, d_job *job, const char *why) {
    int64_t id = job->id;
    int n = job->attempts;
    double now = d_wall();
    d_share_release(d, job);
    job->attempts = n - 1;
    d_job_set_state(d, job, D_QUEUED);
    store_begin(d->st);
    d_job_unrecord(d, id, n);
    store_event(d->st, id, now, "attempt %d never started (%s): queued again",
                n, why);
    if (job->cancelling) {
        if (job->in_core) core_cancel(d->core, id, d_now(d));
        d_job_finish(d, job, "cancelled", "cancelled while queued");
    } else {
        d_job_requeue_unstarted(d, job);
    }
    d_status_settled(d, id, n, store_commit(d->st));
}

/* A Slurm job's lease that ran out of memory: Slurm runs the job again
 * (scontrol requeue), and its next run's lease starts at the ladder's
 * place r, kept by Slurm job. This lease ends here. */
static void d_job_slurm_requeue(d_daemon *d, d_job *job, const core_retry *r,
                                const char *why) {
    char reason[400];
    core_cancel(d->core, job->id, d_now(d)); /* its next run is a new job */
    store_ladder_set(d->st, job->lease.slurm_job, r->attempt, r->floor_mib,
                     r->alone);
    if (r->alone)
        snprintf(reason, sizeof(reason), "%s; Slurm requeues job %u, to run "
                 "alone next", why, job->lease.slurm_job);
    else
        snprintf(reason, sizeof(reason), "%s; Slurm requeues job %u, next "
                 "with %.0f MiB", why, job->lease.slurm_job, r->floor_mib);
    d_lease_requeue(d, job);
    d_job_finish(d, job, "failed", reason);
}

/* Records how attempt n ended (how, its wait status, why) and what becomes
 * of the job: finished, or requeued by the core's ladder. */
static void d_job_settle(d_daemon *d, d_job *job, core_exit how, int status,
                         const char *why) {
    static const char *const how_names[] = {"ok", "oom", "failed", "lost"};
    int n = job->attempts;
    double now = d_wall();
    job->last_status = status;
    if (job->started > 0) /* 0: an attempt recorded without its start */
        metrics_count_attempt(&d->counts, job->user, job->ngpus,
                              now - job->started);
    if (job->cancelling) { /* by `aegis cancel`, or its time limit */
        if (job->in_core) core_cancel(d->core, job->id, d_now(d));
        char reason[128];
        const char *state = d_limits_stop_state(job, reason, sizeof(reason));
        store_attempt_end(d->st, job->id, n, state, status, now);
        if (!d_feed_stopped(d, job)) d_job_finish(d, job, state, reason);
        return;
    }
    store_attempt_end(d->st, job->id, n, how_names[how], status, now);
    if (how == CORE_EXIT_OOM) d->counts.oom_crashes++;
    double floor = 0;
    bool was_alone = job->exclusive;
    bool restart = d_feed_restart(d, job, how, why);
    job->lost = how == CORE_EXIT_LOST && !restart ? job->lost + 1 : 0;
    if (restart) how = CORE_EXIT_LOST; /* requeued at its floor */
    if (job->lost >= D_MAX_LOST) {
        core_cancel(d->core, job->id, d_now(d));
        d_job_finish(d, job, "failed", "lost 5 attempts in a row");
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
        if (job->lease.slurm_job) {
            d_job_slurm_requeue(d, job, &r, why);
            break;
        }
        d_job_set_state(d, job, D_QUEUED);
        job->retry_floor = r.floor_mib;
        job->retry_alone = r.alone;
        store_job_retry(d->st, job->id, r.floor_mib, r.alone);
        store_job_energy(d->st, job->id, job->energy_j);
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

/* The attempt's shim is gone (rec: its status file): classify, decide, and
 * once that is committed, remove the file. */
static void d_job_ended(d_daemon *d, d_job *job, const exec_record *rec) {
    if (rec->state == EXEC_UNSTARTED || rec->state == EXEC_ABSENT) {
        d_job_unstarted(d, job, D_STOPPED_STARTING);
        return;
    }
    int64_t id = job->id;
    int n = job->attempts, status = -1;
    char why[256];
    core_exit how;
    if (rec->state == EXEC_ENDED) {
        status = rec->status;
        /* the log is the job's user's, or a non-root aegisd's */
        uid_t owner = d->as_root ? job->uid : geteuid();
        how = exec_classify(status, d->log_dirfd, id, owner, rec->err_offset,
                            why, sizeof(why));
    } else {
        /* The shim died without a word: make sure the job died with it. */
        if (rec->job_pid > 1 && exec_in_job(rec->job_pid, rec->job_pid))
            exec_kill(rec->job_pid, SIGKILL);
        how = CORE_EXIT_LOST;
        snprintf(why, sizeof(why), "its watcher process vanished");
    }
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
 * end others (a feed's producer), or requeue its job. */
void d_jobs_check_exits(d_daemon *d) {
    double now = d_now(d);
    d_turn_begin(d);
    size_t n;
    int64_t *ids = d_running_ids(d, &n);
    for (size_t i = 0; i < n; i++) {
        d_job *job = d_job_find(d, ids[i]);
        if (!job || job->state != D_RUNNING || job->lease.slurm_job)
            continue; /* a lease: lease.c */
        if (job->cancelling && now >= job->kill_at) {
            exec_kill(job->job_pid, SIGKILL);
            job->kill_at = now + D_KILL_GRACE_S;
        }
        exec_record rec;
        d_job_probe(d, job, &rec);
        if (rec.state != EXEC_LIVE) d_job_ended(d, job, &rec);
    }
    free(ids);
    d_turn_end(d);
}

void d_job_cancel(d_daemon *d, d_job *job) {
    /* A job in a MIG instance keeps its slices in the core until the
     * instance is destroyed at its end: given away sooner, they would fail
     * the next job's instance. */
    bool hold = job->state == D_RUNNING && job->mig;
    if (job->in_core && !hold) core_cancel(d->core, job->id, d_now(d));
    if (job->state != D_RUNNING) {
        d_job_finish(d, job, "cancelled", "cancelled while queued");
        return;
    }
    if (!hold) {
        job->in_core = false;
        job->ngpus = 0; /* its GPUs are the core's again */
    }
    job->cancelling = true;
    double grace = job->cancel_at + D_KILL_GRACE_S - d_wall();
    job->kill_at = d_now(d) + (grace > 0 ? grace : 0);
    exec_kill(job->job_pid, SIGTERM);
    store_event(d->st, job->id, d_wall(), "cancel: SIGTERM sent to session %d",
                (int)job->job_pid);
}

/* ---- telemetry ------------------------------------------------------------ */

/* Whether process pid is the job's: in its session, or for a Slurm
 * job's lease one of its tasks' processes. */
static bool d_job_owns(const d_job *job, pid_t pid) {
    return job->lease.slurm_job ? d_lease_owns(job, pid)
                                : exec_in_job(pid, job->job_pid);
}

/* Memory of job's processes in a GPU's process list, and into *util the
 * sum of their SM utilization (left CORE_UNKNOWN when none is known): its
 * weights for the GPU's energy, and proof that it is active there. */
static double d_job_mib_on(const tel_gpu_reading *r, const d_job *job,
                           double *util, bool *seen) {
    double mib = 0;
    for (int p = 0; p < r->nprocs; p++)
        if (d_job_owns(job, r->procs[p].pid)) {
            mib += r->procs[p].used_mib > 0 ? r->procs[p].used_mib : 0;
            if (r->procs[p].sm_util >= 0)
                *util = (*util > 0 ? *util : 0) + r->procs[p].sm_util;
            *seen = true;
        }
    return mib;
}

static bool d_job_on(const d_job *job, int g) {
    for (int i = 0; i < job->ngpus; i++)
        if (job->gpus[i] == g) return true;
    return false;
}

/* Splits the GPU's energy since the last tick among its running jobs by
 * their activity there (the SM utilization NVML samples per process), else
 * their memory, else evenly: tel_energy_split's rule. */
static void d_gpu_energy(d_daemon *d, int g, double joules, double now) {
    d_job *on[TEL_MAX_PROCS];
    double mib[TEL_MAX_PROCS], util[TEL_MAX_PROCS], share[TEL_MAX_PROCS];
    int n = 0;
    for (size_t i = 0; i < d->nrunning && n < TEL_MAX_PROCS; i++) {
        d_job *job = d->running[i];
        if (!d_job_on(job, g)) continue;
        bool seen = false;
        util[n] = CORE_UNKNOWN;
        mib[n] = d_job_mib_on(&d->gpus[g].last, job, &util[n], &seen);
        job->used_mib += mib[n]; /* what /metrics shows of it */
        if (util[n] >= 0) job->sm_pct = (job->sm_pct > 0 ? job->sm_pct : 0) +
                                        util[n];
        if (seen && !job->active && job->in_core) {
            job->active = true;
            core_job_active(d->core, job->id, now);
            store_event(d->st, job->id, d_wall(), "seen on GPU %d", g);
        }
        on[n++] = job;
    }
    if (n == 0 || joules <= 0) return;
    tel_energy_split(n, util, mib, joules, share);
    for (int i = 0; i < n; i++) on[i]->energy_j += share[i];
}

/* A sample of each running job, once a history period (history.h): its
 * processes' memory and SM utilization on its GPUs, and theirs in use
 * and in all. All of a period's samples go in one transaction. */
static void d_jobs_history(d_daemon *d) {
    double now = d_now(d);
    if (d->history_at > 0 && now - d->history_at < d->keys.history_period_s)
        return;
    d->history_at = now;
    store_begin(d->st);
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (job->ngpus == 0 || !history_due(&job->hist)) continue;
        store_sample s = {.t = d_wall(), .sm_pct = CORE_UNKNOWN};
        bool ok = true;
        for (int k = 0; k < job->ngpus; k++) {
            const d_gpu *gpu = &d->gpus[job->gpus[k]];
            bool seen = false;
            ok = ok && gpu->ok;
            s.mem_mib += d_job_mib_on(&gpu->last, job, &s.sm_pct, &seen);
            s.gpu_used_mib += gpu->last.r.used_mib;
            s.gpu_total_mib += gpu->last.r.total_mib;
        }
        if (ok) history_add(d->st, job->id, &job->hist, &s);
    }
    store_commit(d->st);
}

/* Records when each running attempt was first seen on its GPUs, so that
 * after a restart its observation time is not started over. */
static void d_jobs_note_seen(d_daemon *d) {
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (!job->active || job->seen > 0) continue;
        job->seen = d_wall();
        store_attempt_seen(d->st, job->id, job->attempts, job->seen);
    }
}

/* What a GPU's readings lack (TEL_F_*: MIG mode): logged when it starts
 * and ends, not once a second. */
static void d_note_tel_flags(d_daemon *d, int g) {
    unsigned int now = d->gpus[g].last.flags, was = d->gpus[g].tel_flags;
    for (unsigned int f = 1; f <= (now | was); f <<= 1)
        if ((now ^ was) & f)
            d_log("GPU %d: %s%s", g, now & f ? "" : "no longer: ",
                  tel_flag_text(f));
    d->gpus[g].tel_flags = now;
}

/* Whether process p on GPU g is accounted for: of a job running there, or
 * an MPS server (its control daemon, which aegisd runs, starts it for the
 * GPU's clients and keeps it between them). */
static bool d_proc_placed(const d_daemon *d, int g, const tel_proc *p) {
    for (size_t i = 0; i < d->nrunning; i++) {
        const d_job *job = d->running[i];
        if (d_job_on(job, g) && d_job_owns(job, p->pid)) return true;
    }
    return exec_named(p->pid, "nvidia-cuda-mps"); /* comm: 15 bytes */
}

/* Memory on GPU g held by processes no job of aegisd's placed there: the
 * GPU is not idle while there is any (core_gpu_foreign); said when that
 * starts and ends. */
static void d_gpu_note_foreign(d_daemon *d, int g) {
    const tel_gpu_reading *r = &d->gpus[g].last;
    double mib = 0;
    char pids[256] = "";
    size_t at = 0;
    for (int p = 0; p < r->nprocs; p++) {
        if (r->procs[p].used_mib <= 0 || d_proc_placed(d, g, &r->procs[p]))
            continue;
        mib += r->procs[p].used_mib;
        int w = at < sizeof(pids)
                    ? snprintf(pids + at, sizeof(pids) - at, "%s%d",
                               at ? ", " : "", (int)r->procs[p].pid)
                    : 0;
        at += w > 0 ? (size_t)w : 0;
    }
    bool was = d->gpus[g].foreign_mib > 0;
    if (mib > 0 && !was)
        d_log("GPU %d: %.0f MiB in use by processes aegisd did not start "
              "(pid %s): not idle until they end", g, mib, pids);
    else if (mib <= 0 && was)
        d_log("GPU %d: no memory in use by processes aegisd did not start "
              "any more", g);
    d->gpus[g].foreign_mib = mib;
    core_gpu_foreign(d->core, g, mib > 0);
}

/* Removes the status file of an attempt not running: its outcome is
 * committed (aegisd stopped, or could not write, between the two). */
static void d_status_sweep(void *ctx, int64_t id, int attempt) {
    d_daemon *d = ctx;
    d_job *job = d_job_find(d, id);
    if (!job || job->state != D_RUNNING || job->attempts != attempt)
        exec_status_remove(d->run_dir, id, attempt);
}

/* While the state cannot be written, each tick retries; once it can, the
 * writes kept meanwhile are saved and the files they made stale go. */
void d_jobs_state_retry(d_daemon *d) {
    char err[4200];
    if (!store_failing(d->st) ||
        exec_run_dir_check(d->run_dir, err, sizeof(err)) != 0 ||
        store_retry(d->st, d_wall()) != 0)
        return;
    d_log("state writable again: taking and starting jobs");
    exec_status_each(d->run_dir, d_status_sweep, d);
}

/* DCGM failures only take readings back to utilization: log when they
 * start and end, not once a second. */
static void d_note_dcgm(d_daemon *d) {
    const char *why = tel_dcgm_error(d->tel);
    if (why && !d->dcgm_failing)
        d_log("DCGM read failed, utilization-only pressure filter until it "
              "recovers: %s", why);
    else if (!why && d->dcgm_failing)
        d_log("DCGM readings are back");
    d->dcgm_failing = why != NULL;
}

/* Takes the pids of the attempts started since the last look from their
 * status files (exec_start does not wait for them), so that this tick's
 * readings find their processes on the GPUs. */
static void d_jobs_learn_pids(d_daemon *d) {
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        exec_record rec;
        if (!job->lease.slurm_job && job->job_pid <= 0)
            d_job_probe(d, job, &rec);
    }
}

void d_jobs_tick(d_daemon *d) {
    d_jobs_learn_pids(d);
    if (!store_failing(d->st)) d->nunsaved = 0; /* all saved */
    double now = d_now(d);
    for (size_t i = 0; i < d->nrunning; i++) { /* summed over their GPUs */
        d->running[i]->used_mib = 0;
        d->running[i]->sm_pct = CORE_UNKNOWN;
    }
    for (int g = 0; g < d->ngpus; g++) {
        d_gpu *gpu = &d->gpus[g];
        char err[256];
        double before = gpu->energy_seen_j;
        gpu->ok = tel_read(d->tel, g, &gpu->last, err, sizeof(err)) == 0;
        if (!gpu->ok) {
            d_log("GPU %d: %s", g, err);
            continue;
        }
        d_note_tel_flags(d, g);
        core_sample(d->core, g, &gpu->last.r, now);
        d_gpu_note_foreign(d, g);
        double joules = 0;
        if (gpu->last.energy_j >= 0 && before >= 0)
            joules = gpu->last.energy_j - before;
        else if (gpu->last.power_w >= 0)
            joules = gpu->last.power_w * d->cfg.sample_period_s;
        gpu->energy_seen_j = gpu->last.energy_j;
        d_gpu_energy(d, g, joules, now);
    }
    d_note_dcgm(d);
    d_jobs_note_seen(d);
    d_jobs_history(d);
    d_share_tick(d);
}

/* ---- restart and reload --------------------------------------------------- */

int d_gpus_parse(const char *text, int *gpus) {
    int n = 0;
    for (const char *p = text; p && *p && n < CORE_MAX_JOB_GPUS;) {
        char *end;
        long g = strtol(p, &end, 10);
        if (end == p) break;
        if (g >= 0 && g < CORE_MAX_GPUS) gpus[n++] = (int)g;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int64_t d_int(json_t *obj, const char *key) {
    return json_integer_value(json_object_get(obj, key));
}


static double d_number(json_t *obj, const char *key) {
    return json_number_value(json_object_get(obj, key));
}

/* A running attempt as the store recorded it at launch. */
static void d_job_load_attempt(d_daemon *d, d_job *job, json_t *att) {
    d_job_set_state(d, job, D_RUNNING);
    job->attempts = (int)d_int(att, "n");
    job->ngpus = d_gpus_parse(json_string_value(json_object_get(att, "gpus")),
                              job->gpus);
    job->exclusive = d_int(att, "exclusive") != 0;
    job->floor_mib = d_number(att, "floor_mib");
    job->shim_pid = (pid_t)d_int(att, "shim_pid");
    job->shim_start = (unsigned long long)d_int(att, "shim_start");
    job->job_pid = (pid_t)d_int(att, "job_pid");
    job->err_offset = d_int(att, "err_offset");
    job->started = d_number(att, "started");
    job->seen = d_number(att, "seen");
    job->active = job->seen > 0;
}

/* Hands a running attempt back to the core. One it cannot take (its GPUs
 * are no longer on this server) is killed and failed: 0, or -1 when the
 * job is finished. */
static int d_job_adopt(d_daemon *d, d_job *job) {
    core_job_spec spec = d_job_spec(d, job);
    core_adopted a = {
        .retry = {.attempt = job->attempts, .floor_mib = job->retry_floor,
                  .alone = job->retry_alone},
        .admitted_mib = job->floor_mib, .exclusive = job->exclusive,
        .active = job->active,
        /* the store keeps Unix time, the core aegisd's monotonic clock */
        .active_at = d_now(d) - (d_wall() - job->seen),
        .mig = job->mig, .mig_start = job->mig_start,
    };
    memcpy(a.gpus, job->gpus, sizeof(a.gpus));
    char err[256], reason[400];
    if (job->ngpus != job->num_gpus)
        snprintf(err, sizeof(err), "job %lld: attempt %d lists %d GPUs, the "
                 "job asks for %d", (long long)job->id, job->attempts,
                 job->ngpus, job->num_gpus);
    else if (core_adopt(d->core, &spec, &a, d_now(d), err, sizeof(err)) == 0) {
        job->in_core = true;
        return 0;
    }
    d_log("%s", err);
    if (!job->lease.slurm_job && job->job_pid > 1 && /* Slurm's, not ours */
        exec_in_job(job->job_pid, job->job_pid))
        exec_kill(job->job_pid, SIGKILL);
    d_share_release(d, job);
    store_begin(d->st);
    store_attempt_end(d->st, job->id, job->attempts, "failed", -1, d_wall());
    snprintf(reason, sizeof(reason), "cannot re-adopt after a restart: %s", err);
    d_job_finish(d, job, "failed", reason);
    store_commit(d->st);
    return -1;
}

/* A retry found queued in the store, with the time it was requeued. */
typedef struct d_requeued {
    int64_t id;
    double at;
} d_requeued;

typedef struct d_recovery {
    d_daemon *d;
    d_requeued *retries;
    size_t nretries, cap;
} d_recovery;

static int d_requeued_cmp(const void *a, const void *b) {
    const d_requeued *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int d_recovery_push(d_recovery *rec, int64_t id, double at) {
    if (rec->nretries == rec->cap) {
        size_t cap = rec->cap ? rec->cap * 2 : 64;
        d_requeued *grown = realloc(rec->retries, cap * sizeof(*grown));
        if (!grown) return -1;
        rec->retries = grown;
        rec->cap = cap;
    }
    rec->retries[rec->nretries++] = (d_requeued){id, at};
    return 0;
}

/* One unfinished job of the store: a running attempt waits for
 * d_jobs_adopt(), a retry for its turn in the recovery queue, any other
 * job is queued (or held) now. */
static void d_job_recover(void *ctx, json_t *row) {
    d_recovery *rec = ctx;
    d_daemon *d = rec->d;
    json_t *mem = json_object_get(row, "mem_mib");
    d_job *job = d_job_new(d_int(row, "id"), (uid_t)d_int(row, "uid"),
                           (gid_t)d_int(row, "gid"),
                           json_string_value(json_object_get(row, "user")),
                           json_string_value(json_object_get(row, "name")),
                           (int)d_int(row, "gpus"),
                           json_is_number(mem) ? json_number_value(mem) : -1,
                           d_deps_count(row));
    if (job) {
        d_deps_from_row(row, job->deps);
        job->nice = (int)d_int(row, "nice");
        job->notify = d_notify_kind_of(
            json_string_value(json_object_get(row, "notify")));
        int count, step;
        store_history_state(d->st, job->id, &count, &step);
        history_track_init(&job->hist, HISTORY_MAX_SAMPLES, count, step);
        const char *feed = json_string_value(json_object_get(row, "feed"));
        snprintf(job->feed, sizeof(job->feed), "%s", feed ? feed : "");
        job->producer = d_int(row, "feed_producer") != 0;
        job->restarts = (int)d_int(row, "feed_restarts");
        job->feed_stop = d_int(row, "feed_stop") != 0;
    }
    if (!job || d_job_add(d, job) != 0) {
        free(job);
        d_log("job %lld: out of memory while recovering",
              (long long)d_int(row, "id"));
        return;
    }
    json_t *att = json_object_get(row, "attempt");
    const char *state = json_string_value(json_object_get(row, "state"));
    job->attempts = (int)d_int(row, "attempts");
    job->retry_floor = d_number(row, "retry_floor");
    job->retry_alone = d_int(row, "retry_alone") != 0;
    job->cancel_at = d_number(row, "cancel_at"); /* 0 when null */
    d_limits_load(job, row);
    if (d_int(row, "slurm_job") > 0) {
        d_lease_load(d, job, row);
        if (strcmp(state, "running") != 0) { /* its task asks again */
            d_job_withdraw(d, job, "not granted when aegisd stopped");
            return;
        }
    }
    if (strcmp(state, "running") == 0 && att) {
        d_job_load_attempt(d, job, att);
        job->cancelling = job->cancel_at > 0; /* killed once adopted */
    } else if (job->cancel_at > 0) {
        d_job_finish(d, job, "cancelled", "cancelled while queued");
    } else if (job->attempts > 0 && !job->held &&
               d_recovery_push(rec, job->id, d_number(att, "ended")) == 0) {
        d_job_set_state(d, job, D_QUEUED);
    } else {
        d_job_enqueue(d, job); /* or a retry the list had no room for */
    }
}

/* Adopts the running attempts still outside the core, the dead ones only
 * (which then end as lost, requeued at their floor) or all that are left.
 * Dead ones go first: adopting one counts as a placement on its GPUs,
 * which must not make a live exclusive job there look shared. Attempts
 * that never started are queued again; live ones cancelled before the
 * restart are signalled again. */
static void d_jobs_adopt(d_daemon *d, bool dead_only) {
    for (size_t i = 0; i < d->njobs;) {
        d_job *job = d->jobs[i];
        int64_t id = job->id;
        exec_record rec = {.state = EXEC_LIVE};
        if (job->state == D_RUNNING && !job->in_core && !job->lease.slurm_job)
            d_job_probe(d, job, &rec); /* a lease: d_leases_recover() */
        bool alive = rec.state == EXEC_LIVE;
        if (job->state != D_RUNNING || job->in_core || (dead_only && alive)) {
            i++;
            continue;
        }
        if (rec.state == EXEC_UNSTARTED || rec.state == EXEC_ABSENT) {
            d_job_unstarted(d, job, D_STOPPED_STARTING);
        } else if (d_job_adopt(d, job) == 0) {
            if (!alive) {
                d_job_ended(d, job, &rec);
            } else {
                store_event(d->st, id, d_wall(), "attempt %d re-adopted after "
                            "a restart (pid %d)", job->attempts,
                            (int)job->job_pid);
                if (job->cancelling) d_job_cancel(d, job);
            }
        }
        i = d_job_index(d, id); /* the table may have changed */
        if (i < d->njobs && d->jobs[i]->id == id) i++;
    }
}

void d_jobs_recover(d_daemon *d) {
    d_recovery rec = {.d = d};
    store_each_active(d->st, d_job_recover, &rec);
    d_share_recover(d); /* before adoption: the core takes the instances */
    /* The recovery queue in the order its jobs were requeued; attempts
     * found dead below are requeued now, so after them. */
    if (rec.retries) /* qsort may not take NULL, even for no rows */
        qsort(rec.retries, rec.nretries, sizeof(*rec.retries), d_requeued_cmp);
    for (size_t i = 0; i < rec.nretries; i++) {
        d_job *job = d_job_find(d, rec.retries[i].id);
        if (job && !job->in_core) d_job_enqueue(d, job); /* or a producer
                                                             sleeps on */
    }
    free(rec.retries);
    d_jobs_adopt(d, true);
    d_jobs_adopt(d, false);
    exec_status_each(d->run_dir, d_status_sweep, d);
    d_leases_recover(d);
    for (int g = 0; g < d->ngpus; g++) d_gpu_note_foreign(d, g);
    d_feeds_recover(d);
    if (d->njobs > 0) d_log("recovered %zu unfinished jobs", d->njobs);
}

/* ---- Slurm leases (lease.c) ----------------------------------------------- */

d_job *d_job_lease_new(d_daemon *d, int64_t id, const store_owner *owner,
                       const char *name, const proto_lease *pl,
                       const core_retry *retry, char *err, size_t errlen) {
    d_job *job = d_job_new(id, owner->uid, owner->gid, owner->user, name,
                           pl->gpus, pl->mem_mib, 0);
    if (!job || d_job_add(d, job) != 0) {
        free(job);
        snprintf(err, errlen, "job %lld: out of memory", (long long)id);
        return NULL;
    }
    job->lease.slurm_job = pl->slurm_job;
    job->lease.restart = pl->restart;
    if (retry) { /* the attempt it is, on the ladder of its Slurm job */
        job->attempts = retry->attempt - 1;
        job->retry_floor = retry->floor_mib;
        job->retry_alone = retry->alone;
        store_job_retry(d->st, id, retry->floor_mib, retry->alone);
    }
    if (d_job_to_core(d, job, err, errlen) != 0) {
        d_job_finish(d, job, "failed", err);
        return NULL;
    }
    return job;
}

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
    if (job->in_core) core_cancel(d->core, job->id, d_now(d));
    job->in_core = false;
    store_begin(d->st);
    if (ran)
        store_attempt_end(d->st, job->id, job->attempts, "lost", -1, d_wall());
    d_job_finish(d, job, ran ? "done" : "cancelled", why);
    store_commit(d->st);
}
