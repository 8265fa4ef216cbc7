/* core.c -- the scheduling core's state and the events that change it.
 *
 * State: jobs in a hash table by id; queued jobs on two lists (recovery,
 * then FIFO); per GPU the aggregates a policy needs, an observation gate
 * and a telemetry window. Events: submit, cancel, samples, a job seen
 * active, its exit (the recovery ladder's requeue), sharing modes,
 * drains, and a placement carried out (core_launch_job()).
 *
 * Where a job would go is place.c's; the pass that walks the queue is
 * fifo.c's (AEGIS: stop at a head that cannot be placed) or backfill.c's
 * (aegis-plus: go on down the queue, keeping the head's GPUs for it).
 * core_check() (check.c) recomputes every count these events move.
 */
#include "core_priv.h"
#include "alloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rungs of the recovery ladder; 25/50/75% refined by 8192 MiB steps on an
 * 80 GB GPU give 8, and 32 leaves room for a smaller step. */
#define CORE_MAX_BUCKETS 32

/* ---- jobs by id ----------------------------------------------------------- */

static size_t core_hash(const core_state *core, int64_t id) {
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
    return (size_t)(h >> 32) & (core->table_size - 1);
}

core_job *core_find(const core_state *core, int64_t id) {
    for (core_job *j = core->table[core_hash(core, id)]; j; j = j->hnext)
        if (j->spec.id == id) return j;
    return NULL;
}

static int core_table_grow(core_state *core) {
    size_t size = core->table_size * 2;
    core_job **table = core_calloc(size, sizeof(*table));
    if (!table) return -1;
    core_job **old = core->table;
    size_t old_size = core->table_size;
    core->table = table;
    core->table_size = size;
    for (size_t i = 0; i < old_size; i++)
        for (core_job *j = old[i], *next; j; j = next) {
            next = j->hnext;
            size_t h = core_hash(core, j->spec.id);
            j->hnext = table[h];
            table[h] = j;
        }
    free(old);
    return 0;
}

/* Frees a forgotten job's record, first dropping the last backfill
 * pass's pointer to it: core_reason_front() reads those after their jobs
 * may have gone, and finds a NULL one's job by its id. */
static void core_job_free(core_state *core, core_job *job) {
    for (int i = 0; i < core->nreached; i++)
        if (core->reached_job[i] == job) core->reached_job[i] = NULL;
    free(job);
}

/* Out of the table; the record kept spare for the next submit, or freed
 * once CORE_SPARE_MAX are (only a burst of forgets reaches that, so the
 * scan in core_job_free() is not paid by a steady stream). */
static void core_forget(core_state *core, core_job *job) {
    core_job **at = &core->table[core_hash(core, job->spec.id)];
    while (*at != job) at = &(*at)->hnext;
    *at = job->hnext;
    assert(core->njobs > 0);
    core->njobs--;
    core->forgotten++;
    if (core->nspare >= CORE_SPARE_MAX) {
        core_job_free(core, job);
        return;
    }
    job->state = JOB_SPARE;
    job->hnext = core->spare;
    core->spare = job;
    core->nspare++;
}

/* A job record, reused when one is spare: core_job_new() sets what a
 * queued job reads, and clearing the rest was a tenth of a submit. */
static core_job *core_job_alloc(core_state *core) {
    core_job *j = core->spare;
    if (!j) return core_malloc(sizeof(*j));
    core->spare = j->hnext;
    core->nspare--;
    return j;
}

/* ---- queues ----------------------------------------------------------------- */

static void queue_push(core_queue *q, core_job *job) {
    job->next = NULL;
    job->prev = q->tail;
    if (q->tail) q->tail->next = job;
    else q->head = job;
    q->tail = job;
    q->len++;
}

static void queue_unlink(core_queue *q, core_job *job) {
    if (job->prev) job->prev->next = job->next;
    else q->head = job->next;
    if (job->next) job->next->prev = job->prev;
    else q->tail = job->prev;
    assert(q->len > 0);
    q->len--;
}

/* Which queue holds a queued job: only retried jobs are in recovery. */
static core_queue *queue_of(core_state *core, const core_job *job) {
    return job->attempt > 1 ? &core->recovery : &core->fifo;
}

/* Onto its queue and, a first attempt, its user's. */
static void core_enqueue(core_state *core, core_job *job) {
    queue_push(queue_of(core, job), job);
    if (job->attempt == 1) core_user_enqueue(core, job);
    if (job->feed >= 0) core_feed_queued(core, job, +1);
}

static void core_dequeue(core_state *core, core_job *job) {
    queue_unlink(queue_of(core, job), job);
    if (job->attempt == 1) core_user_dequeue(core, job);
    if (job->feed >= 0) core_feed_queued(core, job, -1);
}

/* ---- idle GPUs -------------------------------------------------------------- *
 * Every placement attempt starts with exclusive placement, which most
 * attempts on a busy server fail, so it walks the bits of core->idle
 * instead of asking each GPU. Whatever changes a GPU's job count or drain
 * calls core_gpu_changed() afterwards. */

static bool gpu_idle(const core_gpu *gpu) {
    return gpu->view.njobs == 0 && !gpu->drained && !gpu->foreign;
}

static void core_gpu_changed(core_state *core, const core_gpu *gpu) {
    uint64_t bit = (uint64_t)1 << gpu->view.index;
    core->idle = gpu_idle(gpu) ? core->idle | bit : core->idle & ~bit;
}

/* ---- create / destroy ------------------------------------------------------- */

static int core_check_config(const core_config *cfg, char *err,
                             size_t errlen) {
    if (!policy_find(cfg->policy)) {
        snprintf(err, errlen, "config policy: unknown policy '%s'",
                 cfg->policy ? cfg->policy : "(null)");
        return -1;
    }
    if (policy_placement_find(cfg->placement) < 0) {
        snprintf(err, errlen, "config placement: unknown rule '%s'",
                 cfg->placement ? cfg->placement : "(null)");
        return -1;
    }
    return core_config_check(cfg, err, errlen);
}

static int core_check_gpus(int num_gpus, const double *gpu_total_mib,
                           char *err, size_t errlen) {
    if (num_gpus < 1 || num_gpus > CORE_MAX_GPUS) {
        snprintf(err, errlen, "core: %d GPUs, must be 1..%d", num_gpus,
                 CORE_MAX_GPUS);
        return -1;
    }
    for (int g = 0; g < num_gpus; g++)
        if (!(gpu_total_mib[g] > 0)) {
            snprintf(err, errlen, "core: GPU %d has %g MiB", g, gpu_total_mib[g]);
            return -1;
        }
    return 0;
}

/* Takes a checked cfg: the names then point at the policy table's strings,
 * never at the caller's. */
static void core_set_config(core_state *core, const core_config *cfg) {
    core->cfg = *cfg;
    core->pol = policy_find(cfg->policy);
    core->cfg.policy = core->pol->name;
    core->placement = (policy_placement)policy_placement_find(cfg->placement);
    core->cfg.placement = core_placement_names()[core->placement];
}

core_state *core_create(const core_config *cfg, int num_gpus,
                        const double *gpu_total_mib, char *err, size_t errlen) {
    if (core_check_config(cfg, err, errlen) != 0 ||
        core_check_gpus(num_gpus, gpu_total_mib, err, errlen) != 0)
        return NULL;
    core_state *core = core_calloc(1, sizeof(*core));
    if (!core) goto oom;
    core_set_config(core, cfg);
    core->num_gpus = num_gpus;
    for (int g = 0; g < num_gpus; g++)
        core->half_gpu_mib = fmax(core->half_gpu_mib, gpu_total_mib[g] / 2);
    core->head_id = -1;
    core->drain_id = -1;
    core->newest_empty_id = -1;
    core->table_size = 64;
    core->table = core_calloc(core->table_size, sizeof(*core->table));
    if (!core->table) goto oom;
    for (int g = 0; g < num_gpus; g++) {
        core_gpu *gpu = &core->gpus[g];
        gpu->view.index = g;
        gpu->view.total_mib = gpu_total_mib[g];
        gpu->share.mode = SHARE_NAIVE;
        if (win_init(&gpu->win, cfg->window_samples, cfg->sample_period_s) != 0)
            goto oom;
        core_gpu_changed(core, gpu);
    }
    return core;
oom:
    snprintf(err, errlen, "core: out of memory");
    core_destroy(core);
    return NULL;
}

void core_destroy(core_state *core) {
    if (!core) return;
    for (size_t i = 0; core->table && i < core->table_size; i++)
        for (core_job *j = core->table[i], *next; j; j = next) {
            next = j->hnext;
            free(j);
        }
    for (core_job *j = core->spare, *next; j; j = next) {
        next = j->hnext;
        free(j);
    }
    free(core->table);
    free(core->users);
    free(core->user_slots);
    core_feeds_free(core);
    free(core->active);
    free(core->order_heap);
    free(core->order_base);
    for (int g = 0; g < core->num_gpus; g++) win_free(&core->gpus[g].win);
    free(core);
}

/* A GPU is held (closed to newcomers) while it runs a job that must run
 * alone, or any job under a policy that never collocates. */
static void core_rehold(core_state *core) {
    for (int g = 0; g < core->num_gpus; g++) core->gpus[g].alone = false;
    for (size_t i = 0; i < core->table_size; i++)
        for (core_job *j = core->table[i]; j; j = j->hnext) {
            if (j->state != JOB_RUNNING) continue;
            if (!j->alone && core->pol->collocates) continue;
            for (int k = 0; k < j->spec.num_gpus; k++)
                core->gpus[j->gpus[k]].alone = true;
        }
}

int core_reconfigure(core_state *core, const core_config *cfg, char *err,
                     size_t errlen) {
    if (core_check_config(cfg, err, errlen) != 0) return -1;
    bool new_windows = cfg->window_samples != core->cfg.window_samples ||
                       cfg->sample_period_s != core->cfg.sample_period_s;
    if (new_windows) {
        /* All or nothing: build every window before dropping the old. */
        win wins[CORE_MAX_GPUS];
        int n = 0;
        while (n < core->num_gpus &&
               win_init(&wins[n], cfg->window_samples, cfg->sample_period_s) == 0)
            n++;
        if (n < core->num_gpus) {
            while (n > 0) win_free(&wins[--n]);
            snprintf(err, errlen, "core: out of memory for new windows");
            return -1;
        }
        for (int g = 0; g < core->num_gpus; g++) {
            win_free(&core->gpus[g].win);
            core->gpus[g].win = wins[g];
        }
    }
    core_set_config(core, cfg);
    core->changes++;
    core_rehold(core);
    for (int g = 0; g < core->num_gpus; g++) core->gpus[g].gate.version = 0;
    return 0;
}

/* ---- events ----------------------------------------------------------------- */

/* A new job in the table, in no queue yet; NULL with a message when the
 * spec does not fit this core or the id is taken. */
static core_job *core_job_new(core_state *core, const core_job_spec *job,
                              double now, char *err, size_t errlen) {
    if (job->num_gpus < 1 || job->num_gpus > CORE_MAX_JOB_GPUS ||
        job->num_gpus > core->num_gpus) {
        snprintf(err, errlen, "job %lld: asks for %d GPUs, server has %d",
                 (long long)job->id, job->num_gpus, core->num_gpus);
        return NULL;
    }
    if (!(job->cpus >= 0) || !isfinite(job->cpus)) {
        snprintf(err, errlen, "job %lld: %g CPUs, must be 0 or more",
                 (long long)job->id, job->cpus);
        return NULL;
    }
    if (job->nice < 0 || job->nice > CORE_NICE_MAX) {
        snprintf(err, errlen, "job %lld: nice %d, must be 0..%d",
                 (long long)job->id, job->nice, CORE_NICE_MAX);
        return NULL;
    }
    if (core_find(core, job->id)) {
        snprintf(err, errlen, "job %lld: id already known", (long long)job->id);
        return NULL;
    }
    if (core->njobs >= core->table_size && core_table_grow(core) != 0) {
        snprintf(err, errlen, "job %lld: out of memory", (long long)job->id);
        return NULL;
    }
    int feed = core_feed_index(core, job, err, errlen);
    if (feed == -2) return NULL;
    int user = core_user_index(core, job->user);
    core_job *j = user >= 0 ? core_job_alloc(core) : NULL;
    if (!j) {
        snprintf(err, errlen, "job %lld: out of memory", (long long)job->id);
        return NULL;
    }
    j->spec = *job;
    j->spec.feed = NULL; /* the core keeps the name in core->feeds */
    j->feed = feed;
    j->state = JOB_QUEUED;
    j->attempt = 1;
    j->floor_mib = 0;
    j->alone = false;
    j->user = user;
    j->seq = core->submits++;
    j->passed = 0;
    j->tried_in = 0;
    /* a reason reads these before any pass reaches it */
    j->over_limit = false;
    j->behind_drain = false;
    j->submitted_at = now;
    j->queued_at = core_queued_at(core, j, now);
    size_t h = core_hash(core, job->id);
    j->hnext = core->table[h];
    core->table[h] = j;
    core->njobs++;
    if (core_needs_empty(core, j)) core->newest_empty_id = j->spec.id;
    return j;
}

int core_submit(core_state *core, const core_job_spec *job, double now,
                char *err, size_t errlen) {
    core_job *j = core_job_new(core, job, now, err, errlen);
    if (!j) return -1;
    core_enqueue(core, j);
    return 0;
}

static int core_check_retry(const core_job_spec *job, const core_retry *r,
                            char *err, size_t errlen) {
    if (r->attempt < 1 || !(r->floor_mib >= 0)) {
        snprintf(err, errlen, "job %lld: attempt %d with floor %g MiB: the "
                 "attempt must be >= 1 and the floor >= 0", (long long)job->id,
                 r->attempt, r->floor_mib);
        return -1;
    }
    return 0;
}

static void core_set_retry(core_job *j, const core_retry *r) {
    j->attempt = r->attempt;
    j->floor_mib = r->alone ? 0 : r->floor_mib;
    j->alone = r->alone;
}

int core_submit_retry(core_state *core, const core_job_spec *job,
                      const core_retry *r, double now, char *err,
                      size_t errlen) {
    if (core_check_retry(job, r, err, errlen) != 0) return -1;
    core_job *j = core_job_new(core, job, now, err, errlen);
    if (!j) return -1;
    core_set_retry(j, r);
    core_enqueue(core, j);
    return 0;
}

int core_job_retry(const core_state *core, int64_t job_id, core_retry *r) {
    const core_job *job = core_find(core, job_id);
    if (!job) return -1;
    r->attempt = job->attempt;
    r->floor_mib = job->floor_mib;
    r->alone = job->alone;
    return 0;
}

/* Adds (sign +1) or removes (-1) a job's profile from a GPU's sums; an
 * unknown utilization or sharing score counts as the policies take it
 * (policy_util_pct(), policy_sharing_score()), an unknown peak in
 * peak_unknown, weighed when placing (policy_peak_sum_mib()). */
static void gpu_account(core_gpu *gpu, const core_job_spec *spec, int sign) {
    gpu->view.njobs += sign;
    gpu->view.util_pct_sum += sign * policy_util_pct(spec);
    gpu->view.score_sum += sign * policy_sharing_score(spec);
    gpu->view.peak_sum_mib += sign * (spec->peak_mib >= 0 ? spec->peak_mib : 0);
    gpu->view.peak_unknown += sign * (spec->peak_mib < 0);
    assert(gpu->view.njobs >= 0 && gpu->view.score_sum >= 0 &&
           gpu->view.peak_unknown >= 0);
}

/* Takes a running job off its GPUs. A GPU left empty has nothing to
 * observe, so its observation gate opens at once. */
static void core_release(core_state *core, core_job *job, double now) {
    core->changes++;
    core_user_runs(core, job, -1, now);
    core_reserve_link(core, job, -1);
    core_cpus_runs(core, job, -1);
    if (job->feed >= 0) core_feed_runs(core, job, -1);
    for (int k = 0; k < job->spec.num_gpus; k++) {
        core_gpu *gpu = &core->gpus[job->gpus[k]];
        gpu_account(gpu, &job->spec, -1);
        if (!job->active) gpu->unseen--;
        assert(gpu->unseen >= 0);
        if (job->alone) gpu->alone = false;
        if (job->mig.profile) share_gpu_remove(&gpu->share, job->mig.start);
        if (gpu->view.njobs == 0) {
            gpu->unseen = 0;
            gpu->open_at = 0;
            gpu->alone = false;
        }
        core_gpu_changed(core, gpu);
    }
    assert(core->running > 0);
    core->running--;
}

int core_cancel(core_state *core, int64_t job_id, double now) {
    core_job *job = core_find(core, job_id);
    if (!job) return -1;
    if (job->state == JOB_QUEUED) core_dequeue(core, job);
    else core_release(core, job, now);
    core_forget(core, job);
    return 0;
}

void core_sample(core_state *core, int gpu, const struct core_sample *s,
                 double now) {
    if (gpu < 0 || gpu >= core->num_gpus) return;
    core->changes++;
    /* Out of memory only loses this step; the window keeps its older ones. */
    (void)win_push(&core->gpus[gpu].win, s, now);
}

void core_job_active(core_state *core, int64_t job_id, double now) {
    core_job *job = core_find(core, job_id);
    if (!job || job->state != JOB_RUNNING || job->active) return;
    core->changes++;
    job->active = true;
    for (int k = 0; k < job->spec.num_gpus; k++) {
        core_gpu *gpu = &core->gpus[job->gpus[k]];
        assert(gpu->unseen > 0);
        gpu->unseen--;
        gpu->open_at = fmax(gpu->open_at, now + core->cfg.observe_s);
    }
}

double core_demand(const core_state *core, const core_job *job) {
    if (job->alone) return 0;
    return job->floor_mib > 0 ? job->floor_mib
                              : core->pol->demand(&core->cfg, &job->spec);
}

/* True when the job ran on its GPUs with no other job placed beside it. */
static bool core_ran_alone(const core_state *core, const core_job *job) {
    if (!job->exclusive) return false;
    for (int k = 0; k < job->spec.num_gpus; k++)
        if (core->gpus[job->gpus[k]].placements != job->placed_seen[k])
            return false;
    return true;
}

/* The floor after an OOM: the smallest bucket strictly above what the
 * failed attempt had, on the smallest of the job's GPUs; 0 when none is
 * left. What it had is its admitted floor or, when larger, the free memory
 * its GPUs showed when it was placed: the job failed with that much room,
 * so it needs more (AEGIS recovery/manager.py raises the failed floor to
 * the host's free memory at dispatch). Without that, a job placed beside a
 * light neighbour would climb one rung per crash, each one a lost start. */
static double core_next_floor(const core_state *core, const core_job *job) {
    if (job->mig.profile) /* it failed with the whole instance to itself */
        return share_gpu_next_floor(core->gpus[job->gpus[0]].share.model,
                                    fmax(job->admitted_mib,
                                         (double)job->mig.profile->mem_mib));
    double total = INFINITY;
    for (int k = 0; k < job->spec.num_gpus; k++)
        total = fmin(total, core->gpus[job->gpus[k]].view.total_mib);
    double buckets[CORE_MAX_BUCKETS];
    int n = core_ladder(total, core->cfg.ladder_max_step_mib, buckets,
                        CORE_MAX_BUCKETS);
    double had = job->admitted_mib;
    if (core->cfg.ladder_from_free && job->dispatch_free_mib > had)
        had = job->dispatch_free_mib;
    for (int i = 0; i < n; i++)
        if (buckets[i] > had) return buckets[i];
    return 0;
}

static void core_requeue(core_state *core, core_job *job) {
    job->attempt++;
    job->passed = 0;
    job->state = JOB_QUEUED;
    job->active = false;
    core_enqueue(core, job);
}

core_outcome core_job_exit(core_state *core, int64_t job_id, core_exit how,
                           double now, double *next_floor_mib) {
    core_job *job = core_find(core, job_id);
    if (!job || job->state != JOB_RUNNING) return CORE_DONE;
    core_release(core, job, now);
    core_outcome out;
    switch (how) {
    case CORE_EXIT_OOM:
        if (job->alone || core_ran_alone(core, job)) {
            out = CORE_STOPPED; /* no neighbour to blame: it cannot fit */
            break;
        }
        job->floor_mib = core_next_floor(core, job);
        job->alone = job->floor_mib == 0;
        core_requeue(core, job);
        out = CORE_REQUEUED;
        break;
    case CORE_EXIT_LOST: /* same floor, same rung: only the process was lost */
        core_requeue(core, job);
        out = CORE_REQUEUED;
        break;
    case CORE_EXIT_OK: out = CORE_DONE; break;
    default: out = CORE_STOPPED; break; /* other failures are never retried */
    }
    if (out == CORE_REQUEUED) {
        if (next_floor_mib) *next_floor_mib = core_demand(core, job);
    } else {
        core_forget(core, job);
    }
    return out;
}

int core_gpu_share(core_state *core, int gpu, share_mode mode,
                   const mig_model *mig, char *err, size_t errlen) {
    if (gpu < 0 || gpu >= core->num_gpus) {
        snprintf(err, errlen, "sharing: GPU %d is not on this server", gpu);
        return -1;
    }
    if ((unsigned)mode >= SHARE_NMODES) {
        snprintf(err, errlen, "sharing: GPU %d: unknown mode %d (one of %s)",
                 gpu, (int)mode, SHARE_MODE_LIST);
        return -1;
    }
    bool needs_table = share_gpu_mode_mig(mode);
    if (needs_table && !mig) {
        snprintf(err, errlen, "sharing: GPU %d: mode %s needs a MIG profile "
                 "table, and this GPU has none", gpu, share_mode_name(mode));
        return -1;
    }
    core_gpu *g = &core->gpus[gpu];
    if (g->view.njobs > 0) {
        snprintf(err, errlen, "sharing: GPU %d runs %d jobs; its mode changes "
                 "only while it is idle", gpu, g->view.njobs);
        return -1;
    }
    core->changes++;
    core->mig_gpus += needs_table - share_gpu_mode_mig(g->share.mode);
    core->mps_gpus += (mode == SHARE_MPS) - (g->share.mode == SHARE_MPS);
    g->share = (share_gpu){.mode = mode, .model = needs_table ? mig : NULL};
    return 0;
}

void core_gpu_drain(core_state *core, int gpu, bool drained) {
    if (gpu < 0 || gpu >= core->num_gpus) return;
    core->changes++;
    core->gpus[gpu].drained = drained;
    core_gpu_changed(core, &core->gpus[gpu]);
}

void core_gpu_foreign(core_state *core, int gpu, bool in_use, int64_t user) {
    if (gpu < 0 || gpu >= core->num_gpus) return;
    core->gpus[gpu].foreign = in_use;
    core->gpus[gpu].foreign_user = in_use ? user : CORE_USERS_UNKNOWN;
    core_gpu_changed(core, &core->gpus[gpu]);
}

/* Puts a job, not yet seen active, on its GPUs (job->gpus): the policies'
 * sums, the placement counts that later tell whether it shared, and the
 * hold of a job that must run alone. */
static void core_occupy(core_state *core, core_job *job, double now) {
    core->changes++;
    core_user_runs(core, job, +1, now);
    job->state = JOB_RUNNING;
    job->active = false;
    bool hold = job->alone || !core->pol->collocates;
    for (int k = 0; k < job->spec.num_gpus; k++) {
        core_gpu *gpu = &core->gpus[job->gpus[k]];
        if (gpu->view.njobs == 0) gpu->user = job->spec.user;
        gpu_account(gpu, &job->spec, +1);
        gpu->unseen++;
        gpu->placed_at = now;
        gpu->placements++;
        job->placed_seen[k] = gpu->placements;
        if (hold) gpu->alone = true;
        if (job->mig.profile) share_gpu_add(&gpu->share, job->mig);
        core_gpu_changed(core, gpu);
    }
    if (job->feed >= 0) core_feed_runs(core, job, +1);
    core_cpus_runs(core, job, +1);
    core_reserve_link(core, job, +1);
    core->running++;
}

static void core_start(core_state *core, core_job *job, const core_launch *l,
                       double now) {
    job->dispatch_free_mib = CORE_UNKNOWN;
    job->exclusive = l->exclusive;
    job->admitted_mib = l->floor_mib;
    job->mig = (mig_instance){l->mig, l->mig_start};
    job->started_at = now;
    for (int k = 0; k < l->num_gpus; k++) {
        core_gpu *gpu = &core->gpus[l->gpus[k]];
        job->gpus[k] = l->gpus[k];
        /* An instance's memory is its own: the GPU's free memory says
         * nothing about what the job had (core_next_floor). */
        if (core->pol->uses_telemetry && !l->mig) {
            double free_mib = core_gpu_free_now(gpu, now);
            if (job->dispatch_free_mib < 0 || free_mib < job->dispatch_free_mib)
                job->dispatch_free_mib = free_mib;
        }
    }
    core_occupy(core, job, now);
    int after = l->gpus[l->num_gpus - 1] + 1;
    core->rr_next = after < core->num_gpus ? after : 0;
}

/* Carries out a placement core_place() wrote: the GPUs' sharing mode for
 * the launch, then the job off its queue and onto its GPUs. */
void core_launch_job(core_state *core, core_job *job, core_launch *l,
                     double now) {
    for (int k = 0; k < l->num_gpus; k++)
        l->share[k] = share_gpu_launch_mode(&core->gpus[l->gpus[k]].share,
                                            l->mig != NULL);
    core_dequeue(core, job);
    core_start(core, job, l, now);
}

static int core_check_adopted(const core_state *core, const core_job_spec *job,
                              const core_adopted *a, char *err, size_t errlen) {
    for (int k = 0; k < job->num_gpus && k < CORE_MAX_JOB_GPUS; k++) {
        int g = a->gpus[k];
        bool twice = false;
        for (int i = 0; i < k; i++) twice |= a->gpus[i] == g;
        if (g < 0 || g >= core->num_gpus || twice) {
            snprintf(err, errlen, "job %lld: GPU %d %s", (long long)job->id, g,
                     twice ? "given twice" : "is not on this server");
            return -1;
        }
    }
    return core_check_retry(job, &a->retry, err, errlen);
}

/* The adopted job's MIG instance, with the profile taken from the core's
 * table of its GPU; 0, or -1 with a message when it cannot be there. */
static int core_adopted_mig(const core_state *core, const core_job_spec *job,
                            const core_adopted *a, mig_instance *inst,
                            char *err, size_t errlen) {
    *inst = (mig_instance){NULL, 0};
    if (!a->mig) return 0;
    const share_gpu *sh = &core->gpus[a->gpus[0]].share;
    const mig_profile *p = sh->model && job->num_gpus == 1
                               ? mig_profile_find(sh->model, a->mig->name)
                               : NULL;
    const core_gpu *gpu = &core->gpus[a->gpus[0]];
    if (!p || !share_gpu_mode_mig(sh->mode) ||
        gpu->view.njobs != sh->ninst ||
        !share_gpu_fits(sh, (mig_instance){p, a->mig_start})) {
        snprintf(err, errlen, "job %lld: MIG instance %s at slice %d does not "
                 "fit GPU %d (mode %s, %d instances, %d jobs)",
                 (long long)job->id, a->mig->name, a->mig_start, a->gpus[0],
                 share_mode_name(sh->mode), sh->ninst, gpu->view.njobs);
        return -1;
    }
    *inst = (mig_instance){p, a->mig_start};
    return 0;
}

int core_adopt(core_state *core, const core_job_spec *job,
               const core_adopted *a, double now, char *err, size_t errlen) {
    mig_instance inst;
    if (core_check_adopted(core, job, a, err, errlen) != 0 ||
        core_adopted_mig(core, job, a, &inst, err, errlen) != 0)
        return -1;
    core_job *j = core_job_new(core, job, now, err, errlen);
    if (!j) return -1;
    core_set_retry(j, &a->retry);
    j->mig = inst;
    j->admitted_mib = a->admitted_mib;
    j->dispatch_free_mib = CORE_UNKNOWN;
    j->started_at = a->started_at;
    /* Jobs adopted before it on its GPUs shared them with it, whichever
     * of the two was placed first. */
    j->exclusive = a->exclusive;
    for (int k = 0; k < job->num_gpus; k++) {
        j->gpus[k] = a->gpus[k];
        if (core->gpus[a->gpus[k]].view.njobs > 0) j->exclusive = false;
    }
    core_occupy(core, j, now);
    if (a->active) core_job_active(core, job->id, a->active_at);
    return 0;
}

core_job *core_head(core_state *core) {
    return core->recovery.head ? core->recovery.head : core->fifo.head;
}

/* ---- time and counts ------------------------------------------------------ */

static void wakeup_min(double *best, double t, double now) {
    if (t > now && (*best < 0 || t < *best)) *best = t;
}

double core_next_wakeup(core_state *core, double now) {
    if (core->recovery.len + core->fifo.len == 0) return -1;
    /* Windows matter only to gates that read telemetry. */
    bool windows = core->pol->uses_telemetry || core->recovery.len > 0;
    double best = -1;
    for (int g = 0; g < core->num_gpus; g++) {
        core_gpu *gpu = &core->gpus[g];
        if (gpu->view.njobs > 0) wakeup_min(&best, gpu->open_at, now);
        if (gpu->unseen > 0 && core->nfeeds > 0) /* a feed's wait ends */
            wakeup_min(&best, gpu->placed_at + core->cfg.observe_s, now);
        if (!windows) continue;
        wakeup_min(&best, win_full_at(&gpu->win), now);
        wakeup_min(&best, win_next_change(&gpu->win, now), now);
    }
    return best;
}

int core_queued_count(const core_state *core) {
    return core->recovery.len + core->fifo.len;
}

int core_running_count(const core_state *core) { return core->running; }

int core_idle_gpu_count(const core_state *core) {
    int n = 0;
    for (int g = 0; g < core->num_gpus; g++) n += gpu_idle(&core->gpus[g]);
    return n;
}
