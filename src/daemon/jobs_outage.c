/* jobs_outage.c -- a restarted aegisd charges the energy its GPUs drew
 * while it was down to the jobs that ran on them then.
 *
 * Each tick's commit saves every GPU's energy-counter reading, its time,
 * power and its jobs' shares with the jobs' energy (d_jobs_keep_energy),
 * so the jobs' saved energy always stops where the saved reading does.
 * Here, before the running jobs are adopted (and those that ended while
 * aegisd was down are finished), the counter's rise since that reading is
 * split among them by acct_gap.h's rule. A GPU whose counter cannot be
 * trusted across the outage charges nothing, and the log says why.
 */
#include "acct_gap.h"
#include "daemon.h"
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* When a running job's attempt ended while aegisd was down (its status
 * file's record), or -1: still running, or its end is unknown (a lease,
 * a lost watcher), which then counts as running through the outage. */
static double d_outage_job_end(const d_daemon *d, const d_job *job) {
    if (!job->kind->watched) return -1;
    exec_record rec;
    exec_probe(d->run_dir, job->id, job->attempts, &rec);
    return rec.state == EXEC_ENDED && rec.ended_at > 0 ? rec.ended_at : -1;
}

/* GPU g's saved reading, if it may be resumed from: the same GPU, a
 * counter now, neither gone back nor risen more than a GPU draws. Else
 * NULL, said in the log (jobs ran there: their outage is nobody's). */
static json_t *d_outage_saved(d_daemon *d, int g, double t1) {
    json_t *saved = store_gpu_energy_get(d->st, g);
    if (!saved) {
        d_log("GPU %d: no energy reading saved (a state of an older aegisd): "
              "what it drew while aegisd was down is charged to nobody", g);
        return NULL;
    }
    const char *uuid = json_string_value(json_object_get(saved, "uuid"));
    const char *now_uuid = tel_gpu_uuid(d->tel, g);
    double e0 = json_number_value(json_object_get(saved, "energy_j"));
    double t0 = json_number_value(json_object_get(saved, "t"));
    double e1 = d->gpus[g].energy_seen_j;
    if (!uuid || !now_uuid || strcmp(uuid, now_uuid) != 0)
        d_log("GPU %d is %s, not %s whose energy counter was saved: what it "
              "drew while aegisd was down is charged to nobody", g,
              now_uuid ? now_uuid : "unknown", uuid ? uuid : "unknown");
    else if (e1 < 0)
        d_log("GPU %d: no energy counter now: what it drew while aegisd was "
              "down is charged to nobody", g);
    else if (e1 < e0)
        d_log("GPU %d: energy counter went back from %.0f J to %.0f J while "
              "aegisd was down (a driver reload?): what it drew in those "
              "%.0f s is charged to nobody", g, e0, e1, t1 - t0);
    else if (e1 - e0 > D_GPU_MAX_W * (t1 > t0 ? t1 - t0 : 0))
        d_log("GPU %d: energy counter rose %.0f J in the %.0f s aegisd was "
              "down, more than a GPU draws: charged to nobody", g, e1 - e0,
              t1 - t0);
    else
        return saved;
    json_decref(saved);
    return NULL;
}

/* Charges GPU g's rise over the outage to its jobs (on[], n of them). */
static void d_outage_charge(d_daemon *d, int g, json_t *saved, double t1,
                            d_job **on, int n) {
    acct_gap_job jobs[TEL_MAX_PROCS];
    json_t *shares = json_object_get(saved, "shares");
    json_t *p0 = json_object_get(saved, "power_w");
    acct_gap_gpu gap = {
        .t0 = json_number_value(json_object_get(saved, "t")), .t1 = t1,
        .joules = d->gpus[g].energy_seen_j -
                  json_number_value(json_object_get(saved, "energy_j")),
        .power_w = json_is_number(p0) ? json_number_value(p0) : -1};
    for (int i = 0; i < n; i++) {
        char id[24];
        snprintf(id, sizeof(id), "%lld", (long long)on[i]->id);
        json_t *share = json_object_get(shares, id);
        jobs[i] = (acct_gap_job){
            .start = on[i]->started, .end = d_outage_job_end(d, on[i]),
            .share = json_is_number(share) ? json_number_value(share) : -1};
    }
    double charged = acct_gap_split(&gap, jobs, n);
    char list[512] = "";
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        /* its outage counts in the per-user counters of this aegisd, as
         * its energy does: the one before never counted them */
        if (gap.t0 < on[i]->counted_from) on[i]->counted_from = gap.t0;
        if (jobs[i].charge <= 0) continue;
        d_job_charge(d, on[i], jobs[i].charge);
        store_event(d->st, on[i]->id, d_wall(), "charged %.0f J drawn on GPU "
                    "%d while aegisd was down", jobs[i].charge, g);
        int w = at < sizeof(list)
                    ? snprintf(list + at, sizeof(list) - at, "%sjob %lld %.0f J",
                               at ? ", " : "", (long long)on[i]->id,
                               jobs[i].charge)
                    : 0;
        at += w > 0 ? (size_t)w : 0;
    }
    d_log("GPU %d: charged %.0f J drawn while aegisd was down (%.0f s, its "
          "counter rose %.0f J) to %s; %.0f J drawn with no job there", g,
          charged, gap.t1 - gap.t0, gap.joules, at ? list : "no job",
          gap.joules - charged);
}

/* GPU g: the jobs that were running on it as aegisd stopped (or started
 * after its last tick), charged their part of its outage. */
static void d_outage_gpu(d_daemon *d, int g) {
    d_job *on[TEL_MAX_PROCS];
    int n = 0;
    for (size_t i = 0; i < d->nrunning && n < TEL_MAX_PROCS; i++)
        if (d_job_on(d->running[i], g)) on[n++] = d->running[i];
    if (n == 0) return; /* nothing to charge: nothing to say */
    const d_gpu *gpu = &d->gpus[g];
    double t1 = d_wall() - (d_now(d) - gpu->energy_seen_at);
    json_t *saved = d_outage_saved(d, g, t1);
    if (!saved) return;
    d_outage_charge(d, g, saved, t1, on, n);
    json_decref(saved);
}

void d_jobs_charge_outage(d_daemon *d) {
    store_begin(d->st);
    for (int g = 0; g < d->ngpus; g++)
        if (d->gpus[g].ok) d_outage_gpu(d, g);
    /* the charges and the readings they end at, together */
    d_jobs_keep_energy(d, true);
    store_commit(d->st);
}
