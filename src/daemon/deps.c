/* deps.c -- the jobs a job waits for (`--after`, Slurm's afterok, afterany
 * and afternotok): taken from a submit or a stored row, checked at submit,
 * and judged when the job is queued or one of them finishes.
 *
 * A job waits for all its dependencies. It is cancelled as soon as one of
 * them can no longer be met (an afterok job failed, an afternotok job
 * succeeded), not left held forever. A dependency names an existing job
 * or an earlier job of the same submit, so a job's dependencies always
 * have smaller ids than it: no cycle can form, and jobs_queue.c finds the
 * dependents of a finished job after it in id order.
 */
#include "daemon.h"

#include <stdio.h>
#include <string.h>

size_t d_deps_count(json_t *row) {
    return json_array_size(json_object_get(row, "deps"));
}

void d_deps_from_row(json_t *row, d_dep *out) {
    size_t i;
    json_t *dep;
    json_array_foreach(json_object_get(row, "deps"), i, dep) {
        const char *name = json_string_value(json_object_get(dep, "kind"));
        int kind = name ? proto_dep_kind_of(name) : -1;
        out[i].id = json_integer_value(json_object_get(dep, "id"));
        /* the store wrote the kind; an unknown one is the safest */
        out[i].kind = kind < 0 ? PROTO_AFTER_OK : (proto_dep_kind)kind;
    }
}

void d_deps_from_request(const proto_job *pj, int64_t first_id, d_dep *out) {
    for (size_t i = 0; i < pj->nafter; i++) {
        const proto_dep *dep = &pj->after[i];
        out[i].id = dep->id > 0 ? dep->id : first_id + dep->index;
        out[i].kind = dep->kind;
    }
}

int d_deps_check_submit(d_daemon *d, const proto_request *req, char *err,
                        size_t errlen) {
    for (size_t i = 0; i < req->njobs; i++)
        for (size_t k = 0; k < req->jobs[i].nafter; k++) {
            int64_t id = req->jobs[i].after[k].id;
            if (id == 0 || d_job_find(d, id)) continue; /* index, or live */
            json_t *row = store_job(d->st, id, false);
            json_decref(row);
            if (!row) {
                snprintf(err, errlen, "jobs[%zu].after: no job %lld", i,
                         (long long)id);
                return -1;
            }
        }
    return 0;
}

/* Whether a finished job's state meets a dependency of that kind. */
static bool d_dep_met(proto_dep_kind kind, const char *state) {
    bool done = strcmp(state, "done") == 0;
    switch (kind) {
    case PROTO_AFTER_OK: return done;
    case PROTO_AFTER_ANY: return true;
    case PROTO_AFTER_NOTOK: return !done;
    }
    return false;
}

d_deps_verdict d_deps_check(d_daemon *d, const d_job *job, char *reason,
                            size_t reasonlen) {
    d_deps_verdict verdict = D_DEPS_MET;
    for (size_t i = 0; i < job->ndeps; i++) {
        const d_dep *dep = &job->deps[i];
        if (d_job_find(d, dep->id)) {
            verdict = D_DEPS_WAIT;
            continue;
        }
        /* Its end as aegisd settled it: while the state cannot be
         * written, the database still has it running (or queued), and an
         * afterok job was cancelled for it, an afternotok one run. */
        const d_unsaved *ended = d_job_unsaved(d, dep->id);
        json_t *row = ended ? NULL : store_job(d->st, dep->id, false);
        const char *state =
            ended ? ended->state
                  : json_string_value(json_object_get(row, "state"));
        bool met = state && d_dep_met(dep->kind, state);
        if (!met)
            snprintf(reason, reasonlen, "job %lld, which it runs after (%s), "
                     "%s", (long long)dep->id, proto_dep_kind_name(dep->kind),
                     state ? state : "does not exist");
        json_decref(row);
        if (!met) return D_DEPS_NEVER;
    }
    return verdict;
}

bool d_deps_on(const d_job *job, int64_t id) {
    for (size_t i = 0; i < job->ndeps; i++)
        if (job->deps[i].id == id) return true;
    return false;
}

json_t *d_deps_waiting(d_daemon *d, const d_job *job) {
    json_t *ids = json_array();
    for (size_t i = 0; i < job->ndeps; i++)
        if (d_job_find(d, job->deps[i].id))
            json_array_append_new(ids, json_integer(job->deps[i].id));
    return ids;
}
