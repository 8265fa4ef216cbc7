/* platform_sandbox_linux.c -- plat_sandbox_enter on Linux: a limit on the
 * private memory a worker may add (RLIMIT_DATA: heap and private
 * mappings, not the shared batches it maps call after call), no
 * capabilities, and a seccomp filter built with libseccomp.
 *
 * Seccomp sees syscall numbers and arguments, never paths, so the filter
 * does not try to tell good files from bad: once it is on, no file or
 * socket can be opened at all, and no other process reached (signalled,
 * its descriptors taken, its limits or priority changed: the fork server
 * and the satellite's daemon run as the same user). The child has what
 * it needs before that: its module and the module's libraries loaded, its
 * socket to the fork server open (the batches of each call come on it as
 * descriptors, to map). A denied call kills the whole process (SIGSYS).
 *
 * The sanitizer build (DIPP_SANITIZER_FILTER) must let AddressSanitizer
 * report a module's crash: its report reads /proc/self/maps and may start
 * a symbolizer. There open*, exec*, fork and the calls that reach another
 * process fail with EPERM instead of killing; sockets are still fatal. */
#define _GNU_SOURCE /* CLONE_THREAD */
#include "platform.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/mman.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Calls a sandboxed module never needs: new files or sockets, new
 * programs or processes, another process's memory. */
static const char *const opens[] = {
    "open", "openat", "openat2", "creat", "open_by_handle_at", "execve",
    "execveat", "fork", "vfork", "ptrace", "process_vm_readv",
    "process_vm_writev", "memfd_create", "mknod", "mknodat",
    /* growing a batch it was sent would be memory no limit counts */
    "ftruncate", "fallocate",
    /* io_uring's operations (an open, a socket) never pass the filter */
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    /* a path is a file even without open: /proc/self/fd/N names a batch */
    "truncate", "unlink", "unlinkat", "rename", "renameat", "renameat2",
    "mkdir", "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat",
    "chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat",
    "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr",
    "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "name_to_handle_at", "inotify_add_watch", "fanotify_init",
    /* memory and names shared by all the user's processes, outliving it */
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv",
    "msgctl", "semget", "semop", "semtimedop", "semctl", "mq_open",
    "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr", "add_key", "request_key", "keyctl",
    /* the system's (for a daemon run as root) */
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "swapon", "swapoff", "reboot", "init_module", "finit_module",
    "delete_module", "kexec_load", "kexec_file_load", "acct",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "quotactl", "bpf", "perf_event_open",
    "userfaultfd", "syslog", "ioperm", "iopl",
};
static const char *const sockets[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
};
/* Calls that reach another process of the same user: the fork server,
 * the satellite's daemon, other workers. Its descriptors (pidfd_getfd),
 * its priority or its limits are not a module's to touch. */
static const char *const others[] = {
    "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "process_madvise",
    "process_mrelease", "kcmp", "move_pages", "migrate_pages",
};
/* Priority: a module has no use for it, and PRIO_USER reaches every
 * process of the user; refused (EPERM) rather than fatal, as nice() is
 * harmless on the worker itself. */
static const char *const priority[] = {"setpriority", "ioprio_set"};
/* Calls whose first argument names the process they act on: a signal
 * (raise() and abort() name the worker itself)... */
static const char *const signal_to[] = {
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
};
/* ...and limits and scheduling, where 0 is the worker itself (refused
 * with EPERM, not fatal: pthread_setaffinity_np names it by its id). */
static const char *const sched_of[] = {
    "prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
    "sched_setattr",
};

/* The worker's private data now (VmData: what RLIMIT_DATA counts), in
 * bytes: the limit is what it may add. 0 when unknown. */
static uint64_t data_now(void) {
    unsigned long kib = 0;
    char line[128];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %lu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kib * 1024;
}

static int limit_memory(uint64_t extra) {
    if (!extra)
        return 0;
    rlim_t lim = (rlim_t)(data_now() + extra);
    struct rlimit r = {lim, lim};
    return setrlimit(RLIMIT_DATA, &r) == 0 ? 0 : -errno;
}

#ifdef DIPP_SANITIZER_FILTER
#define OPEN_ACTION SCMP_ACT_ERRNO(EPERM)
#else
#define OPEN_ACTION SCMP_ACT_KILL_PROCESS
#endif

/* Denies each call of names, always (arg_ne NULL) or when its first
 * argument is not *arg_ne. */
static int deny_when(scmp_filter_ctx ctx, const char *const *names, size_t n,
                     uint32_t action, const scmp_datum_t *arg_ne) {
    for (size_t k = 0; k < n; k++) {
        int nr = seccomp_syscall_resolve_name(names[k]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not a call of this libseccomp's tables */
        /* spelled out rather than SCMP_A0(), whose initializer leaves
         * datum_b out: clang's -Wmissing-field-initializers */
        struct scmp_arg_cmp ne = {.arg = 0, .op = SCMP_CMP_NE,
                                  .datum_a = arg_ne ? *arg_ne : 0, .datum_b = 0};
        int rc = arg_ne ? seccomp_rule_add(ctx, action, nr, 1, ne)
                        : seccomp_rule_add(ctx, action, nr, 0);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int deny(scmp_filter_ctx ctx, const char *const *names, size_t n,
                uint32_t action) {
    return deny_when(ctx, names, n, action, NULL);
}

/* Another process's signals, limits, scheduling and descriptors. */
static int deny_others(scmp_filter_ctx ctx) {
    const scmp_datum_t self = (scmp_datum_t)getpid(), none = 0;
    int rc = deny(ctx, others, sizeof others / sizeof *others, OPEN_ACTION);
    if (rc == 0)
        rc = deny_when(ctx, signal_to, sizeof signal_to / sizeof *signal_to, OPEN_ACTION, &self);
    if (rc == 0)
        rc = deny_when(ctx, sched_of, sizeof sched_of / sizeof *sched_of,
                       SCMP_ACT_ERRNO(EPERM), &none);
    if (rc == 0)
        rc = deny(ctx, priority, sizeof priority / sizeof *priority, SCMP_ACT_ERRNO(EPERM));
    return rc;
}


static int install_filter(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return -ENOMEM;
    int rc = deny(ctx, opens, sizeof opens / sizeof *opens, OPEN_ACTION);
    if (rc == 0)
        rc = deny_others(ctx);
    if (rc == 0)
        rc = deny(ctx, sockets, sizeof sockets / sizeof *sockets,
                  SCMP_ACT_KILL_PROCESS);
    /* clone makes threads and processes: a new process (no CLONE_THREAD)
     * is refused as fork is. clone3 passes its flags in memory, which a
     * filter cannot read: it answers ENOSYS, and glibc's pthread_create
     * then falls back to clone, where the flags can be checked. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, OPEN_ACTION, SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    /* shared anonymous memory is not counted by RLIMIT_DATA: as if the
     * limit were reached */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOMEM), SCMP_SYS(mmap), 1,
                              SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED | MAP_ANONYMOUS,
                                      MAP_SHARED | MAP_ANONYMOUS));
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    return rc;
}

/* A daemon run as root forks root workers: they give up every
 * capability, so that a module can neither raise its memory limit again
 * nor use what root may beyond its own files. */
static int drop_capabilities(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3];
    memset(none, 0, sizeof none);
    return syscall(SYS_capset, &hdr, none) == 0 ? 0 : -errno;
}

int plat_sandbox_enter(const plat_limits *lim) {
    int rc = limit_memory(lim->mem_bytes);
    if (rc == 0)
        rc = drop_capabilities();
    return rc ? rc : install_filter();
}

const char *plat_sandbox_loosening(void) {
#ifdef DIPP_SANITIZER_FILTER
    return "sanitizer build: open*, exec*, fork, the other denied file "
           "calls and the calls that reach another process fail with "
           "EPERM instead of killing the module; sockets still kill it";
#else
    return NULL;
#endif
}
