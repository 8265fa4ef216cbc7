/* reserve.c -- the reservation of the head of the queue by time limits
 * (aegis-plus).
 *
 * A head that must run alone or fills a whole GPU, or needs 2 GPUs or
 * more and has been passed by half of backfill_max_passes jobs, keeps its
 * GPUs whole (backfill.c
 * chooses them): no job starts there beside the jobs it found, so it
 * starts once they have ended. Their time limits say when at
 * the latest: an attempt is gone by its start + its limit + the kill
 * grace, and the latest of these over the kept GPUs is the head's
 * expected start, unknown while one of those jobs has no limit. A job
 * behind any head, wide or not, may still start on the kept GPUs when its
 * own limit and grace end before that start: it is gone before the head
 * could take them (Slurm's backfill rule). Each GPU lists its jobs, so a
 * pass reads the start from the kept GPUs' jobs alone, and how long the
 * oldest of them has run (core_gpu_oldest_run(): a job waiting for empty
 * GPUs behind the head keeps those whose jobs started last, backfill.c).
 */
#include "core_priv.h"

#include <stdio.h>

/* The place of GPU g among the job's GPUs: where its links for g are. */
static int slot_of(const core_job *job, int g) {
    int k = 0;
    while (k < job->spec.num_gpus - 1 && job->gpus[k] != g) k++;
    return k;
}

static void link_job(core_gpu *gpu, core_job *job, int k) {
    int g = job->gpus[k];
    job->on_prev[k] = NULL;
    job->on_next[k] = gpu->jobs;
    if (gpu->jobs) gpu->jobs->on_prev[slot_of(gpu->jobs, g)] = job;
    gpu->jobs = job;
}

static void unlink_job(core_gpu *gpu, core_job *job, int k) {
    int g = job->gpus[k];
    core_job *prev = job->on_prev[k], *next = job->on_next[k];
    if (prev) prev->on_next[slot_of(prev, g)] = next;
    else gpu->jobs = next;
    if (next) next->on_prev[slot_of(next, g)] = prev;
}

void core_reserve_link(core_state *core, core_job *job, int sign) {
    for (int k = 0; k < job->spec.num_gpus; k++) {
        core_gpu *gpu = &core->gpus[job->gpus[k]];
        if (sign > 0) link_job(gpu, job, k);
        else unlink_job(gpu, job, k);
    }
}

double core_job_limit(const core_state *core, const core_job *job) {
    return job->spec.time_limit_s > 0 ? job->spec.time_limit_s
                                      : core->cfg.default_time;
}

/* A job that may share but whose demand and guard fill every GPU it could
 * take (one declaring a whole GPU) can start only on an empty GPU, as one
 * that must run alone: no partner fits beside it, so what it waits for is
 * the jobs on its GPUs to leave, not memory to free. */
bool core_needs_empty(const core_state *core, const core_job *job) {
    if (!core_may_share(core, job)) return true;
    double demand = core_shared_demand(core, job, core_demand(core, job));
    for (int g = 0; g < core->num_gpus; g++) {
        const core_gpu *gpu = &core->gpus[g];
        if (!gpu->drained &&
            demand + core_guard(core, gpu) < gpu->view.total_mib)
            return false;
    }
    return true;
}

/* A wide head takes partners as a one-GPU head does at first: it most
 * often starts beside them soon, and on the real traces keeping its GPUs
 * whole at once cost more than it gained (docs/design.md). Once half of
 * its backfill_max_passes have passed it, its GPUs are kept whole, so
 * they empty together however many small jobs keep coming. */
bool core_reserve_whole(const core_state *core, const core_job *head) {
    return core_needs_empty(core, head) ||
           (head->spec.num_gpus >= 2 &&
            head->passed >= core->cfg.backfill_max_passes / 2);
}

/* The jobs on the GPUs of `gpus`, each counted once (at the first of its
 * GPUs among them). */
typedef struct kept_jobs {
    int count;
    double latest_end;      /* the latest end by their limits */
    int64_t unlimited;      /* one without a limit; -1: none */
} kept_jobs;

/* Whether GPU g is the first of the job's GPUs in `gpus`. */
static bool first_kept(const core_job *job, uint64_t gpus, int g) {
    for (int k = 0; k < job->spec.num_gpus; k++)
        if ((gpus >> job->gpus[k] & 1) && job->gpus[k] < g) return false;
    return true;
}

static kept_jobs jobs_kept(const core_state *core, uint64_t gpus,
                           double now) {
    kept_jobs kj = {0, now, -1};
    for (uint64_t m = gpus; m; m &= m - 1) {
        int g = __builtin_ctzll(m);
        for (const core_job *j = core->gpus[g].jobs; j;
             j = j->on_next[slot_of(j, g)]) {
            if (!first_kept(j, gpus, g)) continue;
            kj.count++;
            double limit = core_job_limit(core, j);
            double end = j->started_at + limit + CORE_KILL_GRACE_S;
            if (limit <= 0) kj.unlimited = j->spec.id;
            else if (end > kj.latest_end) kj.latest_end = end;
        }
    }
    return kj;
}

double core_gpu_oldest_run(const core_state *core, int g, double now) {
    double run = 0;
    for (const core_job *j = core->gpus[g].jobs; j;
         j = j->on_next[slot_of(j, g)])
        if (now - j->started_at > run) run = now - j->started_at;
    return run;
}

void core_reserve_plan(core_state *core, double now) {
    kept_jobs kj = jobs_kept(core, core->reserved, now);
    core->reserve_start = kj.unlimited >= 0 ? -1 : kj.latest_end;
    core->reserve_room_s = kj.unlimited >= 0 ? -1 : kj.latest_end - now;
}

bool core_reserve_fits(const core_state *core, const core_job *job) {
    double limit = core_job_limit(core, job);
    return limit > 0 && core->reserve_room_s > 0 &&
           limit + CORE_KILL_GRACE_S <= core->reserve_room_s;
}

bool core_reserve_reason(const core_state *core, const core_job *job,
                         core_reason *r) {
    if (job->spec.id != core->head_id || !core->reserve_whole) return false;
    /* passed by none, it takes whichever GPUs empty first (backfill.c) */
    if (!core_may_share(core, job) && core->reserve_start < 0) return false;
    kept_jobs kj = jobs_kept(core, core->reserved, 0);
    if (kj.count == 0) return false; /* it waits for something else */
    *r = (core_reason){.kind = CORE_WAIT_RESERVING, .gpu = -1,
                       .gpus = core->reserved, .count = kj.count,
                       .job = kj.unlimited, .until = core->reserve_start};
    return true;
}

/* The GPUs of the mask as ranges: "0-7", "0,2,5-6". */
static void gpu_ranges(uint64_t gpus, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int g = 0; g < 64 && at < len; g++) {
        if (!(gpus >> g & 1)) continue;
        int last = g;
        while (last < 63 && (gpus >> (last + 1) & 1)) last++;
        int n = last > g ? snprintf(buf + at, len - at, "%s%d-%d",
                                    at ? "," : "", g, last)
                         : snprintf(buf + at, len - at, "%s%d",
                                    at ? "," : "", g);
        at += n > 0 ? (size_t)n : 0;
        g = last;
    }
}

int core_reserve_text(const core_reason *r, const char *start, char *buf,
                      size_t len) {
    char list[256];
    gpu_ranges(r->gpus, list, sizeof(list));
    bool many = __builtin_popcountll(r->gpus) > 1;
    const char *jobs = r->count > 1 ? "jobs" : "job";
    if (r->until < 0)
        return snprintf(buf, len, "reserving GPU%s %s: %d %s on %s, expected "
                        "start unknown (job %lld has no time limit)",
                        many ? "s" : "", list, r->count, jobs,
                        many ? "them" : "it", (long long)r->job);
    return snprintf(buf, len, "reserving GPU%s %s: %d %s on %s, expected "
                    "start %s", many ? "s" : "", list, r->count, jobs,
                    many ? "them" : "it", start);
}
