/* notify.c -- the notifiers of jobs' ends (notify.h for what they get).
 *
 * A notifier is forked as the job's shim is, by the executor
 * (exec_notify_start), not by uv_spawn: it must get its user's groups
 * (initgroups), which uv_spawn cannot give, and aegisd's SIGCHLD handler
 * reaps every child with waitpid(-1), which would take their statuses
 * from libuv. aegisd only forks it and goes on; its end comes as a
 * SIGCHLD like a shim's (d_notify_reaped), its time limit is checked each
 * tick.
 *
 * Restarts: a job that ended while aegisd was down is found ended by the
 * next aegisd, which finishes it then and so runs its notifier then
 * (AEGIS_JOB_DURATION_S counts to that moment). A notifier still running
 * when aegisd stops goes on alone, in its own session, no longer timed or
 * logged. An aegisd killed between starting a notifier and saving the
 * job's end runs it again after the restart: a notifier may run twice,
 * never none for an end aegisd saved.
 */
#include "daemon.h"

#include "exec.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The variables a notifier gets (notify.h), and the NULL after them. */
#define D_NOTIFY_VARS 8

/* The command the job's end runs: its own --notify, else the config's;
 * NULL for none. */
static const char *d_notify_cmd(const d_daemon *d, json_t *row) {
    json_t *own = json_object_get(row, "notify");
    const char *cmd = json_is_string(own) ? json_string_value(own)
                                          : d->keys.notify;
    return cmd[0] ? cmd : NULL;
}

/* An exit status as a shell says it: 128 + N for signal N; "" for none. */
static void d_notify_status(int status, char *out, size_t outlen) {
    if (status < 0) snprintf(out, outlen, "%s", "");
    else if (WIFEXITED(status)) snprintf(out, outlen, "%d", WEXITSTATUS(status));
    else snprintf(out, outlen, "%d", 128 + WTERMSIG(status));
}

static int d_notifier_add(d_daemon *d, pid_t pid, int64_t id) {
    if (d->nnotifiers == d->capnotifiers) {
        size_t cap = d->capnotifiers ? d->capnotifiers * 2 : 16;
        d_notifier *grown = realloc(d->notifiers, cap * sizeof(*grown));
        if (!grown) return -1;
        d->notifiers = grown;
        d->capnotifiers = cap;
    }
    d->notifiers[d->nnotifiers++] = (d_notifier){
        .pid = pid, .job_id = id,
        .kill_at = d_now(d) + d->keys.notify_timeout_s};
    return 0;
}

void d_notify_job_end(d_daemon *d, const d_job *job, const char *state,
                      const char *reason) {
    json_t *row = store_job(d->st, job->id, true);
    const char *cmd = row ? d_notify_cmd(d, row) : NULL;
    if (!cmd) {
        json_decref(row);
        return;
    }
    char vars[D_NOTIFY_VARS - 1][640], status[16];
    d_notify_status(job->last_status, status, sizeof(status));
    double ran = job->started > 0 ? d_wall() - job->started : 0;
    snprintf(vars[0], sizeof(vars[0]), "AEGIS_JOB_ID=%lld", (long long)job->id);
    snprintf(vars[1], sizeof(vars[1]), "AEGIS_JOB_NAME=%s",
             json_string_value(json_object_get(row, "name")));
    snprintf(vars[2], sizeof(vars[2]), "AEGIS_JOB_USER=%s", job->user);
    snprintf(vars[3], sizeof(vars[3]), "AEGIS_JOB_STATE=%s", state);
    snprintf(vars[4], sizeof(vars[4]), "AEGIS_JOB_REASON=%s", reason);
    snprintf(vars[5], sizeof(vars[5]), "AEGIS_JOB_EXIT_STATUS=%s", status);
    snprintf(vars[6], sizeof(vars[6]), "AEGIS_JOB_DURATION_S=%.0f",
             ran > 0 ? ran : 0);
    const char *set[D_NOTIFY_VARS];
    for (int i = 0; i < D_NOTIFY_VARS - 1; i++) set[i] = vars[i];
    set[D_NOTIFY_VARS - 1] = NULL;
    const char **env = d_strings(json_object_get(row, "env"));
    exec_notify_spec spec = {
        .id = job->id, .cmd = cmd,
        .cwd = json_string_value(json_object_get(row, "cwd")),
        .env = env, .vars = set, .as_user = d->as_root,
        .uid = job->uid, .gid = job->gid, .user = job->user,
    };
    char err[256];
    pid_t pid = env ? exec_notify_start(&spec, err, sizeof(err)) : -1;
    if (!env) snprintf(err, sizeof(err), "job %lld: notifier: out of memory",
                       (long long)job->id);
    if (pid > 0 && d_notifier_add(d, pid, job->id) != 0)
        snprintf(err, sizeof(err), "job %lld: notifier: out of memory: not "
                 "timed", (long long)job->id);
    else if (pid > 0)
        err[0] = '\0';
    if (err[0]) {
        d_log("%s", err);
        store_event(d->st, job->id, d_wall(), "%s", err);
    }
    free(env);
    json_decref(row);
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
                 d->keys.notify_timeout_s);
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
    return true;
}

void d_notify_tick(d_daemon *d) {
    double now = d_now(d);
    for (size_t i = 0; i < d->nnotifiers; i++) {
        d_notifier *n = &d->notifiers[i];
        if (n->killed || now < n->kill_at) continue;
        n->killed = true;
        kill(-n->pid, SIGKILL); /* its session: the shell's children too */
    }
}
