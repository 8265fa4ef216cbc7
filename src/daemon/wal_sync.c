/* wal_sync.c -- when aegisd's commits reach the disk.
 *
 * The store commits with synchronous=NORMAL (store.h): a commit is in the
 * kernel when it returns, so it survives a kill -9 of aegisd, but it
 * reaches the disk only when the log is synced. A sync (fdatasync of the
 * WAL file) makes every commit before it durable, since the log is
 * written in order; it took 10 to 50 ms on a busy disk, and done at each
 * commit on the loop thread, it kept every client waiting while short
 * jobs churned.
 *
 * So aegisd syncs where a promise is made, and in the background
 * otherwise:
 *   - an answer waits for the commits its request made (d_wal_answer):
 *     a submit is acknowledged only once it would survive a power loss;
 *   - the loop's own records (jobs started and ended) are synced by the
 *     tick in libuv's thread pool (d_wal_sync_later), so a power loss
 *     takes at most the last second of them. Those jobs' processes die
 *     with the power too: a lost start is a job queued again, a lost end
 *     a job found lost at restart and retried.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The WAL's descriptor, opened the first time there is one (SQLite makes
 * the file at the first write). -1 when it cannot be opened. */
static int d_wal_fd(d_daemon *d) {
    if (d->wal.fd >= 0) return d->wal.fd;
    char path[4200];
    snprintf(path, sizeof(path), "%s-wal", store_path(d->st));
    d->wal.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (d->wal.fd < 0 && !d->wal.warned) {
        d_log("store: cannot open %s to sync it: %s", path, strerror(errno));
        d->wal.warned = true;
    }
    return d->wal.fd;
}

static void d_wal_synced(d_daemon *d, unsigned long upto, int rc, int err) {
    if (rc == 0 && upto > d->wal.synced) d->wal.synced = upto;
    if (rc != 0)
        d_log("store: syncing %s-wal: %s", store_path(d->st), strerror(err));
}

int d_wal_sync_now(d_daemon *d) {
    unsigned long upto = store_commits(d->st);
    if (upto <= d->wal.synced) return 0;
    int fd = d_wal_fd(d);
    int rc = fd >= 0 ? fdatasync(fd) : -1;
    d_wal_synced(d, upto, rc, errno);
    return rc;
}

void d_wal_answer(d_daemon *d, unsigned long commits_before) {
    if (store_commits(d->st) > commits_before) d_wal_sync_now(d);
}

/* ---- in the thread pool ------------------------------------------------ */

/* The only code off the loop thread: it touches nothing but the work's
 * own fields, which the loop leaves alone while d->wal.syncing. */
static void on_sync_work(uv_work_t *w) {
    d_wal *wal = &((d_daemon *)w->data)->wal;
    wal->work_rc = fdatasync(wal->work_fd) == 0 ? 0 : errno;
}

static void on_sync_done(uv_work_t *w, int status) {
    d_daemon *d = w->data;
    close(d->wal.work_fd);
    d->wal.syncing = false;
    d_wal_synced(d, d->wal.work_upto, d->wal.work_rc, d->wal.work_rc);
}

void d_wal_sync_later(d_daemon *d) {
    unsigned long upto = store_commits(d->st);
    if (d->wal.syncing || upto <= d->wal.synced) return;
    int fd = d_wal_fd(d);
    /* its own descriptor: d_wal_close may close the shared one meanwhile */
    if (fd < 0 || (d->wal.work_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) return;
    d->wal.work_upto = upto;
    d->wal.work.data = d;
    if (uv_queue_work(d->loop, &d->wal.work, on_sync_work, on_sync_done) != 0)
        close(d->wal.work_fd);
    else
        d->wal.syncing = true;
}

void d_wal_close(d_daemon *d) {
    d_wal_sync_now(d);
    if (d->wal.fd >= 0) close(d->wal.fd);
    d->wal.fd = -1;
}
