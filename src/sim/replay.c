/* replay.c -- discrete-event replay of one server's jobs through its core.
 *
 * The loop takes the earliest moment t among the pending events and the
 * server's next arrival, handles everything that happens at t, then asks
 * the core for decisions (core_schedule) and for the next time it wants to
 * be asked (core_next_wakeup). Arrivals are read straight from the
 * server's job list instead of being pushed, so the heap holds only what
 * is in flight.
 *
 * A job's completion event is computed from its rate when the rate is set;
 * when a co-runner comes or goes the rate changes and the event moves in
 * the heap (sim_heap_update), so every completion that surfaces is real.
 */
#include "replay.h"

#include "dispatch.h"
#include "prefault.h"
#include "share_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decisions taken from the core per core_schedule() call; the loop calls
 * again while a call fills the buffer. */
#define LAUNCH_BATCH 64

/* A core that keeps asking to be woken while nothing runs and nothing can
 * arrive is stuck; after this many such wakeups the replay ends with the
 * remaining jobs reported as unfinished instead of looping forever. */
#define MAX_IDLE_WAKEUPS 100000

/* A server's jobs lie about `servers` rows apart in the trace and in the
 * result: each row read at the start and each record written at the end
 * is a cache miss, often on a page of its own. Asking for the row this
 * many jobs ahead overlaps those misses (they were a third of a replay's
 * own code on a million-job run, and a half of that went). */
#define ROW_PREFETCH 64

static const trace_job *row_of(const replay *r, int32_t j) {
    return &r->rows[j];
}

static const cat_workload *work_of(const replay *r, int32_t j) {
    return row_of(r, j)->work;
}

static sim_attempt *attempt_of(const replay *r, int32_t j) {
    return &r->log->attempts[r->jobs[j].last_attempt];
}

static int out_of_memory(replay *r) {
    snprintf(r->err, sizeof(r->err), "simulator: out of memory");
    return -1;
}

static int heap_failed(replay *r) {
    snprintf(r->err, sizeof(r->err), "simulator: out of memory, or more "
             "than 2^31 events queued on server %d", r->server);
    return -1;
}

/* ---- GPUs: telemetry, energy ------------------------------------------ */

/* Memory launched job j holds on GPU g: 2-GPU jobs may differ on their
 * second GPU. */
static double mem_on(const replay *r, int32_t j, int32_t g) {
    const job_progress *p = &r->progress[j];
    return p->gpus[0] == g ? p->work->peak_mib : p->work->peak_b_mib;
}

/* Adds the energy and busy time of GPU g from its last change up to t,
 * at the readings that held in between. Call before changing its jobs. */
static void gpu_account(replay *r, int32_t g, double t) {
    sim_gpu *gpu = &r->gpu[g];
    double dt = t - gpu->since;
    if (dt <= 0) return;
    double power_w = sim_model_power_w(&r->opt->model, gpu->smact);
    r->energy_j += power_w * dt;
    meter_run(&gpu->meter, power_w, gpu->smact, gpu->njobs, dt);
    if (gpu->njobs > 0) r->busy_gpu_s += dt;
    gpu->since = t;
}

static double cap1(double x) { return x < 1 ? x : 1; }

/* The share of launched job j's profiled activity its GPU reads
 * (share_model.h). */
static double activity_of(const replay *r, int32_t j) {
    const job_progress *p = &r->progress[j];
    return share_model_scale(&r->opt->model, p->share, p->mig, p->work);
}

/* Recomputes GPU g's sums from its jobs (no drift from adding and taking
 * away) and tells the core the new reading. */
static void gpu_refresh(replay *r, int32_t g, double t) {
    sim_gpu *gpu = &r->gpu[g];
    gpu->used_mib = gpu->smact = gpu->smocc = gpu->drama = gpu->util_pct = 0;
    for (int i = 0; i < gpu->njobs; i++) {
        const gpu_entry *e = &gpu->active[i];
        gpu->used_mib += e->mem_mib;
        gpu->smact += e->smact;
        gpu->smocc += e->smocc;
        gpu->drama += e->drama;
        gpu->util_pct += e->util_pct;
    }
    struct core_sample reading = {
        .used_mib = gpu->used_mib, .total_mib = r->opt->gpu_mem_mib,
        .smact = cap1(gpu->smact), .smocc = cap1(gpu->smocc),
        .drama = cap1(gpu->drama), .util = cap1(gpu->util_pct / 100)};
    core_sample(r->core, g, &reading, t);
}

static int gpu_add(replay *r, int32_t g, int32_t j) {
    sim_gpu *gpu = &r->gpu[g];
    if (gpu->njobs == gpu->cap) {
        int cap = gpu->cap ? gpu->cap * 2 : 4;
        gpu_entry *more = realloc(gpu->active, (size_t)cap * sizeof(*more));
        if (!more) return out_of_memory(r);
        gpu->active = more;
        gpu->cap = cap;
    }
    const cat_workload *w = work_of(r, j);
    double k = activity_of(r, j);
    gpu->active[gpu->njobs++] = (gpu_entry){
        .job = j, .mark = meter_mark(&gpu->meter, k * w->smact),
        .mem_mib = mem_on(r, j, g), .smact = k * w->smact,
        .smocc = k * w->smocc, .drama = k * w->drama,
        .util_pct = w->util_pct > 0 ? k * w->util_pct : 0};
    return 0;
}

static void gpu_remove(replay *r, int32_t g, int32_t j) {
    sim_gpu *gpu = &r->gpu[g];
    int i = 0;
    while (gpu->active[i].job != j) i++;
    const gpu_entry *e = &gpu->active[i];
    r->jobs[j].energy_j += meter_energy_since(&gpu->meter, e->smact, e->mark);
    int after = gpu->njobs - i - 1;
    memmove(&gpu->active[i], &gpu->active[i + 1],
            (size_t)after * sizeof(*gpu->active));
    gpu->njobs--;
}

/* ---- job rates ----------------------------------------------------------- */

/* A multi-GPU job runs at the pace of its slowest GPU. */
static double job_slowdown(const replay *r, int32_t j) {
    const job_progress *p = &r->progress[j];
    const cat_workload *w = p->work;
    double worst = 1;
    for (int k = 0; k < p->ngpus; k++) {
        const sim_gpu *gpu = &r->gpu[p->gpus[k]];
        double sd = sim_model_slowdown(&r->opt->model, gpu->smact,
                                       w->smact, gpu->drama - w->drama,
                                       gpu->njobs - 1);
        sd = share_model_slowdown(&r->opt->model, p->share, p->mig, w, sd);
        if (sd > worst) worst = sd;
    }
    return worst;
}

/* Job j's pace: its GPUs', unless its data loader, short of CPUs, makes
 * batches slower than that (loaders.h): a job's step is as long as the
 * longer of its GPU work and the wait for its batch. */
static double job_rate(const replay *r, int32_t j) {
    double rate = 1 / job_slowdown(r, j);
    if (row_of(r, j)->load_cpus > 0 && r->cpu_share < rate)
        rate = r->cpu_share;
    return rate;
}

/* The completion event's time: when the work left ends at the job's
 * rate, or its deadline when that comes first. */
static double event_time(const job_progress *p, double end) {
    return p->deadline > 0 && p->deadline < end ? p->deadline : end;
}

/* Brings job j's work up to t and, if its rate changed, moves its
 * completion event. */
static int update_rate(replay *r, int32_t j, double t) {
    job_progress *job = &r->progress[j];
    double rate = job_rate(r, j);
    if (rate == job->rate) return 0;
    job->remaining -= (t - job->since) * job->rate;
    if (job->remaining < 0) job->remaining = 0;
    job->since = t;
    job->rate = rate;
    if (sim_heap_update(&r->heap, event_time(job, t + job->remaining / rate), j) < 0)
        return heap_failed(r);
    return 0;
}

/* Updates the rates of every job on the GPUs of job j. */
static int update_rates_around(replay *r, int32_t j, double t) {
    const job_progress *p = &r->progress[j];
    for (int k = 0; k < p->ngpus; k++) {
        const sim_gpu *gpu = &r->gpu[p->gpus[k]];
        for (int i = 0; i < gpu->njobs; i++)
            if (update_rate(r, gpu->active[i].job, t) < 0) return -1;
    }
    return 0;
}

/* Updates the rates of every job with a loader when the fraction of
 * their CPUs the loaders get has changed (a loader came or went). */
static int update_cpu_share(replay *r, double t) {
    double share = sim_loaders_share(&r->loaders);
    if (share == r->cpu_share) return 0;
    r->cpu_share = share;
    for (int g = 0; g < r->opt->gpus; g++) {
        const sim_gpu *gpu = &r->gpu[g];
        for (int i = 0; i < gpu->njobs; i++) {
            int32_t j = gpu->active[i].job;
            if (row_of(r, j)->load_cpus > 0 && update_rate(r, j, t) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- job life ------------------------------------------------------------ */

static void job_leaves(replay *r, int32_t j, sim_job_state state, double t) {
    sim_job *job = &r->jobs[j];
    job->state = (uint8_t)state;
    job->end_s = t;
    r->finished++;
    if (state == SIM_STOPPED) r->stopped++;
    if (state == SIM_TIMEOUT) r->timeouts++;
    if (r->opt->dispatch == SIM_DISPATCH_SLURM)
        r->left_mib += sim_dispatch_mem_mib(row_of(r, j), r->opt->estimator);
}

/* Closes job j's current attempt at t. */
static void close_attempt(replay *r, int32_t j, double t) {
    sim_attempt *a = attempt_of(r, j);
    a->end_s = t;
    if (t > r->last_end_s) r->last_end_s = t;
    r->jobs[j].exec_s += t - a->start_s;
    r->running--;
    r->dirty = true;
}

/* Closes job j's current attempt at t and tells the core how it ended. */
static void end_attempt(replay *r, int32_t j, core_exit how, double t) {
    attempt_of(r, j)->oom = how == CORE_EXIT_OOM;
    r->ooms += how == CORE_EXIT_OOM;
    close_attempt(r, j, t);
    switch (core_job_exit(r->core, j, how, t, NULL)) {
    case CORE_DONE: job_leaves(r, j, SIM_DONE, t); break;
    case CORE_STOPPED: job_leaves(r, j, SIM_STOPPED, t); break;
    case CORE_REQUEUED:
        r->jobs[j].state = SIM_QUEUED;
        sim_waits_queue(&r->waits, j, t);
        break;
    }
}

/* Job j's attempt, at t, has reached its time limit with work left: as
 * aegisd stops it (its time limit is a cancel), the core forgets it and
 * it is never retried. */
static bool past_deadline(const replay *r, int32_t j, double t) {
    const job_progress *p = &r->progress[j];
    if (p->deadline <= 0 || t < p->deadline) return false;
    if (r->jobs[j].state != SIM_ACTIVE) return true;
    return p->remaining - (t - p->since) * p->rate > 1e-9;
}

static void time_out(replay *r, int32_t j, double t) {
    close_attempt(r, j, t);
    core_cancel(r->core, j, t);
    job_leaves(r, j, SIM_TIMEOUT, t);
}


/* The feed whose loader job j shares; 0: its own (no feed, or feeds not
 * shared: --model feed_share=0). */
static uint32_t feed_of(const replay *r, int32_t j) {
    return r->opt->model.feed_share > 0 ? row_of(r, j)->feed : 0;
}

/* Job j's spec for the core into r->spec, its feed's name into
 * r->spec_feed. */
static void prepare_spec(replay *r, int32_t j) {
    const cat_workload *w = work_of(r, j);
    r->spec_feed[0] = '\0';
    if (feed_of(r, j))
        snprintf(r->spec_feed, sizeof(r->spec_feed), "f%08x", feed_of(r, j));
    r->spec = (core_job_spec){
        .id = j, .num_gpus = w->num_gpus,
        .est_mib = w->est_mib[r->opt->estimator], .mem_declared = w->declared,
        .peak_mib = w->peak_mib,
        .util_pct = w->util_pct, .sharing_score = w->sharing_score,
        .user = row_of(r, j)->user, .feed = r->spec_feed,
        .cpus = row_of(r, j)->load_cpus,
        /* read by reservations; the replay stops an attempt at it */
        .time_limit_s = row_of(r, j)->time_limit_s};
    r->spec_job = j + 1;
}

static int on_arrival(replay *r, int32_t j, double t) {
    if (r->spec_job != j + 1) prepare_spec(r, j);
    char why[256];
    int submitted = core_submit(r->core, &r->spec, t, why, sizeof(why));
    /* The next arrival's spec now, long before the core reads it: the
     * core copies a spec with 16-byte loads, and a spec written field by
     * field just before made each load wait for those stores to reach
     * the cache (a failed store forward): a fifth of the arrivals' time. */
    if (j + 1 < r->njobs) prepare_spec(r, j + 1);
    if (submitted < 0) {
        snprintf(r->err, sizeof(r->err), "job %lld (%s): core refused it: %s",
                 (long long)row_of(r, j)->index, work_of(r, j)->name, why);
        return -1;
    }
    sim_job *job = &r->jobs[j];
    job->state = SIM_QUEUED;
    sim_waits_queue(&r->waits, j, t);
    /* Behind a waiting head it changes nothing the core decides on when
     * no job is placed ahead of the head (no backfill), as no GPU changed. */
    if (core_queued_count(r->core) == 1 || !core_queue_blocks(r->core))
        r->dirty = true;
    return 0;
}

/* Job j's attempt does not fit at its first activity at t: it crashes
 * when the measured failed attempts say, counted from its launch, as their
 * run time includes start-up (docs/model.md, "What an OOM costs"). The
 * core sees it active, as aegisd sees its process on the GPU before the
 * crash; it joins no GPU's readings, and its completion event is the
 * crash (on_complete). */
static int crash_later(replay *r, int32_t j, double t) {
    core_job_active(r->core, j, t);
    double crash = attempt_of(r, j)->start_s +
                   sim_model_crash_s(&r->opt->model, r->progress[j].work->peak_mib,
                                     r->opt->gpu_mem_mib);
    if (sim_heap_update(&r->heap, event_time(&r->progress[j], crash > t ? crash : t), j) < 0)
        return heap_failed(r);
    return 0;
}

/* The job shows first activity: it crashes if the true peaks on one of its
 * GPUs no longer fit, otherwise it joins its GPUs and starts working. */
static int on_activate(replay *r, int32_t j, double t) {
    sim_job *job = &r->jobs[j];
    job_progress *p = &r->progress[j];
    const uint8_t *g = p->gpus;
    if (past_deadline(r, j, t)) { /* a limit shorter than its start-up */
        time_out(r, j, t);
        return 0;
    }
    attempt_of(r, j)->active_s = t;
    for (int k = 0; k < p->ngpus; k++)
        if (!share_model_fits(p->mig, mem_on(r, j, g[k]), r->gpu[g[k]].used_mib,
                              r->opt->gpu_mem_mib))
            return crash_later(r, j, t);
    for (int k = 0; k < p->ngpus; k++) {
        gpu_account(r, g[k], t);
        if (gpu_add(r, g[k], j) < 0) return -1;
        gpu_refresh(r, g[k], t);
    }
    double cpus = row_of(r, j)->load_cpus;
    if (cpus > 0 &&
        sim_loaders_join(&r->loaders, feed_of(r, j), g[0], cpus, t) < 0)
        return out_of_memory(r);
    /* The catalog's solo time is launch to exit, start-up included; only
     * the part after first activity is GPU work that co-runners slow. */
    double work = p->work->solo_s * r->opt->model.exec_factor -
                  r->opt->model.activation_delay_s;
    job->state = SIM_ACTIVE;
    p->remaining = work > 0 ? work : 0;
    p->since = t;
    p->rate = 0;
    if (update_rates_around(r, j, t) < 0 || update_cpu_share(r, t) < 0)
        return -1;
    core_job_active(r->core, j, t);
    /* The core now observes the job's GPUs for observe_s: closed to
     * newcomers, they can give the head of the queue no place it lacked
     * before, so the core is asked only when it next wants waking. */
    if (r->opt->config.observe_s > 0) r->rewake = true;
    else r->dirty = true;
    return 0;
}

/* Job j leaves its GPUs and its feed's loaders at t; the jobs it shared
 * them with speed up. */
static int leave_gpus(replay *r, int32_t j, double t) {
    const job_progress *p = &r->progress[j];
    for (int k = 0; k < p->ngpus; k++) {
        int32_t g = p->gpus[k];
        gpu_account(r, g, t);
        gpu_remove(r, g, j);
        gpu_refresh(r, g, t);
    }
    double cpus = row_of(r, j)->load_cpus;
    if (cpus > 0)
        sim_loaders_leave(&r->loaders, feed_of(r, j), p->gpus[0], cpus, t);
    return update_rates_around(r, j, t) < 0 || update_cpu_share(r, t) < 0 ? -1 : 0;
}

/* Job j's event: its work done, its crash (crash_later), or its time
 * limit. */
static int on_complete(replay *r, int32_t j, double t) {
    sim_job_state state = r->jobs[j].state;
    if (state != SIM_LAUNCHED && state != SIM_ACTIVE) return 0;
    bool late = past_deadline(r, j, t);
    if (state == SIM_ACTIVE && leave_gpus(r, j, t) < 0) return -1;
    if (late) time_out(r, j, t);
    else end_attempt(r, j, state == SIM_LAUNCHED ? CORE_EXIT_OOM : CORE_EXIT_OK, t);
    return 0;
}

/* ---- decisions ------------------------------------------------------------ */

static int check_launch(replay *r, const core_launch *l) {
    const char *bad = NULL;
    if (l->job_id < 0 || l->job_id >= r->njobs) bad = "an unknown job";
    else if (r->jobs[l->job_id].state != SIM_QUEUED) bad = "a job not queued";
    else if (l->num_gpus != work_of(r, (int32_t)l->job_id)->num_gpus)
        bad = "the wrong number of GPUs";
    for (int k = 0; !bad && k < l->num_gpus; k++)
        if (l->gpus[k] < 0 || l->gpus[k] >= r->opt->gpus) bad = "a bad GPU";
    if (!bad) return 0;
    snprintf(r->err, sizeof(r->err), "core of server %d launched %s (job "
             "id %lld)", r->server, bad, (long long)l->job_id);
    return -1;
}

/* Doubles *cap, and the array at *items of that many elements of `size`
 * bytes. Returns 0, or -1 when out of memory. */
static int grow(void **items, int *cap, size_t size) {
    void *more = realloc(*items, (size_t)*cap * 2 * size);
    if (!more) return -1;
    *items = more;
    *cap *= 2;
    return 0;
}

static int new_attempt(replay *r, const core_launch *l, double t) {
    sim_server_log *log = r->log;
    if ((log->nattempts == log->attempts_cap &&
         grow((void **)&log->attempts, &log->attempts_cap,
              sizeof(*log->attempts)) < 0) ||
        (log->ngpus_used + l->num_gpus > log->gpus_cap &&
         grow((void **)&log->gpus, &log->gpus_cap, sizeof(*log->gpus)) < 0))
        return out_of_memory(r);
    sim_job *job = &r->jobs[l->job_id];
    int idx = log->nattempts++;
    log->attempts[idx] = (sim_attempt){.start_s = t, .active_s = -1,
        .end_s = -1, .gpu_off = log->ngpus_used, .next = -1,
        .job = r->ids[l->job_id], .ngpus = (uint8_t)l->num_gpus};
    for (int k = 0; k < l->num_gpus; k++)
        log->gpus[log->ngpus_used++] = l->gpus[k];
    if (job->first_attempt < 0) job->first_attempt = idx;
    else log->attempts[job->last_attempt].next = idx;
    job->last_attempt = idx;
    return 0;
}

/* Keeps what the loop reads of the launch beside the job's progress. */
static void track_launch(replay *r, const core_launch *l) {
    job_progress *p = &r->progress[l->job_id];
    *p = (job_progress){.work = work_of(r, (int32_t)l->job_id), .mig = l->mig,
                        .share = (uint8_t)l->share[0],
                        .ngpus = (uint8_t)l->num_gpus};
    /* the core gives at most CORE_MAX_JOB_GPUS; said again for GCC's
     * -O2 range analysis, which otherwise warns of an overflow */
    for (int k = 0; k < l->num_gpus && k < CORE_MAX_JOB_GPUS; k++)
        p->gpus[k] = (uint8_t)l->gpus[k];
}

static int start_launch(replay *r, const core_launch *l, double t) {
    if (check_launch(r, l) < 0 || new_attempt(r, l, t) < 0) return -1;
    track_launch(r, l);
    double limit = row_of(r, (int32_t)l->job_id)->time_limit_s;
    if (limit <= 0) limit = r->opt->config.default_time;
    double deadline = limit > 0 ? t + limit : 0;
    r->progress[l->job_id].deadline = deadline;
    sim_waits_start(&r->waits, (int32_t)l->job_id, t);
    r->jobs[l->job_id].state = SIM_LAUNCHED;
    r->running++;
    /* Launches happen at nondecreasing times and the delay is constant,
     * so activations are due in push order: the heap's in-order lane. A
     * limit shorter than the start-up ends the attempt at its deadline,
     * before it is active (on_activate), out of that order. */
    double active_at = t + r->opt->model.activation_delay_s;
    int pushed = deadline > 0 && deadline < active_at
                     ? sim_heap_push(&r->heap, deadline, SIM_EV_ACTIVATE,
                                     (int32_t)l->job_id)
                     : sim_heap_push_ordered(&r->heap, active_at, SIM_EV_ACTIVATE,
                                             (int32_t)l->job_id);
    return pushed < 0 ? heap_failed(r) : 0;
}

/* Starts every launch the core decides on at t. */
static int launch_decisions(replay *r, double t) {
    core_launch batch[LAUNCH_BATCH];
    int n;
    do {
        n = core_schedule(r->core, t, batch, LAUNCH_BATCH);
        for (int i = 0; i < n; i++)
            if (start_launch(r, &batch[i], t) < 0) return -1;
    } while (n == LAUNCH_BATCH);
    return 0;
}

/* Asks the core for its decisions at t, unless only its next wakeup can
 * have changed (place false), then for that wakeup. */
static int schedule(replay *r, double t, bool place) {
    /* Most calls find the queue empty, where the core would place nothing
     * and want no wakeup: skip both calls. */
    if (core_queued_count(r->core) == 0) return 0;
    if (place && launch_decisions(r, t) < 0) return -1;
    double wake = core_next_wakeup(r->core, t);
    bool covered = r->wake_t > t && r->wake_t <= wake;
    if (wake > t && !covered) {
        r->wake_t = wake;
        if (sim_heap_push(&r->heap, wake, SIM_EV_WAKEUP, 0) < 0)
            return heap_failed(r);
    }
    return 0;
}

/* ---- the loop ------------------------------------------------------------ */

/* With --check, the core's counts recounted after an event at t; -1 with
 * the first difference when one is wrong. */
static int check_core(replay *r, double t) {
    if (!r->opt->check) return 0;
    char why[200];
    if (core_check(r->core, why, sizeof(why)) == 0) return 0;
    snprintf(r->err, sizeof(r->err), "simulator: server %d at t=%.17g: "
             "core_check: %s", r->server, t, why);
    return -1;
}

static int handle(replay *r, const sim_event *ev) {
    switch (ev->kind) {
    case SIM_EV_ACTIVATE: return on_activate(r, ev->id, ev->t);
    case SIM_EV_COMPLETE: return on_complete(r, ev->id, ev->t);
    case SIM_EV_WAKEUP:
        if (r->wake_t == ev->t) r->wake_t = -1;
        r->dirty = true;
        return 0;
    }
    return 0;
}

double replay_next_t(const replay *r) {
    if (r->finished == r->njobs || r->stuck) return INFINITY;
    double t = r->heap.count > 0 ? sim_heap_next_t(&r->heap) : INFINITY;
    if (r->next < r->njobs && row_of(r, r->next)->submit_s < t)
        t = row_of(r, r->next)->submit_s;
    return t;
}

int replay_events(replay *r, double t) {
    r->only_wakeups = r->only_arrivals = true;
    while (r->heap.count > 0 && sim_heap_next_t(&r->heap) == t) {
        sim_event ev;
        sim_heap_pop(&r->heap, &ev);
        r->only_wakeups &= ev.kind == SIM_EV_WAKEUP;
        r->only_arrivals = false;
        if (handle(r, &ev) < 0 || check_core(r, t) < 0) return -1;
    }
    return 0;
}

int replay_settle(replay *r, double t) {
    while (r->next < r->njobs && row_of(r, r->next)->submit_s == t) {
        r->only_wakeups = false;
        if (on_arrival(r, r->next++, t) < 0 || check_core(r, t) < 0)
            return -1;
    }
    if (r->dirty || r->rewake) {
        bool place = r->dirty;
        int was_running = r->running;
        r->dirty = r->rewake = false;
        if (schedule(r, t, place) < 0 || check_core(r, t) < 0) return -1;
        r->only_arrivals &= r->running == was_running; /* no launch */
    }
    if (r->waits.by_reason)
        sim_waits_refresh(&r->waits, r->core, t, r->only_arrivals);
    bool stuck = r->only_wakeups && r->running == 0 && r->next == r->njobs;
    r->idle_wakeups = stuck ? r->idle_wakeups + 1 : 0;
    r->stuck = r->idle_wakeups > MAX_IDLE_WAKEUPS;
    return 0;
}

static int run_loop(replay *r) {
    for (;;) {
        double t = replay_next_t(r);
        if (t == INFINITY) return 0;
        if (replay_events(r, t) < 0 || replay_settle(r, t) < 0) return -1;
    }
}

/* ---- setting up and closing ------------------------------------------------ */

/* Copies the server's trace rows and sets up its jobs' records; returns
 * how many GPUs the jobs ask for in all. */
static long copy_rows(replay *r) {
    long job_gpus = 0;
    for (int i = 0; i < r->njobs; i++) {
        if (i + ROW_PREFETCH < r->njobs)
            __builtin_prefetch(&r->trace[r->ids[i + ROW_PREFETCH]]);
        const trace_job *row = &r->trace[r->ids[i]];
        r->rows[i] = *row;
        r->jobs[i] = (sim_job){.src = row, .first_attempt = -1,
                               .last_attempt = -1, .server = r->server};
        job_gpus += row->work->num_gpus;
    }
    return job_gpus;
}

/* Room in the server's log for a run of each job and a sixteenth more for
 * retries: a log that grows is copied, and with room for one run each
 * every server's log of a million-job run grew. Returns 0, or -1 when out
 * of memory. */
static int log_init(sim_server_log *log, int njobs, long job_gpus) {
    log->attempts_cap = njobs + njobs / 16 + 16;
    log->gpus_cap = (int)(job_gpus + job_gpus / 16 + 16 * CORE_MAX_JOB_GPUS);
    size_t attempts = (size_t)log->attempts_cap * sizeof(*log->attempts);
    size_t gpus = (size_t)log->gpus_cap * sizeof(*log->gpus);
    log->attempts = malloc(attempts);
    log->gpus = malloc(gpus);
    if (!log->attempts || !log->gpus) return -1;
    /* The log stays with the result: its pages are new, and the replay
     * writes nearly all of them. */
    prefault_now(log->attempts, attempts);
    prefault_now(log->gpus, gpus);
    return 0;
}

/* Makes room for cap jobs in the per-job arrays, which may have more
 * from a replay before (replay_reuse()), and in the heap's and the
 * waits' own. Returns 0, or -1 when out of memory. */
static int reserve_jobs(replay *r, int cap) {
    if (cap > r->cap) {
        sim_job *jobs = realloc(r->jobs, (size_t)cap * sizeof(*jobs));
        if (jobs) r->jobs = jobs;
        trace_job *rows = realloc(r->rows, (size_t)cap * sizeof(*rows));
        if (rows) r->rows = rows;
        job_progress *progress = realloc(r->progress,
                                         (size_t)cap * sizeof(*progress));
        if (progress) r->progress = progress;
        if (!jobs || !rows || !progress) return -1;
        r->cap = cap;
    }
    return sim_heap_keys(&r->heap, cap) < 0 ||
                   sim_waits_reserve(&r->waits, r->ids, cap) < 0
               ? -1
               : 0;
}

/* Creates r's core on its GPUs, in their sharing mode. Returns 0, or -1
 * with r->err set. */
static int core_init(replay *r) {
    const sim_options *opt = r->opt;
    double *totals = malloc((size_t)opt->gpus * sizeof(*totals));
    if (!totals) return out_of_memory(r);
    for (int g = 0; g < opt->gpus; g++) totals[g] = opt->gpu_mem_mib;
    core_config cfg = opt->config;
    cfg.policy = r->policy;
    r->core = core_create(&cfg, opt->gpus, totals, r->err, sizeof(r->err));
    free(totals);
    if (!r->core || share_model_setup(r->core, opt->gpus, opt->sharing,
                                      opt->mig, r->err, sizeof(r->err)) != 0 ||
        core_set_cpus(r->core, opt->server_cpus, r->err, sizeof(r->err)) != 0)
        return -1;
    return 0;
}

static int replay_init(replay *r) {
    const sim_options *opt = r->opt;
    r->wake_t = -1;
    r->last_end_s = r->start_s;
    /* The core first, into the memory the last server's core on this
     * thread freed: made after this server's log, which stays with the
     * result, it found that memory taken and mapped fresh pages (a third
     * of the page faults left). */
    if (core_init(r) < 0) return -1;
    r->gpu = calloc((size_t)opt->gpus, sizeof(*r->gpu));
    sim_waits_init(&r->waits, r->wait_by_reason, r->ids, 0);
    int room = r->njobs > r->jobs_room ? r->njobs : r->jobs_room;
    if (!r->gpu || reserve_jobs(r, room ? room : 1) < 0 ||
        log_init(r->log, r->njobs, copy_rows(r)) < 0)
        return out_of_memory(r);
    r->loaders.cores = opt->server_cpus;
    r->cpu_share = 1;
    for (int g = 0; g < opt->gpus; g++) {
        r->gpu[g].since = r->start_s;
        gpu_refresh(r, g, r->start_s);
    }
    return 0;
}

/* Frees what only the loop needs but the per-job arrays, which
 * replay_reuse() may pass on: the result's figures stay. Freed memory goes
 * to the next server's replay on this thread, which then finds its pages
 * mapped already. */
static void free_working_state(replay *r) {
    core_destroy(r->core);
    r->core = NULL;
    sim_heap_free(&r->heap);
    sim_waits_free(&r->waits);
    r->load_cpu_s = r->loaders.cpu_s;
    sim_loaders_free(&r->loaders);
}

void replay_reuse(replay *to, replay *from) {
    to->jobs = from->jobs;
    to->rows = from->rows;
    to->progress = from->progress;
    to->cap = from->cap;
    from->jobs = NULL;
    from->rows = NULL;
    from->progress = NULL;
    from->cap = 0;
}

int replay_start(replay *r) { return replay_init(r); }

int replay_add(replay *r, int32_t id, double t) {
    if (!r->own_ids || r->njobs == r->cap) {
        int cap = r->njobs == r->cap ? r->cap * 2 : r->cap;
        int32_t *ids = realloc(r->own_ids, (size_t)cap * sizeof(*ids));
        if (!ids) return out_of_memory(r);
        r->ids = r->own_ids = ids;
        sim_waits_reserve(&r->waits, ids, 0); /* they moved */
        if (reserve_jobs(r, cap) < 0) return out_of_memory(r);
    }
    /* Wakeups left from before the job: nothing ran, so nothing heeded
     * them (replay_next_t() offered none). */
    while (r->heap.count > 0 && sim_heap_next_t(&r->heap) < t) {
        sim_event ev;
        sim_heap_pop(&r->heap, &ev);
    }
    if (r->wake_t < t) r->wake_t = -1;
    int j = r->njobs++;
    r->own_ids[j] = id;
    r->rows[j] = r->trace[id];
    r->rows[j].submit_s = t; /* it reaches the server when Slurm starts it */
    if (r->wait_by_reason)
        r->wait_by_reason[(size_t)id * SIM_WAIT_KINDS + SIM_WAIT_SLURM] +=
            t - r->trace[id].submit_s;
    r->jobs[j] = (sim_job){.src = &r->trace[id], .first_attempt = -1,
                           .last_attempt = -1, .server = r->server};
    r->stuck = false;
    r->idle_wakeups = 0;
    return 0;
}

double replay_take_left(replay *r) {
    double left = r->left_mib;
    r->left_mib = 0;
    return left;
}

int replay_finish(replay *r, int rc) {
    for (int i = 0; rc == 0 && i < r->njobs; i++) {
        if (i + ROW_PREFETCH < r->njobs)
            __builtin_prefetch(&r->out[r->ids[i + ROW_PREFETCH]], 1);
        r->out[r->ids[i]] = r->jobs[i];
    }
    free_working_state(r);
    return rc;
}

int replay_run(replay *r) {
    int rc = replay_init(r);
    if (rc == 0) rc = run_loop(r);
    return replay_finish(r, rc);
}

void replay_close_books(replay *r, double t) {
    for (int g = 0; g < r->opt->gpus; g++) gpu_account(r, g, t);
}

void replay_free(replay *r) {
    /* replay_run() has freed the working state but the per-job arrays, if
     * it ever ran; the log belongs to the result. */
    for (int g = 0; r->gpu && g < r->opt->gpus; g++) free(r->gpu[g].active);
    free(r->gpu);
    free(r->own_ids);
    free(r->jobs);
    free(r->rows);
    free(r->progress);
}
