/* fault_inject.c -- libaegis-testfault.so, an LD_PRELOAD library for the
 * daemon's crash and full-disk tests: it slows fsync down and makes writes
 * fail on demand, without root, mounts or a real full disk.
 *
 *   AEGIS_FAULT_FSYNC_MS=N   fsync() and fdatasync() sleep N ms first, so a
 *                            kill -9 lands inside a commit more often
 *   AEGIS_FAULT_PREFIX=DIR   with AEGIS_FAULT_TRIGGER=FILE: while FILE
 *   AEGIS_FAULT_TRIGGER=FILE exists, every write, truncation and sync of a
 *                            file under DIR fails with ENOSPC, as on a
 *                            full disk (the test creates and removes FILE)
 *   AEGIS_FAULT_SHIM_FORK=FILE
 *                            while FILE exists, fork() in a job's watcher
 *                            (a process named aegis-shim) fails with
 *                            EAGAIN: the attempt never starts its job
 *   AEGIS_FAULT_SHIM_WAIT=FILE
 *                            while FILE exists, a watcher's fork() waits
 *                            first (the test acts on the attempt then)
 *
 * Each call is passed on to the next definition (libc's, or a sanitizer's
 * interceptor) found with dlsym(RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FAULT_EXPORT __attribute__((visibility("default")))

/* next_fn: the next definition of name, looked up once. */
#define FAULT_NEXT(name)                                                    \
    static __typeof__(name) *next_fn;                                       \
    if (!next_fn) next_fn = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

/* Whether fd is a file under AEGIS_FAULT_PREFIX while the trigger exists. */
static int fault_should_fail(int fd) {
    const char *prefix = getenv("AEGIS_FAULT_PREFIX");
    const char *trigger = getenv("AEGIS_FAULT_TRIGGER");
    if (!prefix || !trigger || access(trigger, F_OK) != 0) return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    return strncmp(path, prefix, strlen(prefix)) == 0;
}

static void fault_slow_sync(void) {
    const char *ms = getenv("AEGIS_FAULT_FSYNC_MS");
    long n = ms ? strtol(ms, NULL, 10) : 0;
    if (n <= 0) return;
    struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Fails the call with ENOSPC when fd is to fail. */
#define FAULT_CHECK(fd)                                                     \
    do {                                                                    \
        if (fault_should_fail(fd)) {                                        \
            errno = ENOSPC;                                                 \
            return -1;                                                      \
        }                                                                   \
    } while (0)

FAULT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    FAULT_NEXT(write);
    FAULT_CHECK(fd);
    return next_fn(fd, buf, n);
}

FAULT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t at) {
    FAULT_NEXT(pwrite);
    FAULT_CHECK(fd);
    return next_fn(fd, buf, n, at);
}

FAULT_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at) {
    FAULT_NEXT(pwrite64);
    FAULT_CHECK(fd);
    return next_fn(fd, buf, n, at);
}

FAULT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
    FAULT_NEXT(writev);
    FAULT_CHECK(fd);
    return next_fn(fd, iov, n);
}

FAULT_EXPORT int ftruncate(int fd, off_t len) {
    FAULT_NEXT(ftruncate);
    FAULT_CHECK(fd);
    return next_fn(fd, len);
}

FAULT_EXPORT int ftruncate64(int fd, off_t len) {
    FAULT_NEXT(ftruncate64);
    FAULT_CHECK(fd);
    return next_fn(fd, len);
}

FAULT_EXPORT int fsync(int fd) {
    FAULT_NEXT(fsync);
    fault_slow_sync();
    FAULT_CHECK(fd);
    return next_fn(fd);
}

FAULT_EXPORT int fdatasync(int fd) {
    FAULT_NEXT(fdatasync);
    fault_slow_sync();
    FAULT_CHECK(fd);
    return next_fn(fd);
}

/* Whether this process is a job's watcher and the file the variable
 * named var names exists. */
static int fault_shim_trigger(const char *var) {
    const char *trigger = getenv(var);
    char name[16] = "";
    prctl(PR_GET_NAME, name);
    return trigger && strcmp(name, "aegis-shim") == 0 &&
           access(trigger, F_OK) == 0;
}

FAULT_EXPORT pid_t fork(void) {
    FAULT_NEXT(fork);
    struct timespec tick = {0, 10 * 1000000L};
    while (fault_shim_trigger("AEGIS_FAULT_SHIM_WAIT")) nanosleep(&tick, NULL);
    if (fault_shim_trigger("AEGIS_FAULT_SHIM_FORK")) {
        errno = EAGAIN;
        return -1;
    }
    return next_fn();
}
