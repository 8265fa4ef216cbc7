/* jobs_tick.c -- aegisd's work on its GPUs once a tick: each GPU read,
 * its energy split among its jobs, jobs seen active, their history
 * sampled, memory of processes it did not start noted; and the retry of
 * a state that could not be written.
 */
#include "daemon.h"
#include "jobs.h"

#include <malloc.h> /* malloc_trim */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- telemetry ------------------------------------------------------------ */

/* Memory of job's processes in a GPU's process list, and into *util the
 * sum of their SM utilization (left CORE_UNKNOWN when none is known): its
 * weights for the GPU's energy, and proof that it is active there. */
static double d_job_mib_on(const tel_gpu_reading *r, const d_job *job,
                           double *util, bool *seen) {
    double mib = 0;
    for (int p = 0; p < r->nprocs; p++)
        if (job->kind->owns(job, r->procs[p].pid)) {
            mib += r->procs[p].used_mib > 0 ? r->procs[p].used_mib : 0;
            if (r->procs[p].sm_util >= 0)
                *util = (*util > 0 ? *util : 0) + r->procs[p].sm_util;
            *seen = true;
        }
    return mib;
}

bool d_job_on(const d_job *job, int g) {
    for (int i = 0; i < job->ngpus; i++)
        if (job->gpus[i] == g) return true;
    return false;
}

/* Notes the jobs' shares of GPU g's energy by tel_energy_split's rule,
 * also at a tick that drew none: what a restart splits the energy of an
 * outage by (jobs_outage.c). */
static void d_gpu_note_shares(d_gpu *gpu, d_job *const *on, int n,
                              double *util, double *mib) {
    double share[TEL_MAX_PROCS];
    if (n > 0) tel_energy_split(n, util, mib, 1.0, share);
    for (int i = 0; i < n; i++) {
        gpu->share_ids[i] = on[i]->id;
        gpu->shares[i] = share[i];
    }
    gpu->nshares = n;
}

void d_job_charge(d_daemon *d, d_job *job, double joules) {
    if (joules <= 0) return;
    job->energy_j += joules;
    job->pue_j += joules * d->acct.pue;
    job->co2_g += acct_co2_g(acct_kwh(joules), &d->acct);
}

double d_job_counted_from(const d_job *job) {
    return job->counted_from > job->started ? job->counted_from : job->started;
}

store_energy d_job_energy(const d_job *job) {
    return (store_energy){.energy_j = job->energy_j, .co2_g = job->co2_g,
                          .pue_j = job->pue_j};
}

/* Splits the GPU's energy since the last tick among its running jobs by
 * their activity there (the SM utilization NVML samples per process), else
 * their memory, else evenly: tel_energy_split's rule, as the shares noted
 * for an outage (a share of 1 J, so each job's charge is its share times
 * joules). */
static void d_gpu_energy(d_daemon *d, int g, double joules, double now) {
    d_job *on[TEL_MAX_PROCS];
    double mib[TEL_MAX_PROCS], util[TEL_MAX_PROCS];
    int n = 0;
    for (size_t i = 0; i < d->nrunning && n < TEL_MAX_PROCS; i++) {
        d_job *job = d->running[i];
        if (!d_job_on(job, g)) continue;
        bool seen = false;
        util[n] = CORE_UNKNOWN;
        mib[n] = d_job_mib_on(&d->gpus[g].last, job, &util[n], &seen);
        job->used_mib += mib[n]; /* what /metrics shows of it */
        if (util[n] >= 0) job->sm_pct = (job->sm_pct > 0 ? job->sm_pct : 0) +
                                        util[n];
        if (seen) /* what its OOM message is checked against */
            oom_seen_note(&job->oom_seen, job->attempts, g,
                          &d->gpus[g].last.r);
        if (seen && !job->active && job->in_core) {
            job->active = true;
            core_job_active(d->core, job->id, now);
            store_event(d->st, job->id, d_wall(), "seen on GPU %d", g);
        }
        on[n++] = job;
    }
    d_gpu_note_shares(&d->gpus[g], on, n, util, mib);
    if (joules <= 0) return;
    for (int i = 0; i < n; i++)
        d_job_charge(d, on[i], d->gpus[g].shares[i] * joules);
}

/* A sample of each running job, once a history period (history.h): its
 * processes' memory and SM utilization on its GPUs, and theirs in use
 * and in all. All of a period's samples go in one transaction. */
static void d_jobs_history(d_daemon *d) {
    double now = d_now(d);
    if (d->history_at > 0 && now - d->history_at < d->keys.history_period_s)
        return;
    d->history_at = now;
    store_begin(d->st);
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (job->ngpus == 0 || !history_due(&job->hist)) continue;
        store_sample s = {.t = d_wall(), .sm_pct = CORE_UNKNOWN};
        bool ok = true;
        for (int k = 0; k < job->ngpus; k++) {
            const d_gpu *gpu = &d->gpus[job->gpus[k]];
            bool seen = false;
            ok = ok && gpu->ok;
            s.mem_mib += d_job_mib_on(&gpu->last, job, &s.sm_pct, &seen);
            s.gpu_used_mib += gpu->last.r.used_mib;
            s.gpu_total_mib += gpu->last.r.total_mib;
        }
        if (ok) history_add(d->st, job->id, &job->hist, &s);
    }
    store_commit(d->st);
}

/* Records when each running attempt was first seen on its GPUs, so that
 * after a restart its observation time is not started over. */
static void d_jobs_note_seen(d_daemon *d) {
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (!job->active || job->seen > 0) continue;
        job->seen = d_wall();
        store_attempt_seen(d->st, job->id, job->attempts, job->seen);
    }
}

/* What a GPU's readings lack (TEL_F_*: MIG mode): logged when it starts
 * and ends, not once a second. */
static void d_note_tel_flags(d_daemon *d, int g) {
    unsigned int now = d->gpus[g].last.flags, was = d->gpus[g].tel_flags;
    for (unsigned int f = 1; f <= (now | was); f <<= 1)
        if ((now ^ was) & f)
            d_log("GPU %d: %s%s", g, now & f ? "" : "no longer: ",
                  tel_flag_text(f));
    d->gpus[g].tel_flags = now;
}

/* Whether process p on GPU g is accounted for: of a job running there, or
 * an MPS server (its control daemon, which aegisd runs, starts it for the
 * GPU's clients and keeps it between them). */
static bool d_proc_placed(const d_daemon *d, int g, const tel_proc *p) {
    for (size_t i = 0; i < d->nrunning; i++) {
        const d_job *job = d->running[i];
        if (d_job_on(job, g) && job->kind->owns(job, p->pid)) return true;
    }
    return exec_named(p->pid, "nvidia-cuda-mps"); /* comm: 15 bytes */
}

/* The owner of process pid (its /proc folder's), or CORE_USERS_UNKNOWN
 * when it is gone. NVML gives pids of aegisd's PID namespace where aegisd
 * runs on the host, as it does; in a container it would not. */
static int64_t d_proc_user(pid_t pid) {
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    return stat(path, &st) == 0 ? (int64_t)st.st_uid : CORE_USERS_UNKNOWN;
}

/* Memory on GPU g held by processes no job of aegisd's placed there: the
 * GPU is not idle while there is any (core_gpu_foreign), and on an MPS
 * GPU it is their owner's; said when that starts and ends. */
void d_gpu_note_foreign(d_daemon *d, int g) {
    const tel_gpu_reading *r = &d->gpus[g].last;
    double mib = 0;
    char pids[256] = "";
    size_t at = 0;
    int64_t user = CORE_USERS_UNKNOWN;
    for (int p = 0; p < r->nprocs; p++) {
        if (r->procs[p].used_mib <= 0 || d_proc_placed(d, g, &r->procs[p]))
            continue;
        int64_t owner = d_proc_user(r->procs[p].pid);
        user = mib == 0 || owner == user ? owner : CORE_USERS_UNKNOWN;
        mib += r->procs[p].used_mib;
        int w = at < sizeof(pids)
                    ? snprintf(pids + at, sizeof(pids) - at, "%s%d",
                               at ? ", " : "", (int)r->procs[p].pid)
                    : 0;
        at += w > 0 ? (size_t)w : 0;
    }
    bool was = d->gpus[g].foreign_mib > 0;
    if (mib > 0 && !was)
        d_log("GPU %d: %.0f MiB in use by processes aegisd did not start "
              "(pid %s): not idle until they end", g, mib, pids);
    else if (mib <= 0 && was)
        d_log("GPU %d: no memory in use by processes aegisd did not start "
              "any more", g);
    d->gpus[g].foreign_mib = mib;
    core_gpu_foreign(d->core, g, mib > 0, user);
}

/* Removes the status file of an attempt not running: its outcome is
 * committed (aegisd stopped, or could not write, between the two). Not
 * while the state cannot be written: an end settled then (a restarted
 * aegisd's recovery settles those of the jobs that ended while it was
 * down) is in memory only, and its file the only record of it; a kill -9
 * before it was saved left the next aegisd the attempt running without a
 * file, queued again as never started, and the job ran twice.
 * d_jobs_state_retry sweeps once the state is saved. */
void d_status_sweep(void *ctx, int64_t id, int attempt) {
    d_daemon *d = ctx;
    if (store_failing(d->st)) return;
    d_job *job = d_job_find(d, id);
    if (!job || job->state != D_RUNNING || job->attempts != attempt)
        exec_status_retire(d->run_dir, &d->spares, id, attempt);
}

/* While the state cannot be written, each tick retries; once it can, the
 * writes kept meanwhile are saved and the files they made stale go. */
void d_jobs_state_retry(d_daemon *d) {
    char err[4200];
    if (!store_failing(d->st) ||
        exec_run_dir_check(d->run_dir, err, sizeof(err)) != 0 ||
        store_retry(d->st, d_wall()) != 0)
        return;
    d_log("state writable again: taking and starting jobs");
    exec_status_each(d->run_dir, d_status_sweep, d);
}

/* DCGM failures only take readings back to utilization: log when they
 * start and end, not once a second. */
static void d_note_dcgm(d_daemon *d) {
    const char *why = tel_dcgm_error(d->tel);
    if (why && !d->dcgm_failing)
        d_log("DCGM read failed, utilization-only pressure filter until it "
              "recovers: %s", why);
    else if (!why && d->dcgm_failing)
        d_log("DCGM readings are back");
    d->dcgm_failing = why != NULL;
}

/* Takes the pids of the attempts started since the last look from their
 * status files (exec_spawn does not wait for them), so that this tick's
 * readings find their processes on the GPUs. */
static void d_jobs_learn_pids(d_daemon *d) {
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        exec_record rec;
        if (job->kind->watched && job->job_pid <= 0)
            d_job_probe(d, job, &rec);
    }
}

/* GPU g's readings began to fail (err: why) or came back. No new job
 * starts on a GPU aegisd cannot watch: its memory and activity are not
 * known, and a job started there would wait for ever to be seen. Said
 * once each way, not at every tick. */
static void d_gpu_reads_changed(d_daemon *d, int g, const char *err) {
    if (d->gpus[g].ok)
        d_log("GPU %d: its readings are back: new jobs may start there", g);
    else
        d_log("GPU %d: %s; no new job starts there until its readings come "
              "back", g, err);
    d_gpu_tell_core(d, g);
}

/* GPU g's energy since its previous read (`before`, at energy_seen_at):
 * its counter's rise, or power x time where it has no counter, or where
 * the counter went back (a driver reload) or rose more than any GPU
 * draws (a glitch, which would be charged to its jobs whole). */
static double d_gpu_joules(d_gpu *gpu, int g, double before, double now) {
    double elapsed = now > gpu->energy_seen_at ? now - gpu->energy_seen_at : 0;
    double estimate = gpu->last.power_w >= 0 ? gpu->last.power_w * elapsed : 0;
    if (gpu->last.energy_j < 0 || before < 0) return estimate;
    double rise = gpu->last.energy_j - before;
    if (rise >= 0 && rise <= D_GPU_MAX_W * elapsed) return rise;
    if (rise > 0)
        d_log("GPU %d: energy counter rose %.0f J in %.1f s, more than a GPU "
              "draws: %.0f J (power x time) counted", g, rise, elapsed,
              estimate);
    return estimate;
}

/* The ends noted since the last tick, all saved now, forgotten. A burst
 * (a cancel of 20,000 jobs) grew the list to 32,768 entries of 424
 * bytes: 14 MB held for good, and glibc kept the jobs' freed memory
 * besides (RSS stayed at 71 MB; docs/benchmarks.md). So a list past
 * D_UNSAVED_KEEP is given back, and the heap trimmed once with it: the
 * trim costs ms and runs once a burst, not once a tick. */
#define D_UNSAVED_KEEP 1024
static void d_unsaved_clear(d_daemon *d) {
    d->nunsaved = 0;
    if (d->capunsaved <= D_UNSAVED_KEEP) return;
    free(d->unsaved);
    d->unsaved = NULL;
    d->capunsaved = 0;
    malloc_trim(0);
}

void d_jobs_tick(d_daemon *d) {
    d_jobs_learn_pids(d);
    if (!store_failing(d->st)) d_unsaved_clear(d); /* all saved */
    double now = d_now(d);
    for (size_t i = 0; i < d->nrunning; i++) { /* summed over their GPUs */
        d->running[i]->used_mib = 0;
        d->running[i]->sm_pct = CORE_UNKNOWN;
    }
    for (int g = 0; g < d->ngpus; g++) {
        d_gpu *gpu = &d->gpus[g];
        char err[256];
        double before = gpu->energy_seen_j;
        bool was_ok = gpu->ok;
        gpu->ok = tel_read(d->tel, g, &gpu->last, err, sizeof(err)) == 0;
        if (gpu->ok != was_ok) d_gpu_reads_changed(d, g, err);
        if (!gpu->ok) continue;
        d_note_tel_flags(d, g);
        core_sample(d->core, g, &gpu->last.r, now);
        d_gpu_note_foreign(d, g);
        /* back after failed reads: this read is a new baseline, as what
         * the GPU drew meanwhile is no running job's to be charged */
        double joules = was_ok ? d_gpu_joules(gpu, g, before, now) : 0;
        gpu->energy_seen_j = gpu->last.energy_j;
        gpu->energy_seen_at = now;
        d_gpu_energy(d, g, joules, now);
    }
    d_note_dcgm(d);
    d_jobs_note_seen(d);
    d_jobs_history(d);
    d_share_tick(d);
    d_jobs_keep_energy(d, false);
}

/* GPU g's shares at the last tick as JSON text {"id": share} (malloc'd;
 * NULL when out of memory). */
static char *d_gpu_shares_json(const d_gpu *gpu) {
    json_t *o = json_object();
    for (int i = 0; o && i < gpu->nshares; i++) {
        char id[24];
        snprintf(id, sizeof(id), "%lld", (long long)gpu->share_ids[i]);
        json_object_set_new(o, id, json_real(gpu->shares[i]));
    }
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* Whether GPU g's saved row still serves a restart as well as a new one:
 * it had no job, the GPU has none now, and its counter has not gone back
 * below it. A restart charges only the jobs on a GPU, from its row before
 * they started, so an idle GPU's row need not follow its counter, which
 * rises at each tick by its idle draw: an idle server writes none. */
static bool d_gpu_row_current(const d_gpu *gpu) {
    return gpu->kept && gpu->kept_idle && gpu->nshares == 0 &&
           gpu->energy_seen_j >= gpu->kept_energy_j;
}

/* GPU g's counter as last read, when it was (Unix time); with all, also
 * where its saved row is current. */
static void d_gpu_keep_energy(d_daemon *d, int g, bool all) {
    d_gpu *gpu = &d->gpus[g];
    if (gpu->energy_seen_j < 0) return; /* no counter: nothing to resume */
    if (!all && d_gpu_row_current(gpu)) return;
    char *shares = d_gpu_shares_json(gpu);
    store_gpu_energy r = {
        .uuid = tel_gpu_uuid(d->tel, g), .energy_j = gpu->energy_seen_j,
        .t = d_wall() - (d_now(d) - gpu->energy_seen_at),
        .power_w = gpu->last.power_w, .shares = shares};
    store_gpu_energy_set(d->st, g, &r);
    free(shares);
    gpu->kept = true;
    gpu->kept_idle = gpu->nshares == 0;
    gpu->kept_energy_j = gpu->energy_seen_j;
}

void d_jobs_keep_energy(d_daemon *d, bool all) {
    /* kept writes would pile up at every tick; the next tick after the
     * store is writable again saves what is current */
    if (!all && store_failing(d->st)) return;
    for (size_t i = 0; i < d->nrunning; i++) {
        d_job *job = d->running[i];
        if (!all && job->energy_j == job->energy_kept_j) continue;
        store_energy e = d_job_energy(job);
        store_job_energy(d->st, job->id, &e);
        job->energy_kept_j = job->energy_j;
    }
    for (int g = 0; g < d->ngpus; g++) d_gpu_keep_energy(d, g, all);
}
