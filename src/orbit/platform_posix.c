/* platform_posix.c -- platform.h's time, shared memory, library loading
 * and CPU on POSIX (Linux: memfd for shared memory, sched_getcpu). Files,
 * the fork server and the sandbox are in their own files. */
#define _GNU_SOURCE /* memfd_create, sched_getcpu */
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t plat_now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

uint64_t plat_now_ms(void) {
    return plat_now_us() / 1000u;
}

int plat_cpu_now(void) {
#ifdef __linux__
    int cpu = sched_getcpu();
    return cpu >= 0 ? cpu : PLAT_CPU_ANY;
#else
    return PLAT_CPU_ANY;
#endif
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

int plat_shm_reader(int fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int ro = open(path, O_RDONLY | O_CLOEXEC);
    return ro < 0 ? -errno : ro;
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
