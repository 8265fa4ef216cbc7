/* exec_shim_args.c -- how aegisd hands the watcher (aegis-shim) its work,
 * and how the watcher reads it back (exec_shim_args.h): a few numbers and
 * strings, the job's argv or a notifier's command, and the job's
 * environment, all in the watcher's own environment, which only root (or
 * aegisd's user) may read, under names that no variable of aegisd's or of
 * the submitter's can take.
 */
#include "exec_shim_args.h"

#include "autogroup.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Strings in v, a NULL-terminated vector. */
size_t exec_count(char *const *v) {
    size_t n = 0;
    while (v[n]) n++;
    return n;
}

/* Frees v's strings from `from` on, and v. */
static void exec_strings_free_from(char **v, size_t from) {
    for (size_t i = from; v && v[i]; i++) free(v[i]);
    free(v);
}

void exec_shim_argv_free(char **v) { exec_strings_free_from(v, 0); }

/* n strings of v from `at` on: copies of from's (NULL-terminated); 0, or
 * -1 out of memory. */
static int exec_argv_copy(char **v, size_t at, char *const *from) {
    for (size_t i = 0; from[i]; i++)
        if (!(v[at + i] = strdup(from[i]))) return -1;
    return 0;
}

/* The names under which the shim's environment carries the job's: the
 * job's K-th string "NAME=VALUE" is the shim's SHIM_ENV_PREFIX "K=NAME=VALUE"
 * (exec_shim_environ). */
#define SHIM_ENV_PREFIX "AEGIS_SHIM_ENV_"

/* The names under which the shim's environment carries its arguments
 * past the first: argv[K] as SHIM_ARG_PREFIX "K=..." (exec_spawn_shim).
 * Any user may read a process's arguments (ps); a job's folder, its -o
 * and -e paths and a notifier's command (a webhook's token, say) are its
 * submitter's. The shim's own arguments are its mode and the job's id. */
#define SHIM_ARG_PREFIX "AEGIS_SHIM_ARG_"
/* The weight of the job's session (exec_shim_args.session_nice), where it
 * is not 0: a variable, not an argument, so that a shim and an aegisd one
 * version apart (a package's upgrade) still read each other's. */
#define SHIM_NICE_VAR "AEGIS_SHIM_NICE"
/* All: aegisd's own variables of these names are not passed on. */
#define SHIM_NAMES "AEGIS_SHIM_"

/* The shim's argument vector: its fixed fields (with the number of the
 * job's environment strings, nenv), then tail: the job's argv, or the
 * notifier's command. Returns a malloc'd vector of malloc'd strings
 * (exec_shim_argv_free), or NULL. */
char **exec_shim_argv(const exec_shim_args *a, size_t nenv,
                      char *const *tail) {
    char **v = calloc(SHIM_FIXED + exec_count(tail) + 1, sizeof(*v));
    if (!v) return NULL;
    bool ok = asprintf(&v[0], "aegis-shim") >= 0 &&
         asprintf(&v[SHIM_MODE], "%s", a->mode) >= 0 &&
         asprintf(&v[SHIM_ID], "%lld", (long long)a->id) >= 0 &&
         asprintf(&v[SHIM_ATTEMPT], "%d", a->attempt) >= 0 &&
         asprintf(&v[SHIM_ERR_OFFSET], "%lld", a->err_offset) >= 0 &&
         asprintf(&v[SHIM_LOG_MAX], "%lld", a->log_max_bytes) >= 0 &&
         asprintf(&v[SHIM_AS_USER], "%d", a->as_user ? 1 : 0) >= 0 &&
         asprintf(&v[SHIM_UID], "%u", (unsigned)a->uid) >= 0 &&
         asprintf(&v[SHIM_GID], "%u", (unsigned)a->gid) >= 0 &&
         asprintf(&v[SHIM_USER], "%s", a->user ? a->user : "") >= 0 &&
         asprintf(&v[SHIM_CWD], "%s", a->cwd ? a->cwd : "/") >= 0 &&
         asprintf(&v[SHIM_CGROUPS], "%s", a->cgroups ? a->cgroups : "") >= 0 &&
         asprintf(&v[SHIM_OUT_PATH], "%s", a->out_path ? a->out_path : "") >= 0 &&
         asprintf(&v[SHIM_ERR_PATH], "%s", a->err_path ? a->err_path : "") >= 0 &&
         (a->has_umask ? asprintf(&v[SHIM_UMASK], "%03o", a->umask)
                       : asprintf(&v[SHIM_UMASK], "-")) >= 0 &&
         asprintf(&v[SHIM_NENV], "%zu", nenv) >= 0 &&
         exec_argv_copy(v, SHIM_FIXED, tail) == 0;
    if (!ok) {
        exec_shim_argv_free(v);
        return NULL;
    }
    return v;
}

/* The shim's environment: aegisd's own, then the job's strings (envp,
 * nenv of them) under SHIM_ENV_PREFIX names. Not as arguments: any user
 * may read a process's arguments (ps), only its user and root its
 * environment, and the shim runs as root. Not under their own names
 * either: a submitter's LD_PRELOAD must not load into a root process.
 * Returns a malloc'd vector of malloc'd strings (exec_shim_argv_free),
 * or NULL. */
char **exec_shim_environ(char *const *envp, int session_nice) {
    size_t nown = exec_count(environ), nenv = exec_count(envp), n = 0;
    size_t plen = strlen(SHIM_NAMES);
    char **v = calloc(nown + nenv + 2, sizeof(*v));
    bool ok = v != NULL;
    for (size_t i = 0; ok && i < nown; i++)
        if (strncmp(environ[i], SHIM_NAMES, plen) != 0)
            ok = (v[n++] = strdup(environ[i])) != NULL;
    for (size_t i = 0; ok && i < nenv; i++)
        if (!(ok = asprintf(&v[n], SHIM_ENV_PREFIX "%zu=%s", i, envp[i]) >= 0))
            v[n] = NULL;
        else
            n++;
    if (ok && session_nice != 0 &&
        !(ok = asprintf(&v[n], SHIM_NICE_VAR "=%d", session_nice) >= 0))
        v[n] = NULL;
    if (!ok) {
        exec_shim_argv_free(v);
        return NULL;
    }
    return v;
}

/* envp's strings, not copied (the job's were, once, by
 * exec_shim_environ), then argv's past its first under SHIM_ARG_PREFIX
 * names, the vector's own: a malloc'd vector (exec_args_in_env_free), or
 * NULL. */
char **exec_args_in_env(char *const *argv, char *const *envp) {
    size_t nargs = exec_count(argv), nenv = exec_count(envp);
    char **v = calloc(nenv + nargs + 1, sizeof(*v));
    bool ok = v != NULL;
    if (ok) memcpy(v, envp, nenv * sizeof(*v));
    for (size_t k = 1; ok && k < nargs; k++)
        if (!(ok = asprintf(&v[nenv + k - 1], SHIM_ARG_PREFIX "%zu=%s", k,
                            argv[k]) >= 0))
            v[nenv + k - 1] = NULL;
    if (!ok) {
        exec_args_in_env_free(v, envp);
        return NULL;
    }
    return v;
}

void exec_args_in_env_free(char **v, char *const *envp) {
    exec_strings_free_from(v, exec_count(envp));
}

/* A number of the shim's arguments, or -1 when it is not one. */
static long long exec_shim_number(const char *text) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && v >= 0 ? v : -1;
}

/* The weight of the job's session from the shim's environment: 0 where
 * it says none (an older aegisd), -1 where its value is not one. */
static int exec_shim_session_nice(void) {
    const char *text = getenv(SHIM_NICE_VAR);
    if (!text) return 0;
    long long v = exec_shim_number(text);
    return v > AUTOGROUP_NICE_MAX ? -1 : (int)v;
}

/* The values the shim's environment carries under numbered names, prefix
 * "K=VALUE" with K from `from` to from + n - 1 (the job's environment,
 * the shim's arguments): a malloc'd vector of from + n pointers, then
 * NULL, whose K-th points to VALUE in environ's string and those before
 * `from` are NULL; or NULL when one is missing, given twice or numbered
 * out of that range. */
static char **exec_shim_numbered(const char *prefix, size_t from, size_t n) {
    size_t plen = strlen(prefix);
    char **v = calloc(from + n + 1, sizeof(*v));
    bool ok = v != NULL;
    for (size_t i = 0; ok && environ[i]; i++) {
        if (strncmp(environ[i], prefix, plen) != 0) continue;
        const char *at = environ[i] + plen;
        char *end = NULL;
        unsigned long long k = 0;
        if (*at >= '0' && *at <= '9') k = strtoull(at, &end, 10);
        ok = end && *end == '=' && k >= from && k < from + n && !v[k];
        if (ok) v[k] = end + 1;
    }
    for (size_t k = from; ok && k < from + n; k++) ok = v[k] != NULL;
    if (!ok) {
        free(v);
        return NULL;
    }
    return v;
}

/* The shim's arguments (exec_shim_argv) into a, nums (by position) and
 * tail (argv's), and the job's environment from the shim's (*envp,
 * malloc'd): 0, or -1 when they are not aegisd's. */
static int exec_shim_parse(int argc, char **argv, exec_shim_args *a,
                           char ***envp, char ***tail) {
    long long nums[SHIM_FIXED];
    static const int numeric[] = {SHIM_ID, SHIM_ATTEMPT, SHIM_ERR_OFFSET,
                                  SHIM_LOG_MAX, SHIM_AS_USER, SHIM_UID,
                                  SHIM_GID, SHIM_NENV};
    bool ok = argc > SHIM_FIXED;
    for (size_t i = 0; ok && i < sizeof(numeric) / sizeof(*numeric); i++)
        ok = (nums[numeric[i]] = exec_shim_number(argv[numeric[i]])) >= 0;
    /* "-" (inherited) or the octal digits of a umask */
    char *end;
    long mask = strcmp(argv[SHIM_UMASK], "-") == 0
                    ? -1 : strtol(argv[SHIM_UMASK], &end, 8);
    int session_nice = exec_shim_session_nice();
    if (!ok || (mask >= 0 && (*end || mask > 0777)) || session_nice < 0)
        return -1;
    *a = (exec_shim_args){
        .mode = argv[SHIM_MODE], .id = nums[SHIM_ID],
        .attempt = (int)nums[SHIM_ATTEMPT],
        .err_offset = nums[SHIM_ERR_OFFSET],
        .log_max_bytes = nums[SHIM_LOG_MAX],
        .as_user = nums[SHIM_AS_USER] != 0, .uid = (uid_t)nums[SHIM_UID],
        .gid = (gid_t)nums[SHIM_GID], .user = argv[SHIM_USER],
        .cwd = argv[SHIM_CWD], .cgroups = argv[SHIM_CGROUPS],
        .out_path = argv[SHIM_OUT_PATH], .err_path = argv[SHIM_ERR_PATH],
        .has_umask = mask >= 0, .umask = mask >= 0 ? (unsigned)mask : 0,
        .session_nice = session_nice};
    *envp = exec_shim_numbered(SHIM_ENV_PREFIX, 0, (size_t)nums[SHIM_NENV]);
    if (!*envp) return -1;
    *tail = argv + SHIM_FIXED;
    return 0;
}

/* The shim's arguments, from its environment (exec_spawn_shim) into a
 * malloc'd vector of *argc, or argv itself where the environment has none
 * (an aegisd older than its shim, during a package's upgrade). NULL when
 * one is missing, given twice or numbered past their count. */
static char **exec_shim_args_found(int *argc, char **argv) {
    size_t plen = strlen(SHIM_ARG_PREFIX), n = 0;
    for (size_t i = 0; environ[i]; i++)
        n += strncmp(environ[i], SHIM_ARG_PREFIX, plen) == 0;
    if (n == 0) return argv;
    char **v = exec_shim_numbered(SHIM_ARG_PREFIX, 1, n);
    if (v) v[0] = argv[0];
    *argc = (int)n + 1;
    return v;
}

int exec_shim_args_read(int argc, char **argv, exec_shim_args *a,
                        char ***envp, char ***tail) {
    char **args = exec_shim_args_found(&argc, argv);
    if (!args) return -1;
    int rc = exec_shim_parse(argc, args, a, envp, tail);
    if (rc != 0 && args != argv) free(args);
    return rc;
}
