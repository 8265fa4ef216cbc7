/* users.c -- who submitted what: the per-user queues, fair share and the
 * per-user limits of aegis-plus (docs/design.md, "aegis-plus").
 *
 * Every first attempt waiting sits on its user's queue as well as on the
 * core's FIFO, in the order nice, then queued_at: its submit time, less
 * an advance for a job demanding over half a GPU (core_queued_at()). Two
 * such jobs cannot share a GPU, so each needs a smaller partner, and
 * served in submit order the big ones are left for the end, where they
 * run beside nothing while the other GPUs idle (the tail that sets a
 * makespan). The backfill pass walks the users' queues merged by priority
 * (core_order_*). A user's priority falls with the GPU time its jobs held lately: GPU-seconds decayed with a
 * half-life of fairshare_half_life_s, as Slurm's fair-share factor
 * 2^(-usage/share) does, the share being an equal part of all the usage of
 * the users with jobs now. Policies without backfill keep the queues and
 * the counts but read none of them, and count no usage. A job asking more
 * GPUs than max_gpus_per_user could never start: drivers refuse it at
 * submission (core_job_within_limits()), as Slurm's DenyOnLimit does.
 */
#include "core_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ln 2: a GPU-second used t ago counts 2^(-t/h), so a rate held for dt
 * adds h / ln 2 * (1 - 2^(-dt/h)). C11 has no M_LN2. */
#define LN2 0.69314718055994530942

int core_user_index(core_state *core, uint32_t uid) {
    for (int i = 0; i < core->nusers; i++)
        if (core->users[i].uid == uid) return i;
    if (core->nusers == core->users_cap) {
        int cap = core->users_cap ? core->users_cap * 2 : 4;
        core_user *more = realloc(core->users, (size_t)cap * sizeof(*more));
        core_job **cursor = realloc(core->cursor, (size_t)cap * sizeof(*cursor));
        double *base = realloc(core->order_base, (size_t)cap * sizeof(*base));
        if (more) core->users = more;
        if (cursor) core->cursor = cursor;
        if (base) core->order_base = base;
        if (!more || !cursor || !base) return -1;
        core->users_cap = cap;
    }
    core->users[core->nusers] = (core_user){.uid = uid};
    return core->nusers++;
}

/* A big job goes big_advance_s ahead, or big_advance_frac of the wait of
 * the oldest first attempt waiting when that is more: behind a backlog of
 * hours, 900 s passes nothing and the big job is still left for the end.
 * As a fraction, the advance never passes the older part of the queue. */
double core_queued_at(const core_state *core, const core_job *job,
                      double now) {
    if (core->pol->demand(&core->cfg, &job->spec) <= core->half_gpu_mib)
        return now;
    const core_job *oldest = core->fifo.head; /* FIFO: submit order */
    double backlog = oldest ? now - oldest->submitted_at : 0;
    return now - fmax(core->cfg.big_advance_s,
                      core->cfg.big_advance_frac * backlog);
}

/* Whether job a goes before job b in their user's queue. */
static bool queued_before(const core_job *a, const core_job *b) {
    if (a->spec.nice != b->spec.nice) return a->spec.nice < b->spec.nice;
    if (a->queued_at != b->queued_at) return a->queued_at < b->queued_at;
    return a->seq < b->seq;
}

void core_user_enqueue(core_state *core, core_job *job) {
    core_user *u = &core->users[job->user];
    core_job *after = u->tail; /* the last job it may follow */
    while (after && queued_before(job, after)) after = after->uprev;
    job->uprev = after;
    job->unext = after ? after->unext : u->head;
    if (job->unext) job->unext->uprev = job;
    else u->tail = job;
    if (after) after->unext = job;
    else u->head = job;
    u->queued++;
}

void core_user_dequeue(core_state *core, core_job *job) {
    core_user *u = &core->users[job->user];
    if (job->uprev) job->uprev->unext = job->unext;
    else u->head = job->unext;
    if (job->unext) job->unext->uprev = job->uprev;
    else u->tail = job->uprev;
    u->queued--;
}

/* The user's decayed GPU-seconds at `now`: what it had at usage_at, halved
 * every half-life, plus its GPUs held since, each second decayed from the
 * moment it was used. */
static double user_usage_at(const core_state *core, const core_user *u,
                            double now) {
    double dt = now - u->usage_at;
    if (dt <= 0) return u->usage;
    double h = core->cfg.fairshare_half_life_s;
    double kept = exp2(-dt / h);
    return u->usage * kept + u->gpus * h / LN2 * (1 - kept);
}

void core_user_runs(core_state *core, const core_job *job, int sign,
                    double now) {
    core_user *u = &core->users[job->user];
    /* Only a policy with fair share reads the usage: the others spare the
     * decay, a call to exp2() at every start and end of a replay. */
    if (core->pol->backfill) {
        u->usage = user_usage_at(core, u, now);
        u->usage_at = now;
    }
    u->jobs += sign;
    u->gpus += sign * job->spec.num_gpus;
}

/* Whether a job of num_gpus GPUs asks more than any user may hold. */
static bool over_gpu_limit(const core_config *cfg, int num_gpus) {
    return cfg->max_gpus_per_user > 0 && num_gpus > cfg->max_gpus_per_user;
}

int core_job_within_limits(const core_config *cfg, int num_gpus, char *err,
                           size_t errlen) {
    const policy *pol = policy_find(cfg->policy);
    if (!pol || !pol->backfill || !over_gpu_limit(cfg, num_gpus)) return 0;
    snprintf(err, errlen, "%d GPUs asked, over max_gpus_per_user %d",
             num_gpus, cfg->max_gpus_per_user);
    return -1;
}

bool core_user_cannot_start(const core_state *core, const core_job *job,
                            core_reason *r) {
    if (!over_gpu_limit(&core->cfg, job->spec.num_gpus)) return false;
    if (r)
        *r = (core_reason){.kind = CORE_WAIT_USER_LIMIT, .gpu = -1,
                           .count = core->cfg.max_gpus_per_user,
                           .asked = job->spec.num_gpus, .metric = "GPU"};
    return true;
}

bool core_user_over_limit(const core_state *core, const core_job *job,
                          core_reason *r) {
    if (core_user_cannot_start(core, job, r)) return true;
    const core_user *u = &core->users[job->user];
    int max_jobs = core->cfg.max_jobs_per_user;
    int max_gpus = core->cfg.max_gpus_per_user;
    bool jobs = max_jobs > 0 && u->jobs + 1 > max_jobs;
    bool gpus = max_gpus > 0 && u->gpus + job->spec.num_gpus > max_gpus;
    if (r && (jobs || gpus))
        *r = (core_reason){.kind = CORE_WAIT_USER_LIMIT, .gpu = -1,
                           .count = jobs ? max_jobs : max_gpus,
                           .metric = jobs ? "job" : "GPU"};
    return jobs || gpus;
}

void core_order_start(core_state *core, double now) {
    double total = 0;
    int active = 0;
    for (int i = 0; i < core->nusers; i++) {
        const core_user *u = &core->users[i];
        core->order_base[i] = user_usage_at(core, u, now);
        if (u->queued > 0 || u->jobs > 0) {
            total += core->order_base[i];
            active++;
        }
        core->cursor[i] = u->head;
    }
    double share = active > 0 ? total / active : 0;
    for (int i = 0; i < core->nusers; i++) {
        double factor = share > 0 ? exp2(-core->order_base[i] / share) : 1;
        core->order_base[i] = factor * CORE_NICE_MAX;
    }
}

/* A job's priority among the queue: its user's fair-share factor, scaled
 * so that the whole range of nice can undo it, less its nice. */
static double priority(const core_state *core, const core_job *job) {
    return core->order_base[job->user] - job->spec.nice;
}

core_job *core_order_next(core_state *core) {
    int best = -1;
    for (int i = 0; i < core->nusers; i++) {
        const core_job *j = core->cursor[i];
        if (!j) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        const core_job *b = core->cursor[best];
        double pj = priority(core, j), pb = priority(core, b);
        if (pj > pb || (pj == pb && queued_before(j, b))) best = i;
    }
    if (best < 0) return NULL;
    core_job *job = core->cursor[best];
    core->cursor[best] = job->unext;
    return job;
}
