/* handlers.c -- one function per request op. Each checks what the peer
 * may do (its uid comes from SO_PEERCRED, never from the request) and
 * answers exactly one line, except `wait`, which answers when its jobs
 * have finished.
 *
 * Privacy rule: anyone may list the queue, but only the job's owner or
 * root sees its command, directory and environment, reads its log,
 * cancels, holds or releases it. Only root or aegisd's own user may drain
 * a GPU or shut aegisd down. A report shows every user's jobs and totals:
 * its rows hold what `ls --all` already shows everyone (id, user, name,
 * state, energy) and what follows from it, never a command.
 */
#include "daemon.h"

#include "b64.h"
#include "exec.h"
#include "jobs.h"
#include "text_safe.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bytes of log per `log` answer: big enough that following a log is cheap,
 * small enough that one answer never approaches a client's line limit.
 * They travel in base64: a log is bytes, a JSON string text. */
#define D_LOG_CHUNK 65536

static bool d_may_see(const d_conn *c, uid_t owner) {
    return c->uid == 0 || c->uid == owner;
}

void d_user_name(uid_t uid, char *user, size_t len, gid_t *gid) {
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &found);
    if (found) snprintf(user, len, "%s", found->pw_name);
    else snprintf(user, len, "%d", (int)uid);
    if (found && gid) *gid = found->pw_gid;
}

/* A head that reserves GPUs: its REASON with the expected start by this
 * host's clock ("14:20", the date too when not within a day), rounded up
 * to the minute so it is never earlier than the start, and the start as
 * "expected_start" (Unix time; null when unknown). */
static void d_reserve_fields(const core_reason *r, double now, json_t *row,
                             char *text, size_t len) {
    double wall = d_wall(), start = wall + (r->until - now);
    char when[48] = "";
    if (r->until >= 0) {
        time_t t = (time_t)ceil(start / 60) * 60;
        struct tm tm;
        localtime_r(&t, &tm);
        strftime(when, sizeof(when),
                 start - wall < 86400 ? "%H:%M" : "%Y-%m-%d %H:%M", &tm);
    }
    core_reserve_text(r, when, text, len);
    json_object_set_new(row, "expected_start",
                        r->until >= 0 ? json_real(start) : json_null());
}

/* Why a job waits, as Slurm's REASON column says it: a job held by
 * `aegis hold` for that hold (its dependencies ending would not start
 * it), one held otherwise for its first unfinished dependency, a queued
 * one as the core tells it (core_job_reason()). Adds "wait_reason" (the text `aegis ls` shows),
 * "wait_code" (core_wait_name()) and, for a wait that ends at a known
 * time, "wait_until" (Unix time). The row's "reason" is the store's: why
 * the job is in its state (a requeue, its end). */
static void d_reason_fields(d_daemon *d, const d_job *job, json_t *row,
                            json_t *waiting_for) {
    core_reason r = {.kind = CORE_WAIT_NONE, .gpu = -1};
    double now = d_now(d);
    if (job->held) {
        r.kind = CORE_WAIT_HELD;
    } else if (job->state == D_HELD && json_array_size(waiting_for) > 0) {
        r.kind = CORE_WAIT_DEPENDENCY;
        r.job = json_integer_value(json_array_get(waiting_for, 0));
    } else if (job->state == D_QUEUED && job->in_core) {
        core_job_reason(d->core, job->id, now, &r);
    } else if (job->state == D_HELD && job->producer &&
               !d_job_backing_off(job)) {
        r.kind = CORE_WAIT_FEED; /* asleep until a consumer comes */
    }
    char text[256];
    if (r.kind == CORE_WAIT_NONE && d_job_backing_off(job)) {
        double left = job->restart_at > now ? job->restart_at - now : 0;
        if (job->kind->outside)
            snprintf(text, sizeof(text), "restarted in %.0f s (back-off "
                     "after its end)", left);
        else
            snprintf(text, sizeof(text), "queued again in %.0f s: %d "
                     "watchers in a row ended without starting it (aegisd's "
                     "log says why)", left, job->unstarted);
        json_object_set_new(row, "wait_reason", json_string(text));
        return;
    }
    if (r.kind == CORE_WAIT_NONE) return;
    if (r.kind == CORE_WAIT_FEED && job->producer && !job->in_core)
        snprintf(text, sizeof(text), "no job of feed %s queued yet",
                 job->feed);
    else if (r.kind == CORE_WAIT_RESERVING)
        d_reserve_fields(&r, now, row, text, sizeof(text));
    else
        core_reason_text(&r, now, text, sizeof(text));
    json_object_set_new(row, "wait_reason", json_string(text));
    json_object_set_new(row, "wait_code", json_string(core_wait_name(r.kind)));
    bool timed = r.kind == CORE_WAIT_OBSERVING || r.kind == CORE_WAIT_WINDOW;
    if (timed && r.until >= 0)
        json_object_set_new(row, "wait_until",
                            json_real(d_wall() + (r.until - now)));
}

/* A job's kind, "feed" for a managed producer (with "consumers": its
 * feed's jobs queued or running), "slurm" for a Slurm job's lease,
 * "pipeline" for a pipeline's supervisor (with "pipeline": its name), else
 * "job", for the store's feed_producer (0 or 1), slurm_job and pipeline. */
static void d_kind_fields(d_daemon *d, json_t *row, const d_job *job) {
    bool producer = json_integer_value(json_object_get(row, "feed_producer"));
    bool lease = json_is_integer(json_object_get(row, "slurm_job"));
    const char *pipeline = json_string_value(json_object_get(row, "pipeline"));
    bool supervisor = pipeline && pipeline[0];
    json_object_del(row, "feed_producer");
    json_object_del(row, "feed_stop"); /* its end's reason tells */
    if (!supervisor) json_object_del(row, "pipeline");
    json_object_set_new(row, "kind", json_string(producer     ? "feed"
                                                 : lease      ? "slurm"
                                                 : supervisor ? "pipeline"
                                                              : "job"));
    if (producer && job)
        json_object_set_new(row, "consumers",
                            json_integer(d_feed_consumers(d, job)));
}

/* A reading, or null when the library could not give it (CORE_UNKNOWN). */
static json_t *d_json_known(double v) {
    return v >= 0 ? json_real(v) : json_null();
}

/* A login name that is not UTF-8, null in a stored row (d_row_user()):
 * a client gets it with each byte that starts no character as '?'. */
static void d_user_field(d_daemon *d, json_t *row) {
    char raw[256], shown[256];
    if (!json_is_null(json_object_get(row, "user"))) return;
    d_row_user(d, row, raw, sizeof(raw));
    text_as_utf8(shown, sizeof(shown), raw);
    json_object_set_new(row, "user", json_string(shown));
}

/* Adds what only the daemon's memory knows to a job's row. */
static void d_live_fields(d_daemon *d, json_t *row) {
    json_t *held = json_object_get(row, "held"); /* the store's 0 or 1 */
    if (held)
        json_object_set_new(row, "held",
                            json_boolean(json_integer_value(held)));
    int64_t id = json_integer_value(json_object_get(row, "id"));
    d_user_field(d, row);
    d_job *job = d_job_find(d, id);
    d_kind_fields(d, row, job);
    const d_unsaved *ended = job ? NULL : d_job_unsaved(d, id);
    if (ended) { /* the database does not know yet */
        json_object_set_new(row, "state", json_string(ended->state));
        json_object_set_new(row, "reason", json_string(ended->reason));
    }
    if (!job) return;
    /* ahead of the database while it cannot be written */
    json_object_set_new(row, "state", json_string(job->state == D_RUNNING
                                                      ? "running"
                                                      : "queued"));
    json_object_set_new(row, "energy_j", json_real(job->energy_j));
    json_t *waiting_for = job->state == D_HELD ? d_deps_waiting(d, job) : NULL;
    d_reason_fields(d, job, row, waiting_for);
    if (waiting_for) json_object_set_new(row, "waiting_for", waiting_for);
    if (job->state != D_RUNNING) return;
    json_t *gpus = json_array();
    for (int i = 0; i < job->ngpus; i++)
        json_array_append_new(gpus, json_integer(job->gpus[i]));
    json_object_set_new(row, "gpu_ids", gpus);
    json_object_set_new(row, "active", json_boolean(job->active));
    json_object_set_new(row, "pid", json_integer(job->job_pid));
    /* as the latest tick measured them (what /metrics shows): no work */
    json_object_set_new(row, "used_mib", json_real(job->used_mib));
    json_object_set_new(row, "sm_pct", d_json_known(job->sm_pct));
}

/* Removes the private fields of a row the peer does not own. */
static void d_redact(const d_conn *c, json_t *row) {
    if (d_may_see(c, (uid_t)json_integer_value(json_object_get(row, "uid"))))
        return;
    json_object_del(row, "cmd");
    json_object_del(row, "cwd");
    json_object_del(row, "env");
    json_object_del(row, "notify");
    /* -o and -e patterns name folders as the directory does */
    json_object_del(row, "stdout_path");
    json_object_del(row, "stderr_path");
    json_object_del(row, "umask");
}

/* The memory of the server's largest GPU, MiB (0 while none was read): a
 * job that asks for more could never run. */
static double d_largest_gpu_mib(const d_daemon *d) {
    double most = 0;
    for (int g = 0; g < d->ngpus; g++)
        if (d->gpus[g].last.r.total_mib > most)
            most = d->gpus[g].last.r.total_mib;
    return most;
}

/* The server's fault, not the request's: a fault answer. */
bool d_refuse_unwritable(d_conn *c) {
    if (!store_failing(c->d->st)) return false;
    d_reply_fault(c, "aegisd cannot write its state (%s): not accepting jobs "
                  "until it can", store_failure(c->d->st));
    return true;
}

int d_job_fits(const d_daemon *d, int gpus, double mem_mib,
               const char *where, char *err, size_t errlen) {
    double largest = d_largest_gpu_mib(d);
    if (gpus > d->ngpus) {
        snprintf(err, errlen, "%sgpus: %d GPUs asked, the server has %d",
                 where, gpus, d->ngpus);
        return -1;
    }
    if (largest > 0 && mem_mib > largest) {
        snprintf(err, errlen, "%smem_mib: %.0f MiB asked, and the largest GPU "
                 "of this server holds %.0f MiB", where, mem_mib, largest);
        return -1;
    }
    char why[128];
    if (core_job_within_limits(&d->cfg, gpus, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%sgpus: %s", where, why);
        return -1;
    }
    return 0;
}

/* A job that gives no --time gets the site's default_time as its own
 * limit, stored with it, as Slurm stamps DefaultTime at submission: a
 * later change of the default leaves it be. A feed's producer gets none:
 * it runs as long as its consumers do (d_feed_consumer_left()). */
static void d_default_time(const d_daemon *d, const proto_request *req) {
    for (size_t i = 0; i < req->njobs; i++) {
        proto_job *j = &req->jobs[i];
        if (j->time_limit_s <= 0 && !j->feed_producer &&
            !(j->pipeline && j->pipeline[0]))
            j->time_limit_s = d->cfg.default_time;
    }
}

static void d_on_submit(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    if (d_refuse_unwritable(c)) return;
    if (!d->as_root && c->uid != geteuid()) {
        d_reply_error(c, "this aegisd runs as uid %d and runs jobs as that "
                      "user only; uid %d may not submit", (int)geteuid(),
                      (int)c->uid);
        return;
    }
    char user[64], err[512];
    for (size_t i = 0; i < req->njobs; i++) {
        char where[32];
        snprintf(where, sizeof(where), "jobs[%zu].", i);
        if (req->jobs[i].pipeline && req->jobs[i].pipeline[0])
            continue; /* a supervisor takes no GPU */
        if (d_job_fits(d, req->jobs[i].gpus, req->jobs[i].mem_mib, where, err,
                       sizeof(err)) != 0) {
            d_reply_error(c, "%s", err);
            return;
        }
    }
    for (size_t i = 0; i < req->njobs; i++) {
        const proto_job *j = &req->jobs[i];
        const d_job *p =
            j->feed_producer ? d_feed_producer(d, c->uid, j->feed) : NULL;
        if (p) {
            d_reply_error(c, "jobs[%zu].feed_producer: your feed %s has a "
                          "producer already (job %lld)", i, j->feed,
                          (long long)p->id);
            return;
        }
        const d_job *s = j->pipeline && j->pipeline[0]
                             ? d_pipeline_supervisor(d, c->uid, j->pipeline)
                             : NULL;
        if (s) {
            d_reply_error(c, "jobs[%zu].pipeline: your pipeline %s runs "
                          "already (job %lld)", i, j->pipeline,
                          (long long)s->id);
            return;
        }
    }
    if (d_deps_check_submit(d, req, err, sizeof(err)) != 0) {
        d_reply_error(c, "%s", err);
        return;
    }
    d_default_time(d, req);
    store_owner owner = {.uid = c->uid, .gid = c->gid, .user = user};
    d_user_name(c->uid, user, sizeof(user), &owner.gid);
    int64_t first;
    if (store_submit(d->st, &owner, req, d_wall(), &first, err,
                     sizeof(err)) != 0) {
        d_log("%s", err);
        if (!d_refuse_unwritable(c)) d_reply_fault(c, "%s", err);
        return;
    }
    /* Committed: from here on the jobs exist even if aegisd dies. */
    json_t *ids = json_array();
    for (size_t i = 0; i < req->njobs; i++)
        json_array_append_new(ids, json_integer(first + (int64_t)i));
    d_reply(c, json_pack("{s:b, s:o}", "ok", 1, "ids", ids));
    store_begin(d->st); /* a dependent cancelled at once: one commit */
    d_jobs_submitted(d, &owner, req, first);
    store_commit(d->st);
    d_jobs_schedule(d);
}

/* With a limit, only the first rows (with all, the newest) are read and
 * sent, with "total": how many there are. A long queue's whole list costs
 * time and memory with each job, and holds every other client meanwhile;
 * so the user and states filter here, in the query, not in the client. */
static void d_on_ls(d_conn *c, const proto_request *req) {
    char *states = req->states ? json_dumps(req->states, JSON_COMPACT) : NULL;
    store_query q = {.all = req->all, .limit = req->limit, .user = req->user,
                     .states = states, .cleared = req->cleared};
    json_t *jobs = store_list(c->d->st, &q);
    size_t i;
    json_t *row;
    json_array_foreach(jobs, i, row) {
        d_redact(c, row);
        d_live_fields(c->d, row);
    }
    json_t *ans = json_pack("{s:b, s:o}", "ok", 1, "jobs", jobs);
    if (req->limit > 0)
        json_object_set_new(ans, "total",
                            json_integer(store_count(c->d->st, &q)));
    free(states);
    d_reply(c, ans);
}

/* A job's samples (history.h) and what they were taken on: its last
 * attempt's GPUs, by index, name and UUID. At most HISTORY_MAX_SAMPLES
 * rows of five numbers: an answer of a few hundred KiB at most. */
static json_t *d_history(d_daemon *d, int64_t id, json_t *row) {
    json_t *atts = json_object_get(row, "attempt_list");
    json_t *last = json_array_get(atts, json_array_size(atts) - 1);
    int on[CORE_MAX_JOB_GPUS];
    int n = d_gpus_parse(json_string_value(json_object_get(last, "gpus")), on);
    json_t *gpus = json_array();
    for (int i = 0; i < n; i++)
        if (on[i] < d->ngpus)
            json_array_append_new(gpus, json_pack("{s:i, s:s, s:s}",
                "index", on[i], "name", tel_gpu_name(d->tel, on[i]),
                "uuid", tel_gpu_uuid(d->tel, on[i])));
    return json_pack("{s:f, s:[sssss], s:o, s:o}",
                     "period_s", d->keys.history_period_s, "columns", "t",
                     "mem_mib", "gpu_used_mib", "gpu_total_mib", "sm_pct",
                     "gpus", gpus, "samples", store_history(d->st, id));
}

static void d_on_show(d_conn *c, const proto_request *req) {
    json_t *row = store_job(c->d->st, req->ids[0], true);
    if (!row) {
        d_reply_error(c, "job %lld: no such job", (long long)req->ids[0]);
        return;
    }
    if (req->history)
        json_object_set_new(row, "history", d_history(c->d, req->ids[0], row));
    d_redact(c, row);
    d_live_fields(c->d, row);
    d_reply(c, json_pack("{s:b, s:o}", "ok", 1, "job", row));
}

/* The refusal of an owner-only op on another user's job, in why. */
static void d_denied(int64_t id, const char *op, char *why, size_t len) {
    snprintf(why, len, "job %lld: permission denied: only its owner or root "
             "may %s it", (long long)id, op);
}

/* A job's row for an owner-only op, or NULL with why not in why. */
static json_t *d_job_for(d_conn *c, int64_t id, const char *op, char *why,
                         size_t len) {
    json_t *row = store_job(c->d->st, id, false);
    if (!row) {
        snprintf(why, len, "job %lld: no such job", (long long)id);
        return NULL;
    }
    if (!d_may_see(c, (uid_t)json_integer_value(json_object_get(row, "uid")))) {
        d_denied(id, op, why, len);
        json_decref(row);
        return NULL;
    }
    return row;
}

/* Looks a job up for an owner-only op; answers the error itself. */
static json_t *d_owned_job(d_conn *c, int64_t id, const char *op) {
    char why[256];
    json_t *row = d_job_for(c, id, op, why, sizeof(why));
    if (!row) d_reply_error(c, "%s", why);
    return row;
}

/* Whether the peer may `op` job id, unfinished: 0, else -1 with why. An
 * unfinished job's owner is known without a query: a bulk cancel of
 * 50,000 jobs makes none. */
int d_may_act(d_conn *c, int64_t id, const char *op, char *why, size_t len) {
    d_job *job = d_job_find(c->d, id);
    if (!job) { /* finished, or none: the store says which, and whose */
        json_t *row = d_job_for(c, id, op, why, len);
        if (!row) return -1;
        json_decref(row);
        snprintf(why, len, "job %lld: already finished", (long long)id);
        return -1;
    }
    if (!d_may_see(c, job->uid)) {
        d_denied(id, op, why, len);
        return -1;
    }
    if (job->lease.slurm_job) { /* Slurm runs it, not aegisd */
        snprintf(why, len, "job %lld: the lease of Slurm job %u: scancel "
                 "%u (or aegis release --slurm-job %u ends the lease)",
                 (long long)id, job->lease.slurm_job, job->lease.slurm_job,
                 job->lease.slurm_job);
        return -1;
    }
    return 0;
}

/* Whether the peer may `op` every job of the request, all unfinished:
 * answers the error itself when not. All or nothing: every id is checked
 * before any job is touched. */
static bool d_owned_unfinished(d_conn *c, const proto_request *req,
                               const char *op) {
    char why[256];
    for (size_t i = 0; i < req->nids; i++)
        if (d_may_act(c, req->ids[i], op, why, sizeof(why)) != 0) {
            d_reply_error(c, "%s", why);
            return false;
        }
    return true;
}

/* Every job of the list that may be cancelled is; each other one is
 * answered under "failed" with why, so that one finished job of a long
 * list does not keep the rest running. */
static void d_on_cancel(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    int64_t *ids = malloc(req->nids * sizeof(*ids));
    if (!ids) {
        d_reply_fault(c, "cancel: out of memory");
        return;
    }
    json_t *done = json_array(), *failed = json_array();
    size_t n = 0;
    char err[4600];
    for (size_t i = 0; i < req->nids; i++)
        if (d_may_act(c, req->ids[i], "cancel", err, sizeof(err)) == 0)
            json_array_append_new(done, json_integer(ids[n++] = req->ids[i]));
        else
            json_array_append_new(failed, json_pack("{s:I, s:s}", "id",
                                  (json_int_t)req->ids[i], "error", err));
    /* one commit for them all, not one per job (d_jobs_cancel) */
    int rc = n ? d_jobs_cancel(d, ids, n, err, sizeof(err)) : 0;
    free(ids);
    if (rc != 0) {
        json_decref(done);
        json_decref(failed);
        d_reply_fault(c, "%s", err);
        return;
    }
    /* once its jobs have ended, which many take several loop turns to */
    d_cancel_answer(d, c, json_pack("{s:b, s:o, s:o}", "ok", 1, "cancelled",
                                    done, "failed", failed));
    d_jobs_schedule(d);
}

/* A change to the queue (what) is refused while aegisd cannot write its
 * state, as a submit and a cancel are: answered, it would be lost to a
 * kill -9 before the disk came back. True when refused. */
static bool d_refuse_unsaved(d_conn *c, const char *what) {
    if (!store_failing(c->d->st)) return false;
    d_reply_fault(c, "not %s: aegisd cannot write its state (%s)", what,
                  store_failure(c->d->st));
    return true;
}

/* The answer to a change (done: what it did) whose commit failed (the
 * disk failed just now): in effect, kept, saved once aegisd can, and
 * lost if it is killed before. */
static void d_reply_unsaved(d_conn *c, const char *done) {
    d_reply_fault(c, "%s, but not saved: aegisd cannot write its state (%s); "
                  "it is saved once aegisd can, and lost if aegisd is killed "
                  "before", done, store_failure(c->d->st));
}

/* hold and release: a running job cannot be held (cancel it instead). */
static void d_on_hold(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    bool hold = req->op == PROTO_HOLD;
    if (!d_owned_unfinished(c, req, proto_op_name(req->op)) ||
        d_refuse_unsaved(c, hold ? "held" : "released"))
        return;
    for (size_t i = 0; hold && i < req->nids; i++)
        if (d_job_find(d, req->ids[i])->state == D_RUNNING) {
            d_reply_error(c, "job %lld: running; only a queued job can be "
                          "held (aegis cancel stops it)",
                          (long long)req->ids[i]);
            return;
        }
    for (size_t i = 0; !hold && i < req->nids; i++)
        if (!d_job_find(d, req->ids[i])->held) {
            d_reply_error(c, "job %lld: not held; only a job held by aegis "
                          "hold can be released", (long long)req->ids[i]);
            return;
        }
    char user[64];
    d_user_name(c->uid, user, sizeof(user), NULL);
    json_t *done = json_array();
    store_begin(d->st);
    for (size_t i = 0; i < req->nids; i++) {
        d_job *job = d_job_find(d, req->ids[i]); /* a release may end one */
        if (job) d_job_hold(d, job, hold, user);
        json_array_append_new(done, json_integer(req->ids[i]));
    }
    if (store_commit(d->st) == 0)
        d_reply(c, json_pack("{s:b, s:o}", "ok", 1,
                             hold ? "held" : "released", done));
    else {
        json_decref(done);
        d_reply_unsaved(c, hold ? "held" : "released");
    }
    d_jobs_schedule(d);
}

static json_t *d_final(int64_t id, const char *state, const char *reason) {
    return json_pack("{s:I, s:s, s:s}", "id", (json_int_t)id, "state", state,
                     "reason", reason ? reason : "");
}

/* The request's ids once each, in increasing order, into *ids (malloc'd);
 * returns how many, or 0 when out of memory. */
static size_t d_unique_ids(const proto_request *req, int64_t **ids) {
    size_t n = 0;
    *ids = malloc(req->nids * sizeof(**ids));
    if (!*ids) return 0;
    memcpy(*ids, req->ids, req->nids * sizeof(**ids));
    qsort(*ids, req->nids, sizeof(**ids), d_id_cmp);
    for (size_t i = 0; i < req->nids; i++)
        if (n == 0 || (*ids)[n - 1] != (*ids)[i]) (*ids)[n++] = (*ids)[i];
    return n;
}

/* Answers at once when every job named has finished, else once the last
 * one has (d_waiters_job_done, the d->job_done hook). A job named twice
 * is one job to wait for, and one row of the answer. */
static void d_on_wait(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    int64_t *ids;
    size_t nids = d_unique_ids(req, &ids), npending = 0;
    if (nids == 0) {
        free(ids);
        d_reply_fault(c, "wait: out of memory");
        return;
    }
    json_t *result = json_array();
    for (size_t i = 0; i < nids; i++) {
        if (d_job_find(d, ids[i])) {
            ids[npending++] = ids[i]; /* npending <= i: in place */
            continue;
        }
        json_t *row = store_job(d->st, ids[i], false);
        if (!row) {
            d_reply_error(c, "job %lld: no such job", (long long)ids[i]);
            json_decref(result);
            free(ids);
            return;
        }
        d_live_fields(d, row);
        json_array_append_new(result, d_final(ids[i],
            json_string_value(json_object_get(row, "state")),
            json_string_value(json_object_get(row, "reason"))));
        json_decref(row);
    }
    if (npending == 0) {
        free(ids);
        d_reply(c, json_pack("{s:b, s:o}", "ok", 1, "jobs", result));
        return;
    }
    c->wait_ids = ids;
    c->nwait = npending;
    c->wait_result = result;
}

/* d->job_done: the waits that named job id hear of its end. */
static void d_waiters_job_done(d_daemon *d, int64_t id, const char *state,
                               const char *reason) {
    for (d_conn *c = d->conns, *next; c; c = next) {
        next = c->next;
        size_t i = 0;
        while (i < c->nwait && c->wait_ids[i] != id) i++;
        if (i == c->nwait) continue;
        c->wait_ids[i] = c->wait_ids[--c->nwait];
        json_array_append_new(c->wait_result, d_final(id, state, reason));
        if (c->nwait > 0) continue;
        json_t *result = c->wait_result;
        free(c->wait_ids);
        c->wait_ids = NULL;
        c->wait_result = NULL;
        d_conn_answer_later(c, json_pack("{s:b, s:o}", "ok", 1, "jobs",
                                         result));
    }
}

static void d_on_log(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    json_t *row = d_owned_job(c, req->ids[0], "read the log of");
    if (!row) return;
    /* whose the log must be: its job's user's, or a non-root aegisd's */
    json_int_t uid = json_integer_value(json_object_get(row, "uid"));
    uid_t owner = d->as_root ? (uid_t)uid : geteuid();
    json_decref(row);
    char *buf = malloc(D_LOG_CHUNK);
    char *text = malloc(B64_ENCODED_LEN(D_LOG_CHUNK) + 1);
    if (!buf || !text) {
        free(buf);
        free(text);
        d_reply_fault(c, "log: out of memory");
        return;
    }
    long long from = req->offset; /* past what the log's cap dropped */
    ssize_t got = exec_log_read(d->log_dirfd, req->ids[0], req->err_stream,
                                owner, &from, buf, D_LOG_CHUNK);
    if (got < 0) {
        free(buf);
        free(text);
        /* the request was sound; the file could not be read: exit 1 */
        d_reply_fault(c, "job %lld: its log: %s", (long long)req->ids[0],
                      exec_log_error(errno));
        return;
    }
    size_t n = (size_t)got;
    b64_encode(buf, n, text);
    free(buf);
    d_reply(c, json_pack("{s:b, s:s, s:I, s:b}", "ok", 1, "base64", text,
                         "offset", (json_int_t)(from + (long long)n),
                         "finished", d_job_find(d, req->ids[0]) == NULL));
    free(text);
}

json_t *d_gpus_answer(d_daemon *d) {
    json_t *gpus = json_array();
    size_t nrun;
    int64_t *run = d_running_ids(d, &nrun); /* not the queue's */
    for (int g = 0; g < d->ngpus; g++) {
        const tel_gpu_reading *r = &d->gpus[g].last;
        json_t *jobs = json_array();
        for (size_t i = 0; i < nrun; i++) {
            const d_job *job = d_job_find(d, run[i]);
            for (int k = 0; k < job->ngpus; k++)
                if (job->gpus[k] == g)
                    json_array_append_new(jobs, json_integer(job->id));
        }
        json_array_append_new(gpus, json_pack(
            "{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:o, s:s, "
            "s:o, s:o, s:o}",
            "index", g, "uuid", tel_gpu_uuid(d->tel, g),
            "name", tel_gpu_name(d->tel, g), "total_mib", r->r.total_mib,
            "used_mib", r->r.used_mib, "util", r->r.util,
            "power_w", r->power_w, "energy_j", r->energy_j,
            "drained", d->gpus[g].drained, "ok", d->gpus[g].ok, "jobs", jobs,
            "sharing", share_mode_name(d->gpus[g].mode),
            "smact", d_json_known(r->r.smact),
            "smocc", d_json_known(r->r.smocc),
            "drama", d_json_known(r->r.drama)));
        json_t *gpu = json_array_get(gpus, (size_t)g);
        if (d->gpus[g].drained)
            json_object_update_new(gpu, json_pack("{s:s, s:s, s:f}",
                "drain_reason", d->gpus[g].drain_reason,
                "drained_by", d->gpus[g].drained_by,
                "drained_at", d->gpus[g].drained_at));
    }
    free(run);
    return json_pack("{s:b, s:o, s:i, s:i}", "ok", 1, "gpus", gpus, "queued",
                     core_queued_count(d->core), "running",
                     core_running_count(d->core));
}

static void d_on_gpus(d_conn *c, const proto_request *req) {
    d_reply(c, d_gpus_answer(c->d));
}

/* Whether the peer is root or aegisd's own user, who run the server;
 * answers the error itself when not. */
static bool d_admin(d_conn *c, const char *what) {
    if (c->uid == 0 || c->uid == geteuid()) return true;
    d_reply_error(c, "permission denied: only root or aegisd's user (uid %d) "
                  "may %s", (int)geteuid(), what);
    return false;
}

static void d_on_drain(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    if (!d_admin(c, req->op == PROTO_DRAIN ? "drain a GPU" : "resume a GPU") ||
        d_refuse_unsaved(c, req->op == PROTO_DRAIN ? "drained" : "resumed"))
        return;
    if (req->gpu >= d->ngpus) {
        d_reply_error(c, "gpu: no GPU %d (the server has %d)", req->gpu,
                      d->ngpus);
        return;
    }
    char user[64];
    bool drain = req->op == PROTO_DRAIN, was = d->gpus[req->gpu].drained;
    d_user_name(c->uid, user, sizeof(user), NULL);
    /* a drain again without a reason keeps the first's (and its time) */
    bool changed = drain != was || (drain && req->reason && req->reason[0]);
    if (changed)
        d_gpu_drain(d, req->gpu, drain, req->reason ? req->reason : "", user);
    d_reply(c, json_pack("{s:b, s:i, s:b, s:b}", "ok", 1, "gpu", req->gpu,
                         "drained", d->gpus[req->gpu].drained, "was_drained",
                         was));
    d_jobs_schedule(d);
}

static void d_on_report(d_conn *c, const proto_request *req) {
    store_report_query q = {.since = req->since, .until = req->until,
                            .user = req->user};
    json_t *jobs = store_report(c->d->st, &q);
    size_t i;
    json_t *row;
    json_array_foreach(jobs, i, row) d_live_fields(c->d, row);
    json_t *ans = acct_report(jobs, &c->d->acct, d_wall());
    json_decref(jobs);
    if (!ans) {
        d_reply_fault(c, "report: out of memory");
        return;
    }
    json_object_set_new(ans, "ok", json_true());
    d_reply(c, ans);
}

/* A copy of the database, by SQLite's online backup, written by aegisd
 * where the admin says: a backup while aegisd runs, which copying the
 * file (and its WAL) by hand would not make consistent. */
static void d_on_db_backup(d_conn *c, const proto_request *req) {
    if (!d_admin(c, "back up the database")) return;
    char err[4300];
    if (store_backup(c->d->st, req->path, err, sizeof(err)) != 0) {
        d_reply_error(c, "db backup: %s", err);
        return;
    }
    d_log("database copied to %s (aegis db backup by uid %d)", req->path,
          (int)c->uid);
    d_reply(c, json_pack("{s:b, s:s}", "ok", 1, "path", req->path));
}

/* Answers first, with the running jobs that keep running (or are waited
 * for); aegisd exits at its next tick, and the client, which keeps the
 * connection open, sees it close then. */
static void d_on_shutdown(d_conn *c, const proto_request *req) {
    d_daemon *d = c->d;
    if (!d_admin(c, "shut aegisd down")) return;
    bool drain = req->drain_jobs || d->opt.drain_on_stop;
    /* a drain does not wait for supervisors: they run until stopped */
    int running = (int)(d->nrunning - (drain ? d_pipelines_running(d) : 0));
    d_reply(c, json_pack("{s:b, s:i, s:b}", "ok", 1, "running", running,
                         "drain", drain));
    char why[64];
    snprintf(why, sizeof(why), "aegis shutdown%s by uid %d",
             req->drain_jobs ? " --drain" : "", (int)c->uid);
    d_stop(d, why, req->drain_jobs);
}

void d_handle(d_conn *c, const proto_request *req) {
    switch (req->op) {
    case PROTO_SUBMIT: d_on_submit(c, req); break;
    case PROTO_LS: d_on_ls(c, req); break;
    case PROTO_SHOW: d_on_show(c, req); break;
    case PROTO_CANCEL: d_on_cancel(c, req); break;
    case PROTO_WAIT: d_on_wait(c, req); break;
    case PROTO_LOG: d_on_log(c, req); break;
    case PROTO_GPUS: d_on_gpus(c, req); break;
    case PROTO_DRAIN:
    case PROTO_RESUME: d_on_drain(c, req); break;
    case PROTO_REPORT: d_on_report(c, req); break;
    case PROTO_HOLD:
    case PROTO_RELEASE: d_on_hold(c, req); break;
    case PROTO_SHUTDOWN: d_on_shutdown(c, req); break;
    case PROTO_LEASE: d_on_lease(c, req); break;
    case PROTO_LEASE_EXIT: d_on_lease_exit(c, req); break;
    case PROTO_LEASE_END: d_on_lease_end(c, req); break;
    case PROTO_UPDATE: d_on_update(c, req); break;
    case PROTO_PRIORITY: d_on_priority(c, req); break;
    case PROTO_FAIRSHARE: d_on_fairshare(c, req); break;
    case PROTO_DB_BACKUP: d_on_db_backup(c, req); break;
    case PROTO_CLEAR: d_on_clear(c, req); break;
    }
}

void d_handlers_register(d_daemon *d) { d->job_done = d_waiters_job_done; }
