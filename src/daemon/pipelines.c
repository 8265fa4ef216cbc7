/* pipelines.c -- a pipeline's supervisor as a kind of job
 * (docs/pipelines.md, "How aegisd runs a pipeline").
 *
 * `aegis pipeline start FILE` submits a job marked as pipeline NAME's
 * supervisor: the owner's own process (aegis-pipeline), a client of
 * aegisd that submits the pipeline's trainings as ordinary jobs. It needs
 * no GPU, so the core never places it: aegisd starts it at once, as its
 * owner, under a shim as any job (its log, its status file, its
 * recovery after a restart of aegisd). When it dies otherwise than by a
 * stop it is started again after a back-off that doubles (1 s, 2 s, ...),
 * at most BACKOFF_MAX_RESTARTS times in an hour (backoff.h): a supervisor
 * that keeps dying (a file it cannot read) must not loop for ever. Its
 * pipeline's state is in its owner's state folder, where the restarted
 * supervisor finds what its trigger log says was trained.
 */
#include "daemon.h"

#include <stdio.h>
#include <string.h>

#include "backoff.h"

d_job *d_pipeline_supervisor(d_daemon *d, uid_t uid, const char *name) {
    for (size_t i = 0; i < d->njobs; i++)
        if (d->jobs[i]->uid == uid && d->jobs[i]->pipeline[0] &&
            strcmp(d->jobs[i]->pipeline, name) == 0)
            return d->jobs[i];
    return NULL;
}

/* The restarts of job in the window, as the store keeps its attempts
 * (so a restarted aegisd counts them too). */
static int d_pipeline_recent_restarts(d_daemon *d, const d_job *job) {
    json_t *row = store_job(d->st, job->id, false);
    int n = backoff_restarts_since(json_object_get(row, "attempt_list"),
                                   d_wall() - BACKOFF_WINDOW_S);
    json_decref(row);
    return n;
}

/* A supervisor that failed or vanished sleeps out its back-off, then
 * d_jobs_restart_due starts it again; one that exited 0 has finished its
 * work (a replay's end) and is done. */
static bool d_pipeline_restart(d_daemon *d, d_job *job, core_exit how,
                               const char *why) {
    if (how == CORE_EXIT_OK) return false;
    int recent = d_pipeline_recent_restarts(d, job);
    double wait_s = backoff_delay_s(recent);
    if (wait_s < 0) {
        d_log("pipeline %s: supervisor job %lld: %s; not restarted: "
              "restarted %d times in the last hour", job->pipeline,
              (long long)job->id, why, recent);
        return false;
    }
    job->restart_at = d_now(d) + wait_s;
    d_job_set_state(d, job, D_HELD);
    store_job_state(d->st, job->id, "queued", why, d_wall());
    store_event(d->st, job->id, d_wall(), "attempt %d: %s; restarted in "
                "%.0f s (restart %d of %d in an hour)", job->attempts, why,
                wait_s, recent + 1, BACKOFF_MAX_RESTARTS);
    d_log("pipeline %s: supervisor job %lld: %s; restarted in %.0f s",
          job->pipeline, (long long)job->id, why, wait_s);
    return true;
}

static bool d_pipeline_dormant(d_daemon *d, const d_job *job) {
    return job->restart_at > d_now(d);
}

size_t d_pipelines_running(const d_daemon *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->nrunning; i++)
        n += d->running[i]->kind->outside;
    return n;
}

static bool d_pipeline_claims(const d_job *job, json_t *row) {
    (void)row;
    return job->pipeline[0] != '\0';
}

/* Run as aegisd's own job with no GPU, outside placement; restarted with
 * a back-off. */
const d_job_kind d_kind_supervisor = {
    .name = "pipeline", .watched = true, .outside = true,
    .claims = d_pipeline_claims, .grant = d_own_grant, .owns = d_own_owns,
    .dormant = d_pipeline_dormant, .restart = d_pipeline_restart,
};
