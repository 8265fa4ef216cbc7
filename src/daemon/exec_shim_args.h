/* exec_shim_args.h -- what aegisd passes to the watcher it spawns
 * (aegis-shim) and the watcher reads back: exec_shim_args.c. Shared by
 * exec.c's two sides, aegisd's spawn and the shim's main. */
#ifndef AEGIS_EXEC_SHIM_ARGS_H
#define AEGIS_EXEC_SHIM_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The shim's descriptors, where exec_shim_main finds them. */
enum { SHIM_OUT_FD = 3, SHIM_ERR_FD, SHIM_STATUS_FD, SHIM_NFDS = 3 };
/* The shim's arguments before the environment (see exec_shim_argv). */
enum { SHIM_MODE = 1, SHIM_ID, SHIM_ATTEMPT, SHIM_ERR_OFFSET, SHIM_LOG_MAX,
       SHIM_AS_USER, SHIM_UID, SHIM_GID, SHIM_USER, SHIM_CWD, SHIM_CGROUPS,
       SHIM_OUT_PATH, SHIM_ERR_PATH, SHIM_UMASK, SHIM_NENV, SHIM_FIXED };


/* What aegisd asks of the shim: watch a job's attempt ("job"), or run a
 * job's notifier ("notify"). */
typedef struct exec_shim_args {
    const char *mode;
    int64_t id;
    int attempt;                /* the job's; 0 for a notifier */
    long long err_offset, log_max_bytes;
    bool as_user;
    uid_t uid;
    gid_t gid;
    const char *user, *cwd;
    const char *cgroups;        /* the job's cgroup.procs files (cgroup.h) */
    const char *out_path, *err_path; /* its -o and -e files (outfile.h) */
    bool has_umask;             /* umask the submitter's; false: inherited */
    unsigned umask;
    int session_nice;           /* the job's and the watcher's sessions
                                   weigh as it (autogroup.h); 0 to 19 */
} exec_shim_args;


/* Strings in v, a NULL-terminated vector. */
size_t exec_count(char *const *v);
/* Frees a vector of malloc'd strings, and the vector. */
void exec_shim_argv_free(char **v);
/* The shim's argument vector: its fixed fields (with nenv, the number of
 * the job's environment strings), then tail: the job's argv, or the
 * notifier's command (exec_shim_argv_free; NULL out of memory). */
char **exec_shim_argv(const exec_shim_args *a, size_t nenv, char *const *tail);
/* The shim's environment: aegisd's own, then the job's strings envp under
 * names of their own, and the weight of the job's session where it is
 * not 0 (exec_shim_argv_free; NULL out of memory). */
char **exec_shim_environ(char *const *envp, int session_nice);
/* envp's strings (not copied: envp must outlive the vector), then argv's
 * past its first under names of their own: the arguments travel where ps
 * does not show them (exec_args_in_env_free; NULL out of memory). */
char **exec_args_in_env(char *const *argv, char *const *envp);
/* Frees v = exec_args_in_env(argv, envp): the strings it made, and v. */
void exec_args_in_env_free(char **v, char *const *envp);
/* In the shim: its arguments into a and tail (the job's argv, or the
 * notifier's command), and the job's environment into *envp (malloc'd),
 * from its environment, or from argv as an aegisd older than the shim
 * passed them (tail points into argv, or into a malloc'd vector of the
 * arguments kept for the shim's life, which *tail - SHIM_FIXED frees).
 * 0, or -1 when they are not aegisd's. */
int exec_shim_args_read(int argc, char **argv, exec_shim_args *a,
                        char ***envp, char ***tail);

#endif
