/* check.c -- core_check(): the core's bookkeeping recomputed from its jobs.
 *
 * The events move running sums up and down (gpu_account(), core_release(),
 * users.c, feeds.c, cpus.c) and every placement trusts them; a sum that
 * drifts by one misplaces jobs silently, long after the event that broke
 * it. This recounts each of them from the job table alone, as SQLite's
 * integrity check recounts pages, and names the first that differs. It
 * reads every job, so it is for tests, `aegis sim --check` and the
 * sanitizer build's daemon, not for the scheduling path.
 */
#include "core_priv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* A GPU's sums as its running jobs make them. */
typedef struct tally_gpu {
    int njobs, unseen, score_sum, ninst, peak_unknown;
    double util_pct_sum, peak_sum_mib;
} tally_gpu;

/* A user's counts, and a feed's, as the jobs make them. */
typedef struct tally_user {
    int jobs, gpus, queued;
} tally_user;

typedef struct tally_feed {
    int producers_queued;
    int on_gpu[CORE_MAX_GPUS];
    int loader_jobs[CORE_MAX_GPUS]; /* its running jobs by first GPU */
} tally_feed;

typedef struct tally {
    tally_gpu gpus[CORE_MAX_GPUS];
    tally_user *users;      /* by place in core_state.users */
    tally_feed *feeds;      /* by place in core_state.feeds */
    size_t njobs;
    int running, queued;
    double own_cpus;        /* CPUs of the running jobs of no feed */
} tally;

/* Formats the difference into err; returns -1 for the caller to pass on. */
static int differs(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int differs(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Sums of hints round differently when added in another order. */
static bool same_sum(double kept, double recounted) {
    return fabs(kept - recounted) <= 1e-6 * fmax(1.0, fabs(recounted));
}

static void tally_running(tally *t, const core_job *j) {
    const core_job_spec *s = &j->spec;
    t->running++;
    for (int k = 0; k < s->num_gpus; k++) {
        tally_gpu *g = &t->gpus[j->gpus[k]];
        g->njobs++;
        g->unseen += !j->active;
        g->ninst += j->mig.profile != NULL;
        g->util_pct_sum += policy_util_pct(s);
        g->score_sum += policy_sharing_score(s);
        g->peak_sum_mib += s->peak_mib >= 0 ? s->peak_mib : 0;
        g->peak_unknown += s->peak_mib < 0;
        if (j->feed >= 0) t->feeds[j->feed].on_gpu[j->gpus[k]]++;
    }
    t->users[j->user].jobs++;
    t->users[j->user].gpus += s->num_gpus;
    if (j->feed >= 0) t->feeds[j->feed].loader_jobs[j->gpus[0]]++;
    else t->own_cpus += s->cpus;
}

static void tally_queued(tally *t, const core_job *j) {
    t->queued++;
    if (j->attempt == 1) t->users[j->user].queued++;
    if (j->feed >= 0 && j->spec.feed_producer)
        t->feeds[j->feed].producers_queued++;
}

static void tally_jobs(const core_state *core, tally *t) {
    for (size_t i = 0; i < core->table_size; i++)
        for (const core_job *j = core->table[i]; j; j = j->hnext) {
            t->njobs++;
            if (j->state == JOB_RUNNING) tally_running(t, j);
            else tally_queued(t, j);
        }
}

static int check_gpu(const core_state *core, int g, const tally_gpu *t,
                     char *err, size_t errlen) {
    const core_gpu *gpu = &core->gpus[g];
    const policy_gpu *v = &gpu->view;
    if (v->njobs != t->njobs)
        return differs(err, errlen, "GPU %d: njobs %d, its jobs make %d", g,
                       v->njobs, t->njobs);
    if (gpu->unseen != t->unseen)
        return differs(err, errlen, "GPU %d: unseen %d, its jobs not yet "
                       "active make %d", g, gpu->unseen, t->unseen);
    if (v->score_sum != t->score_sum)
        return differs(err, errlen, "GPU %d: score_sum %d, its jobs make %d",
                       g, v->score_sum, t->score_sum);
    if (!same_sum(v->util_pct_sum, t->util_pct_sum))
        return differs(err, errlen, "GPU %d: util_pct_sum %g, its jobs make "
                       "%g", g, v->util_pct_sum, t->util_pct_sum);
    if (!same_sum(v->peak_sum_mib, t->peak_sum_mib))
        return differs(err, errlen, "GPU %d: peak_sum_mib %g, its jobs make "
                       "%g", g, v->peak_sum_mib, t->peak_sum_mib);
    if (v->peak_unknown != t->peak_unknown)
        return differs(err, errlen, "GPU %d: peak_unknown %d, its jobs of "
                       "unknown peak make %d", g, v->peak_unknown,
                       t->peak_unknown);
    if (gpu->share.ninst != t->ninst)
        return differs(err, errlen, "GPU %d: %d MIG instances, its jobs "
                       "hold %d", g, gpu->share.ninst, t->ninst);
    bool idle = v->njobs == 0 && !gpu->drained && !gpu->foreign;
    if (((core->idle >> g) & 1) != idle)
        return differs(err, errlen, "GPU %d: idle bit %d, its state says %d",
                       g, (int)((core->idle >> g) & 1), idle);
    return 0;
}

/* The mode counts: GPUs in mig or auto mode, and in mps mode. */
static int check_modes(const core_state *core, char *err, size_t errlen) {
    int mig = 0, mps = 0;
    for (int g = 0; g < core->num_gpus; g++) {
        mig += share_gpu_mode_mig(core->gpus[g].share.mode);
        mps += core->gpus[g].share.mode == SHARE_MPS;
    }
    if (core->mig_gpus != mig)
        return differs(err, errlen, "mig_gpus %d, the GPUs' modes make %d",
                       core->mig_gpus, mig);
    if (core->mps_gpus != mps)
        return differs(err, errlen, "mps_gpus %d, the GPUs' modes make %d",
                       core->mps_gpus, mps);
    return 0;
}

/* One queue, walked both ways: every job on it queued, found in the
 * table, and on the queue its attempt says; its length as counted. The
 * walk stops after njobs steps, so a circle in the links is reported,
 * not followed forever. */
static int check_queue(const core_state *core, const core_queue *q,
                       const char *name, bool recovery, char *err,
                       size_t errlen) {
    int n = 0;
    const core_job *prev = NULL;
    for (const core_job *j = q->head; j; prev = j, j = j->next) {
        if ((size_t)n++ > core->njobs)
            return differs(err, errlen, "%s queue: more links than the %zu "
                           "jobs known (a circle)", name, core->njobs);
        long long id = (long long)j->spec.id;
        if (j->prev != prev)
            return differs(err, errlen, "%s queue: job %lld: prev link "
                           "broken", name, id);
        if (j->state != JOB_QUEUED || core_find(core, j->spec.id) != j)
            return differs(err, errlen, "%s queue: job %lld: %s", name, id,
                           j->state != JOB_QUEUED ? "is running"
                                                  : "not in the job table");
        if ((j->attempt > 1) != recovery)
            return differs(err, errlen, "%s queue: job %lld: attempt %d "
                           "belongs on the other queue", name, id, j->attempt);
    }
    if (q->tail != prev)
        return differs(err, errlen, "%s queue: tail is not its last job",
                       name);
    if (q->len != n)
        return differs(err, errlen, "%s queue: len %d, its links hold %d",
                       name, q->len, n);
    return 0;
}

static int check_counts(const core_state *core, const tally *t, char *err,
                        size_t errlen) {
    if (core->njobs != t->njobs)
        return differs(err, errlen, "njobs %zu, the job table holds %zu",
                       core->njobs, t->njobs);
    if (core->running != t->running)
        return differs(err, errlen, "running %d, the jobs make %d",
                       core->running, t->running);
    int queued = core->recovery.len + core->fifo.len;
    if (queued != t->queued)
        return differs(err, errlen, "queues hold %d jobs, %d are queued",
                       queued, t->queued);
    return 0;
}

/* The spare records: as many as nspare says, each spare, and no more
 * than CORE_SPARE_MAX (past it a forgotten job's record is freed). */
static int check_spare(const core_state *core, char *err, size_t errlen) {
    size_t n = 0;
    for (const core_job *j = core->spare; j; j = j->hnext, n++)
        if (j->state != JOB_SPARE)
            return differs(err, errlen, "spare record %zu holds job %lld, "
                           "not spare", n, (long long)j->spec.id);
    if (n != core->nspare || n > CORE_SPARE_MAX)
        return differs(err, errlen, "nspare %zu, the spare chain holds %zu "
                       "(at most %d)", core->nspare, n, CORE_SPARE_MAX);
    return 0;
}

static int check_users(const core_state *core, const tally *t, char *err,
                       size_t errlen) {
    for (int i = 0; i < core->nusers; i++) {
        const core_user *u = &core->users[i];
        const tally_user *c = &t->users[i];
        if (u->jobs != c->jobs || u->gpus != c->gpus || u->queued != c->queued)
            return differs(err, errlen, "user %u: jobs %d, gpus %d, queued %d;"
                           " its jobs make %d, %d, %d", u->uid, u->jobs,
                           u->gpus, u->queued, c->jobs, c->gpus, c->queued);
        if (u->active != (c->queued > 0 || c->jobs > 0))
            return differs(err, errlen, "user %u: active %d with %d queued "
                           "and %d running", u->uid, u->active, c->queued,
                           c->jobs);
    }
    return 0;
}

static int check_feeds(const core_state *core, const tally *t, char *err,
                       size_t errlen) {
    for (int i = 0; i < core->nfeeds; i++) {
        const core_feed *f = core->feeds[i];
        const tally_feed *c = &t->feeds[i];
        if (f->producers_queued != c->producers_queued)
            return differs(err, errlen, "feed %s: producers_queued %d, its "
                           "jobs make %d", f->name, f->producers_queued,
                           c->producers_queued);
        for (int g = 0; g < core->num_gpus; g++)
            if (f->on_gpu[g] != c->on_gpu[g] ||
                ((f->gpus >> g) & 1) != (c->on_gpu[g] > 0))
                return differs(err, errlen, "feed %s: GPU %d: on_gpu %d, "
                               "its jobs make %d", f->name, g, f->on_gpu[g],
                               c->on_gpu[g]);
    }
    return 0;
}

/* Each feed's loaders as its running jobs make them, and the CPUs
 * committed: the jobs of no feed's and the open loaders'. A loader's CPUs
 * are those of the job that opened it, which may have left: not
 * recounted, but none where it has no job. */
static int check_cpus(const core_state *core, const tally *t, char *err,
                      size_t errlen) {
    double used = t->own_cpus;
    for (int i = 0; i < core->nfeeds; i++) {
        const core_feed *f = core->feeds[i];
        for (int g = 0; g < core->num_gpus; g++) {
            int jobs = t->feeds[i].loader_jobs[g];
            if (f->loader_jobs[g] != jobs ||
                (jobs == 0 && f->loader_cpus[g] != 0))
                return differs(err, errlen, "feed %s: GPU %d: loader of %d "
                               "jobs and %g CPUs, its jobs make %d", f->name,
                               g, f->loader_jobs[g], f->loader_cpus[g], jobs);
            used += f->loader_cpus[g];
        }
    }
    if (!same_sum(core->cpus_used, used))
        return differs(err, errlen, "cpus_used %g, the running jobs make %g",
                       core->cpus_used, used);
    return 0;
}

static int check_tally(const core_state *core, const tally *t, char *err,
                       size_t errlen) {
    for (int g = 0; g < core->num_gpus; g++)
        if (check_gpu(core, g, &t->gpus[g], err, errlen) != 0) return -1;
    if (check_queue(core, &core->recovery, "recovery", true, err, errlen) ||
        check_queue(core, &core->fifo, "FIFO", false, err, errlen) ||
        check_counts(core, t, err, errlen) != 0 ||
        check_spare(core, err, errlen) != 0 ||
        check_modes(core, err, errlen) != 0 ||
        check_users(core, t, err, errlen) != 0 ||
        check_feeds(core, t, err, errlen) != 0)
        return -1;
    return check_cpus(core, t, err, errlen);
}

int core_check(const core_state *core, char *err, size_t errlen) {
    tally t = {0};
    t.users = calloc((size_t)core->nusers + 1, sizeof(*t.users));
    t.feeds = calloc((size_t)core->nfeeds + 1, sizeof(*t.feeds));
    int rc = -1;
    if (!t.users || !t.feeds) {
        differs(err, errlen, "core_check: out of memory for %d users and %d "
                "feeds", core->nusers, core->nfeeds);
    } else {
        tally_jobs(core, &t);
        rc = check_tally(core, &t, err, errlen);
    }
    free(t.users);
    free(t.feeds);
    return rc;
}
