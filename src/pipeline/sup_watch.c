/* sup_watch.c -- a supervisor's wait for data (supervisor.h). The
 * dataset's watcher runs inside the supervisor, as the issue has it
 * ("inside the pipeline's supervisor"), unless `aegis dataset watch` or
 * another supervisor of the same dataset already runs it: one watcher per
 * dataset, by the lock on its key log. Then this one waits for the key
 * log to grow, and looks every few seconds whether that watcher is gone
 * for good: a watcher job (`dataset watch --detach`, aegisd's job
 * dataset.NAME) that failed past its restarts or was stopped, or a
 * terminal's watcher that ended. Then it takes the lock and watches
 * here, and says so, rather than wait for samples no one registers.
 * While aegisd still runs or will restart such a job, the lock is left
 * to it: taking it in a back-off would fail the job's next start.
 */
#include "supervisor.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

/* How often a supervisor following another watcher's key log looks
 * whether that watcher is gone (seconds). */
#define SUP_TAKEOVER_S 5

/* Starts the watcher opened as s->watcher: its inotify, and a scan of
 * what is there. 0, or -1 with err. */
static int sup_watch_begin(sup *s, char *err, size_t errlen) {
    s->watcher_fd = pl_watch_start(s->watcher, err, errlen);
    if (s->watcher_fd < 0 || pl_watch_scan(s->watcher, err, errlen) < 0)
        return -1;
    return 0;
}

int sup_watch_open(sup *s, char *err, size_t errlen) {
    char why[1024];
    if (pl_watch_open(s->state, s->cfg.dataset, &s->watcher, why,
                      sizeof(why)) != 0) {
        printf("pipeline %s: not watching dataset %s here: %s\n",
               s->cfg.name, s->cfg.dataset, why);
        s->watcher = NULL;
        s->takeover_look = time(NULL);
        return 0;
    }
    return sup_watch_begin(s, err, errlen);
}

/* Whether aegisd has a watcher job of the dataset (the owner's
 * dataset.NAME) that runs or will run again: not done, failed or
 * cancelled. Not knowing (aegisd away) counts as yes. */
static bool sup_watcher_job_lives(sup *s) {
    char uid[32], name[128];
    snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());
    snprintf(name, sizeof(name), "dataset.%s", s->cfg.dataset);
    int rc;
    json_t *ans = client_call("pipeline", s->socket,
                              json_pack("{s:s, s:b, s:s}", "op", "ls", "all",
                                        1, "user", uid), &rc), *row;
    if (!ans) return true;
    bool lives = false;
    size_t i;
    json_array_foreach(json_object_get(ans, "jobs"), i, row) {
        const char *rn = json_string_value(json_object_get(row, "name"));
        const char *st = json_string_value(json_object_get(row, "state"));
        if (rn && st && strcmp(rn, name) == 0 && strcmp(st, "done") != 0 &&
            strcmp(st, "failed") != 0 && strcmp(st, "cancelled") != 0)
            lives = true;
    }
    json_decref(ans);
    return lives;
}

/* Watches the dataset here once no other watcher runs or will run (the
 * file's comment), looking every SUP_TAKEOVER_S. */
static void sup_take_over(sup *s) {
    int64_t now = time(NULL);
    if (now - s->takeover_look < SUP_TAKEOVER_S) return;
    s->takeover_look = now;
    char err[1024];
    if (sup_watcher_job_lives(s) ||
        pl_watch_open(s->state, s->cfg.dataset, &s->watcher, err,
                      sizeof(err)) != 0) {
        s->watcher = NULL; /* still another's (a terminal's watcher) */
        return;
    }
    printf("pipeline %s: dataset %s: no other watcher of it runs now: "
           "watching it here\n", s->cfg.name, s->cfg.dataset);
    if (sup_watch_begin(s, err, sizeof(err)) != 0)
        fprintf(stderr, "pipeline %s: dataset %s: %s\n", s->cfg.name,
                s->cfg.dataset, err);
    if (s->watch_fd >= 0) close(s->watch_fd);
    s->watch_fd = -1;
}

/* The dataset's folder, watched for its key log's growth; a look every
 * timeout_ms all the same (a change the watch missed, or none made). A
 * folder that cannot be watched yet (not made yet) is tried again the
 * next time. */
static void sup_wait_log(sup *s, int timeout_ms) {
    if (s->watch_fd < 0) {
        char dir[4300];
        snprintf(dir, sizeof(dir), "%s/datasets/%s", s->state,
                 s->cfg.dataset);
        int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd >= 0 &&
            inotify_add_watch(fd, dir, IN_MODIFY | IN_CLOSE_WRITE |
                                           IN_MOVED_TO | IN_CREATE) < 0) {
            close(fd);
            fd = -1;
        }
        s->watch_fd = fd;
    }
    int fd = s->watch_fd;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, fd >= 0 ? 1 : 0, timeout_ms) > 0) {
        char buf[4096];
        while (read(fd, buf, sizeof(buf)) > 0) {}
    }
}

/* The watcher's events registered as they come; a scan when none came
 * within timeout_ms. A log that cannot be written is told and tried again
 * at the next look: the files stay where they are. */
static void sup_wait_watcher(sup *s, int timeout_ms) {
    char err[1024];
    struct pollfd p = {.fd = s->watcher_fd, .events = POLLIN};
    int64_t got = poll(&p, 1, timeout_ms) > 0
                      ? pl_watch_events(s->watcher, err, sizeof(err))
                      : pl_watch_scan(s->watcher, err, sizeof(err));
    if (got < 0)
        fprintf(stderr, "pipeline %s: dataset %s: %s\n", s->cfg.name,
                s->cfg.dataset, err);
}

void sup_wait_data(sup *s, int timeout_ms) {
    if (!s->watcher && !s->replay) sup_take_over(s);
    if (s->watcher) sup_wait_watcher(s, timeout_ms);
    else sup_wait_log(s, timeout_ms);
}
