/* exec_status.c -- an attempt's status file, RUN_DIR/ID.N.status: its
 * one-line record, made at full size and locked before the watcher starts,
 * the spares it is recycled through, and what aegisd reads from it
 * (exec_probe). Why the file is the source of truth: exec.h. */
#include "exec.h"
#include "exec_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The status record: one line at offset 0, padded to a fixed size so that
 * every later write lands in the space taken when the file was made. */
#define EXEC_RECORD_BYTES 128
#define EXEC_RECORD_TAG "aegis-status"

void exec_status_path(char *out, size_t outlen, const char *run_dir,
                      int64_t id, int attempt) {
    snprintf(out, outlen, "%s/%lld.%d.status", run_dir, (long long)id, attempt);
}

/* Writes rec over the status record; 0, or -1 with errno set. An ended
 * record holds when the job ended (ended_at): the file's mtime is the
 * kernel's coarse clock, up to a tick (1-10 ms) before the write, so it
 * can fall before what happened just ahead of the end. */
int exec_record_write(int fd, const exec_record *rec, bool ended) {
    char line[EXEC_RECORD_BYTES];
    memset(line, ' ', sizeof(line));
    int n = snprintf(line, sizeof(line),
                     EXEC_RECORD_TAG " %lld %d %llu %d %s %d %d %.6f",
                     rec->err_offset, (int)rec->shim_pid, rec->shim_start,
                     (int)rec->job_pid, ended ? "ended" : "running",
                     ended ? rec->status : 0, ended ? rec->left : 0,
                     ended ? rec->ended_at : 0.0);
    if (n < 0 || n >= (int)sizeof(line)) {
        errno = EOVERFLOW;
        return -1;
    }
    line[n] = ' ';
    line[sizeof(line) - 1] = '\n';
    ssize_t w = pwrite(fd, line, sizeof(line), 0);
    if (w == (ssize_t)sizeof(line)) return 0;
    if (w >= 0) errno = ENOSPC;
    return -1;
}

/* Parses a status record into rec (state ENDED or, with pids, LOST: what
 * it is when no shim holds it; UNSTARTED without). -1: not a record. */
static int exec_record_parse(const char *text, exec_record *rec) {
    char how[16];
    int pid, job;
    rec->ended_at = 0; /* a record of an older shim has none */
    if (sscanf(text, EXEC_RECORD_TAG " %lld %d %llu %d %15s %d %d %lf",
               &rec->err_offset, &pid, &rec->shim_start, &job, how,
               &rec->status, &rec->left, &rec->ended_at) < 7)
        return -1;
    rec->shim_pid = pid;
    rec->job_pid = job;
    rec->state = strcmp(how, "ended") == 0 ? EXEC_ENDED
                 : job > 0                 ? EXEC_LOST
                                           : EXEC_UNSTARTED;
    return 0;
}

/* The record's text in fd, NUL-terminated in text (empty when it cannot
 * be read); how many bytes were read, or -1. */
static ssize_t exec_record_text(int fd, char text[EXEC_RECORD_BYTES + 1]) {
    ssize_t n = pread(fd, text, EXEC_RECORD_BYTES, 0);
    text[n > 0 ? n : 0] = '\0';
    return n;
}

/* The watcher asks once its job's process has ended: a process that could
 * not write its pids there never ran the command (exec_job_child). A
 * record it cannot read or parse counts as naming the job, as it did
 * before the question was asked. */
bool exec_record_names_job(int fd, pid_t job) {
    char text[EXEC_RECORD_BYTES + 1];
    exec_record rec;
    return exec_record_text(fd, text) <= 0 ||
           exec_record_parse(text, &rec) != 0 || rec.job_pid == job;
}

/* Allocates the record's blocks on disk now, so that the shim's later
 * writes in place need no space: fallocate, which a full disk refuses at
 * once without waiting for the disk (aegisd makes one file per job start:
 * an fdatasync each stalled its loop), or fdatasync where the file system
 * has no fallocate. 0, or -1 with errno. */
static int exec_take_space(int fd) {
    if (fallocate(fd, 0, 0, EXEC_RECORD_BYTES) == 0) return 0;
    return errno == EOPNOTSUPP ? fdatasync(fd) : -1;
}

static void exec_spare_path(char *out, size_t outlen, const char *run_dir,
                            int k) {
    snprintf(out, outlen, "%s/%d.spare", run_dir, k);
}

/* The last spare, locked, its record made blank, then moved to path: its
 * descriptor, or -1 where there is none, somebody holds it (it is removed)
 * or a file is at path (an earlier aegisd's status file of this attempt,
 * whose shim may still hold it). Not truncated: its blocks are kept for the
 * record. Blank before it takes the attempt's name: moved first, an aegisd
 * killed before its first write left the last attempt's record, "ended 0",
 * under this attempt's name, and the next aegisd took it for this
 * attempt's end (a job done that never ran). */
static int exec_spare_take(const char *run_dir, exec_spares *spares,
                           const char *path) {
    char spare[4096];
    if (!spares || spares->count == 0) return -1;
    exec_spare_path(spare, sizeof(spare), run_dir, --spares->count);
    int fd = open(spare, O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    exec_record blank = {0};
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (!held && exec_record_write(fd, &blank, false) == 0 &&
        renameat2(AT_FDCWD, spare, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return fd;
    close(fd);
    if (held) unlink(spare);
    return -1;
}

/* Makes the status file at path anew, and locks it. A file of this
 * attempt that somebody holds is its watcher's, and left as it is: it is
 * emptied only once locked (emptied first, a live watcher's record was
 * lost, and the space taken for its end). Returns the descriptor, or -1
 * with errno. */
static int exec_status_open(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && ftruncate(fd, 0) == 0) return fd;
    int why = errno;
    close(fd);
    if (why != EWOULDBLOCK) unlink(path);
    errno = why;
    return -1;
}

/* Creates a status file at path at its full size, locked (an attempt's
 * shim inherits the descriptor and with it the lock), from a spare where
 * there is one. Returns the descriptor, or -1 with a message naming the
 * file. */
int exec_status_create(const char *path, const char *run_dir,
                       exec_spares *spares, char *err, size_t errlen) {
    exec_record rec = {0};
    int fd = exec_spare_take(run_dir, spares, path); /* its record blank */
    bool fresh = fd < 0;
    if (fresh) fd = exec_status_open(path);
    if (fd < 0 || (fresh && exec_record_write(fd, &rec, false) != 0) ||
        exec_take_space(fd) != 0) {
        bool held = errno == EWOULDBLOCK;
        snprintf(err, errlen, "status file %s: %s", path,
                 held ? "a watcher of this attempt still runs"
                      : strerror(errno));
        if (fd >= 0) close(fd);
        if (fd >= 0) unlink(path);
        return -1;
    }
    return fd;
}

int exec_run_dir_check(const char *run_dir, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/.check.status", run_dir);
    int fd = exec_status_create(path, run_dir, NULL, err, errlen);
    if (fd >= 0) close(fd);
    unlink(path);
    return fd >= 0 ? 0 : -1;
}

void exec_probe(const char *run_dir, int64_t id, int attempt,
                exec_record *rec) {
    char path[4096], text[EXEC_RECORD_BYTES + 1];
    exec_status_path(path, sizeof(path), run_dir, id, attempt);
    memset(rec, 0, sizeof(*rec));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* unreadable for another reason: live, for nothing is known */
        rec->state = errno == ENOENT ? EXEC_ABSENT : EXEC_LIVE;
        return;
    }
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0;
    exec_record_text(fd, text);
    struct stat st;
    double written = fstat(fd, &st) == 0
                         ? (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9
                         : 0;
    close(fd);
    int old = 0;
    if (exec_record_parse(text, rec) != 0) {
        memset(rec, 0, sizeof(*rec));
        /* an older shim's "STATUS\n", written whole at its end; empty: its
         * making failed, and nothing started */
        rec->state = sscanf(text, "%d", &old) == 1 ? EXEC_ENDED
                     : text[0]                      ? EXEC_LOST
                                                    : EXEC_UNSTARTED;
        rec->status = old;
    }
    if (held) rec->state = EXEC_LIVE;
    /* when a job that ended while aegisd was down ended, not when aegisd
     * came back: the record's own time, else (an older shim's record) the
     * file's last write, to a tick of the kernel's clock */
    if (rec->state == EXEC_ENDED && rec->ended_at <= 0) rec->ended_at = written;
}

void exec_status_retire(const char *run_dir, exec_spares *spares, int64_t id,
                        int attempt) {
    char path[4096], spare[4096];
    exec_status_path(path, sizeof(path), run_dir, id, attempt);
    if (spares->count < EXEC_SPARES) {
        exec_spare_path(spare, sizeof(spare), run_dir, spares->count);
        if (rename(path, spare) == 0) {
            spares->count++;
            return;
        }
    }
    unlink(path);
}

void exec_spares_clear(const char *run_dir) {
    char spare[4096];
    for (int k = 0; k < EXEC_SPARES; k++) {
        exec_spare_path(spare, sizeof(spare), run_dir, k);
        unlink(spare);
    }
}

void exec_status_each(const char *run_dir,
                      void (*fn)(void *ctx, int64_t id, int attempt),
                      void *ctx) {
    DIR *dir = opendir(run_dir);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        long long id;
        int attempt, end = 0;
        if (sscanf(e->d_name, "%lld.%d.status%n", &id, &attempt, &end) == 2 &&
            end > 0 && e->d_name[end] == '\0')
            fn(ctx, id, attempt);
    }
    if (dir) closedir(dir);
}
