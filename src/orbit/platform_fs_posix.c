/* platform_fs_posix.c -- platform.h's files on POSIX: whole-file reads,
 * crash-safe replacement (temporary, fsync, rename, fsync of the folder),
 * synced writes at an offset and removal. plat_crash_step kills the
 * process between a replacement's steps for the slot tests. */
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int plat_crash_step;

static int read_all(int fd, uint8_t **data, size_t *len) {
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (n == cap) {
            uint8_t *bigger = realloc(buf, (cap = cap ? cap * 2 : 4096) + 1);
            if (!bigger)
                break;
            buf = bigger;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r == 0) {
            buf[n] = 0;
            *data = buf, *len = n;
            return 0;
        }
        if (r < 0 && errno != EINTR)
            break;
        n += r > 0 ? (size_t)r : 0;
    }
    int err = n == cap && !buf ? -ENOMEM : -errno;
    free(buf);
    return err ? err : -ENOMEM;
}

static int posix_read(const char *path, uint8_t **data, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = read_all(fd, data, len);
    close(fd);
    return rc;
}

static void crash_at(int step) {
    if (plat_crash_step == step)
        raise(SIGKILL);
}

static int write_all(int fd, const uint8_t *p, size_t len) {
    size_t half = len / 2, done = 0;
    while (done < len) {
        if (done >= half)
            crash_at(1);
        ssize_t w = write(fd, p + done, done < half ? half - done : len - done);
        if (w < 0 && errno != EINTR)
            return -errno;
        done += w > 0 ? (size_t)w : 0;
    }
    return 0;
}

static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

static int posix_replace(const char *dir, const char *name,
                         const void *data, size_t len) {
    char tmp[4096], dst[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, data, len);
    crash_at(2);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    crash_at(3);
    if (rc == 0 && rename(tmp, dst) != 0)
        rc = -errno;
    crash_at(4);
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    return fsync_dir(dir);
}


static int posix_write_synced(const char *dir, const char *name, uint64_t off,
                              const void *data, size_t len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int created = access(path, F_OK) != 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = 0;
    for (size_t done = 0; rc == 0 && done < len;) {
        ssize_t w = pwrite(fd, (const uint8_t *)data + done, len - done,
                           (off_t)(off + done));
        if (w < 0 && errno != EINTR)
            rc = -errno;
        done += w > 0 ? (size_t)w : 0;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    close(fd);
    return rc == 0 && created ? fsync_dir(dir) : rc;
}

static int posix_remove(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (unlink(path) != 0)
        return errno == ENOENT ? 0 : -errno;
    return fsync_dir(dir);
}

const plat_fs plat_fs_posix = {posix_read, posix_replace, posix_write_synced,
                               posix_remove};
