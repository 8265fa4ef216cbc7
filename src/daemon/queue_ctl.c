/* queue_ctl.c -- the queue's control, as Slurm's scontrol update, sprio
 * and sshare give it: `aegis update` changes a waiting job; `aegis
 * priority` and `aegis fairshare` show the priorities aegis-plus orders
 * the queue by, as the core computes them (core_job_priority(),
 * core_fairshare()); `aegis clear` takes a user's finished jobs out of
 * their listings, as task-spooler's tsp -C does.
 *
 * Who may do what: anyone may read the priorities and the usage (the
 * queue and its users are public, as `ls` shows them). A job's owner may
 * change its name and memory, and only lower its priority (a larger
 * nice) or its time limit; root may raise either, as Slurm lets only an
 * operator raise a job's priority or limit.
 */
#include "daemon.h"
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the owner's request would raise its job's priority or limit,
 * which only root may: its why in err. */
static bool d_update_raises(const d_job *job, const proto_update *u,
                            char *err, size_t errlen) {
    if (u->has_nice && u->nice < job->nice) {
        snprintf(err, errlen, "job %lld: nice %d would raise its priority "
                 "(now nice %d): only root may", (long long)job->id, u->nice,
                 job->nice);
        return true;
    }
    bool limited = job->time_limit_s > 0;
    if (u->has_time && limited && u->time_limit_s > job->time_limit_s) {
        snprintf(err, errlen, "job %lld: time_limit_s %.0f would raise its "
                 "limit (now %.0f s): only root may", (long long)job->id,
                 u->time_limit_s, job->time_limit_s);
        return true;
    }
    return false;
}

/* The job the update names, waiting and the peer's to change: NULL after
 * answering why not. */
static d_job *d_update_target(d_conn *c, const proto_request *req) {
    char err[512];
    if (d_may_act(c, req->ids[0], "update", err, sizeof(err)) != 0) {
        d_reply_error(c, "%s", err);
        return NULL;
    }
    d_job *job = d_job_find(c->d, req->ids[0]);
    if (job->state == D_RUNNING) {
        d_reply_error(c, "job %lld: running; only a queued or held job can "
                      "be updated", (long long)job->id);
        return NULL;
    }
    if (c->uid != 0 && d_update_raises(job, &req->update, err, sizeof(err))) {
        d_reply_error(c, "%s", err);
        return NULL;
    }
    if (req->update.has_mem &&
        d_job_fits(c->d, job->num_gpus, req->update.mem_mib, "update.", err,
                   sizeof(err)) != 0) {
        d_reply_error(c, "%s", err);
        return NULL;
    }
    return job;
}

/* Sets the job's new values, in the table, the store and the core. */
static void d_update_apply(d_daemon *d, d_job *job, const proto_update *u,
                           const char *by) {
    if (u->has_time) job->time_limit_s = u->time_limit_s;
    if (u->has_nice) job->nice = u->nice;
    if (u->has_mem) job->mem_mib = u->mem_mib;
    if (u->name) snprintf(job->name, sizeof(job->name), "%s", u->name);
    store_begin(d->st);
    store_job_update(d->st, job->id, job->time_limit_s, job->nice,
                     job->mem_mib, job->name);
    char limit[32] = "none", mem[32] = "not given";
    if (job->time_limit_s > 0)
        snprintf(limit, sizeof(limit), "%.0f s", job->time_limit_s);
    if (job->mem_mib >= 0) snprintf(mem, sizeof(mem), "%.0f MiB", job->mem_mib);
    store_event(d->st, job->id, d_wall(), "updated by %s: time limit %s, "
                "nice %d, memory %s, name '%s'", by, limit, job->nice, mem,
                job->name);
    store_commit(d->st);
    if (job->in_core) {
        core_job_spec spec = d_job_spec(d, job);
        core_job_update(d->core, job->id, &spec);
    }
}

void d_on_update(d_conn *c, const proto_request *req) {
    if (d_refuse_unwritable(c)) return;
    d_job *job = d_update_target(c, req);
    if (!job) return;
    char user[64];
    d_user_name(c->uid, user, sizeof(user), NULL);
    d_update_apply(c->d, job, &req->update, user);
    /* null for "none", as ls and show give them (0 and -1 inside) */
    d_reply(c, json_pack("{s:b, s:I, s:o, s:i, s:o, s:s}", "ok", 1, "id",
                         (json_int_t)job->id, "time_limit_s",
                         job->time_limit_s > 0 ? json_real(job->time_limit_s)
                                               : json_null(),
                         "nice", job->nice, "mem_mib",
                         job->mem_mib >= 0 ? json_real(job->mem_mib)
                                           : json_null(),
                         "name", job->name));
    d_jobs_schedule(c->d);
}

/* One queued job's row of `aegis priority`. */
static json_t *d_priority_row(const d_job *job, const core_priority *p) {
    return json_pack("{s:I, s:s, s:f, s:f, s:i, s:f}", "id",
                     (json_int_t)job->id, "user", job->user, "priority",
                     p->priority, "fair_share", p->fair_share, "nice",
                     p->nice, "head_start_s", p->head_start_s);
}

void d_on_priority(d_conn *c, const proto_request *req) {
    (void)req;
    d_daemon *d = c->d;
    json_t *jobs = json_array();
    double now = d_now(d);
    for (size_t i = 0; i < d->njobs; i++) {
        core_priority p;
        const d_job *job = d->jobs[i];
        if (job->in_core && job->state == D_QUEUED &&
            core_job_priority(d->core, job->id, now, &p) == 0)
            json_array_append_new(jobs, d_priority_row(job, &p));
    }
    d_reply(c, json_pack("{s:b, s:s, s:b, s:i, s:o}", "ok", 1, "policy",
                         d->cfg.policy, "priorities",
                         core_has_priorities(d->core), "nice_max",
                         CORE_NICE_MAX, "jobs", jobs));
}

/* One user's row of `aegis fairshare`. */
static json_t *d_fairshare_row(const core_user_usage *u) {
    char user[64];
    d_user_name((uid_t)u->uid, user, sizeof(user), NULL);
    return json_pack("{s:I, s:s, s:f, s:f, s:f, s:f, s:i, s:i}", "uid",
                     (json_int_t)u->uid, "user", user, "usage_gpu_s",
                     u->raw_gpu_s, "decayed_gpu_s", u->decayed_gpu_s,
                     "share_gpu_s", u->share_gpu_s, "factor", u->factor,
                     "running", u->running_jobs, "queued", u->queued_jobs);
}

void d_on_fairshare(d_conn *c, const proto_request *req) {
    (void)req;
    d_daemon *d = c->d;
    int n = core_fairshare(d->core, d_now(d), NULL, 0);
    core_user_usage *users = calloc((size_t)n + 1, sizeof(*users));
    if (!users) {
        d_reply_fault(c, "fairshare: out of memory");
        return;
    }
    n = core_fairshare(d->core, d_now(d), users, n);
    json_t *rows = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(rows, d_fairshare_row(&users[i]));
    free(users);
    d_reply(c, json_pack("{s:b, s:s, s:b, s:f, s:o}", "ok", 1, "policy",
                         d->cfg.policy, "priorities",
                         core_has_priorities(d->core), "half_life_s",
                         d->cfg.fairshare_half_life_s, "users", rows));
}

/* Each user clears their own jobs only; a report still counts them. */
void d_on_clear(d_conn *c, const proto_request *req) {
    (void)req;
    if (d_refuse_unwritable(c)) return;
    int64_t n = store_clear(c->d->st, c->uid);
    if (n < 0) {
        d_reply_fault(c, "clear: %s", store_failure(c->d->st));
        return;
    }
    d_reply(c, json_pack("{s:b, s:I}", "ok", 1, "cleared", (json_int_t)n));
}
