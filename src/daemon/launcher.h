/* launcher.h -- the watcher launcher: one started aegis-shim that forks
 * each attempt's watcher, so that no watcher pays for an exec and the
 * dynamic loader. Those were most of a short job's cost: of a churn of
 * `true` jobs, the watcher's exec, loader (glibc's CPU probe, which a
 * virtual machine traps) and exit took over half the CPU.
 *
 * Each watcher is forked with CLONE_PARENT, so it is the caller's child,
 * as a spawned one is: aegisd reaps it, gets its SIGCHLD and checks it by
 * pid and start time, and it outlives aegisd and the launcher alike.
 * aegisd's side is launcher.c; the launcher's is launcher_main.c. */
#ifndef AEGIS_LAUNCHER_H
#define AEGIS_LAUNCHER_H

#include <stdint.h>
#include <sys/types.h>

/* A request on the launcher's socket: this header, with the watcher's
 * descriptors (SHIM_NFDS of them) in its SCM_RIGHTS, then `bytes` bytes
 * of nargv then nenv NUL-terminated strings. The answer is a
 * launcher_reply. */
#define LAUNCHER_MAGIC 0x61656c31u /* "ael1" */
#define LAUNCHER_MAX_BYTES (64u << 20)
typedef struct launcher_request {
    uint32_t magic, nargv, nenv, bytes;
} launcher_request;
typedef struct launcher_reply {
    int32_t pid;                /* the watcher, or -1 */
    int32_t error;              /* the fork's errno when pid is -1 */
} launcher_reply;

/* Starts the watcher of argv (in environment envp, its descriptors fds as
 * its 3 to 5) through the launcher of the shim at shim_path, started on
 * first use, in a session that weighs as session_nice (autogroup.h): 0
 * with *pid, the caller's child, or an errno when there is no launcher to
 * ask (the caller spawns the shim itself). From any thread; one request
 * at a time. */
int launcher_spawn(const char *shim_path, int session_nice, char *const *argv,
                   char *const *envp, const int *fds, int nfds, pid_t *pid);

/* Calls fn(arg, pid) with the launcher's pid (0: there is none) while no
 * launcher can be started, and returns fn's result. What fn does to the
 * caller's process, moving it to another cgroup, then reaches the
 * launcher too: the one there is, which fn moves, or the next, which
 * starts where the caller is. */
int launcher_locked(int (*fn)(void *arg, pid_t launcher), void *arg);

/* The launcher's main, in aegis-shim (own_argv: its arguments, which
 * each watcher overwrites for ps): serves requests on descriptor sock
 * until its parent closes it or dies. */
int launcher_main(int sock, char **own_argv);

#endif
