/* feed_announce.c -- consumers that wait for a feed not made yet say so,
 * so that its producer holds batch 0 until they have attached.
 *
 * Without this, a producer started after its consumers publishes as soon
 * as the first of them attaches, and the others, which look for the
 * segment every few milliseconds, may find it only after the replay
 * window of epoch 0 has passed: they would start with epoch 1, and a
 * training script's `for epoch in range(N)` would see N - 1 epochs.
 * TensorSocket registers every consumer that answers its first heartbeat
 * before its first batch; this is that, without a socket.
 *
 * A waiting consumer leaves an empty file
 * /dev/shm/aegis-feedw-PID-START-NAME (its pid, its start time, the
 * feed's name: pid and start time are digits, so the name after them is
 * unambiguous, and the prefix is not "aegis-feed-", so ls and gc never
 * take it for a segment). The producer counts the files of its feed
 * whose process lives and has no consumer record yet. A file is only a
 * hint: a dead process's is ignored (and removed), and the producer waits
 * for announced consumers at most FEED_ANNOUNCE_MS. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feed_shm.h"

#define ANNOUNCE_PREFIX "aegis-feedw-"

static void announce_path(char *buf, size_t len, const char *name,
                          const feed_proc *p) {
    snprintf(buf, len, FEED_SHM_DIR ANNOUNCE_PREFIX "%d-%" PRIu64 "-%s",
             (int)p->pid, p->start_ticks, name);
}

int feed_announce(const char *name) {
    char path[FEED_NAME_MAX + 96];
    feed_proc me = feed_proc_self();
    announce_path(path, sizeof path, name, &me);
    /* Best effort: a consumer that cannot announce itself still attaches,
     * only maybe after epoch 0's replay window. Readable by all: another
     * user's producer this consumer trusts counts it too. O_EXCL: whoever
     * made the file removes it, not a nested announcer. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

void feed_unannounce(const char *name) {
    char path[FEED_NAME_MAX + 96];
    feed_proc me = feed_proc_self();
    announce_path(path, sizeof path, name, &me);
    unlink(path);
}

/* The process an announcement file of feed `name` names; 0 if `entry` is
 * not one. */
static int parse_entry(const char *entry, const char *name, feed_proc *p) {
    size_t n = strlen(ANNOUNCE_PREFIX);
    if (strncmp(entry, ANNOUNCE_PREFIX, n) != 0) return 0;
    char *end;
    errno = 0;
    long pid = strtol(entry + n, &end, 10);
    if (errno || pid <= 0 || pid > INT32_MAX || *end != '-') return 0;
    unsigned long long start = strtoull(end + 1, &end, 10);
    if (errno || *end != '-' || strcmp(end + 1, name) != 0) return 0;
    p->pid = (int32_t)pid;
    p->start_ticks = start;
    return 1;
}

/* Whether a live consumer record of h belongs to process p; locked. */
static int attached(const feed_shm *h, const feed_proc *p) {
    for (int i = 0; i < FEED_MAX_CONSUMERS; i++) {
        const feed_shm_consumer *c = &h->consumers[i];
        if (c->in_use && c->proc.pid == p->pid &&
            c->proc.start_ticks == p->start_ticks)
            return 1;
    }
    return 0;
}

int feed_announced(const char *name, const feed_shm *h) {
    DIR *d = opendir(FEED_SHM_DIR);
    if (!d) return 0;
    int waiting = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        feed_proc p;
        if (!parse_entry(e->d_name, name, &p)) continue;
        if (!feed_proc_alive(&p)) {
            /* killed while it waited; fails harmlessly where another
             * user's file sits in the sticky /dev/shm */
            unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        waiting += !attached(h, &p);
    }
    closedir(d);
    return waiting;
}
