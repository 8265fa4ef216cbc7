/* metrics_jobs.c -- the per-job families of /metrics, bounded: see
 * metrics_jobs.h. Running jobs are listed first because they are the ones
 * whose memory, SM share and energy change; among waiting jobs the oldest
 * are the next to run. A job past the bound still counts, in
 * aegis_jobs_unlisted, so sums over users and states stay whole.
 */
#include "metrics_jobs.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mjob_state_names[MJOB_STATES] = {"queued", "held",
                                                   "running"};

/* Marks in listed[] the jobs that get their own series. */
static void mjobs_pick(const mjob *jobs, size_t n, size_t max_listed,
                       bool *listed) {
    size_t left = max_listed;
    for (size_t i = 0; i < n && left > 0; i++)
        if (jobs[i].state == MJOB_RUNNING) {
            listed[i] = true;
            left--;
        }
    for (size_t i = 0; i < n && left > 0; i++)
        if (jobs[i].state != MJOB_RUNNING) {
            listed[i] = true;
            left--;
        }
}

/* A job's labels, the state one last when with_state. */
typedef struct mjob_labels {
    char id[24];
    const char *list[11];
} mjob_labels;

static void mjob_labels_of(const mjob *job, bool with_state, mjob_labels *l) {
    snprintf(l->id, sizeof(l->id), "%lld", (long long)job->id);
    const char *list[] = {"job_id", l->id, "user", job->user, "name",
                          job->name, "gpu", job->gpus,
                          with_state ? "state" : NULL,
                          mjob_state_names[job->state], NULL};
    memcpy(l->list, list, sizeof(list));
}

/* A family of one sample per listed job: name, type, help, and where in
 * an mjob its value is. */
typedef struct mjob_family {
    const char *name, *type, *help;
    size_t value_at;
} mjob_family;

static const mjob_family mjob_families[] = {
    {"aegis_job_attempts", "gauge",
     "Attempts started so far (more than 1 after OOM recoveries).",
     offsetof(mjob, attempts)},
    {"aegis_job_memory_used_bytes", "gauge",
     "GPU memory the running job's processes hold, over its GPUs.",
     offsetof(mjob, memory_bytes)},
    {"aegis_job_sm_share_ratio", "gauge",
     "The running job's share of its GPUs' SMs (NVML's per-process "
     "utilization, averaged over its GPUs).", offsetof(mjob, sm_share)},
    {"aegis_job_energy_joules_total", "counter",
     "The job's share of its GPUs' energy, over its attempts.",
     offsetof(mjob, energy_j)},
};

static void mjobs_state_family(mtext *t, const mjob *jobs, size_t n,
                               const bool *listed) {
    mtext_family(t, "aegis_job_state", "gauge",
                 "Each unfinished job, with its state (queued, held, "
                 "running) as a label; always 1. Finished jobs drop out; "
                 "past metrics_max_jobs (running first, then the oldest) "
                 "jobs are only counted, in aegis_jobs_unlisted.");
    for (size_t i = 0; i < n; i++) {
        if (!listed[i]) continue;
        mjob_labels l;
        mjob_labels_of(&jobs[i], true, &l);
        mtext_sample(t, "aegis_job_state", l.list, 1);
    }
}

static void mjobs_value_family(mtext *t, const mjob_family *fam,
                               const mjob *jobs, size_t n,
                               const bool *listed) {
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, (const char *)&jobs[i] + fam->value_at, sizeof(v));
        if (!listed[i] || v < 0) continue;
        if (!any) mtext_family(t, fam->name, fam->type, fam->help);
        any = true;
        mjob_labels l;
        mjob_labels_of(&jobs[i], false, &l);
        mtext_sample(t, fam->name, l.list, v);
    }
}

/* Unlisted jobs sort by user, then state, so each group is one run. */
static int mjob_group_cmp(const void *a, const void *b) {
    const mjob *x = *(const mjob *const *)a, *y = *(const mjob *const *)b;
    int c = strcmp(x->user, y->user);
    return c ? c : (int)x->state - (int)y->state;
}

/* aegis_jobs_unlisted{user,state}: the unlisted jobs counted; failed when
 * out of memory. */
static void mjobs_unlisted(mtext *t, const mjob *jobs, size_t n,
                           const bool *listed) {
    mtext_family(t, "aegis_jobs_unlisted", "gauge",
                 "Unfinished jobs past metrics_max_jobs, which have no "
                 "aegis_job_* series of their own, by user and state.");
    const mjob **rest = malloc((n ? n : 1) * sizeof(*rest));
    if (!rest) {
        t->failed = true;
        return;
    }
    size_t nrest = 0;
    for (size_t i = 0; i < n; i++)
        if (!listed[i]) rest[nrest++] = &jobs[i];
    qsort(rest, nrest, sizeof(*rest), mjob_group_cmp);
    for (size_t i = 0, run = 1; i < nrest; i++, run++) {
        if (i + 1 < nrest && mjob_group_cmp(&rest[i], &rest[i + 1]) == 0)
            continue;
        const char *labels[] = {"user", rest[i]->user, "state",
                                mjob_state_names[rest[i]->state], NULL};
        mtext_sample(t, "aegis_jobs_unlisted", labels, (double)run);
        run = 0;
    }
    free(rest);
}

void mjobs_render(mtext *t, const mjob *jobs, size_t n, size_t max_listed) {
    bool *listed = calloc(n ? n : 1, sizeof(*listed));
    if (!listed) {
        t->failed = true;
        return;
    }
    mjobs_pick(jobs, n, max_listed, listed);
    mjobs_state_family(t, jobs, n, listed);
    for (size_t f = 0; f < sizeof(mjob_families) / sizeof(*mjob_families); f++)
        mjobs_value_family(t, &mjob_families[f], jobs, n, listed);
    mjobs_unlisted(t, jobs, n, listed);
    free(listed);
}
