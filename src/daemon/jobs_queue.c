/* jobs_queue.c -- a job joins aegisd: submitted (or made by its kind,
 * a Slurm lease), held for its --after jobs, queued in the core; and its
 * end, when it leaves the table and its waiters and dependents hear.
 */
#include "daemon.h"
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- queueing ------------------------------------------------------------- */

/* Job id's dependents hear that it ended: each held one is enqueued
 * again, which may start it, keep it held, or finish it in turn. */
static void d_dependents_hear(d_daemon *d, int64_t id) {
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
}

/* Remembers that a job ended, for d_tell_ended(); false when out of
 * memory. */
static bool d_ended_push(d_daemon *d, int64_t id, int64_t producer_id) {
    if (d->nended == d->capended) {
        size_t cap = d->capended ? d->capended * 2 : 64;
        d_ended *grown = realloc(d->ended, cap * sizeof(*grown));
        if (!grown) return false;
        d->ended = grown;
        d->capended = cap;
    }
    d->ended[d->nended++] = (d_ended){id, producer_id};
    return true;
}

/* Job id's dependents and its feed's producer (producer_id, 0: none)
 * hear that it ended. */
static void d_ended_tell(d_daemon *d, int64_t id, int64_t producer_id) {
    d_dependents_hear(d, id);
    if (producer_id) d_feed_consumer_left(d, d_job_find(d, producer_id));
}

/* The dependents and feed producers of the jobs that ended hear of it,
 * one job after another: a job they finish in turn (a chain of 20,000
 * afterok jobs whose head is cancelled) joins the list rather than the
 * stack, which recursion overflowed. */
static void d_tell_ended(d_daemon *d) {
    d->telling_ended = true;
    while (d->ended_head < d->nended) {
        d_ended e = d->ended[d->ended_head++];
        d_ended_tell(d, e.id, e.producer_id);
    }
    d->ended_head = d->nended = 0;
    d->telling_ended = false;
}

/* A finished job leaves the table; its waiters and dependents hear of it,
 * and its feed's producer when it was the feed's last consumer. */
void d_job_finish(d_daemon *d, d_job *job, const char *state,
                  const char *reason) {
    d->gpus_changes++; /* the front's copy may be behind (front.h) */
    int64_t id = job->id;
    const d_job *producer = d_feed_producer_for(d, job);
    int64_t producer_id = producer ? producer->id : 0;
    double now = d_wall(), at = d_job_end_time(job, now);
    store_begin(d->st);
    store_energy e = d_job_energy(job);
    store_job_energy(d->st, id, &e);
    store_job_state(d->st, id, state, reason, at);
    store_event(d->st, id, now, "%s: %s", state, reason);
    d_notify_job_end(d, job, state, reason);
    store_commit(d->st);
    d_unsaved_add(d, id, state, reason);
    /* the counter starts from 0 at each start of aegisd: what it drew
     * before this one took it was counted by the one before */
    metrics_count_finished(&d->counts, job->user, state,
                           job->energy_j - job->energy_from_j);
    if (job->kind->finish) job->kind->finish(d, job, state, reason);
    d_job_remove(d, job);
    if (d->job_done) d->job_done(d, id, state, reason);
    if (!d_ended_push(d, id, producer_id)) {
        /* out of memory: tell this one at once, as deep as it goes */
        d_ended_tell(d, id, producer_id);
        return;
    }
    if (!d->telling_ended) d_tell_ended(d);
}

core_job_spec d_job_spec(d_daemon *d, const d_job *job) {
    core_job_spec spec = {
        .id = job->id, .num_gpus = job->num_gpus,
        .est_mib = job->mem_mib >= 0 ? job->mem_mib : CORE_UNKNOWN,
        .mem_declared = job->mem_mib >= 0, /* --mem: the user's own figure */
        .peak_mib = CORE_UNKNOWN, .util_pct = CORE_UNKNOWN,
        .sharing_score = -1, .user = (uint32_t)job->uid, .nice = job->nice,
        .feed = job->feed, .feed_producer = job->producer,
        .feed_owner = job->feed[0] ? (uint32_t)d_feed_owner(d, job) : 0,
        .time_limit_s = job->time_limit_s,
        /* the CPUs its cgroup may use: aegis-plus counts them */
        .cpus = d_job_cpus(d, job),
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
    if (job->held || (job->kind->dormant && job->kind->dormant(d, job))) {
        d_job_set_state(d, job, D_HELD);
        return;
    }
    if (job->kind->outside) { /* no GPU: no placement to wait for */
        d_job_start_outside(d, job);
        return;
    }
    char err[256];
    if (d_job_to_core(d, job, err, sizeof(err)) != 0)
        d_job_finish(d, job, "failed", err);
}

/* Whether job is held out a back-off that is over at now. */
static bool d_job_restart_due(const d_job *job, double now) {
    return job->state == D_HELD && !job->held && !job->cancel_queued &&
           job->restart_at > 0 && job->restart_at <= now;
}

void d_jobs_restart_due(d_daemon *d) {
    double now = d_now(d);
    for (size_t i = 0; i < d->njobs;) {
        d_job *job = d->jobs[i];
        if (!d_job_restart_due(job, now)) {
            i++;
            continue;
        }
        int64_t id = job->id;
        job->restart_at = 0;
        d_job_enqueue(d, job);
        i = d_job_index_after(d, id); /* a start may end jobs */
    }
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
            job->cpus = pj->cpus;
            job->host_mem_mib = pj->host_mem_mib;
            job->notify = d_notify_kind_of(pj->notify);
            snprintf(job->feed, sizeof(job->feed), "%s", pj->feed);
            job->producer = pj->feed_producer;
            snprintf(job->pipeline, sizeof(job->pipeline), "%s",
                     pj->pipeline ? pj->pipeline : "");
            job->kind = d_job_kind_of(job, NULL);
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

/* A new job of kind `kind` in the table, not queued yet: its kind sets
 * what it keeps besides, then d_job_submit_at() queues it. NULL when out
 * of memory, with why in err. */
d_job *d_job_create(d_daemon *d, int64_t id, const store_owner *owner,
                    const char *name, int gpus, double mem_mib,
                    const d_job_kind *kind, char *err, size_t errlen) {
    d_job *job = d_job_new(id, owner->uid, owner->gid, owner->user, name,
                           gpus, mem_mib, 0);
    if (!job || d_job_add(d, job) != 0) {
        free(job);
        snprintf(err, errlen, "job %lld: out of memory", (long long)id);
        return NULL;
    }
    job->kind = kind;
    return job;
}

int d_job_submit_at(d_daemon *d, d_job *job, const core_retry *retry,
                    char *err, size_t errlen) {
    if (retry) { /* the attempt it is, on the ladder of an earlier run */
        job->attempts = retry->attempt - 1;
        job->retry_floor = retry->floor_mib;
        job->retry_alone = retry->alone;
        store_job_retry(d->st, job->id, retry->floor_mib, retry->alone);
    }
    if (d_job_to_core(d, job, err, errlen) != 0) {
        d_job_finish(d, job, "failed", err);
        return -1;
    }
    return 0;
}
