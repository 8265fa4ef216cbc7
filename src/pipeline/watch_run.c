/* watch_run.c -- the watcher's passes over its folder (watch.h): a scan
 * of every file in name order, and the loop that waits for inotify events
 * (IN_CLOSE_WRITE, IN_MOVED_TO) with a scan every interval as the safety
 * net for events missed (a queue overflow, a watcher restarted). */
#include "watch_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folder's entry names, sorted; NULL with err. */
static char **list_names(pl_watch *w, size_t *count, char *err,
                         size_t errlen) {
    int fd = dup(w->dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    if (!d) {
        snprintf(err, errlen, "listing %s: %s", w->conf.dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **grown = realloc(names, cap * sizeof(*names));
            if (!grown)
                break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    *count = n;
    if (!names) /* an empty folder */
        return calloc(1, sizeof(*names));
    qsort(names, n, sizeof(*names), by_name);
    return names;
}

/* Whether the file is complete: unchanged for PL_SETTLE_S. A close is not
 * enough: a file appended to by one writer after another (a growing
 * binary file, a CSV log) is closed between the appends, and a partial
 * record at its end then is the start of the next append. */
static int settled(pl_watch *w, const char *name) {
    struct stat st;
    return fstatat(w->dir_fd, name, &st, 0) == 0 &&
           time(NULL) - st.st_mtime >= PL_SETTLE_S;
}

int64_t pl_watch_scan(pl_watch *w, char *err, size_t errlen) {
    size_t count = 0;
    char **names = list_names(w, &count, err, errlen);
    if (!names)
        return -1;
    int64_t total = 0;
    for (size_t i = 0; i < count && total >= 0; i++) {
        int64_t n = pl_watch_file(w, names[i], settled(w, names[i]), err,
                                  errlen);
        total = n < 0 ? -1 : total + n;
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return total;
}

/* Registers the files named by the events waiting on ino; -2 when the
 * queue overflowed (a scan must follow). */
static int64_t take_events(pl_watch *w, int ino, char *err, size_t errlen) {
    char buf[64 * (sizeof(struct inotify_event) + NAME_MAX + 1)]
        __attribute__((aligned(__alignof__(struct inotify_event))));
    int64_t total = 0;
    int overflow = 0;
    ssize_t len;
    while ((len = read(ino, buf, sizeof(buf))) > 0)
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof(*ev) + ev->len;
            overflow |= (ev->mask & IN_Q_OVERFLOW) != 0;
            if (!ev->len || total < 0)
                continue;
            int64_t n = pl_watch_file(w, ev->name, settled(w, ev->name), err,
                                      errlen);
            total = n < 0 ? -1 : total + n;
        }
    return total >= 0 && overflow ? -2 : total;
}

int64_t pl_watch_events(pl_watch *w, char *err, size_t errlen) {
    int64_t added = take_events(w, w->ino, err, errlen);
    return added == -2 ? pl_watch_scan(w, err, errlen) : added;
}

int pl_watch_start(pl_watch *w, char *err, size_t errlen) {
    if (w->ino >= 0)
        return w->ino;
    w->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ino < 0 ||
        inotify_add_watch(w->ino, w->conf.dir, IN_CLOSE_WRITE | IN_MOVED_TO) <
            0) {
        snprintf(err, errlen, "watching %s: %s", w->conf.dir, strerror(errno));
        if (w->ino >= 0)
            close(w->ino);
        w->ino = -1;
    }
    return w->ino;
}

static void report(pl_watch *w, FILE *progress, int64_t added) {
    if (!progress || added <= 0)
        return;
    fprintf(progress, "%s: %llu samples (+%lld), %u files, %llu bad\n",
            w->conf.name, (unsigned long long)w->samples, (long long)added,
            w->files.count, (unsigned long long)w->nbad);
    fflush(progress);
}

int pl_watch_run(pl_watch *w, double interval_s, volatile sig_atomic_t *stop,
                 FILE *progress, char *err, size_t errlen) {
    int ino = pl_watch_start(w, err, errlen); /* before the scan: none missed */
    if (ino < 0)
        return -1;
    int64_t added = pl_watch_scan(w, err, errlen);
    while (added >= 0 && !*stop) {
        report(w, progress, added);
        struct pollfd pfd = {.fd = ino, .events = POLLIN};
        int ready = poll(&pfd, 1, (int)(interval_s * 1000));
        if (ready < 0 && errno != EINTR) {
            snprintf(err, errlen, "waiting for events: %s", strerror(errno));
            added = -1;
        } else {
            added = ready > 0    ? pl_watch_events(w, err, errlen)
                    : ready == 0 ? pl_watch_scan(w, err, errlen)
                                 : 0; /* a signal: see *stop */
        }
    }
    return added < 0 ? -1 : 0;
}
