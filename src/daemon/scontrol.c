/* scontrol.c -- Slurm's scontrol run in the background (lease.c asks it
 * to requeue a job after an OOM, and which processes a job still has).
 *
 * The loop never waits for it: its output comes through a pipe the loop
 * reads, and its exit through the SIGCHLD handler, which reaps every
 * child of aegisd with waitpid(-1) (daemon.c) and passes each pid here.
 * That is why it is started with posix_spawn and not uv_spawn: libuv's
 * own child watcher would race that handler for the exit status. A run
 * ends once both its output is closed and its exit reaped; one still
 * running after D_SCONTROL_TIMEOUT_S is killed (a slurmd that does not
 * answer must not keep a lease undecided for ever).
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define D_SCONTROL_TIMEOUT_S 30.0
/* Output kept of a run: listpids of a large job fits. */
#define D_SCONTROL_OUT_MAX 65536

extern char **environ;

typedef struct d_scontrol_run {
    struct d_scontrol_run *next;
    d_daemon *d;
    pid_t pid;
    uv_pipe_t out;              /* its stdout */
    bool out_open;
    bool orphan;                /* aegisd exits: freed once closed */
    bool reaped;
    int status;                 /* its exit code; -1: killed or failed */
    char buf[D_SCONTROL_OUT_MAX + 1];
    size_t len;
    double deadline;            /* d_now(); killed then */
    int64_t ctx;
    d_scontrol_done done;
    char what[48];              /* "requeue 12", for the log */
} d_scontrol_run;

static void d_scontrol_unlink(d_scontrol_run *r) {
    d_scontrol_run **p = &r->d->scontrols;
    while (*p && *p != r) p = &(*p)->next;
    if (*p) *p = r->next;
}

/* Calls back once both halves of its end have come. */
static void d_scontrol_maybe_done(d_scontrol_run *r) {
    if (r->out_open || !r->reaped) return;
    d_scontrol_unlink(r);
    r->buf[r->len] = '\0';
    r->done(r->d, r->ctx, r->status, r->buf);
    free(r);
}

static void on_out_closed(uv_handle_t *h) {
    d_scontrol_run *r = h->data;
    r->out_open = false;
    if (r->orphan) free(r);
    else d_scontrol_maybe_done(r);
}

static void on_out_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    static char sink[4096]; /* past the cap: read and dropped */
    d_scontrol_run *r = h->data;
    *buf = r->len < D_SCONTROL_OUT_MAX
               ? uv_buf_init(r->buf + r->len,
                             (unsigned)(D_SCONTROL_OUT_MAX - r->len))
               : uv_buf_init(sink, sizeof(sink));
}

static void on_out_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    d_scontrol_run *r = s->data;
    if (n > 0 && buf->base == r->buf + r->len) r->len += (size_t)n;
    if (n < 0) uv_close((uv_handle_t *)&r->out, on_out_closed);
}

void d_scontrol(d_daemon *d, const char *verb, uint32_t slurm_job,
                int64_t ctx, d_scontrol_done done) {
    char job[16];
    snprintf(job, sizeof(job), "%u", slurm_job);
    d_scontrol_run *r = calloc(1, sizeof(*r));
    int p[2] = {-1, -1};
    if (!r || pipe2(p, O_CLOEXEC) != 0) {
        d_log("%s %s %s: not run: %s", d->scontrol, verb, job,
              strerror(errno));
        free(r);
        done(d, ctx, -1, "");
        return;
    }
    snprintf(r->what, sizeof(r->what), "%s %s", verb, job);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    char *argv[] = {d->scontrol, (char *)verb, job, NULL};
    int rc = posix_spawnp(&r->pid, d->scontrol, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        d_log("%s %s: not run: %s", d->scontrol, r->what, strerror(rc));
        close(p[0]);
        free(r);
        done(d, ctx, -1, "");
        return;
    }
    r->d = d;
    r->ctx = ctx;
    r->done = done;
    r->deadline = d_now(d) + D_SCONTROL_TIMEOUT_S;
    r->next = d->scontrols;
    d->scontrols = r;
    uv_pipe_init(d->loop, &r->out, 0);
    r->out.data = r;
    r->out_open = true;
    if (uv_pipe_open(&r->out, p[0]) != 0 ||
        uv_read_start((uv_stream_t *)&r->out, on_out_alloc, on_out_read) != 0)
        uv_close((uv_handle_t *)&r->out, on_out_closed);
}

void d_scontrol_reaped(d_daemon *d, pid_t pid, int status) {
    d_scontrol_run *r = d->scontrols;
    while (r && (r->pid != pid || r->reaped)) r = r->next;
    if (!r) return;
    r->reaped = true;
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (r->status != 0)
        d_log("%s %s: %s %d", d->scontrol, r->what,
              WIFEXITED(status) ? "exit" : "killed by signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    d_scontrol_maybe_done(r);
}

void d_scontrol_tick(d_daemon *d) {
    double now = d_now(d);
    for (d_scontrol_run *r = d->scontrols; r; r = r->next)
        if (!r->reaped && now >= r->deadline) {
            d_log("%s %s: no answer in %.0f s: killed", d->scontrol, r->what,
                  D_SCONTROL_TIMEOUT_S);
            kill(r->pid, SIGKILL);
            r->deadline = now + D_SCONTROL_TIMEOUT_S;
        }
}

void d_scontrol_close(d_daemon *d) {
    while (d->scontrols) {
        d_scontrol_run *r = d->scontrols;
        d->scontrols = r->next;
        r->orphan = true;
        if (!r->out_open) free(r);
        else if (!uv_is_closing((uv_handle_t *)&r->out))
            uv_close((uv_handle_t *)&r->out, on_out_closed);
    }
}
