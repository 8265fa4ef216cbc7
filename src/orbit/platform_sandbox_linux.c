/* platform_sandbox_linux.c -- plat_sandbox_enter on Linux: an address-space
 * limit (RLIMIT_AS) and a seccomp filter built with libseccomp.
 *
 * Seccomp sees syscall numbers and arguments, never paths, so the filter
 * does not try to tell good files from bad: once it is on, no file or
 * socket can be opened at all. The child has what it needs before that:
 * its module and the module's libraries loaded, its images mapped, its
 * result pipe open. A denied call kills the whole process (SIGSYS).
 *
 * The sanitizer build (DIPP_SANITIZER_FILTER) must let AddressSanitizer
 * report a module's crash: its report reads /proc/self/maps and may start
 * a symbolizer. There open*, exec* and fork calls fail with EPERM instead
 * of killing; sockets are still fatal. */
#define _GNU_SOURCE /* CLONE_THREAD */
#include "platform.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* Calls a sandboxed module never needs: new files or sockets, new
 * programs or processes, another process's memory. */
static const char *const opens[] = {
    "open", "openat", "openat2", "creat", "open_by_handle_at", "execve",
    "execveat", "fork", "vfork", "clone3", "ptrace", "process_vm_readv",
    "process_vm_writev", "memfd_create", "mknod", "mknodat",
};
static const char *const sockets[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
};

/* The child's mapped size now (module, libraries and images are mapped
 * already): the limit is what it may add. 0 when unknown. */
static uint64_t mapped_now(void) {
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int limit_memory(uint64_t extra) {
    if (!extra)
        return 0;
    rlim_t lim = (rlim_t)(mapped_now() + extra);
    struct rlimit r = {lim, lim};
    return setrlimit(RLIMIT_AS, &r) == 0 ? 0 : -errno;
}

static int deny(scmp_filter_ctx ctx, const char *const *names, size_t n,
                uint32_t action) {
    for (size_t k = 0; k < n; k++) {
        int nr = seccomp_syscall_resolve_name(names[k]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not a call of this libseccomp's tables */
        int rc = seccomp_rule_add(ctx, action, nr, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

#ifdef DIPP_SANITIZER_FILTER
#define OPEN_ACTION SCMP_ACT_ERRNO(EPERM)
#else
#define OPEN_ACTION SCMP_ACT_KILL_PROCESS
#endif

static int install_filter(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    int rc = deny(ctx, opens, sizeof opens / sizeof *opens, OPEN_ACTION);
    if (rc == 0)
        rc = deny(ctx, sockets, sizeof sockets / sizeof *sockets,
                  SCMP_ACT_KILL_PROCESS);
    /* clone makes threads and processes: a new process (no CLONE_THREAD)
     * is refused as fork is. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, OPEN_ACTION, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc;
}

int plat_sandbox_enter(const plat_limits *lim) {
    int rc = limit_memory(lim->mem_bytes);
    return rc ? rc : install_filter();
}

const char *plat_sandbox_loosening(void) {
#ifdef DIPP_SANITIZER_FILTER
    return "sanitizer build: open*, exec*, fork and the other denied file "
           "calls fail with EPERM instead of killing the module; sockets "
           "still kill it";
#else
    return NULL;
#endif
}
