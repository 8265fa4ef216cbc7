/* job_file.c -- the one safe reader of a file a job's user controls: open
 * with no link followed and no wait, check what was opened, read its
 * tail; as the user, in a child process, where the user chose the path
 * (job_file.h says why each step is there).
 */
#define _GNU_SOURCE /* syscall(2) */
#include "job_file.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/openat2.h>) && defined(SYS_openat2)
#include <linux/openat2.h>
#define JOB_FILE_OPENAT2 1
#endif
#endif

/* How long job_file_tail_as waits for its child: reading a file on a
 * file system its user controls (FUSE) or a stalled NFS server could
 * otherwise hold the caller (slurmstepd, as a task ends) for ever. */
#define JOB_FILE_WAIT_MS 5000

static int job_file_openat(int dirfd, const char *name) {
    int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
#ifdef JOB_FILE_OPENAT2
    struct open_how how = {.flags = (uint64_t)flags,
                           .resolve = RESOLVE_NO_SYMLINKS};
    long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
    if (fd >= 0 || errno != ENOSYS) return (int)fd;
#endif
    /* A kernel before 5.6 (or a seccomp filter that hides openat2):
     * only the last part of the path is checked here. A link higher up
     * still ends at a file whose device and inode are not the job's. */
    return openat(dirfd, name, flags);
}

/* 0 when fd is a regular file of owner (and, with id, that file), else
 * -1 with errno saying why not; its fstat in *st. */
static int job_file_check(int fd, uid_t owner, const job_file_id *id,
                          struct stat *st) {
    if (fstat(fd, st) != 0) return -1;
    errno = !S_ISREG(st->st_mode)                                 ? EINVAL
            : st->st_uid != owner                                 ? EPERM
            : id && (st->st_dev != id->dev || st->st_ino != id->ino) ? ESTALE
                                                                  : 0;
    return errno ? -1 : 0;
}

int job_file_open_stat(int dirfd, const char *name, uid_t owner,
                       const job_file_id *id, struct stat *st) {
    int fd = job_file_openat(dirfd, name);
    if (fd < 0 || job_file_check(fd, owner, id, st) == 0) return fd;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

int job_file_open(int dirfd, const char *name, uid_t owner,
                  const job_file_id *id) {
    struct stat st;
    return job_file_open_stat(dirfd, name, owner, id, &st);
}

ssize_t job_file_tail(int fd, long long from, char *buf, size_t len) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    long long end = (long long)st.st_size;
    long long at = end - (long long)len > from ? end - (long long)len : from;
    size_t got = 0;
    while (at + (long long)got < end && got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(at + (long long)got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break; /* it shrank meanwhile */
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Takes who's groups, gid and uid, in that order: groups and gid can be
 * set only while still root. Raw system calls, for this thread alone:
 * the child of a threaded process (slurmstepd) has no other threads for
 * glibc's setuid to bring along, and may call only what is
 * async-signal-safe. 0, or -1 with errno. */
static int job_file_become(const job_file_user *who) {
    if (syscall(SYS_setgroups, who->ngroups, who->groups) != 0 ||
        syscall(SYS_setresgid, who->gid, who->gid, who->gid) != 0 ||
        syscall(SYS_setresuid, who->uid, who->uid, who->uid) != 0)
        return -1;
    return 0;
}

/* Writes all n bytes of buf to fd; 0, or -1. */
static int job_file_write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The child of job_file_tail_as: as who, reads the tail into buf (its
 * own copy) and sends its errno (0 when read), then the bytes, on out. */
static void job_file_child(int out, const job_file_user *who, const char *path,
                           const job_file_id *id, char *buf, size_t len) {
    ssize_t n = -1;
    int fd = -1;
    if (job_file_become(who) != 0)
        errno = EACCES; /* not EPERM: that says the file is another's */
    else if ((fd = job_file_open(AT_FDCWD, path, who->uid, id)) >= 0)
        n = job_file_tail(fd, 0, buf, len);
    int err = n < 0 ? errno : 0;
    if (job_file_write_all(out, (const char *)&err, sizeof(err)) == 0 && n > 0)
        job_file_write_all(out, buf, (size_t)n);
    _exit(0);
}

/* Milliseconds left until deadline (CLOCK_MONOTONIC), 0 when past. */
static int job_file_ms_left(const struct timespec *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (deadline->tv_sec - now.tv_sec) * 1000LL +
                   (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? (int)ms : 0;
}

/* Reads from fd until its end or len bytes, but not past deadline: how
 * many bytes, or -1 with errno (ETIMEDOUT past it). */
static ssize_t job_file_read_until(int fd, char *buf, size_t len,
                                   const struct timespec *deadline) {
    size_t got = 0;
    while (got < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, job_file_ms_left(deadline));
        if (ready == 0) errno = ETIMEDOUT;
        ssize_t n = ready > 0 ? read(fd, buf + got, len - got) : -1;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* The child's answer on fd, within JOB_FILE_WAIT_MS: its errno, then
 * the tail, into buf. How many bytes, or -1 with errno. */
static ssize_t job_file_answer(int fd, char *buf, size_t len) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += JOB_FILE_WAIT_MS / 1000;
    int err = 0;
    ssize_t head = job_file_read_until(fd, (char *)&err, sizeof(err), &deadline);
    if (head == (ssize_t)sizeof(err) && err == 0)
        return job_file_read_until(fd, buf, len, &deadline);
    /* EIO: it ended before it could say (killed by its user) */
    if (head >= 0) errno = head == (ssize_t)sizeof(err) ? err : EIO;
    return -1;
}

ssize_t job_file_tail_as(const job_file_user *who, const char *path,
                         const job_file_id *id, char *buf, size_t len) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        job_file_child(p[1], who, path, id, buf, len);
    }
    close(p[1]);
    ssize_t got = pid < 0 ? -1 : job_file_answer(p[0], buf, len);
    int saved = errno;
    close(p[0]);
    if (pid < 0) return -1;
    if (got < 0 && saved == ETIMEDOUT) kill(pid, SIGKILL); /* stuck */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    errno = saved;
    return got;
}

const char *job_file_error(int err) {
    switch (err) {
    case ELOOP: return "a symbolic link, or under one; not followed";
    case EINVAL: return "not a regular file; not read";
    case EPERM: return "not the job's user's; not read";
    case ESTALE: return "not the file the job started with; not read";
    case ETIMEDOUT: return "not read within 5 s; given up";
    case EWOULDBLOCK:
        return "held by a lease (fcntl F_SETLEASE) of another process; "
               "not waiting for it";
    default: return strerror(err);
    }
}
