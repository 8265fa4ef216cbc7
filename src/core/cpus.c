/* cpus.c -- the server's CPUs as a resource (core.h, "CPUs").
 *
 * A job's data loader keeps spec.cpus CPUs busy while the job runs. The
 * jobs of a feed share one loader per GPU, the feed's producer, which
 * publishes its batches into that GPU's memory: the loader of a job's
 * first GPU, opened with the CPUs of the job that finds none there and
 * committed until the last job using it ends, as the simulator's loaders
 * count them (src/sim/loaders.h). Every policy keeps the count; aegis-plus
 * reads it (policy counts_cpus): a job starts only where its loader's
 * CPUs, the committed ones and those the head of the queue keeps fit in
 * the server's, as Slurm's select plugin never hands out more CPUs than a
 * node has. Not while none are committed: a job that wants more than the
 * server has would otherwise wait for ever, so it starts with no other
 * loader beside it (jobs that count no CPUs may still join it).
 */
#include "core_priv.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>

/* Sums of fractional CPUs drift by rounding; this much is none. */
#define CPUS_EPS 1e-9

int core_set_cpus(core_state *core, double cpus, char *err, size_t errlen) {
    if (!(cpus >= 0) || !isfinite(cpus)) {
        snprintf(err, errlen, "core: %g CPUs, must be 0 or more", cpus);
        return -1;
    }
    core->changes++;
    core->cpus = cpus;
    return 0;
}

double core_cpus_committed(const core_state *core) { return core->cpus_used; }

/* Whether the job's feed has its loader on GPU g already. */
static bool loader_open(const core_state *core, const core_job *job, int g) {
    return job->feed >= 0 && core->feeds[job->feed]->loader_jobs[g] > 0;
}

double core_cpus_need(const core_state *core, const core_job *job, int first,
                      uint64_t allowed) {
    if (first >= 0) return loader_open(core, job, first) ? 0 : job->spec.cpus;
    for (uint64_t m = allowed; m && job->feed >= 0; m &= m - 1)
        if (loader_open(core, job, __builtin_ctzll(m))) return 0;
    return job->spec.cpus;
}

bool core_cpus_counted(const core_state *core, const core_job *job) {
    return core->pol->counts_cpus && core->cpus > 0 && job->spec.cpus > 0;
}

/* What the head keeps from the job: nothing from itself. */
static double kept_from(const core_state *core, const core_job *job) {
    return job->spec.id == core->head_id ? 0 : core->head_cpus;
}

/* Whether `need` more CPUs fit beside the committed and the kept ones. */
static bool need_fits(const core_state *core, double need, double kept) {
    if (need <= 0 || (core->cpus_used <= 0 && kept <= 0)) return true;
    return core->cpus_used + need + kept <= core->cpus + CPUS_EPS;
}

bool core_cpus_fit(const core_state *core, const core_job *job, int first) {
    if (!core_cpus_counted(core, job)) return true;
    return need_fits(core, core_cpus_need(core, job, first, 0),
                     kept_from(core, job));
}

void core_cpus_runs(core_state *core, const core_job *job, int sign) {
    double cpus = job->spec.cpus;
    if (job->feed >= 0) {
        core_feed *f = core->feeds[job->feed];
        int g = job->gpus[0];
        f->loader_jobs[g] += sign;
        assert(f->loader_jobs[g] >= 0);
        /* a job joins an open loader, or leaves one still in use */
        if (f->loader_jobs[g] != (sign > 0 ? 1 : 0)) return;
        if (sign > 0) f->loader_cpus[g] = cpus;
        cpus = f->loader_cpus[g];
        if (sign < 0) f->loader_cpus[g] = 0;
    }
    core->cpus_used += sign * cpus;
    assert(core->cpus_used > -1e-6 * (1 + cpus));
    if (core->cpus_used < CPUS_EPS) core->cpus_used = 0;
}

void core_cpus_keep(core_state *core, const core_job *head) {
    core->head_cpus = core_cpus_counted(core, head)
                          ? core_cpus_need(core, head, -1, core->reserved)
                          : 0;
}

bool core_cpus_reason(const core_state *core, const core_job *job,
                      uint64_t allowed, core_reason *r) {
    if (!core_cpus_counted(core, job)) return false;
    double need = core_cpus_need(core, job, -1, allowed);
    double kept = kept_from(core, job);
    if (need_fits(core, need, kept)) return false;
    *r = (core_reason){.kind = CORE_WAIT_CPUS, .gpu = -1,
                       .job = kept > 0 ? core->head_id : -1, .value = need,
                       .limit = core->cpus, .kept_cpus = kept,
                       .free_cpus = fmax(0, core->cpus - core->cpus_used - kept)};
    return true;
}
