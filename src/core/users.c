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
 * (core_order_*): a heap of the next job of each user with jobs queued or
 * running, so a server that has seen thousands of users pays, per pass,
 * for those with jobs and a logarithm of their number per job reached. A
 * user's priority falls with the GPU time its jobs held lately:
 * GPU-seconds decayed with a half-life of fairshare_half_life_s, as
 * Slurm's fair-share factor 2^(-usage/share) does, the share being an
 * equal part of all the usage of the users with jobs now. Policies
 * without backfill keep the queues and the counts but read none of them,
 * and count no usage. A job asking more GPUs than max_gpus_per_user could
 * never start: drivers refuse it at submission (core_job_within_limits()),
 * as Slurm's DenyOnLimit does.
 */
#include "core_priv.h"
#include "alloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ln 2: a GPU-second used t ago counts 2^(-t/h), so a rate held for dt
 * adds h / ln 2 * (1 - 2^(-dt/h)). C11 has no M_LN2. */
#define LN2 0.69314718055994530942

/* The slot where uid is, or the empty one where it would go. A daemon
 * or a trace may know hundreds of thousands of users: a scan of them at
 * every submit made a replay's cost grow with their square. */
static int *user_slot(const core_state *core, uint32_t uid) {
    unsigned mask = (unsigned)core->user_slots_size - 1;
    uint32_t h = uid * 2654435761u; /* Knuth's multiplicative hash, */
    unsigned k = (h ^ h >> 16) & mask; /* its high bits in the low ones */
    int *slot;
    while (*(slot = &core->user_slots[k]) &&
           core->users[*slot - 1].uid != uid)
        k = (k + 1) & mask;
    return slot;
}

/* Doubles the slots when half are taken, so a probe stays short. */
static int user_slots_grow(core_state *core) {
    if (2 * (core->nusers + 1) <= core->user_slots_size) return 0;
    int size = core->user_slots_size ? core->user_slots_size * 2 : 16;
    int *slots = core_calloc((size_t)size, sizeof(*slots));
    if (!slots) return -1;
    free(core->user_slots);
    core->user_slots = slots;
    core->user_slots_size = size;
    for (int i = 0; i < core->nusers; i++)
        *user_slot(core, core->users[i].uid) = i + 1;
    return 0;
}

int core_user_index(core_state *core, uint32_t uid) {
    if (core->user_slots_size) {
        int found = *user_slot(core, uid);
        if (found) return found - 1;
    }
    if (user_slots_grow(core) != 0) return -1;
    if (core->nusers == core->users_cap) {
        int cap = core->users_cap ? core->users_cap * 2 : 4;
        core_user *more =
            core_realloc(core->users, (size_t)cap * sizeof(*more));
        if (more) core->users = more;
        int *active = core_realloc(core->active, (size_t)cap * sizeof(*active));
        if (active) core->active = active;
        core_order_entry *heap =
            core_realloc(core->order_heap, (size_t)cap * sizeof(*heap));
        if (heap) core->order_heap = heap;
        double *base =
            core_realloc(core->order_base, (size_t)cap * sizeof(*base));
        if (base) core->order_base = base;
        if (!more || !active || !heap || !base) return -1;
        core->users_cap = cap;
    }
    core->users[core->nusers] = (core_user){.uid = uid};
    *user_slot(core, uid) = core->nusers + 1;
    return core->nusers++;
}

/* Keeps user i on core->active exactly while it has a job queued or
 * running: a pass reads only those, so a daemon that has seen thousands
 * of users pays for the few with jobs. The list stays in the order of
 * core->users: a pass sums their usage in that order, and a sum in
 * another order could differ in its last bit and reorder a tie. */
static void user_track(core_state *core, int i) {
    core_user *u = &core->users[i];
    bool active = u->queued > 0 || u->jobs > 0;
    if (active == u->active) return;
    u->active = active;
    int lo = 0, hi = core->nactive; /* the first place holding i or more */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (core->active[mid] < i) lo = mid + 1;
        else hi = mid;
    }
    int *at = core->active + lo;
    int after = core->nactive - lo;
    if (active) {
        memmove(at + 1, at, (size_t)after * sizeof(*at));
        *at = i;
        core->nactive++;
    } else {
        memmove(at, at + 1, (size_t)(after - 1) * sizeof(*at));
        core->nactive--;
    }
}

/* A big job goes big_advance_s ahead, or big_advance_frac of the wait of
 * the oldest first attempt waiting when that is more: behind a backlog of
 * hours, 900 s passes nothing and the big job is still left for the end.
 * As a fraction, the advance never passes the older part of the queue.
 * A job that waits for empty GPUs (core_needs_empty(): one declaring
 * whole GPUs) keeps its place in submit order: it takes no advance, since
 * no partner fits beside it, and waiting ahead of the older jobs it would
 * keep its GPUs from them while a job it found there runs on (its kept
 * GPUs take no one, backfill.c); and no big job goes ahead of it, since
 * one that started first could hold its GPU for as long as it runs. */
double core_queued_at(const core_state *core, const core_job *job,
                      double now) {
    if (core->pol->demand(&core->cfg, &job->spec) <= core->half_gpu_mib ||
        core_needs_empty(core, job))
        return now;
    const core_job *oldest = core->fifo.head; /* FIFO: submit order */
    double backlog = oldest ? now - oldest->submitted_at : 0;
    double at = now - fmax(core->cfg.big_advance_s,
                           core->cfg.big_advance_frac * backlog);
    /* the newest such job, still queued, that it would pass: it goes
     * right behind that one (equal times go in submit order). Found by its
     * id, not by walking the queue back from its tail: a walk cost each
     * submit the jobs of the last advance, and 50,000 big jobs submitted
     * at once took 14.5 s to replay, not 1.1 s. */
    const core_job *e = core->newest_empty_id >= 0
                            ? core_find(core, core->newest_empty_id)
                            : NULL;
    if (e && e->state == JOB_QUEUED && e->submitted_at >= at)
        return e->queued_at;
    return at;
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
    user_track(core, job->user);
}

void core_user_dequeue(core_state *core, core_job *job) {
    core_user *u = &core->users[job->user];
    if (job->uprev) job->uprev->unext = job->unext;
    else u->head = job->unext;
    if (job->unext) job->unext->uprev = job->uprev;
    else u->tail = job->uprev;
    assert(u->queued > 0);
    u->queued--;
    user_track(core, job->user);
}

/* The user's decayed GPU-seconds at `now`: what it had at usage_at, halved
 * every half-life, plus its GPUs held since, each second decayed from the
 * moment it was used. */
double core_user_usage_at(const core_state *core, const core_user *u,
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
        u->usage = core_user_usage_at(core, u, now);
        u->usage_at = now;
    }
    if (now > u->raw_at) u->raw_usage += u->gpus * (now - u->raw_at);
    u->raw_at = now;
    u->jobs += sign;
    u->gpus += sign * job->spec.num_gpus;
    assert(u->jobs >= 0 && u->gpus >= 0);
    user_track(core, job->user);
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

/* A job's priority among the queue: its user's fair-share factor, scaled
 * so that the whole range of nice can undo it, less its nice. */
static double priority(const core_state *core, const core_job *job) {
    return core->order_base[job->user] - job->spec.nice;
}

/* The entry for a user's next job in a pass. */
static core_order_entry order_entry(const core_state *core, core_job *job) {
    return (core_order_entry){.priority = priority(core, job), .job = job};
}

/* Whether a goes before b in a pass: the higher priority, then the order
 * of a user's queue (nice, queued_at, submit order), which no two jobs
 * tie in, so the order is total and a heap gives the job a scan of every
 * user's next one would. */
static bool order_before(const core_order_entry *a, const core_order_entry *b) {
    return a->priority > b->priority ||
           (a->priority == b->priority && queued_before(a->job, b->job));
}

/* Moves the entry at place k of the order heap down to where it goes. */
static void order_sift(core_state *core, int k) {
    core_order_entry *heap = core->order_heap;
    core_order_entry entry = heap[k];
    for (;;) {
        int child = 2 * k + 1;
        if (child >= core->order_len) break;
        if (child + 1 < core->order_len &&
            order_before(&heap[child + 1], &heap[child]))
            child++;
        if (!order_before(&heap[child], &entry)) break;
        heap[k] = heap[child];
        k = child;
    }
    heap[k] = entry;
}

/* The share is an equal part of the active users' usage, and the heap
 * holds each one's next job: the cost is theirs, not every user's. */
double core_users_share(core_state *core, double now) {
    double total = 0;
    for (int k = 0; k < core->nactive; k++) {
        int i = core->active[k];
        core->order_base[i] = core_user_usage_at(core, &core->users[i], now);
        total += core->order_base[i];
    }
    return core->nactive > 0 ? total / core->nactive : 0;
}

double core_fair_factor(double usage, double share) {
    return share > 0 ? exp2(-usage / share) : 1;
}

void core_order_start(core_state *core, double now) {
    double share = core_users_share(core, now);
    core->order_len = 0;
    for (int k = 0; k < core->nactive; k++) {
        int i = core->active[k];
        core_job *head = core->users[i].head;
        if (!head) continue; /* only running: no priority to read */
        double factor = core_fair_factor(core->order_base[i], share);
        core->order_base[i] = factor * CORE_NICE_MAX;
        core->order_heap[core->order_len++] = order_entry(core, head);
    }
    for (int k = core->order_len / 2; k-- > 0;) order_sift(core, k);
}

core_job *core_order_next(core_state *core) {
    if (core->order_len == 0) return NULL;
    core_job *job = core->order_heap[0].job;
    if (job->unext) core->order_heap[0] = order_entry(core, job->unext);
    else core->order_heap[0] = core->order_heap[--core->order_len];
    order_sift(core, 0);
    return job;
}
