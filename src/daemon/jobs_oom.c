/* jobs_oom.c -- which GPU readings an attempt's OOM message is checked
 * against at its end (oom_check.h): those that showed it on its GPUs
 * (oom_seen.h), unless the attempt had only part of a GPU, or the kernel
 * killed it for host memory.
 */
#include "daemon.h"

/* Whether the attempt had only part of its GPU's memory: a MIG instance,
 * or an MPS client pinned at its floor (gpushare.c: not alone, with a
 * floor, where mps_pin_memory is on). A full part leaves the whole GPU
 * with room, so its readings say nothing of the job's. Where aegisd
 * cannot tell the part (an auto GPU's job with no MIG instance ran under
 * MPS), it counts the attempt as confined: its message is then trusted,
 * as it was before the check. */
static bool d_job_confined(const d_daemon *d, const d_job *job) {
    if (job->mig) return true;
    if (!d->share.mps_pin_memory || job->exclusive || job->floor_mib <= 0 ||
        job->ngpus != 1)
        return false;
    share_mode mode = d->gpus[job->gpus[0]].mode;
    return mode == SHARE_MPS || mode == SHARE_AUTO;
}

int d_job_oom_readings(const d_daemon *d, const d_job *job,
                       const oom_gpu_mem **out) {
    int n = oom_seen_get(&job->oom_seen, job->attempts, out);
    /* killed for host memory: d_host_oom tells it, whatever its stderr */
    if (d_job_confined(d, job) || cg_oom_killed(job->cg)) return 0;
    return n;
}
