/* notify.c -- the notifiers of jobs' ends (notify.h for what they get).
 *
 * A notifier is spawned as a job's shim is, by the executor
 * (exec_notify_start: the aegis-shim program, which becomes the shell),
 * not by uv_spawn: it must get its user's groups (initgroups), which
 * uv_spawn cannot give, and aegisd's SIGCHLD handler reaps every child
 * with waitpid(-1), which would take their statuses from libuv. aegisd
 * never forks itself for it: it spawns it and goes on; its end comes as a
 * SIGCHLD like a shim's (d_notify_reaped), its time limit is checked each
 * tick. At most D_NOTIFY_RUNNING run at once: cancelling an array of
 * 10,000 jobs queues their notices, in memory, rather than fork 10,000
 * shells at once.
 *
 * Restarts: a job that ended while aegisd was down is found ended by the
 * next aegisd, which finishes it then and so notifies it then
 * (AEGIS_JOB_DURATION_S counts to that moment). A notifier still running
 * when aegisd stops goes on alone, in its own session, no longer timed or
 * logged; notices still waiting for their turn then are lost. An aegisd
 * killed between starting a notifier and saving the job's end runs it
 * again after the restart.
 */
#include "daemon.h"

#include "exec.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Notifiers running at once; the other notices wait for their turn. */
#define D_NOTIFY_RUNNING 32

/* The variables a notifier gets (notify.h), and the NULL after them. */
#define D_NOTIFY_VARS 8

d_notify_kind d_notify_kind_of(const char *notify) {
    return !notify    ? D_NOTIFY_DEFAULT
           : notify[0] ? D_NOTIFY_OWN
                       : D_NOTIFY_NONE;
}

/* An exit status as a shell says it: 128 + N for signal N; "" for none. */
static void d_notify_status(int status, char *out, size_t outlen) {
    if (status < 0) snprintf(out, outlen, "%s", "");
    else if (WIFEXITED(status))
        snprintf(out, outlen, "%d", WEXITSTATUS(status));
    else snprintf(out, outlen, "%d", 128 + WTERMSIG(status));
}

/* Grows an array of n items of size `size` to hold one more. */
static int d_grow(void **items, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return 0;
    size_t more = *cap ? *cap * 2 : 16;
    void *grown = realloc(*items, more * size);
    if (!grown) return -1;
    *items = grown;
    *cap = more;
    return 0;
}

/* The notifier's variables for notice n, with their NULL, into set. */
static void d_notify_vars(const d_notice *n, const char *name,
                          char vars[D_NOTIFY_VARS - 1][640], const char **set) {
    char status[16];
    d_notify_status(n->status, status, sizeof(status));
    snprintf(vars[0], sizeof(vars[0]), "AEGIS_JOB_ID=%lld", (long long)n->id);
    snprintf(vars[1], sizeof(vars[1]), "AEGIS_JOB_NAME=%s", name);
    snprintf(vars[2], sizeof(vars[2]), "AEGIS_JOB_USER=%s", n->user);
    snprintf(vars[3], sizeof(vars[3]), "AEGIS_JOB_STATE=%s", n->state);
    snprintf(vars[4], sizeof(vars[4]), "AEGIS_JOB_REASON=%s", n->reason);
    snprintf(vars[5], sizeof(vars[5]), "AEGIS_JOB_EXIT_STATUS=%s", status);
    snprintf(vars[6], sizeof(vars[6]), "AEGIS_JOB_DURATION_S=%.0f",
             n->duration_s);
    for (int i = 0; i < D_NOTIFY_VARS - 1; i++) set[i] = vars[i];
    set[D_NOTIFY_VARS - 1] = NULL;
}

/* Starts the notifier of notice n with its job's row (its command, name,
 * directory and environment): its pid, or -1 with why in err. */
static pid_t d_notify_start(d_daemon *d, const d_notice *n, json_t *row,
                            char *err, size_t errlen) {
    json_t *own = json_object_get(row, "notify");
    char vars[D_NOTIFY_VARS - 1][640];
    const char *set[D_NOTIFY_VARS];
    d_notify_vars(n, json_string_value(json_object_get(row, "name")), vars,
                  set);
    const char **env = d_strings(json_object_get(row, "env"));
    exec_notify_spec spec = {
        .id = n->id,
        .cmd = json_is_string(own) ? json_string_value(own) : d->keys.notify,
        .cwd = json_string_value(json_object_get(row, "cwd")),
        .env = env, .vars = set, .as_user = d->as_root,
        .uid = n->uid, .gid = n->gid, .user = n->user,
        .shim_path = d->shim_path,
    };
    d_row_umask(row, &spec.has_umask, &spec.umask);
    pid_t pid = -1;
    if (!env || !spec.cmd[0])
        snprintf(err, errlen, "job %lld: notifier: %s", (long long)n->id,
                 env ? "the config's notify is gone (reloaded)"
                     : "out of memory");
    else
        pid = exec_notify_start(&spec, err, errlen);
    free(env);
    return pid;
}

/* Starts the notices waiting, oldest first, while fewer than
 * D_NOTIFY_RUNNING notifiers run. */
static void d_notify_next(d_daemon *d) {
    while (d->notice_head < d->nnotices && d->nnotifiers < D_NOTIFY_RUNNING &&
           d_grow((void **)&d->notifiers, d->nnotifiers, &d->capnotifiers,
                  sizeof(*d->notifiers)) == 0) {
        const d_notice *n = &d->notices[d->notice_head++];
        json_t *row = store_job(d->st, n->id, true);
        char err[256];
        pid_t pid = row ? d_notify_start(d, n, row, err, sizeof(err)) : -1;
        if (!row)
            snprintf(err, sizeof(err), "job %lld: notifier: its row is "
                     "unreadable: %s", (long long)n->id, store_errmsg(d->st));
        json_decref(row);
        if (pid > 0) {
            d->notifiers[d->nnotifiers++] = (d_notifier){
                .pid = pid, .job_id = n->id,
                .limit_s = d->keys.notify_timeout_s,
                .kill_at = d_now(d) + d->keys.notify_timeout_s};
        } else {
            d_log("%s", err);
            store_event(d->st, n->id, d_wall(), "%s", err);
        }
    }
    if (d->notice_head == d->nnotices) d->notice_head = d->nnotices = 0;
}

void d_notify_job_end(d_daemon *d, const d_job *job, const char *state,
                      const char *reason) {
    if (job->notify == D_NOTIFY_NONE ||
        (job->notify == D_NOTIFY_DEFAULT && !d->keys.notify[0]))
        return;
    if (d->nnotices == d->capnotices && d->notice_head > 0) {
        /* room at the head, where started notices were: move them down */
        d->nnotices -= d->notice_head;
        memmove(d->notices, d->notices + d->notice_head,
                d->nnotices * sizeof(*d->notices));
        d->notice_head = 0;
    }
    if (d_grow((void **)&d->notices, d->nnotices, &d->capnotices,
               sizeof(*d->notices)) != 0) {
        d_log("job %lld: notifier: out of memory: not run", (long long)job->id);
        return;
    }
    d_notice *n = &d->notices[d->nnotices++];
    double ran = job->started > 0 ? d_wall() - job->started : 0;
    *n = (d_notice){.id = job->id, .uid = job->uid, .gid = job->gid,
                    .status = job->last_status,
                    .duration_s = ran > 0 ? ran : 0};
    snprintf(n->user, sizeof(n->user), "%s", job->user);
    snprintf(n->state, sizeof(n->state), "%s", state);
    snprintf(n->reason, sizeof(n->reason), "%s", reason);
    d_notify_next(d);
}

bool d_notify_reaped(d_daemon *d, pid_t pid, int status) {
    size_t i = 0;
    while (i < d->nnotifiers && d->notifiers[i].pid != pid) i++;
    if (i == d->nnotifiers) return false;
    d_notifier n = d->notifiers[i];
    d->notifiers[i] = d->notifiers[--d->nnotifiers];
    char how[64];
    if (n.killed)
        snprintf(how, sizeof(how), "killed after its %.0f s limit",
                 n.limit_s);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        snprintf(how, sizeof(how), "exit 0");
    else if (WIFEXITED(status))
        snprintf(how, sizeof(how), "failed: exit %d", WEXITSTATUS(status));
    else
        snprintf(how, sizeof(how), "failed: killed by signal %d",
                 WTERMSIG(status));
    if (strcmp(how, "exit 0") != 0)
        d_log("job %lld: notifier (pid %d) %s; not retried",
              (long long)n.job_id, (int)pid, how);
    store_event(d->st, n.job_id, d_wall(), "notifier %s", how);
    d_notify_next(d);
    return true;
}

void d_notify_tick(d_daemon *d) {
    double now = d_now(d);
    for (size_t i = 0; i < d->nnotifiers; i++) {
        d_notifier *n = &d->notifiers[i];
        if (n->killed || now < n->kill_at) continue;
        n->killed = true;
        kill(n->pid, SIGTERM); /* its supervisor kills all it started */
    }
}
