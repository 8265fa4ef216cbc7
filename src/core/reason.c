/* reason.c -- why a queued job waits (core_job_reason()), and the reason
 * as text.
 *
 * Nothing here runs at a decision: the reason is worked out when a driver
 * asks, from the state the last core_schedule() left, by reading the gates
 * the way the placement does. So `aegis ls` and `aegis sim --json` pay for
 * it and the simulator's plain replay does not.
 */
#include "core_priv.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

static const char *const wait_names[CORE_WAIT_KINDS] = {
    "", "behind", "memory", "observing", "window", "pressure", "idle",
    "policy", "mig", "drained", "user_limit", "dependency", "held", "feed",
    "mps_user", "reserving", "cpus"};

const char *core_wait_name(core_wait kind) {
    return (unsigned)kind < CORE_WAIT_KINDS ? wait_names[kind] : "?";
}

/* The pressure filter's reading, as core_under_pressure() takes it. */
static void pressure_reading(const core_config *cfg, const policy_gpu *g,
                             core_reason *r) {
    bool dcgm = g->smact >= 0 && (g->smocc >= 0 || g->drama >= 0);
    r->metric = dcgm ? "SMACT" : "utilization";
    r->value = dcgm ? g->smact : g->util;
    r->limit = dcgm ? cfg->smact_max : cfg->util_max;
}

/* Whether the pressure filter keeps a new job off the GPU, its window
 * full, as core_place_shared() reads it: the GPU's view with the window's
 * scores at `now`, into *view. */
static bool under_pressure(core_state *core, core_gpu *gpu, double now,
                           policy_gpu *view) {
    if (!core_filters_pressure(core, gpu)) return false;
    const win_scores *s = win_scores_at(&gpu->win, now);
    *view = gpu->view;
    view->smact = s->smact;
    view->smocc = s->smocc;
    view->drama = s->drama;
    view->util = s->util;
    return core_under_pressure(&core->cfg, view);
}

/* What keeps GPU g from taking the job beside its jobs, the gates read as
 * core_place_shared() reads them, into r; CORE_WAIT_NONE when it would
 * take it. A gate of the telemetry is told before the observation, since
 * only the observation ends by itself. */
static core_wait gpu_blocker(core_state *core, const core_job *job, int g,
                             double demand, double now, core_reason *r) {
    core_gpu *gpu = &core->gpus[g];
    const policy *pol = core->pol;
    *r = (core_reason){.gpu = g};
    if (gpu->drained) return r->kind = CORE_WAIT_DRAINED;
    if (core_wants_mig(core, job, demand, gpu)) {
        r->need_mib = demand;
        return r->kind = CORE_WAIT_MIG;
    }
    if (gpu->alone || !share_gpu_collocates(&gpu->share))
        return r->kind = CORE_WAIT_IDLE;
    if (core_gpu_other_user(gpu, job)) {
        r->user = core_gpu_mps_user(gpu, job);
        return r->kind = CORE_WAIT_MPS_USER;
    }
    if (pol->uses_telemetry || job->floor_mib > 0) {
        if (!win_full(&gpu->win, now)) {
            r->until = win_full_at(&gpu->win);
            return r->kind = CORE_WAIT_WINDOW;
        }
        double guard = core_guard(core, gpu);
        r->free_mib = gpu->view.total_mib - win_used_max_at(&gpu->win, now);
        r->need_mib = core_shared_demand(core, job, demand) + guard;
        if (r->free_mib < r->need_mib) return r->kind = CORE_WAIT_MEMORY;
        policy_gpu view;
        if (under_pressure(core, gpu, now, &view)) {
            pressure_reading(&core->cfg, &view, r);
            return r->kind = CORE_WAIT_PRESSURE;
        }
    }
    if (pol->admits && !pol->admits(&core->cfg, &gpu->view, &job->spec))
        return r->kind = CORE_WAIT_POLICY;
    if (gpu->unseen > 0 || now < gpu->open_at) {
        r->until = gpu->unseen > 0 ? -1 : gpu->open_at;
        return r->kind = CORE_WAIT_OBSERVING;
    }
    return r->kind = CORE_WAIT_NONE;
}

/* Which of two GPUs' reasons of the same kind to tell: the one nearest to
 * admitting the job. */
static bool nearer(const core_reason *a, const core_reason *b) {
    switch (a->kind) {
    case CORE_WAIT_OBSERVING:
    case CORE_WAIT_WINDOW: /* an unknown end (< 0) is the latest */
        return b->until < 0 || (a->until >= 0 && a->until < b->until);
    case CORE_WAIT_PRESSURE: return a->value < b->value;
    case CORE_WAIT_MEMORY: return a->free_mib > b->free_mib;
    default: return false;
    }
}

/* The kinds a GPU's reason may have, the one told first: what ends by
 * itself before what waits for a job to leave. */
static const core_wait told_first[] = {
    CORE_WAIT_OBSERVING, CORE_WAIT_WINDOW, CORE_WAIT_PRESSURE,
    CORE_WAIT_POLICY, CORE_WAIT_MIG, CORE_WAIT_MEMORY, CORE_WAIT_MPS_USER,
    CORE_WAIT_IDLE, CORE_WAIT_DRAINED};

/* The core's GPUs among `allowed`. */
static uint64_t gpus_of(const core_state *core, uint64_t allowed) {
    uint64_t all = core->num_gpus == 64 ? CORE_ALL_GPUS
                                        : ((uint64_t)1 << core->num_gpus) - 1;
    return allowed & all;
}

/* Why no GPU of `allowed` takes the job now; CORE_WAIT_NONE when they
 * would. */
static void explain_gpus(core_state *core, const core_job *job, double now,
                         uint64_t allowed, core_reason *r) {
    int need = job->spec.num_gpus;
    *r = (core_reason){.kind = CORE_WAIT_NONE, .gpu = -1};
    if (__builtin_popcountll(core->idle & allowed) >= need) return;
    if (!core_may_share(core, job)) {
        *r = (core_reason){.kind = CORE_WAIT_IDLE, .gpu = -1, .count = need};
        return;
    }
    double demand = core_demand(core, job);
    core_reason best[CORE_WAIT_KINDS];
    bool seen[CORE_WAIT_KINDS] = {false};
    int admitting = 0;
    for (int g = 0; g < core->num_gpus; g++) {
        if (!(allowed >> g & 1)) continue;
        core_reason at;
        core_wait kind = gpu_blocker(core, job, g, demand, now, &at);
        if (kind == CORE_WAIT_NONE) {
            admitting++;
            continue;
        }
        if (!seen[kind] || nearer(&at, &best[kind])) best[kind] = at;
        seen[kind] = true;
    }
    if (admitting >= need) return;
    for (size_t i = 0; i < sizeof(told_first) / sizeof(*told_first); i++) {
        if (!seen[told_first[i]]) continue;
        *r = best[told_first[i]];
        r->count = need;
        return;
    }
    /* Fewer GPUs allowed than it needs. */
    *r = (core_reason){.kind = CORE_WAIT_DRAINED, .gpu = -1, .count = need};
}

/* Why the job cannot start on the GPUs of `allowed` now: the GPUs, then
 * the CPUs (as core_place() asks); CORE_WAIT_NONE when it could. */
static void core_explain_now(core_state *core, const core_job *job,
                             double now, uint64_t allowed, core_reason *r) {
    explain_gpus(core, job, now, allowed, r);
    if (r->kind == CORE_WAIT_NONE) core_cpus_reason(core, job, allowed, r);
}

/* Whether the answers kept are reused: where a job's demand, GPU count
 * and sharing are all a gate reads, so no policy rule, no MIG, no MPS
 * (whose GPUs ask the job's user). */
static bool explained_reusable(const core_state *core) {
    return !core->pol->admits && core->mig_gpus == 0 && core->mps_gpus == 0;
}

/* The question a job asks of the GPUs of `allowed`: its answer holds for
 * every job that asks alike at the same moment with nothing changed. A
 * whole reason's adds the pass, the job's user and its limit; the CPUs
 * its loader needs, and whether it is the head, which keeps CPUs from
 * the others (cpus.c), count too, and whether the pass reached it after a
 * job waiting for empty GPUs that keeps GPUs from it (backfill.c). */
static core_question question(const core_state *core, const core_job *job,
                              double now, uint64_t allowed, bool whole) {
    uint64_t shape = (uint64_t)job->spec.num_gpus << 8 |
                     (uint64_t)(job->spec.id == core->head_id) << 4 |
                     (uint64_t)core_may_share(core, job) << 3 |
                     (uint64_t)(job->floor_mib > 0) << 2;
    if (whole)
        shape |= (uint64_t)(uint32_t)job->user << 32 |
                 (uint64_t)job->behind_drain << 5 | 2 | job->over_limit;
    return (core_question){
        .changes = core->changes + 1, .passes = whole ? core->passes : 0,
        .now = now, .demand = core_demand(core, job), .allowed = allowed,
        .cpus = core_cpus_need(core, job, -1, allowed), .shape = shape};
}

/* The answer kept for q, into *r: NULL. Else the slot to keep q's answer
 * in, once worked out. */
static core_explained *kept_answer(core_state *core, const core_question *q,
                                   core_reason *r) {
    uint64_t h = ((uint64_t)(q->demand * 8) * 0x9E3779B97F4A7C15ull ^
                  q->allowed ^ q->shape) * 0x9E3779B97F4A7C15ull;
    core_explained *e = &core->explained[(h >> 40) % CORE_EXPLAINED];
    if (e->q.changes != q->changes || e->q.now != q->now ||
        e->q.demand != q->demand || e->q.allowed != q->allowed ||
        e->q.cpus != q->cpus ||
        e->q.shape != q->shape || e->q.passes != q->passes)
        return e;
    *r = e->reason;
    return NULL;
}

/* core_explain_now(), from the answers kept when a job asked alike at the
 * same moment with nothing changed since. */
static void core_explain(core_state *core, const core_job *job, double now,
                         uint64_t allowed, core_reason *r) {
    if (!explained_reusable(core)) {
        core_explain_now(core, job, now, allowed, r);
        return;
    }
    core_question q = question(core, job, now, allowed, false);
    core_explained *e = kept_answer(core, &q, r);
    if (!e) return;
    core_explain_now(core, job, now, allowed, r);
    *e = (core_explained){.q = q, .reason = *r};
}

static void behind(core_reason *r, int64_t head_id) {
    *r = (core_reason){.kind = CORE_WAIT_BEHIND, .gpu = -1, .job = head_id};
}

/* Whether a GPU's reason of this kind ends by itself (told_first's first
 * three), not when a job leaves. */
static bool ends_by_itself(core_wait kind) {
    return kind == CORE_WAIT_OBSERVING || kind == CORE_WAIT_WINDOW ||
           kind == CORE_WAIT_PRESSURE;
}

/* Why a job behind a head that keeps GPUs waits, r holding its reason
 * over every GPU: what keeps it off the GPUs it may take past the head
 * (the others, and kept ones where it is the head's partner, less those
 * a job waiting for empty GPUs ahead of it keeps), or "behind" where it
 * can wait for nothing else. Where it could start on those now, the pass
 * stopped before trying it, for want of room on the GPUs not kept
 * (backfill.c): what keeps it off those. Where it fits now on a kept
 * GPU, it waits behind the head unless what keeps it off the others ends
 * by itself, told first as between GPUs (docs/design.md). */
static void explain_past_head(core_state *core, const core_job *job,
                              double now, core_reason *r) {
    bool fits_kept = r->kind == CORE_WAIT_NONE;
    int need = job->spec.num_gpus;
    uint64_t rest = gpus_of(core, core_backfill_allowed(core, job));
    uint64_t unkept =
        gpus_of(core, ~core->reserved & ~core_drain_held(core, job));
    if (__builtin_popcountll(rest) < need) {
        behind(r, core->head_id);
        return;
    }
    core_explain(core, job, now, rest, r);
    if (r->kind == CORE_WAIT_NONE && __builtin_popcountll(unkept) >= need)
        core_explain(core, job, now, unkept, r);
    if (r->kind == CORE_WAIT_NONE || (fits_kept && !ends_by_itself(r->kind)))
        behind(r, core->head_id);
}

/* Why a job the last backfill pass reached waits. */
static void reached_reason(core_state *core, const core_job *job, double now,
                           core_reason *r) {
    if (job->over_limit && core_user_over_limit(core, job, r)) return;
    if (core_feed_waits(core, job, now, r)) return;
    core_explain(core, job, now, CORE_ALL_GPUS, r);
    if (r->kind != CORE_WAIT_NONE && core_reserve_reason(core, job, r))
        return;
    if (job->spec.id == core->head_id || core->reserved == 0) return;
    explain_past_head(core, job, now, r);
}

/* reached_reason(), from the answer kept when a job of the same user
 * asked alike after the same pass with nothing changed since; the head
 * and a feed's job, which ask of their own, always worked out. */
static void reached_reason_kept(core_state *core, const core_job *job,
                                double now, core_reason *r) {
    if (!explained_reusable(core) || job->feed >= 0 ||
        job->spec.id == core->head_id) {
        reached_reason(core, job, now, r);
        return;
    }
    core_question q = question(core, job, now, CORE_ALL_GPUS, true);
    core_explained *e = kept_answer(core, &q, r);
    if (!e) return;
    reached_reason(core, job, now, r);
    *e = (core_explained){.q = q, .reason = *r};
}

/* Why a job the core knows waits (core_job_reason()). */
static void job_reason(core_state *core, core_job *job, double now,
                       core_reason *r) {
    *r = (core_reason){.kind = CORE_WAIT_NONE, .gpu = -1};
    if (job->state != JOB_QUEUED) return;
    if (!core->pol->backfill) {
        core_job *head = core_head(core);
        if (job != head) behind(r, head->spec.id);
        else if (!core_feed_waits(core, job, now, r))
            core_explain(core, job, now, CORE_ALL_GPUS, r);
        return;
    }
    /* Told first: no other job ending would start it. */
    if (core_user_cannot_start(core, job, r)) return;
    bool reached = job->tried_in == core->passes;
    if (!reached && core->head_id >= 0) {
        /* the pass stopped at the head's quota, or for a head that must
         * run alone (backfill.c) */
        behind(r, core->head_id);
        return;
    }
    reached_reason_kept(core, job, now, r);
}

int core_job_reason(core_state *core, int64_t job_id, double now,
                    core_reason *r) {
    core_job *job = core_find(core, job_id);
    if (!job) {
        *r = (core_reason){.kind = CORE_WAIT_NONE, .gpu = -1};
        return -1;
    }
    job_reason(core, job, now, r);
    return 0;
}

void core_front_reason(core_state *core, int i, double now, core_reason *r) {
    assert(i >= 0 && i < core->nfront);
    assert(core->front_forgotten == core->forgotten);
    job_reason(core, core->front[i], now, r);
}

int core_reason_text(const core_reason *r, double now, char *buf,
                     size_t len) {
    const char *s = r->count > 1 ? "s" : "";
    switch (r->kind) {
    case CORE_WAIT_NONE: return snprintf(buf, len, "-");
    case CORE_WAIT_BEHIND:
        return snprintf(buf, len, "behind job %lld (head of queue)",
                        (long long)r->job);
    case CORE_WAIT_MEMORY:
        return snprintf(buf, len, "no %s with %.0f MiB free (largest free: "
                        "%.0f MiB on GPU %d)", r->count > 1 ? "GPUs" : "GPU",
                        r->need_mib, r->free_mib, r->gpu);
    case CORE_WAIT_OBSERVING:
        if (r->until < 0)
            return snprintf(buf, len, "GPU %d under observation until its "
                            "new job is seen active", r->gpu);
        return snprintf(buf, len, "GPU %d under observation for %.0f s more",
                        r->gpu, r->until > now ? r->until - now : 0);
    case CORE_WAIT_WINDOW:
        return snprintf(buf, len, "GPU %d telemetry window fills in %.0f s",
                        r->gpu, r->until > now ? r->until - now : 0);
    case CORE_WAIT_PRESSURE:
        return snprintf(buf, len, "GPU %d under pressure (%s %.2f >= %.2f)",
                        r->gpu, r->metric, r->value, r->limit);
    case CORE_WAIT_IDLE:
        return snprintf(buf, len, "waiting for %d idle GPU%s", r->count, s);
    case CORE_WAIT_POLICY:
        return snprintf(buf, len, "no GPU passes the policy's own rule");
    case CORE_WAIT_MIG:
        return snprintf(buf, len, "no MIG instance of %.0f MiB can be made now",
                        r->need_mib);
    case CORE_WAIT_DRAINED:
        return snprintf(buf, len, "no GPU open to it (drained, or its "
                        "readings fail)");
    case CORE_WAIT_USER_LIMIT:
        if (r->asked > 0)
            return snprintf(buf, len, "asks %d GPUs, over max_gpus_per_user "
                            "%d: cannot start", r->asked, r->count);
        return snprintf(buf, len, "user limit reached (%d %s%s)", r->count,
                        r->metric, s);
    case CORE_WAIT_DEPENDENCY:
        return snprintf(buf, len, "waiting for job %lld (dependency)",
                        (long long)r->job);
    case CORE_WAIT_HELD: return snprintf(buf, len, "held");
    case CORE_WAIT_FEED:
        if (r->gpu < 0)
            return snprintf(buf, len, "waiting for feed %s's producer (job "
                            "%lld)", r->feed, (long long)r->job);
        if (r->until < 0)
            return snprintf(buf, len, "waiting for feed %s's GPU %d (until "
                            "its new job is seen active)", r->feed, r->gpu);
        return snprintf(buf, len, "waiting for feed %s's GPU %d (%.0f s more)",
                        r->feed, r->gpu, r->until > now ? r->until - now : 0);
    case CORE_WAIT_MPS_USER:
        if (r->user == UINT32_MAX)
            return snprintf(buf, len, "GPU %d runs processes aegis did not "
                            "start, of other users (MPS serves one user at "
                            "a time)", r->gpu);
        return snprintf(buf, len, "GPU %d runs MPS clients of user %lu "
                        "(MPS serves one user at a time)", r->gpu,
                        (unsigned long)r->user);
    case CORE_WAIT_RESERVING: {
        char start[32];
        snprintf(start, sizeof(start), "in %.0f s",
                 r->until > now ? r->until - now : 0);
        return core_reserve_text(r, start, buf, len);
    }
    case CORE_WAIT_CPUS: {
        int n = snprintf(buf, len, "needs %g CPU%s for its data loading, "
                         "%g of the server's %g free", r->value,
                         r->value == 1 ? "" : "s", r->free_cpus, r->limit);
        if (r->kept_cpus <= 0 || n < 0 || (size_t)n >= len) return n;
        return n + snprintf(buf + n, len - (size_t)n, " (%g kept for job "
                            "%lld, the head of the queue)", r->kept_cpus,
                            (long long)r->job);
    }
    case CORE_WAIT_KINDS: break;
    }
    return snprintf(buf, len, "?");
}

/* Adds job to the front given, its id into ids[n]; returns n + 1. */
static int front_add(core_state *core, core_job *job, int64_t *ids, int n) {
    core->front[n] = job;
    ids[n] = job->spec.id;
    return n + 1;
}

int core_reason_front(core_state *core, int64_t *ids, int max) {
    int n = 0;
    if (max > CORE_BACKFILL_DEPTH) max = CORE_BACKFILL_DEPTH;
    core->front_forgotten = core->forgotten;
    if (!core->pol->backfill) {
        core_job *head = core_head(core);
        if (head && max > 0) n = front_add(core, head, ids, n);
    } else {
        for (int i = 0; i < core->nreached && n < max; i++) {
            core_job *job = core->reached_job[i];
            if (!job || job->spec.id != core->reached[i] ||
                job->state == JOB_SPARE) /* freed, reused or spare */
                job = core_find(core, core->reached[i]); /* resubmitted */
            if (job && job->state == JOB_QUEUED)
                n = front_add(core, job, ids, n);
        }
    }
    core->nfront = n;
    return n;
}

/* ---- when reasons change ------------------------------------------------ */

/* What GPU g's gates read at `now` for a reason's kind (gpu_blocker(),
 * feed_gpu_opens_later()) beyond what only changes with core->changes:
 * the window as time moves it, the observation's end, and the telemetry
 * the last placement left in the GPU's view for a policy's admits(). The
 * pressure filter's answer, not its reading: the window's scores move at
 * almost every step, the answer seldom. */
static void gpu_mark(core_state *core, core_gpu *gpu, double now,
                     core_gpu_mark *m) {
    memset(m, 0, sizeof(*m)); /* padding too: marks are compared whole */
    m->free_now = core_gpu_free_now(gpu, now);
    m->full = win_full(&gpu->win, now);
    policy_gpu view;
    m->pressure = m->full && under_pressure(core, gpu, now, &view);
    if (core->pol->admits) {
        m->view_free = gpu->view.free_mib;
        m->view_smact = gpu->view.smact;
        m->view_smocc = gpu->view.smocc;
        m->view_drama = gpu->view.drama;
        m->view_util = gpu->view.util;
    }
    /* Each as its gate reads it: the end of an observation only where no
     * job is unseen, an unseen job's observe_s only for a feed's wait. */
    m->observing = gpu->unseen == 0 && now < gpu->open_at;
    m->unseen = core->nfeeds > 0 && gpu->unseen > 0 &&
                now < gpu->placed_at + core->cfg.observe_s;
}

/* A digest of how many producers each feed has queued (a feed's job
 * waits for them). */
static uint64_t producers_digest(const core_state *core) {
    uint64_t h = 0;
    for (int f = 0; f < core->nfeeds; f++)
        h = (h + (uint64_t)core->feeds[f]->producers_queued) *
            0x9E3779B97F4A7C15ull;
    return h;
}

/* Stores the queue's and the last pass's part of the mark; true when it
 * changed. An arrival that no pass reaches and that makes no job's wait
 * for a feed's producer changes none of it. */
static bool mark_queue(core_state *core, core_reasons_mark *m) {
    size_t n = (size_t)core->nreached * sizeof(*core->reached);
    uint64_t departed = core->submits - (uint64_t)core_queued_count(core);
    const core_job *head = core_head(core);
    int64_t first = head ? head->spec.id : -1;
    uint64_t producers = producers_digest(core);
    bool moved = m->changes != core->changes || m->departed != departed ||
                 m->first != first || m->producers != producers ||
                 m->head_id != core->head_id ||
                 m->reserved != core->reserved ||
                 m->head_need_mib != core->head_need_mib ||
                 m->head_cpus != core->head_cpus ||
                 m->drain_id != core->drain_id ||
                 m->drain_kept != core->drain_kept ||
                 m->nreached != core->nreached ||
                 memcmp(m->reached, core->reached, n) != 0;
    m->changes = core->changes;
    m->departed = departed;
    m->first = first;
    m->producers = producers;
    m->head_id = core->head_id;
    m->reserved = core->reserved;
    m->head_need_mib = core->head_need_mib;
    m->head_cpus = core->head_cpus;
    m->drain_id = core->drain_id;
    m->drain_kept = core->drain_kept;
    m->nreached = core->nreached;
    memcpy(m->reached, core->reached, n);
    return moved;
}

uint64_t core_reasons_version(core_state *core, double now) {
    core_reasons_mark *m = &core->reasons_mark;
    bool moved = mark_queue(core, m) || m->version == 0;
    for (int g = 0; g < core->num_gpus; g++) {
        core_gpu_mark at;
        gpu_mark(core, &core->gpus[g], now, &at);
        if (memcmp(&at, &m->gpus[g], sizeof(at)) == 0) continue;
        memcpy(&m->gpus[g], &at, sizeof(at));
        moved = true;
    }
    if (moved) m->version++;
    return m->version;
}
