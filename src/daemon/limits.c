/* limits.c -- what keeps a job or a GPU from running, as Slurm users know
 * it: a job held by `aegis hold` stays queued but is not placed until
 * `aegis release`; a job's attempt that runs past its --time limit is
 * stopped as a cancel stops it and ends as "timeout"; a GPU drained by
 * `aegis drain` takes no new job. All three are kept in the store, so a
 * restarted aegisd keeps them: a hold and a limit in the job's row, a
 * limit counted from the attempt's start as recorded, a limit's stop
 * committed as a cancel is (cancel_at), a drain by the GPU's UUID with its
 * reason.
 */
#include "daemon.h"

#include "timelimit.h"

#include <stdio.h>
#include <string.h>

void d_limits_load(d_job *job, json_t *row) {
    job->held = json_integer_value(json_object_get(row, "held")) != 0;
    job->time_limit_s = json_number_value(json_object_get(row,
                                                          "time_limit_s"));
    job->cpus = (int)json_integer_value(json_object_get(row, "cpus"));
    job->host_mem_mib = json_number_value(json_object_get(row,
                                                          "host_mem_mib"));
}

void d_job_hold(d_daemon *d, d_job *job, bool hold, const char *user) {
    if (job->held == hold) return;
    job->held = hold;
    store_job_held(d->st, job->id, hold);
    store_event(d->st, job->id, d_wall(), "%s by %s",
                hold ? "held" : "released", user);
    if (hold && job->in_core) {
        core_cancel(d->core, job->id, d_now(d));
        job->in_core = false;
        d_job_set_state(d, job, D_HELD);
        d_feed_consumer_left(d, d_feed_producer_for(d, job));
    } else if (!hold && job->state == D_HELD) {
        d_job_enqueue(d, job); /* its --after jobs are judged again */
    }
}

void d_limits_tick(d_daemon *d) {
    /* a stop is committed before it is sent, as a cancel is: none while
     * the state cannot be written */
    if (store_failing(d->st)) return;
    double now = d_wall();
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (job->time_limit_s <= 0 ||
            job->cancelling || job->started <= 0 ||
            now - job->started < job->time_limit_s)
            continue;
        char limit[32], err[4600];
        timelimit_format(job->time_limit_s, limit, sizeof(limit));
        store_event(d->st, job->id, now, "attempt %d ran past its %s time "
                    "limit: stopped as a cancel", job->attempts, limit);
        /* a running job stays in the table */
        if (d_jobs_cancel(d, &job->id, 1, err, sizeof(err)) != 0) {
            d_log("job %lld: over its %s time limit, %s", (long long)job->id,
                  limit, err);
            return;
        }
    }
}

/* Whether the job's committed stop (cancel_at) is its time limit's: a
 * stop committed once the attempt has run that long is (the tick's, or an
 * owner's cancel in the second before it), an owner's cancel sooner is
 * not; a stopping job takes no second one. Both times are in the store, so
 * a restart while the job winds down still ends it as "timeout". */
static bool d_limits_timed_out(const d_job *job) {
    return job->time_limit_s > 0 && job->started > 0 && job->cancel_at > 0 &&
           job->cancel_at - job->started >= job->time_limit_s;
}

const char *d_limits_stop_state(const d_job *job, char *reason,
                                size_t reasonlen) {
    if (job->feed_stop) {
        snprintf(reason, reasonlen, "stopped: feed %s's last consumer ended",
                 job->feed);
        return "done";
    }
    if (!d_limits_timed_out(job)) {
        snprintf(reason, reasonlen, "cancelled while running");
        return "cancelled";
    }
    char limit[32];
    timelimit_format(job->time_limit_s, limit, sizeof(limit));
    snprintf(reason, reasonlen, "over its %s limit", limit);
    return "timeout";
}

/* Sets GPU g's drain in memory and in the core. */
static void d_gpu_set_drain(d_daemon *d, int g, bool drain,
                            const char *reason, const char *user, double t) {
    d_gpu *gpu = &d->gpus[g];
    gpu->drained = drain;
    snprintf(gpu->drain_reason, sizeof(gpu->drain_reason), "%s",
             drain ? reason : "");
    snprintf(gpu->drained_by, sizeof(gpu->drained_by), "%s",
             drain ? user : "");
    gpu->drained_at = drain ? t : 0;
    d_gpu_tell_core(d, g);
}

void d_gpu_tell_core(d_daemon *d, int g) {
    core_gpu_drain(d->core, g, d->gpus[g].drained || !d->gpus[g].ok);
}

void d_gpu_drain(d_daemon *d, int g, bool drain, const char *reason,
                 const char *user) {
    const char *uuid = tel_gpu_uuid(d->tel, g);
    double now = d_wall();
    if (drain) store_drain_set(d->st, uuid, reason, user, now);
    else store_drain_clear(d->st, uuid);
    d_gpu_set_drain(d, g, drain, reason, user, now);
    d_log("GPU %d %s by %s%s%s", g, drain ? "drained" : "resumed", user,
          drain && reason[0] ? ": " : "", drain ? reason : "");
}

void d_drains_recover(d_daemon *d) {
    for (int g = 0; g < d->ngpus; g++) {
        json_t *row = store_drain(d->st, tel_gpu_uuid(d->tel, g));
        if (!row) continue;
        const char *reason = json_string_value(json_object_get(row, "reason"));
        const char *user = json_string_value(json_object_get(row, "user"));
        d_gpu_set_drain(d, g, true, reason ? reason : "", user ? user : "",
                        json_number_value(json_object_get(row, "t")));
        d_log("GPU %d: drained since before the restart (by %s%s%s)", g,
              d->gpus[g].drained_by, reason && reason[0] ? ": " : "",
              d->gpus[g].drain_reason);
        json_decref(row);
    }
}
