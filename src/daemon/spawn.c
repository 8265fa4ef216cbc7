/* spawn.c -- starts the watchers of launched attempts off the loop.
 *
 * posix_spawn returns only once the child has exec'd the shim; on a loaded
 * machine that is 10 ms and more a job, and done on the loop it kept every
 * client waiting while short jobs churned. So the loop readies each
 * attempt (exec_prepare: its locked status file, the shim's arguments)
 * and libuv's thread pool opens its logs and spawns it (exec_spawn). Until the spawn returns, the attempt's status
 * file is locked by aegisd's own descriptor, so the loop sees the attempt
 * live, as it sees a shim that has not yet forked its job; a cancel in
 * that time is sent once the job's pid is in its status record
 * (d_job_probe), as it is for any attempt just started.
 */
#include "daemon.h"

#include <stdlib.h>

typedef struct d_spawn {
    uv_work_t work;
    d_daemon *d;
    int64_t id;
    int attempt;
    exec_pending *pending;
    exec_run run;
    int rc;                     /* exec_spawn's */
    char err[1024];
} d_spawn;

/* In the thread pool: touches only its own request. */
static void on_spawn_work(uv_work_t *w) {
    d_spawn *s = w->data;
    s->rc = exec_spawn(s->pending, &s->run, s->err, sizeof(s->err));
}

/* The spawn's outcome, on the loop: aegisd's descriptors closed (the shim
 * holds the lock now), the job told. */
static void d_spawn_finish(d_spawn *s) {
    exec_pending_free(s->pending);
    d_job_spawned(s->d, s->id, s->attempt, &s->run,
                  s->rc == 0 ? NULL : s->err);
}

static void on_spawned(uv_work_t *w, int status) {
    d_spawn_finish(w->data);
    free(w->data);
}

void d_spawn_later(d_daemon *d, int64_t id, int attempt,
                   exec_pending *pending) {
    d_spawn *s = calloc(1, sizeof(*s));
    if (s) {
        *s = (d_spawn){.d = d, .id = id, .attempt = attempt,
                       .pending = pending};
        s->work.data = s;
        if (uv_queue_work(d->loop, &s->work, on_spawn_work, on_spawned) == 0)
            return;
        free(s);
    }
    /* no request or no pool: spawned here, on the loop, as before */
    d_spawn now = {.d = d, .id = id, .attempt = attempt, .pending = pending};
    now.work.data = &now;
    on_spawn_work(&now.work);
    d_spawn_finish(&now);
}
