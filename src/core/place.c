/* place.c -- where a job would go: placement, apart from the queue walks
 * above it (fifo.c, backfill.c) and the state changes below it (core.c).
 *
 * core_place() tries, in order: beside the jobs of its data feed,
 * exclusive placement on idle GPUs, a MIG instance, then collocation
 * through the gates (observation, window full, memory, pressure, the
 * policy's own constraint) and the ranking; then, under a policy that
 * counts them, the server's CPUs (cpus.c). It decides only: it writes a
 * core_launch and changes nothing a job or a count holds, except the
 * cached gate verdicts and views of the GPUs it read (core_gate), which
 * core_check() does not count. core_launch_job() (core.c) carries a
 * placement out.
 *
 * These run once per queued job per pass, the simulator's hot path; with
 * link-time optimisation (on outside Debug and sanitizer builds) the
 * walks in fifo.c and backfill.c get them inlined as when they shared a
 * file.
 */
#include "core_priv.h"

#include <math.h>
#include <string.h>

/* ---- telemetry gates ------------------------------------------------------ */

/* Refreshes gpu->view from the full window and applies the telemetry
 * gates. Free memory is total minus the most used at any instant of the
 * window: a training job's memory swings within an iteration and a job can
 * free memory only to take it again, so the window's peak is the safe
 * reading. The memory gate goes first: it needs only the window's peak,
 * and on a busy server it turns most GPUs away before their risk scores
 * (the costly part of a window) are worked out. The scores are read only
 * for a GPU that passes. */
static bool core_telemetry_gates(core_state *core, core_gpu *gpu, double demand,
                                 bool pressure, double now) {
    gpu->view.free_mib = gpu->view.total_mib - win_used_max_at(&gpu->win, now);
    if (gpu->view.free_mib - core_guard(core, gpu) < demand) return false;
    const win_scores *s = win_scores_at(&gpu->win, now);
    gpu->view.smact = s->smact;
    gpu->view.smocc = s->smocc;
    gpu->view.drama = s->drama;
    gpu->view.util = s->util;
    return !(pressure && core_under_pressure(&core->cfg, &gpu->view));
}

/* core_telemetry_gates() once the window is full, asked again only when the
 * window or the demand changed: gpu->view then still holds what the last
 * asking read, since nothing else writes its telemetry fields. */
static bool core_telemetry_admits(core_state *core, core_gpu *gpu, double demand,
                                  bool pressure, double now) {
    if (!win_full(&gpu->win, now)) return false;
    uint64_t version = win_version_at(&gpu->win, now);
    if (gpu->gate.version != version || gpu->gate.demand != demand ||
        gpu->gate.pressure != pressure)
        gpu->gate = (core_gate){version, demand, pressure,
            core_telemetry_gates(core, gpu, demand, pressure, now)};
    return gpu->gate.admits;
}

typedef struct core_candidate {
    double key;
    int gpu;
} core_candidate;

static bool core_candidate_before(const core_candidate *a,
                                  const core_candidate *b) {
    return a->key < b->key || (a->key == b->key && a->gpu < b->gpu);
}

/* Moves the k best candidates, in order, to c[0..k): by key, GPU index
 * breaking ties, the stable order AEGIS's sorts keep. Selection, not a
 * sort: most jobs want one GPU, and then this is one pass. */
static void core_take_best(core_candidate *c, int n, int k) {
    for (int i = 0; i < k; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            if (core_candidate_before(&c[j], &c[best])) best = j;
        core_candidate x = c[i];
        c[i] = c[best];
        c[best] = x;
    }
}

/* True when the job, demanding `demand` (core_demand()), would run in a
 * MIG instance on this GPU (core.h, "sharing modes"), not on the whole
 * GPU. */
bool core_wants_mig(const core_state *core, const core_job *job,
                           double demand, const core_gpu *gpu) {
    if (!share_gpu_mode_mig(gpu->share.mode)) return false;
    return share_gpu_wants_mig(&gpu->share, job->spec.num_gpus, demand,
                               job->spec.util_pct,
                               !job->alone && core->pol->collocates);
}

/* The placements below take the job's demand from l->floor_mib, which
 * core_schedule() sets first. */

/* Exclusive first: the lowest-numbered idle GPUs, if there are enough,
 * among those the job would take whole. Idle GPUs read no telemetry
 * (AEGIS's idle path checks only that no job is on them), so no full
 * window is needed. */
static bool core_place_exclusive(core_state *core, const core_job *job,
                                 uint64_t allowed, core_launch *l) {
    int n = 0;
    for (uint64_t m = core->idle & allowed; m && n < job->spec.num_gpus;
         m &= m - 1) {
        int g = __builtin_ctzll(m); /* the lowest idle GPU left */
        if (!core_wants_mig(core, job, l->floor_mib, &core->gpus[g]))
            l->gpus[n++] = g;
    }
    l->exclusive = true;
    return n == job->spec.num_gpus;
}

/* Collocation: every open GPU through the gates, then the best ranked. */
static bool core_place_shared(core_state *core, const core_job *job,
                              double now, uint64_t allowed, core_launch *l) {
    const policy *pol = core->pol;
    /* After an OOM the policy's own memory model proved wrong, so even
     * a telemetry-free baseline must now see the floor free. */
    bool telemetry = pol->uses_telemetry || job->floor_mib > 0;
    double demand = l->floor_mib;
    core_candidate cand[CORE_MAX_GPUS];
    int n = 0;
    for (int g = 0; g < core->num_gpus; g++) {
        core_gpu *gpu = &core->gpus[g];
        if (!(allowed >> g & 1) || !core_gpu_open(gpu, now) ||
            !share_gpu_collocates(&gpu->share) ||
            core_gpu_other_user(gpu, job) ||
            core_wants_mig(core, job, demand, gpu))
            continue;
        if (telemetry && !core_telemetry_admits(core, gpu, demand,
                                                core_filters_pressure(core, gpu),
                                                now))
            continue;
        if (pol->admits && !pol->admits(&core->cfg, &gpu->view, &job->spec))
            continue;
        cand[n].gpu = g;
        cand[n].key = pol->rank ? pol->rank(&core->cfg, &gpu->view, &job->spec)
                                : policy_placement_key(core->placement, &gpu->view,
                                                       core->rr_next, core->num_gpus);
        n++;
    }
    if (n < job->spec.num_gpus) return false;
    core_take_best(cand, n, job->spec.num_gpus);
    for (int k = 0; k < job->spec.num_gpus; k++) l->gpus[k] = cand[k].gpu;
    l->exclusive = false;
    return true;
}

/* A MIG instance for a one-GPU job: the planner on every GPU where the job
 * would run in one, the fewest free memory slices first (best fit), the
 * lowest index breaking ties. FULL and FRAGMENTED both wait (core.h). */
static bool core_place_mig(core_state *core, const core_job *job,
                           uint64_t allowed, core_launch *l) {
    if (job->spec.num_gpus != 1 || core->mig_gpus == 0) return false;
    long demand = (long)ceil(l->floor_mib);
    int best = -1, best_used = -1;
    mig_pick best_pick = {MIG_FULL, NULL, -1};
    for (int g = 0; g < core->num_gpus; g++) {
        core_gpu *gpu = &core->gpus[g];
        if (!(allowed >> g & 1) || gpu->drained || gpu->alone ||
            !core_wants_mig(core, job, l->floor_mib, gpu) ||
            !share_gpu_mig_open(&gpu->share, gpu->view.njobs))
            continue;
        const share_gpu *sh = &gpu->share;
        mig_pick pick = mig_plan(sh->model, sh->inst, sh->ninst, demand);
        if (pick.verdict != MIG_PLACED) continue;
        int used = 0;
        for (int i = 0; i < sh->ninst; i++) used += sh->inst[i].profile->mem_slices;
        if (used > best_used) {
            best = g;
            best_used = used;
            best_pick = pick;
        }
    }
    if (best < 0) return false;
    l->gpus[0] = best;
    l->mig = best_pick.profile;
    l->mig_start = best_pick.start;
    l->exclusive = false;
    return true;
}

/* Free memory of a GPU as the telemetry shows it at `now`: the window's
 * peak once the window is full, else the latest reading. */
double core_gpu_free_now(core_gpu *gpu, double now) {
    if (gpu->win.nsteps == 0) return gpu->view.total_mib;
    double used = win_full(&gpu->win, now)
                      ? win_used_max_at(&gpu->win, now)
                      : gpu->win.steps[gpu->win.nsteps - 1].r.used_mib;
    return gpu->view.total_mib - used;
}
/* ---- the demand placed, and the order of tries ------------------------ */

double core_shared_demand(const core_state *core, const core_job *job,
                          double demand) {
    double cap = core->cfg.est_cap_mib;
    if (!core->pol->caps_estimates || job->spec.mem_declared ||
        job->floor_mib > 0 || cap <= 0)
        return demand;
    return demand < cap ? demand : cap;
}

bool core_may_share(const core_state *core, const core_job *job) {
    return !job->alone && core->pol->collocates &&
           (job->attempt == 1 || core->cfg.recovery_collocates);
}

/* A job of a feed whose jobs run: beside them, before any idle GPU
 * (feeds.c says why). l->floor_mib is kept when it fails. */
static bool place_feed(core_state *core, const core_job *job, double now,
                       uint64_t allowed, core_launch *l) {
    uint64_t gpus = core_feed_gpus(core, job, allowed);
    if (__builtin_popcountll(gpus) < job->spec.num_gpus) return false;
    double demand = l->floor_mib;
    l->floor_mib = core_shared_demand(core, job, demand);
    if (core_place_shared(core, job, now, gpus, l)) return true;
    l->floor_mib = demand;
    return false;
}

/* Where on the GPUs of `allowed` the job would go, CPUs aside. */
static bool place_gpus(core_state *core, const core_job *job, double now,
                       uint64_t allowed, core_launch *l) {
    memset(l, 0, sizeof(*l));
    l->job_id = job->spec.id;
    l->attempt = job->attempt;
    l->num_gpus = job->spec.num_gpus;
    l->floor_mib = core_demand(core, job);
    if (job->feed >= 0 && place_feed(core, job, now, allowed, l)) return true;
    if (job->feed >= 0 && core_feed_waits(core, job, now, NULL))
        return false;
    if (core_place_exclusive(core, job, allowed, l) ||
        core_place_mig(core, job, allowed, l))
        return true;
    if (!core_may_share(core, job)) return false;
    l->floor_mib = core_shared_demand(core, job, l->floor_mib);
    return core_place_shared(core, job, now, allowed, l);
}

/* The GPUs first, then the CPUs its loader would need there: a feed's
 * job placed beside its feed's jobs needs none more. */
bool core_place(core_state *core, const core_job *job, double now,
                uint64_t allowed, core_launch *l) {
    return place_gpus(core, job, now, allowed, l) &&
           core_cpus_fit(core, job, l->gpus[0]);
}
