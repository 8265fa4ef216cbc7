/* jobs_recover.c -- a restarted aegisd takes its jobs back from the
 * store: running attempts are adopted (core_adopt), retries rejoin the
 * recovery queue in the order they were requeued (core_submit_retry), the
 * rest are queued or held again; each kind loads what it keeps besides.
 */
#include "daemon.h"
#include "jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- restart and reload --------------------------------------------------- */

int d_gpus_parse(const char *text, int *gpus) {
    int n = 0;
    for (const char *p = text; p && *p && n < CORE_MAX_JOB_GPUS;) {
        char *end;
        long g = strtol(p, &end, 10);
        if (end == p) break;
        if (g >= 0 && g < CORE_MAX_GPUS) gpus[n++] = (int)g;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static int64_t d_int(json_t *obj, const char *key) {
    return json_integer_value(json_object_get(obj, key));
}

static double d_number(json_t *obj, const char *key) {
    return json_number_value(json_object_get(obj, key));
}

/* A running attempt as the store recorded it at launch. */
static void d_job_load_attempt(d_daemon *d, d_job *job, json_t *att) {
    d_job_set_state(d, job, D_RUNNING);
    job->attempts = (int)d_int(att, "n");
    job->ngpus = d_gpus_parse(json_string_value(json_object_get(att, "gpus")),
                              job->gpus);
    job->exclusive = d_int(att, "exclusive") != 0;
    job->floor_mib = d_number(att, "floor_mib");
    job->shim_pid = (pid_t)d_int(att, "shim_pid");
    job->shim_start = (unsigned long long)d_int(att, "shim_start");
    job->job_pid = (pid_t)d_int(att, "job_pid");
    job->err_offset = d_int(att, "err_offset");
    job->started = d_number(att, "started");
    job->seen = d_number(att, "seen");
    job->active = job->seen > 0;
    cg_job found;
    cg_job_find(d->keys.cgroup_root, job->id, job->attempts, &found);
    if (d_job_keep_cg(job, &found) != 0)
        d_log("job %lld: out of memory: its cgroup is left at its end",
              (long long)job->id);
}

/* Hands a running attempt back to the core. One it cannot take (its GPUs
 * are no longer on this server) is killed and failed: 0, or -1 when the
 * job is finished. */
static int d_job_adopt(d_daemon *d, d_job *job) {
    if (job->kind->outside) return 0; /* never the core's */
    core_job_spec spec = d_job_spec(d, job);
    core_adopted a = {
        .retry = {.attempt = job->attempts, .floor_mib = job->retry_floor,
                  .alone = job->retry_alone},
        .admitted_mib = job->floor_mib, .exclusive = job->exclusive,
        .active = job->active,
        /* the store keeps Unix time, the core aegisd's monotonic clock */
        .active_at = d_now(d) - (d_wall() - job->seen),
        .mig = job->mig, .mig_start = job->mig_start,
        /* unknown: from now, so its limit ends no sooner than it does */
        .started_at = job->started > 0 ? d_now(d) - (d_wall() - job->started)
                                       : d_now(d),
    };
    memcpy(a.gpus, job->gpus, sizeof(a.gpus));
    char err[256], reason[400];
    if (job->ngpus != job->num_gpus)
        snprintf(err, sizeof(err), "job %lld: attempt %d lists %d GPUs, the "
                 "job asks for %d", (long long)job->id, job->attempts,
                 job->ngpus, job->num_gpus);
    else if (core_adopt(d->core, &spec, &a, d_now(d), err, sizeof(err)) == 0) {
        job->in_core = true;
        return 0;
    }
    d_log("%s", err);
    if (job->kind->watched && job->job_pid > 1 && /* ours to kill */
        exec_in_job(job->job_pid, job->job_pid))
        exec_kill(job->job_pid, SIGKILL);
    d_share_release(d, job);
    store_begin(d->st);
    store_attempt_end(d->st, job->id, job->attempts, "failed", -1, d_wall());
    snprintf(reason, sizeof(reason), "cannot re-adopt after a restart: %s", err);
    d_job_finish(d, job, "failed", reason);
    store_commit(d->st);
    return -1;
}

/* A retry found queued in the store, with the time it was requeued. */
typedef struct d_requeued {
    int64_t id;
    double at;
} d_requeued;

typedef struct d_recovery {
    d_daemon *d;
    d_requeued *retries;
    size_t nretries, cap;
} d_recovery;

static int d_requeued_cmp(const void *a, const void *b) {
    const d_requeued *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int d_recovery_push(d_recovery *rec, int64_t id, double at) {
    if (rec->nretries == rec->cap) {
        size_t cap = rec->cap ? rec->cap * 2 : 64;
        d_requeued *grown = realloc(rec->retries, cap * sizeof(*grown));
        if (!grown) return -1;
        rec->retries = grown;
        rec->cap = cap;
    }
    rec->retries[rec->nretries++] = (d_requeued){id, at};
    return 0;
}

/* The job's energy as last kept (d_jobs_keep_energy), with its CO2. The
 * per-user counters start from 0 at each start of aegisd, so they count
 * only what it draws from now (and the outage's, charged next). */
static void d_job_load_energy(d_daemon *d, d_job *job, json_t *row) {
    job->energy_j = d_number(row, "energy_j");
    if (json_is_number(json_object_get(row, "pue_j"))) {
        job->co2_g = d_number(row, "co2_g");
        job->pue_j = d_number(row, "pue_j");
    } else { /* kept by an aegisd before stamps: at today's figures */
        job->co2_g = acct_co2_g(acct_kwh(job->energy_j), &d->acct);
        job->pue_j = job->energy_j * d->acct.pue;
    }
    job->energy_kept_j = job->energy_j;
    job->energy_from_j = job->energy_j;
    job->counted_from = d_wall();
}

/* One unfinished job of the store: a running attempt waits for
 * d_jobs_adopt(), a retry for its turn in the recovery queue, any other
 * job is queued (or held) now. */
static void d_job_recover(void *ctx, json_t *row) {
    d_recovery *rec = ctx;
    d_daemon *d = rec->d;
    json_t *mem = json_object_get(row, "mem_mib");
    char user[sizeof(((d_job *)0)->user)]; /* its groups' and limits' */
    d_row_user(d, row, user, sizeof(user));
    d_job *job = d_job_new(d_int(row, "id"), (uid_t)d_int(row, "uid"),
                           (gid_t)d_int(row, "gid"), user,
                           json_string_value(json_object_get(row, "name")),
                           (int)d_int(row, "gpus"),
                           json_is_number(mem) ? json_number_value(mem) : -1,
                           d_deps_count(row));
    if (job) {
        d_deps_from_row(row, job->deps);
        job->nice = (int)d_int(row, "nice");
        job->notify = d_notify_kind_of(
            json_string_value(json_object_get(row, "notify")));
        int count, step;
        store_history_state(d->st, job->id, &count, &step);
        history_track_init(&job->hist, HISTORY_MAX_SAMPLES, count, step);
        const char *feed = json_string_value(json_object_get(row, "feed"));
        snprintf(job->feed, sizeof(job->feed), "%s", feed ? feed : "");
        job->producer = d_int(row, "feed_producer") != 0;
        job->restarts = (int)d_int(row, "feed_restarts");
        job->feed_stop = d_int(row, "feed_stop") != 0;
        const char *pipeline =
            json_string_value(json_object_get(row, "pipeline"));
        snprintf(job->pipeline, sizeof(job->pipeline), "%s",
                 pipeline ? pipeline : "");
        job->kind = d_job_kind_of(job, row);
    }
    if (!job || d_job_add(d, job) != 0) {
        free(job);
        d_log("job %lld: out of memory while recovering",
              (long long)d_int(row, "id"));
        return;
    }
    json_t *att = json_object_get(row, "attempt");
    const char *state = json_string_value(json_object_get(row, "state"));
    job->attempts = (int)d_int(row, "attempts");
    d_job_load_energy(d, job, row);
    job->retry_floor = d_number(row, "retry_floor");
    job->retry_alone = d_int(row, "retry_alone") != 0;
    job->cancel_at = d_number(row, "cancel_at"); /* 0 when null */
    d_limits_load(job, row);
    if (job->kind->load && !job->kind->load(d, job, row, state))
        return; /* its kind ended it */
    if (strcmp(state, "running") == 0 && att) {
        d_job_load_attempt(d, job, att);
        job->cancelling = job->cancel_at > 0; /* killed once adopted */
    } else if (job->cancel_at > 0) {
        d_job_finish(d, job, "cancelled", "cancelled while queued");
    } else if (job->attempts > 0 && !job->held &&
               d_recovery_push(rec, job->id, d_number(att, "ended")) == 0) {
        d_job_set_state(d, job, D_QUEUED);
    } else {
        d_job_enqueue(d, job); /* or a retry the list had no room for */
    }
}

/* Adopts the running attempts still outside the core, the dead ones only
 * (which then end as lost, requeued at their floor) or all that are left.
 * Dead ones go first: adopting one counts as a placement on its GPUs,
 * which must not make a live exclusive job there look shared. Attempts
 * that never started are queued again; live ones cancelled before the
 * restart are signalled again. */
static void d_jobs_adopt(d_daemon *d, bool dead_only) {
    for (size_t i = 0; i < d->njobs;) {
        d_job *job = d->jobs[i];
        int64_t id = job->id;
        exec_record rec = {.state = EXEC_LIVE};
        if (job->state == D_RUNNING && !job->in_core && job->kind->watched)
            d_job_probe(d, job, &rec); /* else its kind's: a lease's in
                                          d_leases_recover() */
        bool alive = rec.state == EXEC_LIVE;
        if (job->state != D_RUNNING || job->in_core || (dead_only && alive)) {
            i++;
            continue;
        }
        if (rec.state == EXEC_UNSTARTED || rec.state == EXEC_ABSENT) {
            d_job_unstarted(d, job, "aegisd stopped while starting it");
        } else if (d_job_adopt(d, job) == 0) {
            if (!alive) {
                d_job_ended(d, job, &rec);
            } else {
                store_event(d->st, id, d_wall(), "attempt %d re-adopted after "
                            "a restart (pid %d)", job->attempts,
                            (int)job->job_pid);
                if (job->cancelling) d_job_cancel(d, job);
            }
        }
        i = d_job_index_after(d, id); /* the table may have changed */
    }
}

void d_jobs_recover(d_daemon *d) {
    d_recovery rec = {.d = d};
    store_each_active(d->st, d_job_recover, &rec);
    d_share_recover(d); /* before adoption: the core takes the instances */
    /* The recovery queue in the order its jobs were requeued; attempts
     * found dead below are requeued now, so after them. */
    if (rec.retries) /* qsort may not take NULL, even for no rows */
        qsort(rec.retries, rec.nretries, sizeof(*rec.retries), d_requeued_cmp);
    for (size_t i = 0; i < rec.nretries; i++) {
        d_job *job = d_job_find(d, rec.retries[i].id);
        if (job && !job->in_core) d_job_enqueue(d, job); /* or a producer
                                                             sleeps on */
    }
    free(rec.retries);
    /* before the adoption finishes those that ended while it was down */
    d_jobs_charge_outage(d);
    d_jobs_adopt(d, true);
    d_jobs_adopt(d, false);
    exec_status_each(d->run_dir, d_status_sweep, d);
    d_leases_recover(d);
    for (int g = 0; g < d->ngpus; g++) d_gpu_note_foreign(d, g);
    d_feeds_recover(d);
    d_log("recovered %zu unfinished jobs (%zu running)", d->njobs,
          d->nrunning);
}
