/* proto.c -- parsing and validating one request line of the aegisd
 * protocol (see proto.h for the messages).
 *
 * Validation is strict: unknown ops and unknown fields are errors, every
 * number is range-checked (whole where a count or an id is meant: 1.9 GPUs
 * is refused, not rounded) and every string is checked for what the daemon
 * will do with it (an environment entry must be K=V, a cwd absolute).
 * jansson refuses the rest before any field is read: text that is not
 * UTF-8, a NUL inside a string, NaN, numbers beyond a double. The first
 * fault found is reported, naming its field, e.g. "jobs[3].gpus".
 */
#include "proto.h"

#include "core.h"
#include "outfile.h"
#include "timelimit.h"
#include "text_safe.h"

#include <ctype.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {
    [PROTO_SUBMIT] = "submit", [PROTO_LS] = "ls", [PROTO_SHOW] = "show",
    [PROTO_CANCEL] = "cancel", [PROTO_WAIT] = "wait", [PROTO_LOG] = "log",
    [PROTO_GPUS] = "gpus", [PROTO_DRAIN] = "drain", [PROTO_RESUME] = "resume",
    [PROTO_REPORT] = "report", [PROTO_HOLD] = "hold",
    [PROTO_RELEASE] = "release", [PROTO_SHUTDOWN] = "shutdown",
    [PROTO_LEASE] = "lease", [PROTO_LEASE_EXIT] = "lease_exit",
    [PROTO_LEASE_END] = "lease_end", [PROTO_UPDATE] = "update",
    [PROTO_PRIORITY] = "priority", [PROTO_FAIRSHARE] = "fairshare",
    [PROTO_DB_BACKUP] = "db_backup", [PROTO_CLEAR] = "clear",
};
#define NOPS (sizeof(op_names) / sizeof(*op_names))

/* The fields each op accepts besides "op"; a row ends at NULL or at its
 * width. */
#define OP_FIELDS_MAX 8
static const char *const op_fields[NOPS][OP_FIELDS_MAX] = {
    [PROTO_SUBMIT] = {"cwd", "env", "umask", "jobs"},
    [PROTO_LS] = {"all", "limit", "user", "states", "cleared"},
    [PROTO_SHOW] = {"id", "history"},
    [PROTO_CANCEL] = {"ids"},
    [PROTO_WAIT] = {"ids"},
    [PROTO_LOG] = {"id", "offset", "stderr"},
    [PROTO_GPUS] = {NULL},
    [PROTO_DRAIN] = {"gpu", "reason"},
    [PROTO_RESUME] = {"gpu"},
    [PROTO_REPORT] = {"since", "until", "user"},
    [PROTO_HOLD] = {"ids"},
    [PROTO_RELEASE] = {"ids"},
    [PROTO_SHUTDOWN] = {"drain"},
    [PROTO_LEASE] = {"slurm_job", "restart", "uid", "mem_mib", "mode", "pid",
                     "gpus", "name"},
    [PROTO_LEASE_EXIT] = {"slurm_job", "restart", "pid", "status",
                          "stderr_tail"},
    [PROTO_LEASE_END] = {"slurm_job"},
    [PROTO_UPDATE] = {"id", "time_limit_s", "nice", "mem_mib", "name"},
    [PROTO_PRIORITY] = {NULL},
    [PROTO_FAIRSHARE] = {NULL},
    [PROTO_DB_BACKUP] = {"path"},
    [PROTO_CLEAR] = {NULL},
};

static const char *const lease_modes[] = {"shared", "mps", "mig",
                                          "exclusive"};

static const char *const job_fields[] = {"cmd", "gpus", "mem_mib", "name",
                                         "feed", "after", "mps_threads_pct",
                                         "meta", "time_limit_s",
                                         "nice", "notify", "feed_producer",
                                         "pipeline", "cpus", "host_mem_mib",
                                         "stdout_path", "stderr_path", NULL};

static const char *const dep_fields[] = {"id", "index", "kind"};

static const char *const dep_kinds[] = {
    [PROTO_AFTER_OK] = "afterok", [PROTO_AFTER_ANY] = "afterany",
    [PROTO_AFTER_NOTOK] = "afternotok",
};
#define NKINDS (sizeof(dep_kinds) / sizeof(*dep_kinds))

const char *proto_op_name(proto_op op) {
    return (size_t)op < NOPS ? op_names[op] : "?";
}

bool proto_read_only(proto_op op) {
    return op == PROTO_LS || op == PROTO_SHOW || op == PROTO_WAIT ||
           op == PROTO_LOG || op == PROTO_GPUS || op == PROTO_REPORT;
}

const char *proto_dep_kind_name(proto_dep_kind kind) {
    return (size_t)kind < NKINDS ? dep_kinds[kind] : "?";
}

int proto_dep_kind_of(const char *name) {
    for (size_t i = 0; i < NKINDS; i++)
        if (strcmp(dep_kinds[i], name) == 0) return (int)i;
    return -1;
}

bool proto_lease_mode_known(const char *mode) {
    for (size_t i = 0; i < sizeof(lease_modes) / sizeof(*lease_modes); i++)
        if (strcmp(lease_modes[i], mode) == 0) return true;
    return false;
}

/* Fails when obj has a key outside `allowed` (besides "op" when top). */
static int proto_known_keys(json_t *obj, const char *const *allowed,
                            size_t nallowed, bool top, const char *where,
                            char *err, size_t errlen) {
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        bool ok = top && strcmp(key, "op") == 0;
        for (size_t i = 0; !ok && i < nallowed && allowed[i]; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) {
            snprintf(err, errlen, "%s%sunknown field '%.64s'", where,
                     where[0] ? ": " : "", key);
            return -1;
        }
    }
    return 0;
}

/* A whole number in [lo, hi] (JSON integers, or reals with no fraction). */
static int proto_int(json_t *v, const char *field, int64_t lo, int64_t hi,
                     int64_t *out, char *err, size_t errlen) {
    double d;
    if (json_is_integer(v)) d = (double)json_integer_value(v);
    else if (json_is_real(v)) d = json_real_value(v);
    else {
        snprintf(err, errlen, "%s: expected a whole number", field);
        return -1;
    }
    if (d != floor(d) || d < (double)lo || d > (double)hi) {
        snprintf(err, errlen, "%s: must be a whole number in [%lld, %lld]",
                 field, (long long)lo, (long long)hi);
        return -1;
    }
    *out = json_is_integer(v) ? json_integer_value(v) : (int64_t)d;
    return 0;
}

static int proto_bool(json_t *v, const char *field, bool *out, char *err,
                      size_t errlen) {
    if (!v) return 0;
    if (!json_is_boolean(v)) {
        snprintf(err, errlen, "%s: expected true or false", field);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* An optional number of a job (key in obj) in [lo, hi] into *out, which
 * is left as it is when the key is absent. */
static int proto_number(json_t *obj, const char *key, const char *where,
                        double lo, double hi, double *out, char *err,
                        size_t errlen) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x >= lo && x <= hi)) {
        snprintf(err, errlen, "%s.%s: must be a number in [%.0f, %.0f]", where,
                 key, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* An array of 1..max non-empty strings into a NULL-terminated vector; each
 * must contain '=' when is_env. */
static int proto_strings(json_t *arr, const char *field, size_t min,
                         size_t max, bool is_env, const char ***out,
                         size_t *n, char *err, size_t errlen) {
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "%s: expected an array of strings", field);
        return -1;
    }
    size_t len = json_array_size(arr);
    if (len < min || len > max) {
        snprintf(err, errlen, "%s: needs %zu to %zu entries, not %zu", field,
                 min, max, len);
        return -1;
    }
    const char **v = calloc(len + 1, sizeof(*v));
    if (!v) {
        snprintf(err, errlen, "%s: out of memory", field);
        return -1;
    }
    *out = v;
    *n = len;
    for (size_t i = 0; i < len; i++) {
        json_t *s = json_array_get(arr, i);
        if (!json_is_string(s)) {
            snprintf(err, errlen, "%s[%zu]: expected a string", field, i);
            return -1;
        }
        v[i] = json_string_value(s);
        if (is_env && (v[i][0] == '=' || !strchr(v[i], '='))) {
            snprintf(err, errlen, "%s[%zu]: expected NAME=VALUE", field, i);
            return -1;
        }
        if (!is_env && i == 0 && v[i][0] == '\0') {
            snprintf(err, errlen, "%s[0]: the program name is empty", field);
            return -1;
        }
    }
    return 0;
}


/* An optional short text field of a job (key in obj): "" when absent. Names
 * may hold any printable text, none of what a terminal would act on
 * (text_safe.h: another user's `aegis ls` shows them); a feed name also
 * becomes a file name under /dev/shm, so it is limited to letters,
 * digits, '.', '_' and '-'. */
static int proto_label(json_t *obj, const char *key, const char *where,
                       size_t max, bool file_name, const char **out,
                       char *err, size_t errlen) {
    *out = "";
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_string(v) || json_string_length(v) > max) {
        snprintf(err, errlen, "%s.%s: expected a string of at most %zu bytes",
                 where, key, max);
        return -1;
    }
    for (const char *c = json_string_value(v); *c;) {
        size_t len = file_name ? 1 : text_char_len(c);
        bool bad = file_name ? !(isalnum((unsigned char)*c) || *c == '.' ||
                                 *c == '_' || *c == '-')
                             : text_is_control(c, len);
        if (bad) {
            snprintf(err, errlen, "%s.%s: %s", where, key,
                     file_name ? "only letters, digits, '.', '_' and '-' are "
                                 "allowed"
                               : "control characters (C0, C1, DEL) and "
                                 "bidirectional overrides, isolates and "
                                 "marks are not allowed");
            return -1;
        }
        c += len;
    }
    *out = json_string_value(v);
    return 0;
}

/* An optional output file pattern of a job (key in obj): NULL when
 * absent; a non-empty string of at most 4095 bytes. */
static int proto_path(json_t *obj, const char *key, const char *where,
                      const char **out, char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v) return 0;
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        json_string_length(v) > 4095) {
        snprintf(err, errlen, "%s.%s: expected a file name pattern of 1 to "
                 "4095 bytes", where, key);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* One dependency of job `self` of the submit: {"id" or "index", "kind"}. */
static int proto_parse_dep(json_t *obj, size_t self, const char *where,
                           proto_dep *dep, char *err, size_t errlen) {
    char field[128];
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "%s: expected an object {id or index, kind}",
                 where);
        return -1;
    }
    if (proto_known_keys(obj, dep_fields,
                         sizeof(dep_fields) / sizeof(*dep_fields), false,
                         where, err, errlen))
        return -1;
    json_t *id = json_object_get(obj, "id"), *index = json_object_get(obj,
                                                                      "index");
    if (!id == !index) {
        snprintf(err, errlen, "%s: needs either id (an existing job) or "
                 "index (an earlier job of this submit)", where);
        return -1;
    }
    if (id) {
        snprintf(field, sizeof(field), "%s.id", where);
        if (proto_int(id, field, 1, INT64_MAX / 2, &dep->id, err, errlen))
            return -1;
    } else {
        snprintf(field, sizeof(field), "%s.index", where);
        if (self == 0) {
            snprintf(err, errlen, "%s: the first job has no earlier job to "
                     "wait for", field);
            return -1;
        }
        if (proto_int(index, field, 0, (int64_t)self - 1, &dep->index, err,
                      errlen))
            return -1;
    }
    json_t *kind = json_object_get(obj, "kind");
    int k = json_is_string(kind) ? proto_dep_kind_of(json_string_value(kind))
                                 : -1;
    if (k < 0) {
        snprintf(err, errlen, "%s.kind: expected afterok, afterany or "
                 "afternotok", where);
        return -1;
    }
    dep->kind = (proto_dep_kind)k;
    return 0;
}

/* A job's "after": a bare id (afterok, as older clients send it), or a
 * list of 1..PROTO_MAX_DEPS dependencies. */
static int proto_parse_deps(json_t *v, size_t self, const char *job,
                            proto_job *out, char *err, size_t errlen) {
    char where[64];
    snprintf(where, sizeof(where), "%s.after", job);
    if (!v) return 0;
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && (n < 1 || n > PROTO_MAX_DEPS)) {
        snprintf(err, errlen, "%s: needs 1 to %d entries, not %zu", where,
                 PROTO_MAX_DEPS, n);
        return -1;
    }
    out->after = calloc(n, sizeof(*out->after));
    if (!out->after) {
        snprintf(err, errlen, "%s: out of memory", where);
        return -1;
    }
    out->nafter = n;
    if (!json_is_array(v))
        return proto_int(v, where, 1, INT64_MAX / 2, &out->after[0].id, err,
                         errlen);
    for (size_t k = 0; k < n; k++) {
        char entry[96];
        snprintf(entry, sizeof(entry), "%s[%zu]", where, k);
        if (proto_parse_dep(json_array_get(v, k), self, entry, &out->after[k],
                            err, errlen))
            return -1;
    }
    return 0;
}

/* A job's optional meta: an object of at most PROTO_MAX_META bytes. */
static int proto_parse_meta(json_t *v, const char *where, proto_job *job,
                            char *err, size_t errlen) {
    if (!v) return 0;
    char *text = json_is_object(v) ? json_dumps(v, JSON_COMPACT) : NULL;
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (!json_is_object(v) || len > PROTO_MAX_META) {
        snprintf(err, errlen, "%s.meta: expected an object of at most %d "
                 "bytes", where, PROTO_MAX_META);
        return -1;
    }
    job->meta = v;
    return 0;
}

/* A pipeline's supervisor (key "pipeline"): a process of its owner that
 * needs no GPU and is placed by no one, so none of what a placed job
 * asks for may come with it (its name is the pipeline's). */
static int proto_parse_supervisor(json_t *obj, const char *where,
                                  proto_job *job, char *err, size_t errlen) {
    static const char *const placed[] = {
        "gpus", "mem_mib", "feed", "feed_producer", "after",
        "mps_threads_pct", "time_limit_s", "nice", "name", "notify"};
    if (proto_label(obj, "pipeline", where, PROTO_MAX_PIPELINE, true,
                    &job->pipeline, err, errlen))
        return -1;
    if (!json_object_get(obj, "pipeline")) return 0;
    if (!job->pipeline[0]) {
        snprintf(err, errlen, "%s.pipeline: expected a name", where);
        return -1;
    }
    for (size_t k = 0; k < sizeof(placed) / sizeof(*placed); k++)
        if (json_object_get(obj, placed[k])) {
            snprintf(err, errlen, "%s.%s: a pipeline's supervisor is not "
                     "placed on a GPU and takes no %s", where, placed[k],
                     placed[k]);
            return -1;
        }
    job->gpus = 0;
    job->mem_mib = -1;
    job->name = job->pipeline;
    job->feed = "";
    return proto_parse_meta(json_object_get(obj, "meta"), where, job, err,
                            errlen);
}

/* An output file pattern (outfile.h), expanded now for a job of a
 * name and user as long as they may be, so that an unknown field or a
 * path too long is refused at submit, not when the job runs. */
static int proto_pattern(const char *pattern, const char *key,
                         const char *where, char *err, size_t errlen) {
    char name[PROTO_MAX_NAME + 1], out[4096], why[512];
    memset(name, 'x', PROTO_MAX_NAME);
    name[PROTO_MAX_NAME] = '\0';
    char user[LOGIN_NAME_MAX + 1];
    memset(user, 'u', LOGIN_NAME_MAX);
    user[LOGIN_NAME_MAX] = '\0';
    outfile_job longest = {INT64_MAX, name, user, "4294967295"};
    if (!pattern || !pattern[0] ||
        outfile_expand(pattern, &longest, out, sizeof(out), why,
                       sizeof(why)) == 0)
        return 0;
    snprintf(err, errlen, "%s.%s: %s", where, key, why);
    return -1;
}

static int proto_parse_job(json_t *obj, size_t i, proto_job *job, char *err,
                           size_t errlen) {
    char where[48], field[64];
    snprintf(where, sizeof(where), "jobs[%zu]", i);
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "%s: expected an object", where);
        return -1;
    }
    if (proto_known_keys(obj, job_fields,
                         sizeof(job_fields) / sizeof(*job_fields), false,
                         where, err, errlen))
        return -1;
    snprintf(field, sizeof(field), "%s.cmd", where);
    json_t *cmd = json_object_get(obj, "cmd");
    if (!cmd) {
        snprintf(err, errlen, "%s: missing", field);
        return -1;
    }
    if (proto_strings(cmd, field, 1, PROTO_MAX_ARGS, false, &job->argv,
                      &job->argc, err, errlen))
        return -1;
    if (proto_parse_supervisor(obj, where, job, err, errlen)) return -1;
    if (job->pipeline[0]) return 0;
    int64_t v;
    job->gpus = 1;
    json_t *g = json_object_get(obj, "gpus");
    snprintf(field, sizeof(field), "%s.gpus", where);
    if (g && proto_int(g, field, 1, CORE_MAX_JOB_GPUS, &v, err, errlen))
        return -1;
    if (g) job->gpus = (int)v;
    job->mem_mib = -1;
    if (proto_number(obj, "mem_mib", where, PROTO_MIN_MEM_MIB,
                     PROTO_MAX_MEM_MIB, &job->mem_mib, err, errlen) ||
        proto_number(obj, "time_limit_s", where, 1, TIMELIMIT_MAX_S,
                     &job->time_limit_s, err, errlen))
        return -1;
    if (proto_label(obj, "name", where, PROTO_MAX_NAME, false, &job->name,
                    err, errlen) ||
        proto_label(obj, "feed", where, PROTO_MAX_FEED, true, &job->feed,
                    err, errlen))
        return -1;
    json_t *producer = json_object_get(obj, "feed_producer");
    snprintf(field, sizeof(field), "%s.feed_producer", where);
    job->feed_producer = false;
    if (producer && proto_bool(producer, field, &job->feed_producer, err,
                               errlen))
        return -1;
    if (job->feed_producer && !job->feed[0]) {
        snprintf(err, errlen, "%s: feed_producer without a feed", field);
        return -1;
    }
    if (proto_parse_deps(json_object_get(obj, "after"), i, where, job, err,
                         errlen))
        return -1;
    json_t *pct = json_object_get(obj, "mps_threads_pct");
    snprintf(field, sizeof(field), "%s.mps_threads_pct", where);
    if (pct && proto_int(pct, field, 1, 100, &v, err, errlen))
        return -1;
    job->mps_threads_pct = pct ? (int)v : 0;
    json_t *nice = json_object_get(obj, "nice");
    snprintf(field, sizeof(field), "%s.nice", where);
    if (nice && proto_int(nice, field, 0, CORE_NICE_MAX, &v, err, errlen))
        return -1;
    job->nice = nice ? (int)v : 0;
    json_t *notify = json_object_get(obj, "notify");
    if (notify && (!json_is_string(notify) ||
                   json_string_length(notify) > PROTO_MAX_NOTIFY)) {
        snprintf(err, errlen, "%s.notify: expected a shell command of at most "
                 "%d bytes", where, PROTO_MAX_NOTIFY);
        return -1;
    }
    job->notify = notify ? json_string_value(notify) : NULL;
    json_t *cpus = json_object_get(obj, "cpus");
    snprintf(field, sizeof(field), "%s.cpus", where);
    if (cpus && proto_int(cpus, field, 1, PROTO_MAX_CPUS, &v, err, errlen))
        return -1;
    job->cpus = cpus ? (int)v : 0;
    job->host_mem_mib = 0;
    if (proto_number(obj, "host_mem_mib", where, 1, PROTO_MAX_MEM_MIB,
                     &job->host_mem_mib, err, errlen) ||
        proto_path(obj, "stdout_path", where, &job->stdout_path, err,
                   errlen) ||
        proto_path(obj, "stderr_path", where, &job->stderr_path, err, errlen) ||
        proto_pattern(job->stdout_path, "stdout_path", where, err, errlen) ||
        proto_pattern(job->stderr_path, "stderr_path", where, err, errlen))
        return -1;
    return proto_parse_meta(json_object_get(obj, "meta"), where, job, err,
                            errlen);
}

/* Job i of the submit, job, with "array": its copies, one per index, into
 * out, each command run through env(1) with AEGIS_ARRAY_INDEX set (so the
 * command shows it). The copies share job's other values. */
static int proto_expand_one(json_t *job, size_t i, json_t *out, char *err,
                            size_t errlen) {
    json_t *indices = json_object_get(job, "array"), *cmd =
        json_object_get(job, "cmd"), *v;
    if (!json_is_array(indices) || json_array_size(indices) < 1 ||
        !json_is_array(cmd)) {
        snprintf(err, errlen, "jobs[%zu].array: expected an array of "
                 "indices, beside cmd", i);
        return -1;
    }
    size_t k;
    json_array_foreach(indices, k, v) {
        if (json_array_size(out) >= PROTO_MAX_JOBS) {
            snprintf(err, errlen, "jobs: more than %d jobs", PROTO_MAX_JOBS);
            return -1;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            snprintf(err, errlen, "jobs[%zu].array[%zu]: expected a whole "
                     "number >= 0", i, k);
            return -1;
        }
        char var[48];
        snprintf(var, sizeof(var), "AEGIS_ARRAY_INDEX=%lld",
                 (long long)json_integer_value(v));
        json_t *one = json_copy(job);
        json_t *line = json_pack("[s, s]", "/usr/bin/env", var);
        if (!one || !line || json_array_extend(line, cmd) ||
            json_object_del(one, "array") ||
            json_object_set_new(one, "cmd", line) ||
            json_array_append_new(out, one)) {
            snprintf(err, errlen, "jobs[%zu].array: out of memory", i);
            return -1;
        }
    }
    return 0;
}

/* The compact form of an array (aegis submit --array): a job with
 * "array": [indices] stands for one job per index, in order, so that a
 * request of 100,000 jobs carries their command once and fits in
 * PROTO_MAX_REQUEST. root's jobs become the list it stands for; a submit
 * without one is left as it is. */
static int proto_expand_arrays(json_t *root, char *err, size_t errlen) {
    json_t *jobs = json_object_get(root, "jobs"), *job;
    size_t i;
    bool any = false;
    json_array_foreach(jobs, i, job) any |= json_object_get(job, "array") != 0;
    if (!any) return 0;
    json_t *out = json_array();
    json_array_foreach(jobs, i, job) {
        int rc = json_object_get(job, "array")
                     ? proto_expand_one(job, i, out, err, errlen)
                     : json_array_append(out, job);
        if (rc == 0 && json_array_size(out) > PROTO_MAX_JOBS) {
            snprintf(err, errlen, "jobs: more than %d jobs", PROTO_MAX_JOBS);
            rc = -1;
        }
        if (rc != 0) {
            json_decref(out);
            return -1;
        }
    }
    return json_object_set_new(root, "jobs", out);
}

static int proto_parse_submit(json_t *root, proto_request *req, char *err,
                              size_t errlen) {
    json_t *cwd = json_object_get(root, "cwd");
    if (!json_is_string(cwd) || json_string_value(cwd)[0] != '/') {
        snprintf(err, errlen, "cwd: expected an absolute path");
        return -1;
    }
    req->cwd = json_string_value(cwd);
    json_t *env = json_object_get(root, "env");
    if (!env) {
        req->env = calloc(1, sizeof(*req->env));
        if (!req->env) {
            snprintf(err, errlen, "env: out of memory");
            return -1;
        }
    } else if (proto_strings(env, "env", 0, PROTO_MAX_ENV, true, &req->env,
                             &req->nenv, err, errlen)) {
        return -1;
    }
    json_t *mask = json_object_get(root, "umask");
    int64_t v = -1;
    if (mask && proto_int(mask, "umask", 0, 0777, &v, err, errlen)) return -1;
    req->umask = (int)v;
    if (proto_expand_arrays(root, err, errlen)) return -1;
    json_t *jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) < 1 ||
        json_array_size(jobs) > PROTO_MAX_JOBS) {
        snprintf(err, errlen, "jobs: expected an array of 1 to %d jobs",
                 PROTO_MAX_JOBS);
        return -1;
    }
    req->njobs = json_array_size(jobs);
    req->jobs = calloc(req->njobs, sizeof(*req->jobs));
    if (!req->jobs) {
        snprintf(err, errlen, "jobs: out of memory");
        return -1;
    }
    for (size_t i = 0; i < req->njobs; i++)
        if (proto_parse_job(json_array_get(jobs, i), i, &req->jobs[i], err,
                            errlen))
            return -1;
    return 0;
}

/* "id" (one) or "ids" (many) into req->ids. */
static int proto_parse_ids(json_t *root, bool many, proto_request *req,
                           char *err, size_t errlen) {
    const char *field = many ? "ids" : "id";
    json_t *v = json_object_get(root, field);
    if (!v) {
        snprintf(err, errlen, "%s: missing", field);
        return -1;
    }
    if (many && (!json_is_array(v) || json_array_size(v) < 1 ||
                 json_array_size(v) > PROTO_MAX_IDS)) {
        snprintf(err, errlen, "ids: expected an array of 1 to %d job ids",
                 PROTO_MAX_IDS);
        return -1;
    }
    req->nids = many ? json_array_size(v) : 1;
    req->ids = calloc(req->nids, sizeof(*req->ids));
    if (!req->ids) {
        snprintf(err, errlen, "%s: out of memory", field);
        return -1;
    }
    for (size_t i = 0; i < req->nids; i++) {
        char name[32];
        snprintf(name, sizeof(name), many ? "ids[%zu]" : "id", i);
        if (proto_int(many ? json_array_get(v, i) : v, name, 1, INT64_MAX / 2,
                      &req->ids[i], err, errlen))
            return -1;
    }
    return 0;
}

/* An optional Unix time (field), seconds (fractions allowed), not
 * negative. */
static int proto_since(json_t *v, const char *field, double *out, char *err,
                       size_t errlen) {
    if (!v) return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
        json_number_value(v) < 0) {
        snprintf(err, errlen, "%s: expected a Unix time in seconds, >= 0",
                 field);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* A whole number field of root in [lo, hi]: required (missing is an
 * error) or left as *out when absent. */
static int proto_field_int(json_t *root, const char *key, bool required,
                           int64_t lo, int64_t hi, int64_t *out, char *err,
                           size_t errlen) {
    json_t *v = json_object_get(root, key);
    if (!v && required) {
        snprintf(err, errlen, "%s: missing", key);
        return -1;
    }
    return v ? proto_int(v, key, lo, hi, out, err, errlen) : 0;
}

/* lease, lease_exit and lease_end: the fields each takes (op_fields) are
 * read here; the ones another op does not take stay at their defaults. */
static int proto_parse_lease(json_t *root, proto_request *req, char *err,
                             size_t errlen) {
    proto_lease *l = &req->lease;
    int64_t job = 0, restart = 0, uid = -1, pid = 0, gpus = 1, status = 0;
    bool is_lease = req->op == PROTO_LEASE, is_exit = req->op == PROTO_LEASE_EXIT;
    l->mem_mib = -1;
    l->mode = "shared";
    if (proto_field_int(root, "slurm_job", true, 1, UINT32_MAX, &job, err,
                        errlen) ||
        proto_field_int(root, "restart", false, 0, INT32_MAX, &restart, err,
                        errlen) ||
        proto_field_int(root, "uid", is_lease, 0, UINT32_MAX - 1, &uid, err,
                        errlen) ||
        proto_field_int(root, "pid", is_lease || is_exit, 1, INT32_MAX, &pid,
                        err, errlen) ||
        proto_field_int(root, "gpus", false, 1, CORE_MAX_JOB_GPUS, &gpus, err,
                        errlen) ||
        proto_field_int(root, "status", is_exit, INT32_MIN, INT32_MAX,
                        &status, err, errlen))
        return -1;
    l->slurm_job = (uint32_t)job;
    l->restart = (int)restart;
    l->uid = uid;
    l->pid = pid;
    l->gpus = (int)gpus;
    l->status = (int)status;
    json_t *mode = json_object_get(root, "mode");
    if (mode && !(json_is_string(mode) &&
                  proto_lease_mode_known(json_string_value(mode)))) {
        snprintf(err, errlen, "mode: expected shared, mps, mig or exclusive");
        return -1;
    }
    if (mode) l->mode = json_string_value(mode);
    json_t *tail = json_object_get(root, "stderr_tail");
    if (tail && (!json_is_string(tail) ||
                 json_string_length(tail) > PROTO_MAX_TAIL)) {
        snprintf(err, errlen, "stderr_tail: expected a string of at most %d "
                 "bytes", PROTO_MAX_TAIL);
        return -1;
    }
    l->stderr_tail = tail ? json_string_value(tail) : "";
    return proto_number(root, "mem_mib", "lease", 0, PROTO_MAX_MEM_MIB,
                        &l->mem_mib, err, errlen) ||
                   proto_label(root, "name", "lease", PROTO_MAX_NAME, false,
                               &l->name, err, errlen)
               ? -1
               : 0;
}

/* update: the job and at least one new value. */
static int proto_parse_update(json_t *root, proto_request *req, char *err,
                              size_t errlen) {
    proto_update *u = &req->update;
    if (proto_parse_ids(root, false, req, err, errlen)) return -1;
    u->has_time = json_object_get(root, "time_limit_s") != NULL;
    u->has_mem = json_object_get(root, "mem_mib") != NULL;
    u->has_nice = json_object_get(root, "nice") != NULL;
    int64_t nice = 0;
    if (proto_number(root, "time_limit_s", "update", 1, TIMELIMIT_MAX_S,
                     &u->time_limit_s, err, errlen) ||
        proto_number(root, "mem_mib", "update", PROTO_MIN_MEM_MIB,
                     PROTO_MAX_MEM_MIB, &u->mem_mib, err, errlen) ||
        proto_field_int(root, "nice", false, 0, CORE_NICE_MAX, &nice, err,
                        errlen) ||
        proto_label(root, "name", "update", PROTO_MAX_NAME, false, &u->name,
                    err, errlen))
        return -1;
    u->nice = (int)nice;
    if (!json_object_get(root, "name")) u->name = NULL;
    if (!u->has_time && !u->has_mem && !u->has_nice && !u->name) {
        snprintf(err, errlen, "update: name at least one of time_limit_s, "
                 "nice, mem_mib and name");
        return -1;
    }
    return 0;
}

/* The states a job may be in, as `ls` filters them. */
static const char *const proto_job_states[] = {"queued", "held", "running",
                                               "done", "failed", "cancelled",
                                               "timeout"};

/* ls's optional "states": a non-empty array of known states. */
static int proto_ls_states(json_t *v, proto_request *req, char *err,
                           size_t errlen) {
    if (!v) return 0;
    size_t n = sizeof(proto_job_states) / sizeof(*proto_job_states), i;
    json_t *s;
    if (!json_is_array(v) || json_array_size(v) == 0 ||
        json_array_size(v) > n) {
        snprintf(err, errlen, "states: expected an array of 1 to %zu states",
                 n);
        return -1;
    }
    json_array_foreach(v, i, s) {
        size_t k = 0;
        while (k < n && !(json_is_string(s) &&
                          strcmp(json_string_value(s), proto_job_states[k]) == 0))
            k++;
        if (k == n) {
            snprintf(err, errlen, "states[%zu]: expected queued, held, "
                     "running, done, failed, cancelled or timeout", i);
            return -1;
        }
    }
    req->states = v;
    return 0;
}

/* ls's and report's optional user: a login name or a uid. */
static int proto_user(json_t *user, proto_request *req, char *err,
                      size_t errlen) {
    if (user && (!json_is_string(user) || json_string_length(user) == 0 ||
                 json_string_length(user) > PROTO_MAX_NAME)) {
        snprintf(err, errlen, "user: expected a login name or a uid of 1 to "
                 "%d bytes", PROTO_MAX_NAME);
        return -1;
    }
    req->user = user ? json_string_value(user) : NULL;
    return 0;
}

/* ls: all, cleared, and the optional limit, user and states. */
static int proto_parse_ls(json_t *root, proto_request *req, char *err,
                          size_t errlen) {
    if (proto_user(json_object_get(root, "user"), req, err, errlen))
        return -1;
    if (json_object_get(root, "limit") &&
        proto_int(json_object_get(root, "limit"), "limit", 0,
                  PROTO_MAX_LS_LIMIT, &req->limit, err, errlen))
        return -1;
    return proto_ls_states(json_object_get(root, "states"), req, err,
                           errlen) ||
                   proto_bool(json_object_get(root, "all"), "all", &req->all,
                              err, errlen) ||
                   proto_bool(json_object_get(root, "cleared"), "cleared",
                              &req->cleared, err, errlen)
               ? -1
               : 0;
}

static int proto_parse_op(json_t *root, proto_request *req, char *err,
                          size_t errlen) {
    int64_t v;
    switch (req->op) {
    case PROTO_SUBMIT: return proto_parse_submit(root, req, err, errlen);
    case PROTO_LS: return proto_parse_ls(root, req, err, errlen);
    case PROTO_SHOW:
        if (proto_parse_ids(root, false, req, err, errlen)) return -1;
        return proto_bool(json_object_get(root, "history"), "history",
                          &req->history, err, errlen);
    case PROTO_CANCEL:
    case PROTO_WAIT:
    case PROTO_HOLD:
    case PROTO_RELEASE: return proto_parse_ids(root, true, req, err, errlen);
    case PROTO_LOG:
        if (proto_parse_ids(root, false, req, err, errlen)) return -1;
        if (json_object_get(root, "offset")) {
            if (proto_int(json_object_get(root, "offset"), "offset", 0,
                          INT64_MAX / 2, &req->offset, err, errlen))
                return -1;
        }
        return proto_bool(json_object_get(root, "stderr"), "stderr",
                          &req->err_stream, err, errlen);
    case PROTO_GPUS: return 0;
    case PROTO_DRAIN:
    case PROTO_RESUME:
        if (!json_object_get(root, "gpu")) {
            snprintf(err, errlen, "gpu: missing");
            return -1;
        }
        if (proto_int(json_object_get(root, "gpu"), "gpu", 0, CORE_MAX_GPUS - 1,
                      &v, err, errlen))
            return -1;
        req->gpu = (int)v;
        return proto_label(root, "reason", "drain", PROTO_MAX_REASON, false,
                           &req->reason, err, errlen);
    case PROTO_REPORT:
        return proto_since(json_object_get(root, "since"), "since",
                           &req->since, err, errlen) ||
                       proto_since(json_object_get(root, "until"), "until",
                                   &req->until, err, errlen) ||
                       proto_user(json_object_get(root, "user"), req, err,
                                  errlen)
                   ? -1
                   : 0;
    case PROTO_SHUTDOWN:
        return proto_bool(json_object_get(root, "drain"), "drain",
                          &req->drain_jobs, err, errlen);
    case PROTO_LEASE:
    case PROTO_LEASE_EXIT:
    case PROTO_LEASE_END: return proto_parse_lease(root, req, err, errlen);
    case PROTO_UPDATE: return proto_parse_update(root, req, err, errlen);
    case PROTO_PRIORITY:
    case PROTO_FAIRSHARE:
    case PROTO_CLEAR: return 0;
    case PROTO_DB_BACKUP: {
        json_t *path = json_object_get(root, "path");
        if (!json_is_string(path) || json_string_value(path)[0] != '/' ||
            json_string_length(path) >= 4096) {
            snprintf(err, errlen, "path: expected an absolute file name");
            return -1;
        }
        req->path = json_string_value(path);
        return 0;
    }
    }
    return 0;
}

int proto_parse(const char *line, size_t len, proto_request *req, char *err,
                size_t errlen) {
    memset(req, 0, sizeof(*req));
    if (len > PROTO_MAX_REQUEST) {
        snprintf(err, errlen, "request: longer than %u bytes",
                 PROTO_MAX_REQUEST);
        return -1;
    }
    json_error_t jerr;
    /* No JSON_ALLOW_NUL: a NUL inside a string is rejected, so every string
     * handed on is a plain C string (argv, env, paths). */
    req->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!req->root) {
        snprintf(err, errlen, "request: not JSON at column %d: %s",
                 jerr.column, jerr.text);
        return -1;
    }
    if (!json_is_object(req->root)) {
        snprintf(err, errlen, "request: expected a JSON object");
        return -1;
    }
    json_t *op = json_object_get(req->root, "op");
    if (!json_is_string(op)) {
        snprintf(err, errlen, "op: missing or not a string");
        return -1;
    }
    size_t i = 0;
    while (i < NOPS && strcmp(op_names[i], json_string_value(op)) != 0) i++;
    if (i == NOPS) {
        snprintf(err, errlen, "op: unknown operation '%.32s'",
                 json_string_value(op));
        return -1;
    }
    req->op = (proto_op)i;
    if (proto_known_keys(req->root, op_fields[i], OP_FIELDS_MAX, true, "",
                         err, errlen))
        return -1;
    return proto_parse_op(req->root, req, err, errlen);
}

void proto_request_free(proto_request *req) {
    for (size_t i = 0; req->jobs && i < req->njobs; i++) {
        free(req->jobs[i].argv);
        free(req->jobs[i].after);
    }
    free(req->jobs);
    free(req->env);
    free(req->ids);
    json_decref(req->root);
    memset(req, 0, sizeof(*req));
}
