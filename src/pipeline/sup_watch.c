/* sup_watch.c -- a supervisor's wait for data (supervisor.h). The
 * dataset's watcher runs inside the supervisor, as the issue has it
 * ("inside the pipeline's supervisor"), unless `aegis dataset watch` or
 * another supervisor of the same dataset already runs it: one watcher per
 * dataset, by the lock on its key log. Then this one only waits for the
 * key log to grow.
 */
#include "supervisor.h"

#include <poll.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

int sup_watch_open(sup *s, char *err, size_t errlen) {
    char why[1024];
    if (pl_watch_open(s->state, s->cfg.dataset, &s->watcher, why,
                      sizeof(why)) != 0) {
        printf("pipeline %s: not watching dataset %s here: %s\n",
               s->cfg.name, s->cfg.dataset, why);
        s->watcher = NULL;
        return 0;
    }
    s->watcher_fd = pl_watch_start(s->watcher, err, errlen);
    if (s->watcher_fd < 0 || pl_watch_scan(s->watcher, err, errlen) < 0)
        return -1;
    return 0;
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
    if (s->watcher) sup_wait_watcher(s, timeout_ms);
    else sup_wait_log(s, timeout_ms);
}
