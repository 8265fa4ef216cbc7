/* platform_posix.c -- platform.h's time, files, shared memory and library
 * loading on POSIX (Linux: memfd for shared memory). The fork server and
 * the sandbox are in their own files. */
#define _GNU_SOURCE /* memfd_create */
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int plat_crash_step;

uint64_t plat_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

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

int plat_file_read(const char *path, uint8_t **data, size_t *len) {
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

int plat_file_replace(const char *dir, const char *name, const void *data,
                      size_t len) {
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

int plat_shm_create(const char *tag, uint64_t size) {
    int fd = memfd_create(tag, MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

uint64_t plat_shm_size(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

void *plat_shm_map(int fd, uint64_t size, int writable) {
    void *p = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0),
                   MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

void plat_shm_prefault(void *p, uint64_t len) {
#ifdef MADV_POPULATE_READ /* Linux 5.14 */
    long page = sysconf(_SC_PAGESIZE);
    madvise(p, (len + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page,
            MADV_POPULATE_READ);
#else
    (void)p, (void)len;
#endif
}

void plat_shm_unmap(void *p, uint64_t size) {
    if (p)
        munmap(p, size);
}

void plat_close(int fd) {
    if (fd >= 0)
        close(fd);
}

void *plat_lib_open(const char *path, char *err, size_t errlen) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        snprintf(err, errlen, "%s", dlerror());
    return lib;
}

void *plat_lib_sym(void *lib, const char *name) {
    return dlsym(lib, name);
}
