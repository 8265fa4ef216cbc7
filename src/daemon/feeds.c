/* feeds.c -- a data feed's managed producer (docs/feed.md, "The feed in
 * the scheduler").
 *
 * `aegis feed start NAME -- CMD` submits a job marked as feed NAME's
 * producer. It sleeps (held, out of the core's queue) until a job that
 * reads the feed joins the queue; then it joins the queue just ahead of
 * that consumer, and the core keeps the feed's consumers waiting while it
 * is queued (src/core/feeds.c). So the producer is placed first and its
 * consumers with it or after it, beside it where the gates allow: a
 * consumer started before its producer would only wait for it, holding
 * its GPU memory, and the producer's GPU is where the consumers' batches
 * are. A producer that fails or vanishes while consumers of its feed are
 * queued or running is started again, up to D_FEED_MAX_RESTARTS times;
 * once the last of them ends it is stopped as a cancel stops a job
 * (SIGTERM, SIGKILL after the grace) and ends as done. A held job of the
 * feed has not ended, but reads nothing: the producer stops for it too,
 * and sleeps again instead of ending, until its release. One
 * registration serves one run of consumers: the next sweep registers
 * again.
 */
#include "daemon.h"

#include <stdio.h>
#include <string.h>

#include "feed_trust.h"

/* Restarts of one producer while its consumers run: a producer that
 * keeps dying (a bad data path) must not loop for ever. */
#define D_FEED_MAX_RESTARTS 3

/* Whether job's AEGIS_FEED_TRUST, in the environment it was submitted
 * with, names uid. Read from the store: only a job whose feed another
 * user's producer shares the name of ever asks. */
static bool d_feed_trusts(d_daemon *d, const d_job *job, uid_t uid) {
    static const char key[] = "AEGIS_FEED_TRUST=";
    json_t *row = store_job(d->st, job->id, true), *var;
    size_t i;
    bool trusts = false;
    json_array_foreach(json_object_get(row, "env"), i, var) {
        const char *kv = json_string_value(var);
        if (kv && strncmp(kv, key, sizeof(key) - 1) == 0)
            trusts = feed_trust_names(kv + sizeof(key) - 1, uid);
    }
    json_decref(row);
    return trusts;
}

/* Whether producer p may be woken for consumer c: one feed name, and its
 * own user's, or each user trusts the other (c reads only the segments
 * of users it trusts; p's user says whose jobs may start it). */
static bool d_feed_serves(d_daemon *d, const d_job *p, const d_job *c) {
    if (strcmp(p->feed, c->feed) != 0) return false;
    return p->uid == c->uid ||
           (d_feed_trusts(d, p, c->uid) && d_feed_trusts(d, c, p->uid));
}

d_job *d_feed_producer(d_daemon *d, uid_t uid, const char *name) {
    for (size_t i = 0; i < d->njobs; i++)
        if (d->jobs[i]->producer && d->jobs[i]->uid == uid &&
            strcmp(d->jobs[i]->feed, name) == 0)
            return d->jobs[i];
    return NULL;
}

d_job *d_feed_producer_for(d_daemon *d, const d_job *c) {
    if (c->producer || !c->feed[0]) return NULL;
    d_job *own = d_feed_producer(d, c->uid, c->feed);
    if (own) return own;
    for (size_t i = 0; i < d->njobs; i++)
        if (d->jobs[i]->producer && d_feed_serves(d, d->jobs[i], c))
            return d->jobs[i];
    return NULL;
}

uid_t d_feed_owner(d_daemon *d, const d_job *job) {
    const d_job *p = d_feed_producer_for(d, job);
    return p ? p->uid : job->uid;
}

/* Whether job c reads producer p's feed: one of its user's jobs, or of a
 * user who has no producer of that name and whom p serves. */
static bool d_feed_reads(d_daemon *d, const d_job *c, const d_job *p) {
    if (c->producer || strcmp(c->feed, p->feed) != 0) return false;
    return c->uid == p->uid || d_feed_producer_for(d, c) == p;
}

/* A running job counts before it is back in the core: while aegisd
 * recovers, its producer's attempt may be found dead before it is
 * adopted, and must be started again for it. */
int d_feed_consumers(d_daemon *d, const d_job *p) {
    int n = 0;
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        bool reads = job->in_core || job->state == D_RUNNING;
        n += reads && !job->cancelling && d_feed_reads(d, job, p);
    }
    return n;
}

bool d_feed_dormant(d_daemon *d, const d_job *producer) {
    return producer->producer && d_feed_consumers(d, producer) == 0;
}

/* Another user's producer of c's feed that c may not wake: said on c's
 * events, so that its user knows why no producer runs for it. */
static void d_feed_not_woken(d_daemon *d, const d_job *c) {
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *p = d->jobs[i];
        if (!p->producer || strcmp(p->feed, c->feed) != 0) continue;
        store_event(d->st, c->id, d_wall(), "feed %s: user %s's producer "
                    "(job %lld) is not started for this job: you have no "
                    "producer of that name, and only users who name each "
                    "other in AEGIS_FEED_TRUST share one", c->feed, p->user,
                    (long long)p->id);
        return;
    }
}

void d_feed_wake(d_daemon *d, const d_job *consumer) {
    if (consumer->producer || !consumer->feed[0]) return;
    d_job *p = d_feed_producer_for(d, consumer);
    char err[256];
    if (!p) d_feed_not_woken(d, consumer);
    if (!p || p->in_core || p->state != D_HELD || p->held ||
        p->restart_at > d_now(d) || /* its back-off queues it (jobs_run.c) */
        d_deps_check(d, p, err, sizeof(err)) != D_DEPS_MET)
        return;
    if (d_job_to_core(d, p, err, sizeof(err)) != 0) {
        d_job_finish(d, p, "failed", err);
        return;
    }
    d_log("feed %s: producer job %lld queued for consumer job %lld",
          p->feed, (long long)p->id, (long long)consumer->id);
    store_event(d->st, p->id, d_wall(), "queued: job %lld reads feed %s",
                (long long)consumer->id, p->feed);
}

/* Jobs of p's feed that have not ended but read nothing yet: held, by
 * `aegis hold` or for their --after jobs. The feed's registration stays
 * for them: its producer sleeps until one is queued. */
static int d_feed_later(d_daemon *d, const d_job *p) {
    int n = 0;
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        n += job->state == D_HELD && d_feed_reads(d, job, p);
    }
    return n;
}

/* Producer p, out of the core, sleeps again (why: the event's text). */
static void d_feed_sleep(d_daemon *d, d_job *p, const char *why) {
    d_job_set_state(d, p, D_HELD);
    store_job_state(d->st, p->id, "queued", why, d_wall());
    store_event(d->st, p->id, d_wall(), "back to sleep: %s", why);
}

bool d_feed_stopped(d_daemon *d, d_job *p) {
    if (!p->producer || !p->feed_stop ||
        d_feed_consumers(d, p) + d_feed_later(d, p) == 0)
        return false;
    p->cancelling = p->feed_stop = false;
    p->cancel_at = 0;
    store_job_feed(d->st, p->id, p->restarts, false);
    d_feed_sleep(d, p, "its feed's jobs are held");
    for (size_t i = 0; i < d->njobs; i++) /* one came back meanwhile */
        if (d->jobs[i]->in_core && d_feed_reads(d, d->jobs[i], p)) {
            d_feed_wake(d, d->jobs[i]);
            break;
        }
    return true;
}

void d_feed_consumer_left(d_daemon *d, d_job *p) {
    if (!p || p->cancelling || d_feed_consumers(d, p) > 0) return;
    const char *name = p->feed;
    if (!p->in_core) { /* asleep: one that has run ends with its last job */
        if (p->state == D_HELD && !p->held && p->attempts > 0 &&
            d_feed_later(d, p) == 0)
            d_job_finish(d, p, "done", "stopped: its feed's last consumer "
                         "ended");
        return;
    }
    if (p->state == D_RUNNING) {
        char err[4600];
        p->feed_stop = true;
        store_job_feed(d->st, p->id, p->restarts, true);
        d_log("feed %s: its last consumer ended: stopping producer job %lld",
              name, (long long)p->id);
        if (d_jobs_cancel(d, &p->id, 1, err, sizeof(err)) != 0) {
            d_log("feed %s: producer job %lld %s", name, (long long)p->id,
                  err); /* the next consumer's end tries again */
            p->feed_stop = false;
            store_job_feed(d->st, p->id, p->restarts, false);
        }
        return;
    }
    d_job_leave_core(d, p);
    if (p->attempts > 0 && d_feed_later(d, p) == 0) { /* to be restarted */
        d_job_finish(d, p, "done", "stopped: its feed's last consumer ended");
        return;
    }
    d_feed_sleep(d, p, "no job of its feed queued");
}

void d_feeds_recover(d_daemon *d) {
    for (size_t i = 0; i < d->njobs; i++) { /* a stop keeps it in the table */
        d_job *job = d->jobs[i];
        if (job->producer && job->state == D_RUNNING)
            d_feed_consumer_left(d, job);
    }
}

bool d_feed_restart(d_daemon *d, d_job *job, core_exit how, const char *why) {
    if (!job->producer || (how != CORE_EXIT_FAILED && how != CORE_EXIT_LOST) ||
        d_feed_consumers(d, job) == 0)
        return false;
    if (job->restarts >= D_FEED_MAX_RESTARTS) {
        d_log("feed %s: producer job %lld: %s; not restarted: restarted %d "
              "times already", job->feed, (long long)job->id, why,
              job->restarts);
        return false;
    }
    job->restarts++;
    store_job_feed(d->st, job->id, job->restarts, false);
    d_log("feed %s: producer job %lld: %s; restarted (%d of %d)", job->feed,
          (long long)job->id, why, job->restarts, D_FEED_MAX_RESTARTS);
    store_event(d->st, job->id, d_wall(), "attempt %d: %s; restarted for its "
                "consumers (%d of %d)", job->attempts, why, job->restarts,
                D_FEED_MAX_RESTARTS);
    return true;
}

/* ---- the managed producer as a kind of job (d_job_kind) ---------------------- */

static bool d_feed_claims(const d_job *job, json_t *row) {
    return job->producer;
}

/* Run as aegisd's own job; it sleeps while no consumer needs it, sleeps
 * again when stopped with jobs of its feed held, and restarts for its
 * consumers. */
const d_job_kind d_kind_producer = {
    .name = "producer", .watched = true, .claims = d_feed_claims,
    .grant = d_own_grant, .owns = d_own_owns, .dormant = d_feed_dormant,
    .stopped = d_feed_stopped, .restart = d_feed_restart,
};
