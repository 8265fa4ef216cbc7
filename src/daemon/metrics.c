/* metrics.c -- what aegisd's /metrics says: its GPUs, its unfinished
 * jobs, its users and its scheduler, in Prometheus' text format
 * (metrics_text.h), read from the daemon's state when rendered (at most
 * once per metrics_cache_s, for every client alike: metrics_http.c). The names
 * follow Prometheus' conventions: an aegis_ prefix, base units (bytes,
 * seconds, joules, ratios 0..1), _total on counters. docs/metrics.md
 * lists them.
 *
 * Cardinality stays bounded: a job's series exist while it is unfinished
 * (queued, held or running) and drop out when it ends, at most
 * metrics_max_jobs jobs have them (metrics_jobs.c), users are the
 * server's accounts, and reasons and states are fixed sets.
 */
#include "daemon.h"
#include "jobs.h"
#include "metrics_jobs.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB_BYTES 1048576.0

/* ---- GPUs ---------------------------------------------------------------- */

/* A per-GPU family: name, type, help, and the reading it shows. */
typedef struct gpu_family {
    const char *name, *type, *help;
    double (*value)(const d_daemon *d, int g); /* < 0: no sample */
} gpu_family;

static double gpu_used_bytes(const d_daemon *d, int g) {
    return d->gpus[g].last.r.used_mib * MIB_BYTES;
}
static double gpu_total_bytes(const d_daemon *d, int g) {
    return d->gpus[g].last.r.total_mib * MIB_BYTES;
}
static double gpu_util(const d_daemon *d, int g) {
    return d->gpus[g].last.r.util;
}
static double gpu_smact(const d_daemon *d, int g) {
    return d->gpus[g].last.r.smact;
}
static double gpu_smocc(const d_daemon *d, int g) {
    return d->gpus[g].last.r.smocc;
}
static double gpu_drama(const d_daemon *d, int g) {
    return d->gpus[g].last.r.drama;
}
static double gpu_power(const d_daemon *d, int g) {
    return d->gpus[g].last.power_w;
}
static double gpu_energy(const d_daemon *d, int g) {
    return d->gpus[g].last.energy_j;
}
static double gpu_drained(const d_daemon *d, int g) {
    return d->gpus[g].drained;
}
static double gpu_jobs(const d_daemon *d, int g) {
    int n = 0;
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        if (job->state != D_RUNNING) continue;
        for (int k = 0; k < job->ngpus; k++) n += job->gpus[k] == g;
    }
    return n;
}
static double gpu_read_ok(const d_daemon *d, int g) {
    return d->gpus[g].ok;
}

static const gpu_family gpu_families[] = {
    {"aegis_gpu_up", "gauge",
     "1 when the GPU's latest telemetry read succeeded; its other readings "
     "are the last good ones.", gpu_read_ok},
    {"aegis_gpu_memory_used_bytes", "gauge",
     "GPU memory in use, by any process.", gpu_used_bytes},
    {"aegis_gpu_memory_total_bytes", "gauge", "GPU memory in all.",
     gpu_total_bytes},
    {"aegis_gpu_utilization_ratio", "gauge",
     "Fraction of the last sample period a kernel ran (NVML).", gpu_util},
    {"aegis_gpu_sm_active_ratio", "gauge",
     "SMACT: fraction of time an SM had a warp resident (DCGM).", gpu_smact},
    {"aegis_gpu_sm_occupancy_ratio", "gauge",
     "SMOCC: resident warps over the SMs' maximum (DCGM).", gpu_smocc},
    {"aegis_gpu_dram_active_ratio", "gauge",
     "DRAMA: fraction of cycles the memory interface was busy (DCGM).",
     gpu_drama},
    {"aegis_gpu_power_watts", "gauge", "Power the GPU draws.", gpu_power},
    {"aegis_gpu_energy_joules_total", "counter",
     "Energy the GPU drew since its driver loaded.", gpu_energy},
    {"aegis_gpu_jobs_running", "gauge", "Jobs of aegisd's running on the GPU.",
     gpu_jobs},
    {"aegis_gpu_drained", "gauge",
     "1 when the GPU is drained (aegis drain): it takes no new job.",
     gpu_drained},
};

static void metrics_gpus(d_daemon *d, mtext *t) {
    char gpu[16];
    mtext_family(t, "aegis_gpus", "gauge", "GPUs aegisd manages.");
    mtext_sample(t, "aegis_gpus", NULL, d->ngpus);
    mtext_family(t, "aegis_gpu_info", "gauge",
                 "Each GPU's identity and sharing mode, as labels; always 1.");
    for (int g = 0; g < d->ngpus; g++) {
        snprintf(gpu, sizeof(gpu), "%d", g);
        const char *labels[] = {"gpu", gpu, "uuid", tel_gpu_uuid(d->tel, g),
                                "model", tel_gpu_name(d->tel, g), "sharing",
                                share_mode_name(d->gpus[g].mode), NULL};
        mtext_sample(t, "aegis_gpu_info", labels, 1);
    }
    for (size_t f = 0; f < sizeof(gpu_families) / sizeof(*gpu_families); f++) {
        const gpu_family *fam = &gpu_families[f];
        bool any = false;
        for (int g = 0; g < d->ngpus; g++) {
            double v = fam->value(d, g);
            if (v < 0) continue; /* unknown: CORE_UNKNOWN */
            if (!any) mtext_family(t, fam->name, fam->type, fam->help);
            any = true;
            snprintf(gpu, sizeof(gpu), "%d", g);
            const char *labels[] = {"gpu", gpu, NULL};
            mtext_sample(t, fam->name, labels, v);
        }
    }
}

/* ---- jobs ---------------------------------------------------------------- */

static mjob_state job_state_of(const d_job *job) {
    if (job->state == D_RUNNING) return MJOB_RUNNING;
    return job->state == D_HELD || job->held ? MJOB_HELD : MJOB_QUEUED;
}

/* Its processes' SM utilization over its GPUs, as a share of one GPU's. */
static double job_sm_share(const d_job *job) {
    if (job->state != D_RUNNING || job->ngpus < 1 || job->sm_pct < 0)
        return -1;
    return job->sm_pct / 100.0 / job->ngpus;
}

/* What /metrics shows of job (metrics_jobs.h). */
static void job_view(const d_job *job, mjob *v) {
    *v = (mjob){.id = job->id, .user = job->user, .name = job->name,
                .state = job_state_of(job), .attempts = job->attempts,
                .memory_bytes = job->state == D_RUNNING
                                    ? job->used_mib * MIB_BYTES : -1,
                .sm_share = job_sm_share(job), .energy_j = job->energy_j};
    size_t at = 0;
    for (int k = 0; job->state == D_RUNNING && k < job->ngpus; k++)
        at += (size_t)snprintf(v->gpus + at, sizeof(v->gpus) - at, "%s%d",
                               k ? "," : "", job->gpus[k]);
}

static void metrics_jobs(d_daemon *d, mtext *t) {
    mjob *views = malloc((d->njobs ? d->njobs : 1) * sizeof(*views));
    if (!views) {
        t->failed = true;
        return;
    }
    for (size_t i = 0; i < d->njobs; i++) job_view(d->jobs[i], &views[i]);
    mjobs_render(t, views, d->njobs, (size_t)d->keys.metrics_max_jobs);
    free(views);
}

/* ---- users --------------------------------------------------------------- */

/* The live part of each user's figures: their unfinished jobs. */
typedef struct user_live {
    double gpu_s, energy_j;
    int jobs[MJOB_STATES];
} user_live;

/* Each user's live figures, by their index in d->counts.users (every
 * user with an unfinished job gets one there); NULL when out of memory. */
static user_live *metrics_users_live(d_daemon *d) {
    for (size_t i = 0; i < d->njobs; i++)
        if (!metrics_user_of(&d->counts, d->jobs[i]->user)) return NULL;
    user_live *live = calloc(d->counts.nusers + 1, sizeof(*live));
    if (!live) return NULL;
    double now = d_wall();
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        user_live *u = &live[metrics_user_of(&d->counts, job->user) -
                             d->counts.users];
        u->jobs[job_state_of(job)]++;
        /* since this aegisd took it: these counters start from 0 */
        u->energy_j += job->energy_j - job->energy_from_j;
        double from = d_job_counted_from(job);
        if (job->state == D_RUNNING && job->started > 0 && now > from)
            u->gpu_s += (now - from) * job->ngpus;
    }
    return live;
}

static void metrics_users(d_daemon *d, mtext *t) {
    user_live *live = metrics_users_live(d);
    if (!live) {
        t->failed = true;
        return;
    }
    const metrics_counts *m = &d->counts;
    mtext_family(t, "aegis_user_gpu_seconds_total", "counter",
                 "GPU-seconds of the user's attempts since aegisd started "
                 "(GPUs x seconds run).");
    for (size_t i = 0; i < m->nusers; i++) {
        const char *labels[] = {"user", m->users[i].user, NULL};
        mtext_sample(t, "aegis_user_gpu_seconds_total", labels,
                     m->users[i].gpu_s + live[i].gpu_s);
    }
    mtext_family(t, "aegis_user_energy_joules_total", "counter",
                 "Energy of the user's jobs: those finished since aegisd "
                 "started, and the unfinished ones so far.");
    for (size_t i = 0; i < m->nusers; i++) {
        const char *labels[] = {"user", m->users[i].user, NULL};
        mtext_sample(t, "aegis_user_energy_joules_total", labels,
                     m->users[i].energy_j + live[i].energy_j);
    }
    mtext_family(t, "aegis_user_jobs", "gauge",
                 "The user's unfinished jobs by state.");
    for (size_t i = 0; i < m->nusers; i++)
        for (int k = 0; k < MJOB_STATES; k++) {
            const char *labels[] = {"user", m->users[i].user, "state",
                                    mjob_state_names[k], NULL};
            mtext_sample(t, "aegis_user_jobs", labels, live[i].jobs[k]);
        }
    mtext_family(t, "aegis_user_jobs_finished_total", "counter",
                 "The user's jobs finished since aegisd started, by the "
                 "state they ended in.");
    for (size_t i = 0; i < m->nusers; i++)
        for (int k = 0; k < METRICS_END_STATES; k++) {
            const char *labels[] = {"user", m->users[i].user, "state",
                                    metrics_end_states[k], NULL};
            mtext_sample(t, "aegis_user_jobs_finished_total", labels,
                         (double)m->users[i].finished[k]);
        }
    free(live);
}

/* ---- the scheduler ------------------------------------------------------- */

static int id_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The words of aegis_queue_jobs beyond the core's (core_wait_name). */
static const char *const extra_words[] = {"pending", "backoff"};
#define NEXTRA_WORDS (sizeof(extra_words) / sizeof(*extra_words))

/* What a job aegisd holds back waits for, as REASON says it
 * (handlers.c): the end of a back-off, a consumer of its feed (an asleep
 * producer), or the jobs it depends on. */
static const char *held_wait_word(const d_job *job) {
    if (d_job_backing_off(job)) return "backoff";
    if (job->producer) return core_wait_name(CORE_WAIT_FEED);
    return core_wait_name(CORE_WAIT_DEPENDENCY);
}

/* The reason a waiting job waits, as a word: the core's for the jobs a
 * pass reached (front, sorted), "behind" for the others, which wait for
 * the head of the queue, "held" for those a user holds, held_wait_word()
 * for those aegisd holds back, and "pending" for a job no pass has judged
 * yet. */
static const char *job_wait_word(d_daemon *d, const d_job *job,
                                 const int64_t *front, int nfront) {
    if (job->held) return core_wait_name(CORE_WAIT_HELD);
    if (job->state == D_HELD) return held_wait_word(job);
    if (!job->in_core ||
        !bsearch(&job->id, front, (size_t)nfront, sizeof(*front), id_cmp))
        return core_wait_name(CORE_WAIT_BEHIND);
    core_reason r = {.kind = CORE_WAIT_NONE, .gpu = -1};
    core_job_reason(d->core, job->id, d_now(d), &r);
    return r.kind == CORE_WAIT_NONE ? "pending" : core_wait_name(r.kind);
}

/* The k-th word of aegis_queue_jobs, from 1: the core's kinds, then
 * extra_words. */
static const char *queue_word(int k) {
    return k < CORE_WAIT_KINDS ? core_wait_name(k)
                               : extra_words[k - CORE_WAIT_KINDS];
}

static void metrics_queue(d_daemon *d, mtext *t) {
    static int64_t front[CORE_BACKFILL_DEPTH];
    int nfront = core_reason_front(d->core, front, CORE_BACKFILL_DEPTH);
    qsort(front, (size_t)nfront, sizeof(*front), id_cmp);
    enum { NWORDS = CORE_WAIT_KINDS + NEXTRA_WORDS };
    int counts[NWORDS] = {0}; /* by queue_word() */
    for (size_t i = 0; i < d->njobs; i++) {
        const d_job *job = d->jobs[i];
        if (job->state == D_RUNNING) continue;
        const char *word = job_wait_word(d, job, front, nfront);
        int k = 1;
        while (k < NWORDS && strcmp(word, queue_word(k)) != 0) k++;
        assert(k < NWORDS); /* job_wait_word() says only these */
        if (k < NWORDS) counts[k]++;
    }
    mtext_family(t, "aegis_queue_jobs", "gauge",
                 "Jobs waiting, by the reason `aegis ls` gives (REASON).");
    for (int k = 1; k < NWORDS; k++) {
        const char *labels[] = {"reason", queue_word(k), NULL};
        mtext_sample(t, "aegis_queue_jobs", labels, counts[k]);
    }
}

static void metrics_scheduler(d_daemon *d, mtext *t) {
    const metrics_counts *m = &d->counts;
    metrics_queue(d, t);
    /* the alert "state not saved" (pkg/prometheus/aegis.rules.yml) */
    mtext_family(t, "aegis_state_saved", "gauge",
                 "1 while aegisd's database takes its writes; 0 while they "
                 "fail and its changes wait in memory.");
    mtext_sample(t, "aegis_state_saved", NULL, store_failing(d->st) ? 0 : 1);
    mtext_family(t, "aegis_placements_total", "counter",
                 "Attempts started since aegisd started.");
    mtext_sample(t, "aegis_placements_total", NULL, (double)m->placements);
    mtext_family(t, "aegis_oom_crashes_total", "counter",
                 "Attempts that ended out of GPU memory since aegisd "
                 "started.");
    mtext_sample(t, "aegis_oom_crashes_total", NULL, (double)m->oom_crashes);
    mtext_family(t, "aegis_recoveries_total", "counter",
                 "Jobs requeued by the OOM recovery ladder since aegisd "
                 "started.");
    mtext_sample(t, "aegis_recoveries_total", NULL, (double)m->recoveries);
    mtext_family(t, "aegis_scheduling_pass_seconds", "histogram",
                 "Time the scheduler took to decide a pass (the launches "
                 "it decided aside).");
    mtext_histogram(t, "aegis_scheduling_pass_seconds", &m->pass_s);
}

void d_metrics_render(d_daemon *d, mtext *t) {
    metrics_gpus(d, t);
    metrics_jobs(d, t);
    metrics_users(d, t);
    metrics_scheduler(d, t);
}
