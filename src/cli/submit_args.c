/* submit_args.c -- the values `aegis submit` takes and the jobs it builds
 * from them: memory with units, Slurm's dependency forms, array ranges,
 * a command string that needs a shell, a program on PATH; the request
 * that carries them with this directory and environment.
 *
 * Each parser refuses what it cannot take whole (a unit it does not know,
 * an id that is not one, a range running backwards) rather than guess, so
 * a job is never queued with a value other than the one meant.
 */
#include "submit.h"
#include "text_safe.h"

#include "estimate.h"
#include "proto.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

json_t *submit_job(json_t *cmd, const submit_defaults *def) {
    json_t *job = json_pack("{s:o, s:i}", "cmd", cmd, "gpus", (int)def->gpus);
    if (def->mem >= 0) json_object_set_new(job, "mem_mib", json_real(def->mem));
    if (def->name) json_object_set_new(job, "name", json_string(def->name));
    if (def->feed) json_object_set_new(job, "feed", json_string(def->feed));
    if (def->feed_producer)
        json_object_set_new(job, "feed_producer", json_true());
    if (def->after && json_array_size(def->after) > 0)
        json_object_set_new(job, "after", json_deep_copy(def->after));
    if (def->mps_threads > 0)
        json_object_set_new(job, "mps_threads_pct",
                            json_integer(def->mps_threads));
    if (def->time_limit > 0)
        json_object_set_new(job, "time_limit_s", json_real(def->time_limit));
    if (def->nice > 0) json_object_set_new(job, "nice", json_integer(def->nice));
    if (def->notify)
        json_object_set_new(job, "notify", json_string(def->notify));
    if (def->cpus > 0) json_object_set_new(job, "cpus", json_integer(def->cpus));
    if (def->host_mem > 0)
        json_object_set_new(job, "host_mem_mib", json_real(def->host_mem));
    if (def->stdout_path)
        json_object_set_new(job, "stdout_path", json_string(def->stdout_path));
    if (def->stderr_path)
        json_object_set_new(job, "stderr_path", json_string(def->stderr_path));
    return job;
}

json_t *submit_shell(const char *line) {
    return json_pack("[s, s, s]", "/bin/sh", "-c", line);
}

void submit_desc_warnings(const char *cmd, const char *name,
                          const est_desc *d) {
    for (size_t i = 0; i < d->nwarnings; i++) {
        /* a description is any file: its text must not drive the
         * terminal (escape sequences) */
        char safe[1024], file[4200];
        text_safe(safe, sizeof(safe), d->warnings[i]);
        text_safe(file, sizeof(file), name); /* a file's name: any bytes */
        fprintf(stderr, "aegis %s: %s: warning: %s\n", cmd, file, safe);
    }
}

int submit_model_mem(const char *path, double *mem) {
    char err[512];
    est_desc *d = est_desc_load(path, err, sizeof(err));
    if (!d) {
        fprintf(stderr, "aegis submit: %s\n", err);
        return -1;
    }
    est_components c;
    est_result r;
    est_physical(d, &c);
    est_correct(&c, &est_learned_shipped, EST_STACK_AEGIS, &r);
    submit_desc_warnings("submit", path, d); /* what the estimate stands on */
    est_desc_free(d);
    /* The daemon takes at most 1 TiB (2^20 MiB), as --mem does. */
    if (r.estimate_mib > PROTO_MAX_MEM_MIB) {
        fprintf(stderr, "aegis submit: %s: its estimate, %.0f MiB, is over "
                "the %.0f MiB a job may ask\n", path, r.estimate_mib,
                PROTO_MAX_MEM_MIB);
        return -1;
    }
    *mem = r.estimate_mib;
    return 0;
}

int submit_parse_mem(const char *text, double *mib) {
    static const struct { const char *unit; double mib; } units[] = {
        {"", 1}, {"m", 1}, {"mb", 1}, {"mib", 1},
        {"g", 1024}, {"gb", 1024}, {"gib", 1024},
        {"t", 1048576}, {"tb", 1048576}, {"tib", 1048576},
    };
    /* digits first: no sign, space, inf or nan; and no hex (strtod's) */
    if (!isdigit((unsigned char)text[0]) && text[0] != '.') return -1;
    char *end;
    double v = strtod(text, &end);
    if (end == text || memchr(text, 'x', (size_t)(end - text)) ||
        memchr(text, 'X', (size_t)(end - text)))
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
        if (strcasecmp(end, units[i].unit) != 0) continue;
        v *= units[i].mib;
        /* under 1 MiB is no job's memory: 0.0001 and 1e-400 (which
         * strtod makes 0) were taken as 0 MiB, admitting the job as if it
         * needed none */
        if (!isfinite(v) || v < PROTO_MIN_MEM_MIB || v > PROTO_MAX_MEM_MIB)
            return -1;
        *mib = v;
        return 0;
    }
    return -1;
}

/* The most digits a job id of --after may have (aegisd's ids stay far
 * below). */
#define SUBMIT_ID_DIGITS 15

/* A job id of text[0..len): digits only, 1 and up; 0 when it is not one. */
static int64_t submit_id(const char *text, size_t len) {
    int64_t id = 0;
    if (len == 0 || len > SUBMIT_ID_DIGITS) return 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)text[i])) return 0;
        id = id * 10 + (text[i] - '0');
    }
    return id;
}

/* One target of a dependency, text[0..len), appended to deps. */
static int submit_dep_target(const char *text, size_t len, const char *kind,
                             bool names, json_t *deps, char *err,
                             size_t errlen) {
    int64_t id = submit_id(text, len);
    if (id > 0) {
        json_array_append_new(deps, json_pack("{s:I, s:s}", "id",
                                              (json_int_t)id, "kind", kind));
        return 0;
    }
    bool digits = len > 0 && strspn(text, "0123456789") >= len;
    if (digits && len > SUBMIT_ID_DIGITS) {
        snprintf(err, errlen, "'%.*s' is too large for a job id (at most %d "
                 "digits)", (int)len, text, SUBMIT_ID_DIGITS);
        return -1;
    }
    if (!names || len == 0 || digits) {
        snprintf(err, errlen, "'%.*s' is not a job id%s", (int)len, text,
                 digits ? " (ids start at 1)"
                 : names ? ""
                         : " (jobs are named only inside one spec file)");
        return -1;
    }
    json_t *name = json_stringn(text, len);
    if (!name) {
        snprintf(err, errlen, "'%.*s' is not UTF-8 text", (int)len, text);
        return -1;
    }
    json_array_append_new(deps, json_pack("{s:o, s:s}", "name", name, "kind",
                                          kind));
    return 0;
}

/* One comma-separated item: ID, NAME or KIND:TARGET[:TARGET...]. */
static int submit_dep_item(const char *item, size_t len, bool names,
                           json_t *deps, char *err, size_t errlen) {
    const char *colon = memchr(item, ':', len);
    const char *kind = "afterok";
    char kind_text[32];
    if (colon) {
        size_t klen = (size_t)(colon - item);
        snprintf(kind_text, sizeof(kind_text), "%.*s",
                 (int)(klen < sizeof(kind_text) ? klen : sizeof(kind_text) - 1),
                 item);
        if (klen >= sizeof(kind_text) || proto_dep_kind_of(kind_text) < 0) {
            snprintf(err, errlen, "'%.*s:' is not a dependency aegis knows: "
                     "afterok:, afterany: or afternotok: (Slurm's after:, "
                     "aftercorr: and singleton are not kept)", (int)klen,
                     item);
            return -1;
        }
        kind = kind_text;
        len -= klen + 1;
        item = colon + 1;
        if (len == 0) {
            snprintf(err, errlen, "'%s:' names no job", kind);
            return -1;
        }
    } else if (len == 9 && memcmp(item, "singleton", 9) == 0) {
        snprintf(err, errlen, "singleton is not a dependency aegis knows: "
                 "afterok, afterany or afternotok");
        return -1;
    }
    for (;;) {
        const char *next = memchr(item, ':', len);
        size_t n = next ? (size_t)(next - item) : len;
        if (submit_dep_target(item, n, kind, names, deps, err, errlen))
            return -1;
        if (!next) return 0;
        len -= n + 1;
        item = next + 1;
    }
}

int submit_parse_after(const char *text, bool names, json_t *deps, char *err,
                       size_t errlen) {
    if (!text[0]) {
        snprintf(err, errlen, "no job given");
        return -1;
    }
    for (const char *item = text;;) {
        size_t len = strcspn(item, ",");
        if (len == 0) {
            snprintf(err, errlen, "'%s': an empty item between commas", text);
            return -1;
        }
        if (submit_dep_item(item, len, names, deps, err, errlen)) return -1;
        if (json_array_size(deps) > PROTO_MAX_DEPS) {
            snprintf(err, errlen, "more than %d jobs to wait for",
                     PROTO_MAX_DEPS);
            return -1;
        }
        if (!item[len]) return 0;
        item += len + 1;
    }
}

/* A whole number at *p (advanced past it) into *out; -1 when none. */
static int submit_range_number(const char **p, long *out) {
    if (!isdigit((unsigned char)**p)) return -1;
    char *end;
    long v = strtol(*p, &end, 10);
    if (v > 1000000000L) return -1;
    *out = v;
    *p = end;
    return 0;
}

static int cmp_index(const void *a, const void *b) {
    json_int_t x = json_integer_value(*(json_t *const *)a),
               y = json_integer_value(*(json_t *const *)b);
    return (x > y) - (x < y);
}

/* The indices of idx once each, in rising order, as Slurm's --array takes
 * them ("1,1,0-2" is 0, 1, 2: three jobs, not five). */
static json_t *submit_unique_indices(json_t *idx) {
    size_t n = json_array_size(idx);
    json_t **items = malloc((n ? n : 1) * sizeof(*items));
    json_t *out = items ? json_array() : NULL;
    for (size_t i = 0; out && i < n; i++) items[i] = json_array_get(idx, i);
    if (out) qsort(items, n, sizeof(*items), cmp_index);
    for (size_t i = 0; out && i < n; i++)
        if (i == 0 || cmp_index(&items[i], &items[i - 1]) != 0)
            json_array_append(out, items[i]);
    free(items);
    json_decref(idx);
    return out;
}

json_t *submit_parse_range(const char *text, char *err, size_t errlen) {
    json_t *idx = json_array();
    const char *p = text;
    for (;;) {
        const char *item = p;
        long first, last, step = 1;
        bool ok = submit_range_number(&p, &first) == 0, range = *p == '-';
        last = first;
        if (ok && range) {
            p++;
            ok = submit_range_number(&p, &last) == 0 && last >= first;
        }
        /* a STEP belongs to a range: "5:2" is no index Slurm takes */
        if (ok && range && *p == ':') {
            p++;
            ok = submit_range_number(&p, &step) == 0 && step >= 1;
        }
        if (!ok || (*p && *p != ',')) {
            snprintf(err, errlen, "'%.*s' is not a range FIRST[-LAST[:STEP]] "
                     "(whole numbers, FIRST <= LAST, STEP >= 1), as in 0-99",
                     (int)strcspn(item, ","), item);
            json_decref(idx);
            return NULL;
        }
        if ((last - first) / step + 1 + (long)json_array_size(idx) >
            PROTO_MAX_JOBS) {
            snprintf(err, errlen, "'%s': more than %d jobs", text,
                     PROTO_MAX_JOBS);
            json_decref(idx);
            return NULL;
        }
        for (long i = first; i <= last; i += step)
            json_array_append_new(idx, json_integer(i));
        if (!*p) return submit_unique_indices(idx);
        p++;
    }
}

bool submit_blank(const char *text) {
    while (isspace((unsigned char)*text)) text++;
    return *text == '\0';
}

bool submit_is_shell(const char *word) {
    return word[strcspn(word, " \t\n;&|<>()$`\\\"'*?[~")] != '\0';
}

char *submit_find_program(const char *name) {
    const char *path = getenv("PATH");
    for (const char *dir = path; dir && *dir;) {
        size_t len = strcspn(dir, ":");
        size_t need = (len ? len : 1) + strlen(name) + 2;
        char *full = malloc(need);
        if (!full) return NULL;
        /* an empty entry is the current directory, as for execvp */
        snprintf(full, need, "%.*s/%s", len ? (int)len : 1, len ? dir : ".",
                 name);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
            access(full, X_OK) == 0)
            return full;
        free(full);
        dir += len;
        if (*dir == ':') dir++;
    }
    return NULL;
}

/* The request is JSON,
 * which holds UTF-8 text only: a directory that is not cannot be sent, and
 * a variable that is not is left out, saying so. */
bool submit_path_ok(const char *what, const char *path, const char *remedy,
                    char *err, size_t errlen) {
    if (text_is_utf8(path)) return true;
    char shown[4400];
    text_safe(shown, sizeof(shown), path);
    snprintf(err, errlen, "%s '%s' is not UTF-8 text, and aegisd's requests "
             "(JSON) carry only that: %s", what, shown, remedy);
    return false;
}

json_t *submit_request(json_t *jobs) {
    char cwd[4096], err[4600];
    if (!getcwd(cwd, sizeof(cwd))) {
        perror("aegis submit: the current directory");
        json_decref(jobs);
        return NULL;
    }
    if (!submit_path_ok("the current directory", cwd, "submit from a "
                        "directory whose path is UTF-8", err, sizeof(err))) {
        fprintf(stderr, "aegis submit: %s\n", err);
        json_decref(jobs);
        return NULL;
    }
    json_t *dir = json_string(cwd);
    json_t *env = json_array();
    for (char **e = environ; *e; e++) {
        json_t *s = json_string(*e);
        if (s && strchr(*e, '=') && **e != '=') json_array_append_new(env, s);
        else json_decref(s);
        if (!s)
            fprintf(stderr, "aegis submit: %.*s is not passed to the job: "
                    "not UTF-8 text\n", (int)strcspn(*e, "="), *e);
    }
    /* the jobs make their files as the submitter's shell would (as Slurm
     * passes SLURM_UMASK): read by setting it, then put back */
    mode_t mask = umask(0);
    umask(mask);
    return json_pack("{s:s, s:o, s:o, s:o, s:i}", "op", "submit", "cwd", dir,
                     "env", env, "jobs", jobs, "umask", (int)mask);
}
