/* priority.c -- the queue's priorities as aegis-plus computes them, for
 * people to read (`aegis priority`, `aegis fairshare`, like Slurm's sprio
 * and sshare), and the change of a queued job (`aegis update`). The
 * ordering itself is users.c's; this file only reads its parts and, for
 * an update, puts a job back where its new nice puts it.
 */
#include "core_priv.h"

#include <stdlib.h>

bool core_has_priorities(const core_state *core) {
    return core->pol->backfill;
}

int core_job_priority(core_state *core, int64_t job_id, double now,
                      core_priority *p) {
    const core_job *job = core_find(core, job_id);
    if (!core->pol->backfill || !job || job->state != JOB_QUEUED ||
        job->attempt != 1)
        return -1;
    double share = core_users_share(core, now);
    double usage = core_user_usage_at(core, &core->users[job->user], now);
    p->fair_share = core_fair_factor(usage, share) * CORE_NICE_MAX;
    p->nice = job->spec.nice;
    p->priority = p->fair_share - p->nice;
    p->head_start_s = job->submitted_at - job->queued_at;
    return 0;
}

int core_fairshare(core_state *core, double now, core_user_usage *out,
                   int max) {
    double share = core_users_share(core, now);
    for (int i = 0; i < core->nusers && i < max; i++) {
        const core_user *u = &core->users[i];
        double decayed = core_user_usage_at(core, u, now);
        double since = now > u->raw_at ? now - u->raw_at : 0;
        out[i] = (core_user_usage){
            .uid = u->uid, .raw_gpu_s = u->raw_usage + u->gpus * since,
            .decayed_gpu_s = decayed, .share_gpu_s = share,
            .factor = core_fair_factor(decayed, share),
            .running_jobs = u->jobs, .queued_jobs = u->queued};
    }
    return core->nusers;
}

int core_job_update(core_state *core, int64_t job_id,
                    const core_job_spec *spec) {
    core_job *job = core_find(core, job_id);
    if (!job || job->state != JOB_QUEUED) return -1;
    bool in_user_queue = job->attempt == 1;
    if (in_user_queue) core_user_dequeue(core, job);
    job->spec.nice = spec->nice;
    job->spec.est_mib = spec->est_mib;
    job->spec.time_limit_s = spec->time_limit_s;
    if (in_user_queue) core_user_enqueue(core, job);
    core->changes++;
    return 0;
}
