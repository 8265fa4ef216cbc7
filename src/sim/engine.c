/* engine.c -- discrete-event replay of a trace through the scheduling core.
 *
 * The loop takes the earliest moment t among the pending events and the
 * next arrival, handles everything that happens at t, then asks the core of
 * every server touched at t for decisions (core_schedule) and for the next
 * time it wants to be asked (core_next_wakeup). Arrivals are read straight
 * from the sorted trace instead of being pushed, so the heap holds only
 * what is in flight.
 *
 * A job's completion event is computed from its rate when the rate is set;
 * when a co-runner comes or goes the rate changes and the event moves in
 * the heap (sim_heap_update), so every completion that surfaces is real.
 */
#include "engine.h"

#include "dispatch.h"
#include "heap.h"
#include "meter.h"
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
 * arrive is stuck; after this many such wakeups the run ends with the
 * remaining jobs reported as unfinished instead of looping forever. (Stale
 * completion events used to interrupt the count; there are none now, so
 * it counts exactly the moments that hold wakeups only.) */
#define MAX_IDLE_WAKEUPS 100000

/* A job active on a GPU. */
typedef struct gpu_entry {
    int32_t job;
    double activity;            /* activity_of(job): fixed for its attempt,
                                   so kept rather than recomputed at every
                                   change on the GPU */
    double mark;                /* meter_mark() when it joined */
} gpu_entry;

typedef struct sim_gpu {
    gpu_entry *active;          /* active jobs, oldest first */
    int njobs, cap;
    energy_meter meter;         /* splits the GPU's energy among them */
    double used_mib;            /* sums over the active jobs */
    double smact, smocc, drama, util_pct;
    double since;               /* energy and busy time counted up to here */
} sim_gpu;

typedef struct sim_server {
    core_state *core;
    double wake_t;              /* pending wakeup, or -1 */
    bool dirty;                 /* ask the core at the end of this moment */
} sim_server;

typedef struct sim {
    const sim_options *opt;
    const trace_job *rows;      /* the trace: rows[j] is job j's (the hot
                                   paths' shortcut to res->jobs[j].src) */
    sim_result *res;
    sim_gpu *gpus;              /* servers * gpus, numbered globally */
    sim_server *servers;
    int *dirty;                 /* servers touched at the current moment */
    int ndirty;
    sim_heap heap;
    sim_dispatch dispatch;
    prefault pages;             /* maps the result's arrays early */
    int finished;               /* jobs done or stopped */
    int running;                /* jobs launched or active */
    char *err;
    size_t errlen;
} sim;

static const cat_workload *work_of(const sim *s, int32_t j) {
    return s->rows[j].work;
}

static sim_attempt *attempt_of(const sim *s, int32_t j) {
    return &s->res->attempts[s->res->jobs[j].last_attempt];
}

static const int32_t *gpus_of(const sim *s, const sim_attempt *a) {
    return &s->res->gpus[a->gpu_off];
}

static int out_of_memory(sim *s) {
    snprintf(s->err, s->errlen, "simulator: out of memory");
    return -1;
}

static int heap_failed(sim *s) {
    snprintf(s->err, s->errlen, "simulator: out of memory, or more than "
             "2^31 events queued in one run");
    return -1;
}

static void mark_dirty(sim *s, int server) {
    if (s->servers[server].dirty) return;
    s->servers[server].dirty = true;
    s->dirty[s->ndirty++] = server;
}

/* ---- GPUs: telemetry, energy ------------------------------------------ */

/* Memory job j holds on GPU g: 2-GPU jobs may differ on their second GPU. */
static double mem_on(const sim *s, int32_t j, int32_t g) {
    const cat_workload *w = work_of(s, j);
    return gpus_of(s, attempt_of(s, j))[0] == g ? w->peak_mib : w->peak_b_mib;
}

/* Adds the energy and busy time of GPU g from its last change up to t,
 * at the readings that held in between. Call before changing its jobs. */
static void gpu_account(sim *s, int32_t g, double t) {
    sim_gpu *gpu = &s->gpus[g];
    double dt = t - gpu->since;
    if (dt <= 0) return;
    double power_w = sim_model_power_w(&s->opt->model, gpu->smact);
    s->res->energy_j += power_w * dt;
    meter_run(&gpu->meter, power_w, gpu->smact, gpu->njobs, dt);
    if (gpu->njobs > 0) s->res->busy_gpu_s += dt;
    gpu->since = t;
}

static double cap1(double x) { return x < 1 ? x : 1; }

/* The share of job j's profiled activity its GPU reads (share_model.h). */
static double activity_of(const sim *s, int32_t j) {
    const sim_attempt *a = attempt_of(s, j);
    return share_model_scale(&s->opt->model, a->share, a->mig, work_of(s, j));
}

/* Recomputes GPU g's sums from its jobs (no drift from adding and taking
 * away) and tells its core the new reading. */
static void gpu_refresh(sim *s, int32_t g, double t) {
    sim_gpu *gpu = &s->gpus[g];
    gpu->used_mib = gpu->smact = gpu->smocc = gpu->drama = gpu->util_pct = 0;
    for (int i = 0; i < gpu->njobs; i++) {
        const gpu_entry *e = &gpu->active[i];
        const cat_workload *w = work_of(s, e->job);
        double k = e->activity;
        gpu->used_mib += mem_on(s, e->job, g);
        gpu->smact += k * w->smact;
        gpu->smocc += k * w->smocc;
        gpu->drama += k * w->drama;
        gpu->util_pct += w->util_pct > 0 ? k * w->util_pct : 0;
    }
    struct core_sample reading = {
        .used_mib = gpu->used_mib, .total_mib = s->opt->gpu_mem_mib,
        .smact = cap1(gpu->smact), .smocc = cap1(gpu->smocc),
        .drama = cap1(gpu->drama), .util = cap1(gpu->util_pct / 100)};
    int per = s->opt->gpus;
    core_sample(s->servers[g / per].core, g % per, &reading, t);
}

static int gpu_add(sim *s, int32_t g, int32_t j) {
    sim_gpu *gpu = &s->gpus[g];
    if (gpu->njobs == gpu->cap) {
        int cap = gpu->cap ? gpu->cap * 2 : 4;
        gpu_entry *more = realloc(gpu->active, (size_t)cap * sizeof(*more));
        if (!more) return out_of_memory(s);
        gpu->active = more;
        gpu->cap = cap;
    }
    double k = activity_of(s, j);
    gpu->active[gpu->njobs++] = (gpu_entry){
        .job = j, .activity = k,
        .mark = meter_mark(&gpu->meter, k * work_of(s, j)->smact)};
    return 0;
}

static void gpu_remove(sim *s, int32_t g, int32_t j) {
    sim_gpu *gpu = &s->gpus[g];
    int i = 0;
    while (gpu->active[i].job != j) i++;
    const gpu_entry *e = &gpu->active[i];
    s->res->jobs[j].energy_j += meter_energy_since(
        &gpu->meter, e->activity * work_of(s, j)->smact, e->mark);
    int after = gpu->njobs - i - 1;
    memmove(&gpu->active[i], &gpu->active[i + 1],
            (size_t)after * sizeof(*gpu->active));
    gpu->njobs--;
}

/* ---- job rates ----------------------------------------------------------- */

/* A multi-GPU job runs at the pace of its slowest GPU. */
static double job_slowdown(const sim *s, int32_t j) {
    const cat_workload *w = work_of(s, j);
    const sim_attempt *a = attempt_of(s, j);
    double worst = 1;
    for (int k = 0; k < a->ngpus; k++) {
        const sim_gpu *gpu = &s->gpus[gpus_of(s, a)[k]];
        double sd = sim_model_slowdown(&s->opt->model, gpu->smact,
                                       w->smact, gpu->drama - w->drama,
                                       gpu->njobs - 1);
        sd = share_model_slowdown(&s->opt->model, a->share, a->mig, w, sd);
        if (sd > worst) worst = sd;
    }
    return worst;
}

/* Brings job j's work up to t and, if its rate changed, moves its
 * completion event. */
static int update_rate(sim *s, int32_t j, double t) {
    sim_job *job = &s->res->jobs[j];
    double rate = 1 / job_slowdown(s, j);
    if (rate == job->rate) return 0;
    job->remaining -= (t - job->since) * job->rate;
    if (job->remaining < 0) job->remaining = 0;
    job->since = t;
    job->rate = rate;
    if (sim_heap_update(&s->heap, t + job->remaining / rate, j) < 0)
        return heap_failed(s);
    return 0;
}

/* Updates the rates of every job on the GPUs of job j's attempt. */
static int update_rates_around(sim *s, const sim_attempt *a, double t) {
    for (int k = 0; k < a->ngpus; k++) {
        const sim_gpu *gpu = &s->gpus[gpus_of(s, a)[k]];
        for (int i = 0; i < gpu->njobs; i++)
            if (update_rate(s, gpu->active[i].job, t) < 0) return -1;
    }
    return 0;
}

/* ---- job life ------------------------------------------------------------ */

static void job_leaves(sim *s, int32_t j, sim_job_state state, double t) {
    sim_job *job = &s->res->jobs[j];
    job->state = (uint8_t)state;
    job->end_s = t;
    s->finished++;
    if (state == SIM_STOPPED) s->res->stopped++;
    sim_dispatch_add(&s->dispatch, job->server, -1);
}

/* Closes job j's current attempt at t and tells the core how it ended. */
static void end_attempt(sim *s, int32_t j, core_exit how, double t) {
    sim_job *job = &s->res->jobs[j];
    sim_attempt *a = attempt_of(s, j);
    a->end_s = t;
    a->oom = how == CORE_EXIT_OOM;
    job->exec_s += t - a->start_s;
    s->res->ooms += a->oom;
    s->running--;
    switch (core_job_exit(s->servers[job->server].core, j, how, t, NULL)) {
    case CORE_DONE: job_leaves(s, j, SIM_DONE, t); break;
    case CORE_STOPPED: job_leaves(s, j, SIM_STOPPED, t); break;
    case CORE_REQUEUED: job->state = SIM_QUEUED; break;
    }
    mark_dirty(s, job->server);
}

static int on_arrival(sim *s, int32_t j, double t) {
    sim_job *job = &s->res->jobs[j];
    const cat_workload *w = job->src->work;
    int server = sim_dispatch_pick(&s->dispatch);
    core_job_spec spec = {
        .id = j, .num_gpus = w->num_gpus,
        .est_mib = w->est_mib[s->opt->estimator], .peak_mib = w->peak_mib,
        .util_pct = w->util_pct, .sharing_score = w->sharing_score};
    char why[256];
    if (core_submit(s->servers[server].core, &spec, t, why, sizeof(why)) < 0) {
        snprintf(s->err, s->errlen, "job %lld (%s): core refused it: %s",
                 (long long)job->src->index, w->name, why);
        return -1;
    }
    job->server = server;
    job->state = SIM_QUEUED;
    sim_dispatch_add(&s->dispatch, server, +1);
    mark_dirty(s, server);
    return 0;
}

/* The job shows first activity: it crashes if the true peaks on one of its
 * GPUs no longer fit, otherwise it joins its GPUs and starts working. */
static int on_activate(sim *s, int32_t j, double t) {
    sim_job *job = &s->res->jobs[j];
    sim_attempt *a = attempt_of(s, j);
    const int32_t *g = gpus_of(s, a);
    a->active_s = t;
    for (int k = 0; k < a->ngpus; k++) {
        if (!share_model_fits(a->mig, mem_on(s, j, g[k]), s->gpus[g[k]].used_mib,
                              s->opt->gpu_mem_mib)) {
            end_attempt(s, j, CORE_EXIT_OOM, t);
            return 0;
        }
    }
    for (int k = 0; k < a->ngpus; k++) {
        gpu_account(s, g[k], t);
        if (gpu_add(s, g[k], j) < 0) return -1;
        gpu_refresh(s, g[k], t);
    }
    /* The catalog's solo time is launch to exit, start-up included; only
     * the part after first activity is GPU work that co-runners slow. */
    double work = work_of(s, j)->solo_s * s->opt->model.exec_factor -
                  s->opt->model.activation_delay_s;
    job->state = SIM_ACTIVE;
    job->remaining = work > 0 ? work : 0;
    job->since = t;
    job->rate = 0;
    if (update_rates_around(s, a, t) < 0) return -1;
    core_job_active(s->servers[job->server].core, j, t);
    mark_dirty(s, job->server);
    return 0;
}

static int on_complete(sim *s, const sim_event *ev) {
    sim_job *job = &s->res->jobs[ev->id];
    if (job->state != SIM_ACTIVE) return 0;
    const sim_attempt *a = attempt_of(s, ev->id);
    for (int k = 0; k < a->ngpus; k++) {
        int32_t g = gpus_of(s, a)[k];
        gpu_account(s, g, ev->t);
        gpu_remove(s, g, ev->id);
        gpu_refresh(s, g, ev->t);
    }
    if (update_rates_around(s, a, ev->t) < 0) return -1;
    end_attempt(s, ev->id, CORE_EXIT_OK, ev->t);
    return 0;
}

/* ---- decisions ------------------------------------------------------------ */

static int check_launch(sim *s, int server, const core_launch *l) {
    const sim_result *r = s->res;
    const char *bad = NULL;
    if (l->job_id < 0 || l->job_id >= r->njobs) bad = "an unknown job";
    else if (r->jobs[l->job_id].server != server ||
             r->jobs[l->job_id].state != SIM_QUEUED) bad = "a job not queued";
    else if (l->num_gpus != r->jobs[l->job_id].src->work->num_gpus)
        bad = "the wrong number of GPUs";
    for (int k = 0; !bad && k < l->num_gpus; k++)
        if (l->gpus[k] < 0 || l->gpus[k] >= s->opt->gpus) bad = "a bad GPU";
    if (!bad) return 0;
    snprintf(s->err, s->errlen, "core of server %d launched %s (job id %lld)",
             server, bad, (long long)l->job_id);
    return -1;
}

static int new_attempt(sim *s, int server, const core_launch *l, double t) {
    sim_result *r = s->res;
    if (r->nattempts == r->attempts_cap ||
        r->ngpus_used + l->num_gpus > r->gpus_cap)
        prefault_finish(&s->pages); /* it may still map the old arrays */
    if (r->nattempts == r->attempts_cap) {
        int cap = r->attempts_cap * 2;
        sim_attempt *more = realloc(r->attempts, (size_t)cap * sizeof(*more));
        if (!more) return out_of_memory(s);
        r->attempts = more;
        r->attempts_cap = cap;
    }
    if (r->ngpus_used + l->num_gpus > r->gpus_cap) {
        int cap = r->gpus_cap * 2;
        int32_t *more = realloc(r->gpus, (size_t)cap * sizeof(*more));
        if (!more) return out_of_memory(s);
        r->gpus = more;
        r->gpus_cap = cap;
    }
    sim_job *job = &r->jobs[l->job_id];
    int idx = r->nattempts++;
    r->attempts[idx] = (sim_attempt){.start_s = t, .active_s = -1,
        .end_s = -1, .gpu_off = r->ngpus_used, .next = -1,
        .job = (int32_t)l->job_id, .ngpus = (uint8_t)l->num_gpus,
        .share = (uint8_t)l->share[0], .mig = l->mig};
    for (int k = 0; k < l->num_gpus; k++)
        r->gpus[r->ngpus_used++] = server * s->opt->gpus + l->gpus[k];
    if (job->first_attempt < 0) job->first_attempt = idx;
    else r->attempts[job->last_attempt].next = idx;
    job->last_attempt = idx;
    return 0;
}

static int start_launch(sim *s, int server, const core_launch *l, double t) {
    if (check_launch(s, server, l) < 0 || new_attempt(s, server, l, t) < 0)
        return -1;
    s->res->jobs[l->job_id].state = SIM_LAUNCHED;
    s->running++;
    /* Launches happen at nondecreasing times and the delay is constant,
     * so activations are due in push order: the heap's in-order lane. */
    if (sim_heap_push_ordered(&s->heap, t + s->opt->model.activation_delay_s,
                              SIM_EV_ACTIVATE, (int32_t)l->job_id) < 0)
        return heap_failed(s);
    return 0;
}

static int schedule(sim *s, int server, double t) {
    sim_server *srv = &s->servers[server];
    /* Two calls in three find the queue empty, where the core would place
     * nothing and want no wakeup: skip both calls. */
    if (core_queued_count(srv->core) == 0) return 0;
    core_launch batch[LAUNCH_BATCH];
    int n;
    do {
        n = core_schedule(srv->core, t, batch, LAUNCH_BATCH);
        for (int i = 0; i < n; i++)
            if (start_launch(s, server, &batch[i], t) < 0) return -1;
    } while (n == LAUNCH_BATCH);
    double wake = core_next_wakeup(srv->core, t);
    bool covered = srv->wake_t > t && srv->wake_t <= wake;
    if (wake > t && !covered) {
        srv->wake_t = wake;
        if (sim_heap_push(&s->heap, wake, SIM_EV_WAKEUP, server) < 0)
            return heap_failed(s);
    }
    return 0;
}

/* ---- the loop ------------------------------------------------------------ */

static int handle(sim *s, const sim_event *ev) {
    switch (ev->kind) {
    case SIM_EV_ACTIVATE: return on_activate(s, ev->id, ev->t);
    case SIM_EV_COMPLETE: return on_complete(s, ev);
    case SIM_EV_WAKEUP:
        if (s->servers[ev->id].wake_t == ev->t) s->servers[ev->id].wake_t = -1;
        mark_dirty(s, ev->id);
        return 0;
    }
    return 0;
}

static int run_loop(sim *s) {
    const sim_result *r = s->res;
    int next = 0, idle_wakeups = 0;
    while (s->finished < r->njobs) {
        bool have_event = s->heap.count > 0, have_arrival = next < r->njobs;
        if (!have_event && !have_arrival) break;
        double t = have_event ? sim_heap_next_t(&s->heap) : INFINITY;
        if (have_arrival && s->rows[next].submit_s < t)
            t = s->rows[next].submit_s;
        bool only_wakeups = true;
        while (s->heap.count > 0 && sim_heap_next_t(&s->heap) == t) {
            sim_event ev;
            sim_heap_pop(&s->heap, &ev);
            only_wakeups &= ev.kind == SIM_EV_WAKEUP;
            if (handle(s, &ev) < 0) return -1;
        }
        while (next < r->njobs && s->rows[next].submit_s == t) {
            only_wakeups = false;
            if (on_arrival(s, next++, t) < 0) return -1;
        }
        for (int i = 0; i < s->ndirty; i++) {
            s->servers[s->dirty[i]].dirty = false;
            if (schedule(s, s->dirty[i], t) < 0) return -1;
        }
        s->ndirty = 0;
        bool stuck = only_wakeups && s->running == 0 && next == r->njobs;
        idle_wakeups = stuck ? idle_wakeups + 1 : 0;
        if (idle_wakeups > MAX_IDLE_WAKEUPS) break;
    }
    return 0;
}

/* Closes the books at the last end: makespan, idle energy to the end. */
static void finish(sim *s) {
    sim_result *r = s->res;
    double last = r->start_s;
    for (int i = 0; i < r->nattempts; i++)
        if (r->attempts[i].end_s > last) last = r->attempts[i].end_s;
    r->makespan_s = last - r->start_s;
    int ngpus = s->opt->servers * s->opt->gpus;
    for (int g = 0; g < ngpus; g++) gpu_account(s, g, last);
    r->unfinished = r->njobs - s->finished;
}

/* The result, its arrays sized once from the trace; pages maps them in a
 * second thread while they are filled (the jobs here, the attempts one
 * launch at a time). */
static sim_result *result_new(const trace *t, const sim_options *opt,
                              const char *policy, prefault *pages) {
    sim_result *r = calloc(1, sizeof(*r));
    if (!r) return NULL;
    r->policy = policy;
    r->sharing = share_mode_name(opt->sharing);
    r->servers = opt->servers;
    r->gpus_per_server = opt->gpus;
    r->njobs = t->count;
    r->start_s = t->jobs[0].submit_s;
    r->attempts_cap = r->gpus_cap = t->count + 16;
    r->jobs = calloc((size_t)t->count, sizeof(*r->jobs));
    r->attempts = malloc((size_t)r->attempts_cap * sizeof(*r->attempts));
    r->gpus = malloc((size_t)r->gpus_cap * sizeof(*r->gpus));
    if (!r->jobs || !r->attempts || !r->gpus) {
        sim_result_free(r);
        return NULL;
    }
    prefault_add(pages, r->jobs, (size_t)t->count * sizeof(*r->jobs));
    prefault_add(pages, r->attempts,
                 (size_t)r->attempts_cap * sizeof(*r->attempts));
    prefault_add(pages, r->gpus, (size_t)r->gpus_cap * sizeof(*r->gpus));
    prefault_start(pages);
    for (int i = 0; i < t->count; i++) {
        r->jobs[i].src = &t->jobs[i];
        r->jobs[i].first_attempt = r->jobs[i].last_attempt = -1;
        r->jobs[i].server = -1;
    }
    return r;
}

static int sim_init(sim *s, const trace *t, const sim_options *opt,
                    const char *policy) {
    int ngpus = opt->servers * opt->gpus;
    s->res = result_new(t, opt, policy, &s->pages);
    s->gpus = calloc((size_t)ngpus, sizeof(*s->gpus));
    s->servers = calloc((size_t)opt->servers, sizeof(*s->servers));
    s->dirty = malloc((size_t)opt->servers * sizeof(*s->dirty));
    double *totals = malloc((size_t)opt->gpus * sizeof(*totals));
    if (!s->res || !s->gpus || !s->servers || !s->dirty || !totals ||
        sim_dispatch_init(&s->dispatch, opt->servers) < 0 ||
        sim_heap_keys(&s->heap, t->count) < 0) {
        free(totals);
        return out_of_memory(s);
    }
    for (int g = 0; g < opt->gpus; g++) totals[g] = opt->gpu_mem_mib;
    core_config cfg = opt->config;
    cfg.policy = policy;
    int ready = 0;
    for (int i = 0; i < opt->servers; i++, ready++) {
        s->servers[i].wake_t = -1;
        s->servers[i].core = core_create(&cfg, opt->gpus, totals, s->err,
                                         s->errlen);
        if (!s->servers[i].core ||
            share_model_setup(s->servers[i].core, opt->gpus, opt->sharing,
                              opt->mig, s->err, s->errlen) != 0)
            break;
    }
    free(totals);
    if (ready < opt->servers) return -1;
    for (int g = 0; g < ngpus; g++) {
        s->gpus[g].since = s->res->start_s;
        gpu_refresh(s, g, s->res->start_s);
    }
    return 0;
}

static void sim_release(sim *s) {
    prefault_finish(&s->pages);
    int ngpus = s->opt->servers * s->opt->gpus;
    for (int g = 0; s->gpus && g < ngpus; g++) {
        free(s->gpus[g].active);
    }
    for (int i = 0; s->servers && i < s->opt->servers; i++)
        core_destroy(s->servers[i].core);
    free(s->gpus);
    free(s->servers);
    free(s->dirty);
    sim_heap_free(&s->heap);
    sim_dispatch_free(&s->dispatch);
}

sim_result *sim_run(const trace *t, const sim_options *opt, const char *policy,
                    char *err, size_t errlen) {
    sim s = {.opt = opt, .rows = t->jobs, .err = err, .errlen = errlen};
    int rc = sim_init(&s, t, opt, policy);
    if (rc == 0) rc = run_loop(&s);
    if (rc == 0) finish(&s);
    sim_release(&s);
    if (rc < 0) {
        sim_result_free(s.res);
        return NULL;
    }
    return s.res;
}

void sim_result_free(sim_result *r) {
    if (!r) return;
    free(r->jobs);
    free(r->attempts);
    free(r->gpus);
    free(r);
}
