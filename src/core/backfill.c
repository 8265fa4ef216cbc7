/* backfill.c -- the queue of a policy with backfill (aegis-plus).
 *
 * A pass walks the queue in order: the recovery queue first, then the
 * first attempts by priority (users.c), skipping the jobs whose user is at
 * a limit. The first job that cannot start becomes the head: it keeps the
 * GPUs it is likeliest to get first (core_reserve()), the same ones while
 * it stays the head, and the CPUs its data loading needs (cpus.c), and the
 * jobs behind it may start on the others, where they fit now. A one-GPU head that may share takes only a partner on a
 * kept GPU running one job, a job that the head still fits beside
 * (core_backfill_allowed()), so the head fits there at the latest once the
 * jobs it found there have ended. A head that is wide (2 GPUs or more) or
 * must run alone takes none: its kept GPUs must empty together, and a
 * stream of small jobs on them would keep one of them busy for ever
 * (reserve.c). On the kept GPUs of any head a job may still start whose
 * time limit ends before the head's expected start. Every other job that
 * starts past the head counts against it; after backfill_max_passes the queue
 * waits behind it as AEGIS's does, so no job is passed more often than
 * that. A pass also stops where no GPU but the kept ones could take a job
 * now (all under observation, say): the jobs it would have tried next
 * wait for those GPUs, not behind the head, and are told so (reason.c). A
 * head that must run alone (its recovery ladder has no rung left) is
 * passed by none while its start is unknown (a job on its GPUs has no
 * time limit): it waits for an idle GPU, and no duration says which GPU
 * empties first, so every GPU drains for it, as under AEGIS's FIFO;
 * backfill kept them all busy and left it for the end (docs/design.md,
 * "aegis-plus", says why these rules). Behind the head, the first job
 * that waits for 2 empty GPUs or more (core_needs_empty()) and cannot
 * start keeps them too, from the jobs the pass reaches after it: those
 * are younger (it keeps its place in submit order, users.c), and one
 * started there would hold one of its GPUs for as long as it ran, where
 * a FIFO would have started it first; with no duration known, that was
 * a wait of days on the production windows. It keeps the GPUs with the
 * fewest jobs, and among those the ones whose oldest job has run the
 * shortest: GPU run times are heavy-tailed, so a job's time run so far
 * is the best sign left of how long it has still to run.
 */
#include "core_priv.h"

#include <math.h>

/* The job after `job` in a pass: the recovery queue in order, then the
 * first attempts by priority (users.c). */
static core_job *next_in_order(core_state *core, const core_job *job) {
    if (job->attempt > 1 && job->next) return job->next;
    return core_order_next(core);
}

/* What ranks a GPU for a job that keeps GPUs (core_reserve()), the first
 * key first: its jobs (for a job waiting for empty GPUs; 0 otherwise),
 * whether the job kept it at the last pass, how long the oldest job on it
 * has run (only for a job behind the head that waits for empty GPUs, 0
 * otherwise), and its free memory. */
typedef struct gpu_rank {
    int jobs;
    bool pref;
    double oldest_run;
    double free_mib;
} gpu_rank;

/* Whether GPU rank a comes strictly before b: fewer jobs, kept before,
 * the shorter run of its oldest job, then more free memory. */
static bool ranks_before(const gpu_rank *a, const gpu_rank *b) {
    if (a->jobs != b->jobs) return a->jobs < b->jobs;
    if (a->pref != b->pref) return a->pref;
    if (a->oldest_run != b->oldest_run) return a->oldest_run < b->oldest_run;
    return a->free_mib > b->free_mib;
}

/* The GPUs the head keeps: those it is likeliest to get first, those of
 * `prefer` first among equals. A job that
 * may share waits for memory (or for gates that every job faces alike),
 * so it keeps the GPUs with the most free memory; one that must run alone
 * or fills every GPU (core_needs_empty()) waits for idle GPUs, so it keeps those with the fewest jobs, the most
 * free memory breaking ties. No duration is known, so "first" is read
 * from what has to leave, not from when it will. With `by_age` (a job
 * behind the head waiting for empty GPUs, keep_drain()), GPUs with as
 * many jobs rank by how long their oldest job has run, the shortest
 * first: run times of GPU jobs are heavy-tailed, so a job that has run
 * long is likely to run long still, and a GPU whose jobs started late is
 * the likelier to empty first. */
static uint64_t core_reserve(core_state *core, const core_job *head,
                             double now, uint64_t prefer, bool by_age) {
    bool by_jobs = core_needs_empty(core, head);
    /* a head waiting for its feed's GPUs keeps those */
    uint64_t kept = core_feed_waits(core, head, now, NULL)
                        ? core_feed_gpus(core, head, CORE_ALL_GPUS)
                        : 0;
    /* each GPU ranked once: a rank does not change as GPUs are kept */
    gpu_rank rank[CORE_MAX_GPUS];
    for (int g = 0; g < core->num_gpus; g++)
        rank[g] = (gpu_rank){
            .jobs = by_jobs ? (int)core->gpus[g].view.njobs : 0,
            .pref = prefer >> g & 1,
            .oldest_run =
                by_jobs && by_age ? core_gpu_oldest_run(core, g, now) : 0,
            .free_mib = core_gpu_free_now(&core->gpus[g], now),
        };
    for (int k = __builtin_popcountll(kept); k < head->spec.num_gpus; k++) {
        int best = -1;
        for (int g = 0; g < core->num_gpus; g++) {
            if ((kept >> g & 1) || core->gpus[g].drained) continue;
            if (best < 0 || ranks_before(&rank[g], &rank[best])) best = g;
        }
        if (best < 0) break;
        kept |= (uint64_t)1 << best;
    }
    return kept;
}

/* A kept GPU running at most one job takes a job behind a one-GPU head
 * that waits for memory if the job's whole demand and the head's fit there
 * together: when the job it runs ends, the head joins the newcomer as the
 * second job of the GPU, which the pressure filter lets by (the pair
 * rule), where before it waited for that same end. A head that is wide or
 * must run alone takes no partner: its GPUs must all empty at once
 * (reserve.c). Behind any head, a job whose time limit ends before the
 * head's expected start may take every kept GPU. */
static uint64_t head_allowed(const core_state *core, const core_job *job) {
    if (core_reserve_fits(core, job)) return CORE_ALL_GPUS;
    uint64_t allowed = ~core->reserved;
    if (core->head_need_mib <= 0) return allowed;
    double whole = core_demand(core, job);
    for (uint64_t m = core->reserved; m; m &= m - 1) {
        int g = __builtin_ctzll(m);
        const core_gpu *gpu = &core->gpus[g];
        if (gpu->view.njobs <= 1 &&
            whole + core->head_need_mib + core_guard(core, gpu) <=
                gpu->view.total_mib)
            allowed |= (uint64_t)1 << g;
    }
    return allowed;
}

uint64_t core_drain_held(const core_state *core, const core_job *job) {
    return job->behind_drain ? core->drain_kept : 0;
}

uint64_t core_backfill_allowed(const core_state *core, const core_job *job) {
    return head_allowed(core, job) & ~core_drain_held(core, job);
}

/* Places the job on the kept GPUs it may take as the head's partner, or
 * that it leaves before the head's start, the GPUs not kept having failed
 * it: those go first, since a partner takes memory the head will want. */
static bool core_place_partner(core_state *core, const core_job *job,
                               double now, core_launch *l) {
    uint64_t partner = core_backfill_allowed(core, job);
    return partner != (~core->reserved & ~core_drain_held(core, job)) &&
           core_place(core, job, now, partner, l);
}

/* Whether a GPU the head kept has been drained since: then it keeps
 * others. While none is, it keeps the same ones pass after pass, though
 * another GPU may come to show more free memory: a kept GPU that took a
 * partner takes no one else, and were the kept GPUs to move, each GPU
 * could take a partner in turn and the head's place would never clear. */
static bool core_kept_drained(const core_state *core, uint64_t kept) {
    for (uint64_t m = kept; m; m &= m - 1)
        if (core->gpus[__builtin_ctzll(m)].drained) return true;
    return false;
}

/* The head keeps its GPUs: the same as at the last pass while it was the
 * head then and none of them is drained; a one-GPU head that may share
 * takes partners there, demanding `demand`. It keeps its CPUs too, else
 * the jobs behind it could take each CPU that frees (cpus.c). A head waiting for empty GPUs
 * (core_needs_empty()) takes no partner, so nothing it keeps can be lost
 * by moving: it trades a kept GPU still running jobs for one running
 * fewer (an idle one, say), else it would wait for the longest job on its
 * first picks while other GPUs emptied and filled again beside it. */
static void keep_for(core_state *core, const core_job *head,
                     int64_t last_head, uint64_t last_kept, double demand,
                     double now) {
    core->head_id = head->spec.id;
    bool same = head->spec.id == last_head &&
                !core_kept_drained(core, last_kept);
    if (same && core_needs_empty(core, head))
        core->reserved = core_reserve(core, head, now, last_kept, false);
    else
        core->reserved =
            same ? last_kept : core_reserve(core, head, now, 0, false);
    core->reserve_whole = core_reserve_whole(core, head);
    if (!core->reserve_whole) core->head_need_mib = demand;
    core_reserve_plan(core, now);
    core_cpus_keep(core, head);
}

/* Whether a job behind the head that cannot start keeps GPUs from the jobs
 * after it: one that waits for 2 empty GPUs or more. Each job started on
 * any of them delays it, for as long as that job runs; a one-GPU job
 * takes whichever GPU empties first, and keeping one for it pinned it to
 * that GPU (76 settings of 104 passed so on the production windows,
 * against 87). */
static bool drains(const core_state *core, const core_job *job) {
    return job->spec.num_gpus >= 2 && core_needs_empty(core, job);
}

/* The first job behind the head that drains() keeps the GPUs with the
 * fewest jobs from the jobs the pass reaches after it, chosen again at
 * each pass, so that it follows the GPUs that empty. Only the first such
 * job keeps any: those after it wait for it as they would in a FIFO.
 * Among GPUs with as many jobs it keeps those whose oldest job has run
 * the shortest (core_reserve()'s by_age), where the most free memory
 * chose before: on the production windows 88 settings of 104 passed so,
 * against 87, 82 of 96 against 81, and the geomean of mean JCT over
 * aegis's went from 0.981 to 0.974; the opposite (the longest run first)
 * gave 81 and 79 (docs/design.md, "aegis-plus"). */
static void keep_drain(core_state *core, const core_job *job, double now) {
    core->drain_id = job->spec.id;
    core->drain_kept = core_reserve(core, job, now, 0, true);
}

/* Whether any GPU of `allowed` could take a job now: an idle one, or an
 * open one that shares. With none, the rest of a pass can start nothing. */
static bool core_room(const core_state *core, uint64_t allowed, double now) {
    if (core->idle & allowed) return true;
    for (int g = 0; g < core->num_gpus; g++) {
        const core_gpu *gpu = &core->gpus[g];
        if ((allowed >> g & 1) && core_gpu_open(gpu, now) &&
            share_gpu_collocates(&gpu->share))
            return true;
    }
    return false;
}

/* Whether the rest of a pass could start a job: on the GPUs of `allowed`,
 * or on the head's when a job short enough may take them, but for those
 * a job waiting for empty GPUs keeps from the rest (keep_drain()). */
static bool pass_room(const core_state *core, uint64_t allowed, double now) {
    uint64_t open = ~core->drain_kept;
    return core_room(core, allowed & open, now) ||
           (core->reserve_room_s > 0 &&
            core_room(core, core->reserved & open, now));
}

/* The pass reaches the job: its reason is told from this pass. */
static void reach(core_state *core, core_job *job, uint64_t pass) {
    job->tried_in = pass;
    core->reached_job[core->nreached] = job;
    core->reached[core->nreached++] = job->spec.id;
    job->over_limit = core_user_over_limit(core, job, NULL);
    job->behind_drain = core->drain_id >= 0;
}

/* A pass that stops because no GPU it may fill could take a job now has
 * not passed its head's quota: the jobs from `job` on, as far as a pass
 * looks, wait for those GPUs, not behind the head, so they count as
 * reached without being tried, and each is told what keeps it off the
 * GPUs it may take (core_job_reason()). */
static void reach_untried(core_state *core, core_job *job, uint64_t pass) {
    for (; job && core->nreached < CORE_BACKFILL_DEPTH;
         job = next_in_order(core, job))
        reach(core, job, pass);
}

int core_schedule_backfill(core_state *core, double now, core_launch *out,
                           int max) {
    uint64_t pass = ++core->passes;
    int64_t last_head = core->head_id;
    uint64_t last_kept = core->reserved;
    core->head_id = core->drain_id = -1;
    core->reserved = core->drain_kept = 0;
    core->nreached = 0;
    core->head_need_mib = 0;
    core->head_cpus = 0;
    core->reserve_whole = false;
    core->reserve_room_s = core->reserve_start = -1;
    uint64_t allowed = CORE_ALL_GPUS;
    core_job *head = NULL;
    /* GPUs only fill up during a pass, so once a plain job (a first
     * attempt that may share, no policy rule, no MIG) cannot start, no
     * job asking as many GPUs and at least as much memory, capped and
     * whole (which sets the GPUs it may take behind the head), can (a job
     * of a feed may wait for its feed instead, so it is not plain): the
     * smallest such demands per GPU count spare the gates. Of two failed
     * jobs one asks at least as much as the other both ways (a whole
     * demand differs from its capped one only at the cap), so the
     * smallest of each are one job's. */
    double failed[CORE_MAX_JOB_GPUS + 1], failed_whole[CORE_MAX_JOB_GPUS + 1];
    for (int k = 0; k <= CORE_MAX_JOB_GPUS; k++)
        failed[k] = failed_whole[k] = INFINITY;
    bool cacheable = !core->pol->admits && core->mig_gpus == 0;
    int n = 0;
    core_order_start(core, now);
    core_job *job = core->recovery.head ? core->recovery.head
                                        : core_order_next(core);
    while (job && n < max && core->nreached < CORE_BACKFILL_DEPTH) {
        core_job *next = next_in_order(core, job);
        reach(core, job, pass);
        if (job->over_limit) {
            job = next;
            continue;
        }
        int k = job->spec.num_gpus;
        bool plain = cacheable && job->attempt == 1 && job->feed < 0 &&
                     core_may_share(core, job);
        double whole = core_demand(core, job);
        double demand = core_shared_demand(core, job, whole);
        /* one short enough for the head's GPUs may take more of them;
         * one known to fail is passed over unless it may be the job
         * that keeps empty GPUs (the fewest questions: most of a full
         * queue's pass is such jobs) */
        bool fails = plain && demand >= failed[k] &&
                     whole >= failed_whole[k] && !core_reserve_fits(core, job);
        if (fails && !(core->drain_id < 0 && drains(core, job))) {
            job = next;
            continue;
        }
        bool room = true;
        if (!fails &&
            (core_place(core, job, now, allowed & ~core_drain_held(core, job),
                        &out[n]) ||
             (head && core_place_partner(core, job, now, &out[n])))) {
            core_launch_job(core, job, &out[n++], now);
            /* one that ends before the head's start cannot delay it */
            if (head && !core_reserve_fits(core, job)) head->passed++;
            room = pass_room(core, allowed, now);
        } else {
            /* a job may fail for want of CPUs alone, which says
             * nothing of the GPUs */
            if (plain && !core_cpus_counted(core, job)) {
                failed[k] = fmin(failed[k], demand);
                failed_whole[k] = fmin(failed_whole[k], whole);
            }
            if (!head) {
                head = job;
                keep_for(core, head, last_head, last_kept, demand, now);
                allowed = ~core->reserved;
                room = pass_room(core, allowed, now);
            } else if (core->drain_id < 0 && drains(core, job)) {
                keep_drain(core, job, now);
                room = pass_room(core, allowed, now);
            }
        }
        /* unknown when its GPUs empty, a head that must run alone is
         * passed by none */
        if (head && ((head->alone && core->reserve_start < 0) ||
                     head->passed >= core->cfg.backfill_max_passes))
            break;
        if (!room) {
            reach_untried(core, next, pass);
            break;
        }
        job = next;
    }
    return n;
}
