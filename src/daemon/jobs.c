/* jobs.c -- aegisd's table of unfinished jobs: each job by id, the
 * running ones, the ends not saved yet, and the loop turn's one commit.
 *
 * A job's life is in the files beside it: jobs_queue.c (submitted,
 * queued, finished), jobs_run.c (launched, exited, requeued),
 * jobs_tick.c (the per-tick GPU work) and jobs_recover.c (a restart).
 * What differs between kinds of job (aegisd's own, a Slurm lease, a feed's
 * managed producer) is in each job's kind (d_job_kind): these files call
 * it, and never ask which kind a job is.
 */
#include "daemon.h"
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table of unfinished jobs ----------------------------------------- */

size_t d_job_index(const d_daemon *d, int64_t id) {
    size_t lo = 0, hi = d->njobs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->jobs[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t d_job_index_after(const d_daemon *d, int64_t id) {
    size_t i = d_job_index(d, id);
    return i < d->njobs && d->jobs[i]->id == id ? i + 1 : i;
}

bool d_job_backing_off(const d_job *job) {
    return job->state == D_HELD && job->restart_at > 0;
}

d_job *d_job_find(d_daemon *d, int64_t id) {
    size_t i = d_job_index(d, id);
    return i < d->njobs && d->jobs[i]->id == id ? d->jobs[i] : NULL;
}

/* The list of running jobs has room for every job of the table, so that
 * a job can always join it. */
int d_job_add(d_daemon *d, d_job *job) {
    if (d->njobs == d->capjobs) {
        size_t cap = d->capjobs ? d->capjobs * 2 : 256;
        d_job **grown = realloc(d->jobs, cap * sizeof(*grown));
        if (!grown) return -1;
        d->jobs = grown;
        grown = realloc(d->running, cap * sizeof(*grown));
        if (!grown) return -1;
        d->running = grown;
        d->capjobs = cap;
    }
    size_t i = d_job_index(d, job->id); /* new ids come last: i == njobs */
    memmove(d->jobs + i + 1, d->jobs + i, (d->njobs - i) * sizeof(*d->jobs));
    d->jobs[i] = job;
    d->njobs++;
    d->ndependents += job->ndeps > 0;
    return 0;
}

void d_job_set_state(d_daemon *d, d_job *job, d_state state) {
    if (state == D_RUNNING && !job->run_slot) {
        d->running[d->nrunning++] = job;
        job->run_slot = d->nrunning;
    } else if (state != D_RUNNING && job->run_slot) {
        d_job *last = d->running[--d->nrunning]; /* takes its place */
        d->running[job->run_slot - 1] = last;
        last->run_slot = job->run_slot;
        job->run_slot = 0;
    }
    job->state = state;
}

int d_id_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t *d_running_ids(const d_daemon *d, size_t *n) {
    int64_t *ids = d->nrunning ? malloc(d->nrunning * sizeof(*ids)) : NULL;
    *n = ids ? d->nrunning : 0;
    for (size_t i = 0; i < *n; i++) ids[i] = d->running[i]->id;
    if (ids) qsort(ids, *n, sizeof(*ids), d_id_cmp);
    return ids;
}

void d_job_remove(d_daemon *d, d_job *job) {
    d->ndependents -= job->ndeps > 0;
    d_job_set_state(d, job, D_QUEUED); /* off the running list */
    size_t i = d_job_index(d, job->id);
    memmove(d->jobs + i, d->jobs + i + 1, (d->njobs - i - 1) * sizeof(*d->jobs));
    d->njobs--;
    d_job_drop_cg(job); /* dropped at its end already, unless it never ended */
    free(job);
}

/* ---- finished jobs not saved yet ------------------------------------------ */

const d_unsaved *d_job_unsaved(const d_daemon *d, int64_t id) {
    /* its row has the end (read in the turn's own transaction, before
     * its commit, too): the list, every end since the last tick (tens
     * of thousands after a bulk cancel), is not walked */
    if (!store_failing(d->st)) return NULL;
    for (size_t i = 0; i < d->nunsaved; i++)
        if (d->unsaved[i].id == id) return &d->unsaved[i];
    return NULL;
}

/* Notes a job's end until the state is saved: its commit may yet fail. */
void d_unsaved_add(d_daemon *d, int64_t id, const char *state,
                          const char *reason) {
    if (d->nunsaved == d->capunsaved) {
        size_t cap = d->capunsaved ? d->capunsaved * 2 : 64;
        d_unsaved *grown = realloc(d->unsaved, cap * sizeof(*grown));
        if (!grown) return; /* ls and show say what the database says */
        d->unsaved = grown;
        d->capunsaved = cap;
    }
    d_unsaved *u = &d->unsaved[d->nunsaved++];
    u->id = id;
    snprintf(u->state, sizeof(u->state), "%s", state);
    snprintf(u->reason, sizeof(u->reason), "%s", reason);
}

/* ---- one commit per loop turn ------------------------------------------- */

void d_turn_begin(d_daemon *d) {
    d->gpus_changes++; /* the front's copy may be behind (front.h) */
    store_begin(d->st);
}

void d_status_retire_settled(d_daemon *d) {
    for (size_t i = 0; i < d->nsettled; i++)
        exec_status_retire(d->run_dir, &d->spares, d->settled[i].id,
                           d->settled[i].n);
    d->nsettled = 0;
}

/* Removes the status files of the attempts settled in the turn once it is
 * committed; when it is not, the sweep at the next save does (d_status_sweep). */
void d_turn_end(d_daemon *d) {
    int rc = store_commit(d->st);
    if (store_in_transaction(d->st)) return; /* an outer turn commits */
    if (rc == 0) d_status_retire_settled(d);
    d->nsettled = 0;
}

void d_status_settled(d_daemon *d, int64_t id, int n, int committed) {
    if (!store_in_transaction(d->st)) { /* that was the commit */
        if (committed == 0) exec_status_retire(d->run_dir, &d->spares, id, n);
        return;
    }
    if (d->nsettled == d->capsettled) {
        size_t cap = d->capsettled ? d->capsettled * 2 : 64;
        d_settled *grown = realloc(d->settled, cap * sizeof(*grown));
        if (!grown) return; /* the sweep removes it */
        d->settled = grown;
        d->capsettled = cap;
    }
    d->settled[d->nsettled++] = (d_settled){.id = id, .n = n};
}

/* ---- a new job ------------------------------------------------------------ */

void d_row_user(d_daemon *d, json_t *row, char *user, size_t len) {
    const char *name = json_string_value(json_object_get(row, "user"));
    int64_t id = json_integer_value(json_object_get(row, "id"));
    if (name)
        snprintf(user, len, "%s", name);
    else if (!store_job_user(d->st, id, user, len))
        snprintf(user, len, "%lld",
                 (long long)json_integer_value(json_object_get(row, "uid")));
}

/* A job with room for ndeps dependencies after it, freed with it. */
d_job *d_job_new(int64_t id, uid_t uid, gid_t gid, const char *user,
                        const char *name, int num_gpus, double mem_mib,
                        size_t ndeps) {
    d_job *job = calloc(1, sizeof(*job) + ndeps * sizeof(d_dep));
    if (!job) return NULL;
    job->deps = (d_dep *)(job + 1);
    job->ndeps = ndeps;
    job->id = id;
    job->uid = uid;
    job->gid = gid;
    snprintf(job->user, sizeof(job->user), "%s", user);
    snprintf(job->name, sizeof(job->name), "%s", name ? name : "");
    job->num_gpus = num_gpus;
    job->mem_mib = mem_mib;
    job->last_status = -1;
    job->sm_pct = CORE_UNKNOWN; /* none measured yet */
    job->kind = &d_kind_own; /* until its kind is known (d_job_kind_of) */
    history_track_init(&job->hist, HISTORY_MAX_SAMPLES, 0, 1);
    return job;
}
