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
 * (SIGTERM, SIGKILL after the grace) and ends as done. One registration
 * serves one run of consumers: the next sweep registers again.
 */
#include "daemon.h"

#include <stdio.h>
#include <string.h>

/* Restarts of one producer while its consumers run: a producer that
 * keeps dying (a bad data path) must not loop for ever. */
#define D_FEED_MAX_RESTARTS 3

d_job *d_feed_producer(d_daemon *d, const char *name) {
    for (size_t i = 0; i < d->njobs; i++)
        if (d->jobs[i]->producer && strcmp(d->jobs[i]->feed, name) == 0)
            return d->jobs[i];
    return NULL;
}

/* A running job counts before it is back in the core: while aegisd
 * recovers, its producer's attempt may be found dead before it is
 * adopted, and must be started again for it. */
int d_feed_consumers(d_daemon *d, const char *name) {
    int n = 0;
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        bool reads = job->in_core || job->state == D_RUNNING;
        n += !job->producer && reads && !job->cancelling &&
             strcmp(job->feed, name) == 0;
    }
    return n;
}

bool d_feed_dormant(d_daemon *d, const d_job *producer) {
    return producer->producer && d_feed_consumers(d, producer->feed) == 0;
}

void d_feed_wake(d_daemon *d, const d_job *consumer) {
    if (consumer->producer || !consumer->feed[0]) return;
    d_job *p = d_feed_producer(d, consumer->feed);
    char err[256];
    if (!p || p->in_core || p->state != D_HELD || p->held ||
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

void d_feed_consumer_left(d_daemon *d, const char *name) {
    d_job *p = d_feed_producer(d, name);
    if (!p || !p->in_core || p->cancelling || d_feed_consumers(d, name) > 0)
        return;
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
    core_cancel(d->core, p->id, d_now(d));
    p->in_core = false;
    if (p->attempts > 0) { /* waiting to be restarted */
        d_job_finish(d, p, "done", "stopped: its feed's last consumer ended");
        return;
    }
    p->state = D_HELD;
    store_event(d->st, p->id, d_wall(), "back to sleep: no job reads feed %s",
                name);
}

void d_feeds_recover(d_daemon *d) {
    for (size_t i = 0; i < d->njobs; i++) { /* a stop keeps it in the table */
        d_job *job = d->jobs[i];
        if (job->producer && job->state == D_RUNNING)
            d_feed_consumer_left(d, job->feed);
    }
}

bool d_feed_restart(d_daemon *d, d_job *job, core_exit how, const char *why) {
    if (!job->producer || (how != CORE_EXIT_FAILED && how != CORE_EXIT_LOST) ||
        d_feed_consumers(d, job->feed) == 0)
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
