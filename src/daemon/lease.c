/* lease.c -- Slurm job steps as leases: aegisd as the GPU layer under a
 * real Slurm (docs/slurm.md, "How aegisd serves Slurm jobs").
 *
 * Slurm's SPANK plugin asks, from each task of a job step, for a lease:
 * the first request of a Slurm job's run (slurm_job, restart) makes a job
 * of kind "slurm" that goes through the core like any other (the same
 * gates, placement, observation, telemetry and energy), but aegisd does
 * not start it: once the core places it, the grant (its GPUs and the
 * environment aegisd gives its own jobs, exec_job_vars) answers the
 * waiting tasks, which run on their own. Later tasks of that run share it.
 *
 * A lease ends when every process of its tasks has exited (watched with
 * pidfds, since they are not aegisd's children; D_LEASE_GRACE_S later,
 * so that the plugin's lease_exit can say how), when a task's exit is
 * classified OOM (Slurm then requeues the job, and its next run's lease
 * climbs the ladder: d_kind_lease below), or at the node's Epilog (lease_end). A
 * task that hangs up before the grant withdraws its request, and the
 * lease with it when no other task waits.
 *
 * Leases are rows of aegis.db with their tasks' pids and grant: after a
 * restart each is checked against Slurm (`scontrol listpids`): its GPUs
 * are kept and its processes watched again, or it is dropped.
 */
#include "daemon.h"
#include "jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Generations below a task its processes are looked for (d_lease_owns). */
#define D_LEASE_MAX_DEPTH 32

/* Processes one lease watches at most (tasks of a step on one node). */
#define D_LEASE_MAX_PIDS 4096

/* One process of a lease's tasks, watched through its pidfd. */
struct d_pidwatch {
    uv_poll_t poll;
    d_daemon *d;
    int64_t job_id;
    pid_t pid;
    int fd;
};

static const char *const class_names[] = {
    [CORE_EXIT_OK] = "ok", [CORE_EXIT_OOM] = "oom",
    [CORE_EXIT_FAILED] = "failed", [CORE_EXIT_LOST] = "lost",
};

/* How bad a task's exit is: a lease ends with its worst one. */
static int d_exit_rank(core_exit how) {
    return how == CORE_EXIT_OOM ? 2 : how == CORE_EXIT_OK ? 0 : 1;
}

static int d_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The unfinished lease job of a Slurm job's run, or NULL. */
static d_job *d_lease_find(d_daemon *d, uint32_t slurm_job, int restart) {
    for (size_t i = 0; i < d->njobs; i++)
        if (d->jobs[i]->lease.slurm_job == slurm_job &&
            d->jobs[i]->lease.restart == restart)
            return d->jobs[i];
    return NULL;
}

/* Whether a connection waits for the grant of job id. */
static bool d_lease_waited(const d_daemon *d, int64_t id) {
    for (const d_conn *c = d->conns; c; c = c->next)
        if (c->lease_id == id) return true;
    return false;
}

/* ---- the processes of a lease --------------------------------------------- */

static void on_watch_closed(uv_handle_t *h) {
    d_pidwatch *w = h->data;
    close(w->fd);
    free(w);
}

/* Stops watching process i of the lease. */
static void d_lease_unwatch(d_lease *l, size_t i) {
    d_pidwatch *w = l->pids[i];
    uv_poll_stop(&w->poll);
    uv_close((uv_handle_t *)&w->poll, on_watch_closed);
    l->pids[i] = l->pids[--l->npids];
}

static size_t d_lease_pid_index(const d_lease *l, pid_t pid) {
    size_t i = 0;
    while (i < l->npids && l->pids[i]->pid != pid) i++;
    return i;
}

/* The lease's processes as the store keeps them: "12,13". */
static void d_lease_save_pids(d_daemon *d, const d_job *job) {
    char text[D_LEASE_MAX_PIDS * 8] = "";
    size_t at = 0;
    for (size_t i = 0; i < job->lease.npids && at < sizeof(text); i++) {
        int w = snprintf(text + at, sizeof(text) - at, "%s%d", i ? "," : "",
                         (int)job->lease.pids[i]->pid);
        if (w > 0) at += (size_t)w;
    }
    store_lease_pids(d->st, job->id, text);
}

static void on_pid_exit(uv_poll_t *h, int status, int events) {
    d_pidwatch *w = h->data;
    d_daemon *d = w->d;
    d_job *job = d_job_find(d, w->job_id); /* watchers close with it */
    if (!job) return;
    size_t i = d_lease_pid_index(&job->lease, w->pid);
    if (i == job->lease.npids) return;
    store_begin(d->st);
    store_event(d->st, job->id, d_wall(), "process %d of Slurm job %u ended",
                (int)w->pid, job->lease.slurm_job);
    d_lease_unwatch(&job->lease, i);
    d_lease_save_pids(d, job);
    store_commit(d->st);
    if (job->lease.npids == 0) job->lease.gone_at = d_now(d);
}

/* Watches process pid (fd: its pidfd, taken) as one of the lease's: 0, or
 * -1 with why in err (fd closed). A process watched already is kept once. */
static int d_lease_watch(d_daemon *d, d_job *job, pid_t pid, int fd,
                         char *err, size_t errlen) {
    d_lease *l = &job->lease;
    if (d_lease_pid_index(l, pid) < l->npids) {
        close(fd);
        return 0;
    }
    if (l->npids == D_LEASE_MAX_PIDS) {
        snprintf(err, errlen, "job %lld: %d processes watched already",
                 (long long)job->id, D_LEASE_MAX_PIDS);
        close(fd);
        return -1;
    }
    if (l->npids == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        d_pidwatch **grown = realloc(l->pids, cap * sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "job %lld: out of memory", (long long)job->id);
            close(fd);
            return -1;
        }
        l->pids = grown;
        l->cap = cap;
    }
    d_pidwatch *w = calloc(1, sizeof(*w));
    int rc = w ? uv_poll_init(d->loop, &w->poll, fd) : UV_ENOMEM;
    if (rc != 0) {
        snprintf(err, errlen, "job %lld: watching pid %d: %s",
                 (long long)job->id, (int)pid, uv_strerror(rc));
        free(w);
        close(fd);
        return -1;
    }
    w->d = d;
    w->job_id = job->id;
    w->pid = pid;
    w->fd = fd;
    w->poll.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_pid_exit);
    l->pids[l->npids++] = w;
    l->gone_at = 0;
    return 0;
}

/* Watches pid when it exists: 0, or -1 with why. */
static int d_lease_watch_pid(d_daemon *d, d_job *job, pid_t pid, char *err,
                             size_t errlen) {
    int fd = d_pidfd_open(pid);
    if (fd < 0) {
        snprintf(err, errlen, "pid %d: %s", (int)pid, strerror(errno));
        return -1;
    }
    return d_lease_watch(d, job, pid, fd, err, errlen);
}

/* ---- grant and end --------------------------------------------------------- */

/* The grant's answer: the job, its GPUs, its environment. */
static json_t *d_lease_answer(const d_job *job) {
    json_t *gpus = json_array();
    for (int k = 0; k < job->ngpus; k++)
        json_array_append_new(gpus, json_integer(job->gpus[k]));
    return json_pack("{s:b, s:I, s:o, s:O}", "ok", 1, "id",
                     (json_int_t)job->id, "gpus", gpus, "env", job->lease.env);
}

int d_lease_grant(d_daemon *d, d_job *job, const char *visible,
                  const d_share_start *ss, exec_run *run, char *err,
                  size_t errlen) {
    exec_spec spec = {.id = job->id, .attempt = job->attempts + 1,
                      .visible = visible, .extra_env = ss->env};
    size_t n = 0;
    char **vars = exec_job_vars(&spec, &n);
    json_t *env = json_array();
    for (size_t i = 0; vars && i < n; i++)
        json_array_append_new(env, json_string(vars[i]));
    exec_job_vars_free(vars);
    char *text = vars ? json_dumps(env, JSON_COMPACT) : NULL;
    if (!text) {
        json_decref(env);
        snprintf(err, errlen, "job %lld: out of memory", (long long)job->id);
        return -1;
    }
    store_lease_env(d->st, job->id, text);
    free(text);
    json_decref(job->lease.env);
    job->lease.env = env;
    memset(run, 0, sizeof(*run));
    run->job_pid = job->lease.npids ? job->lease.pids[0]->pid : 0; /* shown */
    return 0;
}

bool d_lease_owns(const d_job *job, pid_t pid) {
    /* a task need not lead its own session (slurmstepd decides): its
     * processes are the tasks and their descendants */
    for (int depth = 0; pid > 1 && depth < D_LEASE_MAX_DEPTH; depth++) {
        if (d_lease_pid_index(&job->lease, pid) < job->lease.npids)
            return true;
        pid = exec_parent(pid);
    }
    return false;
}

void d_lease_granted(d_daemon *d, d_job *job) {
    for (d_conn *c = d->conns; c; c = c->next) {
        if (c->lease_id != job->id) continue;
        c->lease_id = 0;
        c->lease_pid = 0;
        d_conn_answer_later(c, d_lease_answer(job));
    }
}

void d_lease_finish(d_daemon *d, d_job *job, const char *state,
                    const char *reason) {
    for (d_conn *c = d->conns; c; c = c->next) {
        if (c->lease_id != job->id) continue;
        c->lease_id = 0;
        c->lease_pid = 0;
        char why[512];
        snprintf(why, sizeof(why), "lease not granted: job %lld %s: %s",
                 (long long)job->id, state, reason);
        d_conn_answer_later(c, json_pack("{s:b, s:s}", "ok", 0, "error", why));
    }
    while (job->lease.npids > 0) d_lease_unwatch(&job->lease, 0);
    free(job->lease.pids);
    job->lease.pids = NULL;
    job->lease.cap = 0;
    json_decref(job->lease.env);
    job->lease.env = NULL;
}

/* A lease all of whose tasks are done: settled with their worst exit, or
 * withdrawn when it was never granted. */
static void d_lease_end(d_daemon *d, d_job *job, const char *why) {
    d_lease *l = &job->lease;
    if (job->state == D_RUNNING)
        d_job_lease_settle(d, job, l->how, l->how == CORE_EXIT_OK ? 0 : l->status,
                           l->why[0] ? l->why : why);
    else
        d_job_withdraw(d, job, why);
}

void d_leases_tick(d_daemon *d) {
    double now = d_now(d);
    for (size_t i = 0; i < d->njobs; i++) {
        d_job *job = d->jobs[i];
        if (!job->lease.slurm_job || job->lease.gone_at <= 0 ||
            now - job->lease.gone_at < D_LEASE_GRACE_S ||
            d_lease_waited(d, job->id))
            continue;
        d_lease_end(d, job, "its processes have exited");
        i--; /* it left the table */
    }
}

void d_lease_conn_gone(d_daemon *d, d_conn *c) {
    d_job *job = d_job_find(d, c->lease_id);
    pid_t pid = c->lease_pid;
    c->lease_id = 0;
    c->lease_pid = 0;
    if (!job || job->state == D_RUNNING) return;
    size_t i = d_lease_pid_index(&job->lease, pid);
    if (i < job->lease.npids) d_lease_unwatch(&job->lease, i);
    if (d_lease_waited(d, job->id)) {
        d_lease_save_pids(d, job);
        return;
    }
    d_job_withdraw(d, job, "its Slurm task hung up before the grant");
}

/* ---- Slurm --------------------------------------------------------------- */

static void d_lease_requeued(d_daemon *d, int64_t id, int status,
                             const char *out) {
    d_job *job = d_job_find(d, id);
    json_t *row = job ? NULL : store_job(d->st, id, false);
    long long slurm_job = job ? job->lease.slurm_job
                              : json_integer_value(json_object_get(row,
                                                                   "slurm_job"));
    json_decref(row);
    if (status == 0) {
        d_log("job %lld: Slurm job %lld requeued after its OOM", (long long)id,
              slurm_job);
        return;
    }
    d_log("job %lld: `%s requeue %lld` failed (exit %d): Slurm job not "
          "requeued", (long long)id, d->keys.slurm_scontrol, slurm_job, status);
    store_event(d->st, id, d_wall(), "scontrol requeue %lld failed (exit %d)",
                slurm_job, status);
}

void d_lease_requeue(d_daemon *d, const d_job *job) {
    d_scontrol(d, "requeue", job->lease.slurm_job, job->id, d_lease_requeued);
}

/* `scontrol listpids`'s pids (its first column) in out into pids (room for
 * max): how many. */
static size_t d_listed_pids(const char *out, pid_t *pids, size_t max) {
    size_t n = 0;
    for (const char *line = out; *line && n < max;) {
        char *end;
        long pid = strtol(line, &end, 10);
        if (end != line && pid > 0 && pid <= INT32_MAX &&
            (*end == ' ' || *end == '\t' || *end == '\n' || !*end))
            pids[n++] = (pid_t)pid;
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : line + strlen(line);
    }
    return n;
}

static bool d_pid_listed(const pid_t *pids, size_t n, pid_t pid) {
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid) return true;
    return false;
}

/* listpids answered for a lease found at start: kept with its processes
 * that Slurm still lists (or else all it lists), or dropped. */
static void d_lease_listed(d_daemon *d, int64_t id, int status,
                           const char *out) {
    d_job *job = d_job_find(d, id);
    if (!job || !job->lease.slurm_job) return;
    static pid_t pids[D_LEASE_MAX_PIDS];
    size_t n = status == 0 ? d_listed_pids(out, pids, D_LEASE_MAX_PIDS) : 0;
    if (n == 0) {
        char why[160];
        snprintf(why, sizeof(why), "dropped at aegisd's start: Slurm job %u "
                 "is gone (scontrol listpids: %s)", job->lease.slurm_job,
                 status == 0 ? "no processes" : "failed");
        d_log("job %lld: %s", (long long)id, why);
        d_job_withdraw(d, job, why);
        d_jobs_schedule(d);
        return;
    }
    d_lease *l = &job->lease;
    for (size_t i = 0; i < l->npids;)
        if (d_pid_listed(pids, n, l->pids[i]->pid)) i++;
        else d_lease_unwatch(l, i);
    char err[256];
    for (size_t i = 0; l->npids == 0 && i < n; i++)
        d_lease_watch_pid(d, job, pids[i], err, sizeof(err));
    d_log("job %lld: lease of Slurm job %u kept after a restart: %zu "
          "processes watched", (long long)id, l->slurm_job, l->npids);
    store_begin(d->st);
    store_event(d->st, id, d_wall(), "kept after a restart: Slurm job %u "
                "runs, %zu processes watched", l->slurm_job, l->npids);
    d_lease_save_pids(d, job);
    store_commit(d->st);
    if (l->npids == 0) l->gone_at = d_now(d);
}

void d_lease_load(d_daemon *d, d_job *job, json_t *row) {
    job->lease.slurm_job = (uint32_t)json_integer_value(
        json_object_get(row, "slurm_job"));
    job->lease.restart = (int)json_integer_value(
        json_object_get(row, "slurm_restart"));
    json_t *env = json_object_get(row, "slurm_env");
    if (json_is_array(env)) job->lease.env = json_incref(env);
    const char *text = json_string_value(json_object_get(row, "slurm_pids"));
    char err[256];
    for (const char *p = text; p && *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p) break;
        if (pid > 0 && pid <= INT32_MAX)
            d_lease_watch_pid(d, job, (pid_t)pid, err, sizeof(err));
        p = *end == ',' ? end + 1 : end;
    }
}

void d_leases_recover(d_daemon *d) {
    /* a run that cannot start answers at once, and may drop its lease:
     * the table is walked by id */
    for (size_t i = 0; i < d->njobs; i++) {
        d_job *job = d->jobs[i];
        int64_t id = job->id;
        if (!job->lease.slurm_job || job->state != D_RUNNING) continue;
        d_scontrol(d, "listpids", job->lease.slurm_job, id, d_lease_listed);
        while (i < d->njobs && d->jobs[i]->id > id) i--;
    }
}

void d_leases_close(d_daemon *d) {
    for (size_t i = 0; i < d->njobs; i++) {
        d_lease *l = &d->jobs[i]->lease;
        while (l->npids > 0) d_lease_unwatch(l, 0);
        free(l->pids);
        l->pids = NULL;
        json_decref(l->env);
        l->env = NULL;
    }
}

/* ---- the ops --------------------------------------------------------------- */

/* Only root may speak for Slurm (the plugin runs in slurmstepd, as root):
 * answers the error itself when the peer is not. */
static bool d_slurm_peer(d_conn *c, const char *op) {
    if (c->uid == 0) return true;
    d_reply_error(c, "%s: only root (Slurm's plugin in slurmstepd) may send "
                  "it, not uid %d", op, (int)c->uid);
    return false;
}

/* A new lease job (store row id) of owner, named name, queued in the
 * core; with retry, at the ladder's place of the Slurm job's earlier run.
 * NULL when it ended at once (the core refused it) or out of memory, with
 * why in err. */
static d_job *d_lease_job_new(d_daemon *d, int64_t id,
                              const store_owner *owner, const char *name,
                              const proto_lease *pl, const core_retry *retry,
                              char *err, size_t errlen) {
    d_job *job = d_job_create(d, id, owner, name, pl->gpus, pl->mem_mib,
                              &d_kind_lease, err, errlen);
    if (!job) return NULL;
    job->lease.slurm_job = pl->slurm_job;
    job->lease.restart = pl->restart;
    return d_job_submit_at(d, job, retry, err, errlen) == 0 ? job : NULL;
}

/* A new lease job for the first task of a Slurm job's run: in the store,
 * then in the core, where a run after an OOM takes up the ladder. NULL
 * with why (fault: aegisd's, not the request's). */
static d_job *d_lease_new(d_daemon *d, const proto_lease *pl, char *err,
                          size_t errlen, bool *fault) {
    char user[64], label[32];
    store_owner owner = {.uid = (uid_t)pl->uid, .gid = (gid_t)pl->uid,
                         .user = user};
    d_user_name(owner.uid, user, sizeof(user), &owner.gid);
    snprintf(label, sizeof(label), "slurm:%u", pl->slurm_job);
    const char *argv[] = {label, NULL}, *env[] = {NULL};
    proto_job pj = {.argv = argv, .argc = 1, .feed = "", .gpus = pl->gpus,
                    .mem_mib = pl->mem_mib,
                    .name = pl->name[0] ? pl->name : label};
    proto_request req = {.op = PROTO_SUBMIT, .cwd = "/", .env = env,
                         .umask = -1, .jobs = &pj, .njobs = 1};
    store_lease sl = {.slurm_job = pl->slurm_job, .restart = pl->restart,
                      .mode = pl->mode};
    int64_t id;
    *fault = store_lease_submit(d->st, &owner, &req, &sl, d_wall(), &id, err,
                                errlen) != 0;
    if (*fault) return NULL;
    /* mode exclusive: the job runs alone, as one that climbed the whole
     * ladder; the other modes are the GPUs' (aegis.yaml's sharing) */
    bool exclusive = strcmp(pl->mode, "exclusive") == 0;
    core_retry r = {.attempt = 1};
    bool climb = pl->restart > 0 &&
                 store_ladder_get(d->st, pl->slurm_job, &r.attempt,
                                  &r.floor_mib, &r.alone);
    r.alone = r.alone || exclusive;
    store_begin(d->st);
    store_event(d->st, id, d_wall(), "lease of Slurm job %u, restart %d, "
                "mode %s%s", pl->slurm_job, pl->restart, pl->mode,
                climb ? ", on its ladder after an OOM" : "");
    d_job *job = d_lease_job_new(d, id, &owner, pj.name, pl,
                                 climb || r.alone ? &r : NULL, err, errlen);
    store_commit(d->st);
    return job;
}

/* Whether the node can run a lease of this mode as a direct submit would
 * run: a submit does not choose how its GPU is shared (aegis.yaml's
 * sharing, per GPU), so a lease asking mps or mig is taken only where
 * every GPU shares that way, wherever the core places it. 0, or -1 with
 * the GPUs' modes in err. */
static int d_lease_mode_fits(const d_daemon *d, const char *mode, char *err,
                             size_t errlen) {
    int want = share_mode_parse(mode);
    if (want != SHARE_MPS && want != SHARE_MIG) return 0;
    int len = snprintf(err, errlen, "mode %s: ", mode), bad = 0;
    for (int g = 0; g < d->ngpus && len >= 0 && (size_t)len < errlen; g++) {
        if (d->gpus[g].mode == (share_mode)want) continue;
        len += snprintf(err + len, errlen - (size_t)len, "%sGPU %d shares as %s",
                        bad++ ? ", " : "", g, share_mode_name(d->gpus[g].mode));
    }
    if (!bad) return 0;
    if (len >= 0 && (size_t)len < errlen)
        snprintf(err + len, errlen - (size_t)len, " (sharing in aegis.yaml); "
                 "a lease asking %s needs every GPU of the node to share "
                 "that way", mode);
    return -1;
}

/* Whether a later task or step of a run asks more memory than the run's
 * lease (job) has: it shares that lease, which has no more for it (the
 * job's GRES aegis_mem, which Slurm counted, is the lease's memory too),
 * so it is refused rather than given less than it asked. */
static bool d_lease_outgrown(const d_job *job, const proto_lease *pl,
                             char *err, size_t errlen) {
    if (job->mem_mib <= 0 || pl->mem_mib <= job->mem_mib) return false;
    snprintf(err, errlen, "Slurm job %u's lease (job %lld) has %.0f MiB on "
             "one GPU, shared by its tasks and steps; this one asks %.0f "
             "(--aegis-mem): a step cannot have more than its job, ask the "
             "job for it (sbatch --aegis-mem)", pl->slurm_job,
             (long long)job->id, job->mem_mib, pl->mem_mib);
    return true;
}

void d_on_lease(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    const proto_lease *pl = &req->lease;
    char err[512];
    if (!d_slurm_peer(c, "lease") || d_refuse_unwritable(c)) return;
    if (d_lease_mode_fits(d, pl->mode, err, sizeof(err)) != 0 ||
        d_job_fits(d, pl->gpus, pl->mem_mib, "", err, sizeof(err)) != 0) {
        d_reply_error(c, "lease: %s", err);
        return;
    }
    int fd = d_pidfd_open((pid_t)pl->pid);
    if (fd < 0) {
        d_reply_error(c, "lease: pid %lld: %s", (long long)pl->pid,
                      strerror(errno));
        return;
    }
    d_job *job = d_lease_find(d, pl->slurm_job, pl->restart);
    if (job && d_lease_outgrown(job, pl, err, sizeof(err))) {
        close(fd);
        d_reply_error(c, "lease: %s", err);
        return;
    }
    bool fault = false;
    if (!job) job = d_lease_new(d, pl, err, sizeof(err), &fault);
    if (!job) {
        close(fd);
        if (fault) d_reply_fault(c, "lease: %s", err);
        else d_reply_error(c, "lease: %s", err);
        return;
    }
    store_begin(d->st);
    int rc = d_lease_watch(d, job, (pid_t)pl->pid, fd, err, sizeof(err));
    d_lease_save_pids(d, job);
    store_commit(d->st);
    if (rc != 0) {
        d_reply_fault(c, "lease: %s", err);
    } else if (job->state == D_RUNNING) { /* another task's, granted */
        d_reply(c, d_lease_answer(job));
    } else {
        c->lease_id = job->id;
        c->lease_pid = (pid_t)pl->pid;
        d_jobs_schedule(d);
    }
}

void d_on_lease_exit(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    const proto_lease *pl = &req->lease;
    if (!d_slurm_peer(c, "lease_exit")) return;
    char why[256];
    d_job *job = d_lease_find(d, pl->slurm_job, pl->restart);
    const oom_gpu_mem *mem = NULL;
    int nmem = job ? d_job_oom_readings(d, job, &mem) : 0;
    core_exit how = exec_classify_checked(pl->status, pl->stderr_tail,
                                          strlen(pl->stderr_tail), mem, nmem,
                                          why, sizeof(why));
    d_reply(c, json_pack("{s:b, s:s}", "ok", 1, "class", class_names[how]));
    if (!job) {
        d_log("Slurm job %u, restart %d: task pid %lld ended (%s) with no "
              "lease", pl->slurm_job, pl->restart, (long long)pl->pid, why);
        return;
    }
    d_lease *l = &job->lease;
    size_t i = d_lease_pid_index(l, (pid_t)pl->pid);
    store_begin(d->st);
    store_event(d->st, job->id, d_wall(), "task pid %lld of Slurm job %u "
                "ended: %s", (long long)pl->pid, l->slurm_job, why);
    if (i < l->npids) {
        d_lease_unwatch(l, i);
        d_lease_save_pids(d, job);
    }
    store_commit(d->st);
    if (d_exit_rank(how) >= d_exit_rank(l->how)) {
        l->how = how;
        l->status = pl->status;
        snprintf(l->why, sizeof(l->why), "%s", why);
    }
    if (how == CORE_EXIT_OOM && job->state == D_RUNNING)
        d_lease_end(d, job, why);
    else if (l->npids == 0 && !d_lease_waited(d, job->id))
        d_lease_end(d, job, why);
    d_jobs_schedule(d);
}

void d_on_lease_end(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    uint32_t slurm_job = req->lease.slurm_job;
    size_t n = 0;
    int64_t *ids = malloc((d->njobs + 1) * sizeof(*ids));
    if (!ids) {
        d_reply_fault(c, "lease_end: out of memory");
        return;
    }
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        if (job->lease.slurm_job != slurm_job) continue;
        if (c->uid != 0 && c->uid != job->uid) {
            d_reply_error(c, "lease_end: Slurm job %u: permission denied: "
                          "only its owner or root may end its lease",
                          slurm_job);
            free(ids);
            return;
        }
        ids[n++] = job->id;
    }
    for (size_t i = 0; i < n; i++) {
        d_job *job = d_job_find(d, ids[i]);
        if (job) d_lease_end(d, job, "its Slurm job ended (lease_end)");
    }
    free(ids);
    d_reply(c, json_pack("{s:b, s:I}", "ok", 1, "ended", (json_int_t)n));
    d_jobs_schedule(d);
}

/* ---- the lease as a kind of job (d_job_kind) -------------------------------- */

/* A stored row is a lease's when it names its Slurm job; a lease made
 * now takes its kind from d_lease_job_new(). */
static bool d_lease_claims(const d_job *job, json_t *row) {
    return row && json_integer_value(json_object_get(row, "slurm_job")) > 0;
}

/* Its pids and grant back after a restart; one not granted then is
 * withdrawn: its task asks again. */
static bool d_lease_kind_load(d_daemon *d, d_job *job, json_t *row,
                              const char *state) {
    d_lease_load(d, job, row);
    if (strcmp(state, "running") == 0) return true;
    d_job_withdraw(d, job, "not granted when aegisd stopped");
    return false;
}

/* The Slurm task runs it: the grant answers the tasks waiting. */
static int d_lease_kind_grant(d_daemon *d, d_job *job, json_t *row,
                              const char *visible, d_share_start *ss,
                              exec_run *run, char *err, size_t errlen) {
    return d_lease_grant(d, job, visible, ss, run, err, errlen);
}

/* A lease that ran out of memory: Slurm runs the job again (scontrol
 * requeue), and its next run's lease starts at the ladder's place r, kept
 * by Slurm job. This lease ends here. */
static bool d_lease_kind_requeue(d_daemon *d, d_job *job, const core_retry *r,
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
    return true;
}

/* Its tasks' processes are watched here (pidfds), not by jobs_run.c. */
const d_job_kind d_kind_lease = {
    .name = "slurm", .watched = false, .claims = d_lease_claims,
    .load = d_lease_kind_load, .grant = d_lease_kind_grant,
    .granted = d_lease_granted, .owns = d_lease_owns,
    .requeue = d_lease_kind_requeue, .finish = d_lease_finish,
};
