/* exec.c -- the job executor: the watcher (aegis-shim) and the job's
 * process, its output copied into its logs under their cap, and a
 * notifier's supervisor (see exec.h for why a shim sits between aegisd
 * and the job, copies its output and records its end). The rest of the
 * executor has a file each: the logs as aegisd reads them (exec_log.c),
 * the status files (exec_status.c), /proc (exec_proc.c) and how an
 * attempt ended (exec_classify.c).
 *
 * aegisd spawns the shim program (aegis-shim, whose main is
 * exec_shim_main) and never forks itself for a job. Everything the shim
 * needs (argv, envp, paths) is built before the spawn, and everything the
 * job needs before the shim's fork, so the children only make system calls
 * until exec.
 */
#include "exec.h"
#include "exec_priv.h"
#include "autogroup.h"
#include "exec_shim_args.h"
#include "user_limits.h"
#include "job_file.h"
#include "oom_text.h"
#include "cgroup.h"
#include "outfile.h"
#include "launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The cap drops a log's head in whole steps of this many bytes, a
 * multiple of any file system's block, so no partial block of zeros is
 * left where the kept bytes start. */
#define EXEC_CAP_STEP 65536

/* Bytes of each stream copied after the job has ended: what its pipe
 * can hold (Linux's largest pipe by default). The shim has killed what
 * the job left behind by then, but a process that escaped it and keeps
 * writing (one handed the pipe over a socket) must not keep the shim, and
 * so the job's end, waiting forever. */
#define EXEC_DRAIN_BYTES (1 << 20)

/* What opening an attempt's logs needs, kept from its spec until the
 * spawn. log_dir is aegisd's, for its life. */
typedef struct exec_logs {
    int64_t id;
    int log_dirfd;
    const char *log_dir;
    bool as_user;
    uid_t uid;
    gid_t gid;
} exec_logs;

/* Opens a job's log for appending, mode 0600: a new one is created for
 * the job's user; an existing one, an earlier attempt's, is appended to
 * only when it is a plain file of that user already (a database restored
 * from a backup hands its ids out again: another user's old log is never
 * reused, nor given away). Never through a link planted at its name, and
 * never waiting on a lease. */
static int exec_open_log(const exec_logs *spec, bool err_stream, char *err,
                         size_t errlen) {
    char name[64];
    exec_log_name(name, sizeof(name), spec->id, err_stream);
    int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = openat(spec->log_dirfd, name, flags | O_CREAT | O_EXCL, 0600);
    bool created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = openat(spec->log_dirfd, name, flags);
    struct stat st;
    uid_t owner = spec->as_user ? spec->uid : geteuid();
    const char *why = NULL;
    if (fd < 0)
        why = exec_log_error(errno);
    else if (created ? spec->as_user && fchown(fd, spec->uid, spec->gid) != 0
                     : fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!created && (!S_ISREG(st.st_mode) || st.st_uid != owner ||
                          st.st_nlink != 1))
        why = "exists and is not this job's user's (left from an earlier "
              "database?); not reused";
    else if (fcntl(fd, F_SETFL, O_APPEND) != 0) /* blocking writes again */
        why = strerror(errno);
    if (why) {
        snprintf(err, errlen, "job %lld: log %s/%s: %s", (long long)spec->id,
                 spec->log_dir, name, why);
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

/* Whether "K=V" entry sets one of the variables in sets ("K=V" too). */
static bool exec_env_overridden(const char *entry, char *const *sets,
                                size_t nsets) {
    for (size_t i = 0; i < nsets; i++) {
        size_t klen = strcspn(sets[i], "=") + 1;
        if (strncmp(entry, sets[i], klen) == 0) return true;
    }
    return false;
}

/* env with sets (n "K=V" strings, malloc'd, taken) set over it: a
 * vector whose last n entries are sets', freed by exec_free_envp; NULL
 * (sets freed) when out of memory. */
static char **exec_env_over(const char *const *env, char **sets, size_t n) {
    size_t nenv = 0;
    while (env[nenv]) nenv++;
    char **envp = calloc(nenv + n + 1, sizeof(*envp));
    bool all = envp != NULL;
    for (size_t i = 0; i < n; i++) all = all && sets[i];
    if (!all) {
        for (size_t i = 0; i < n; i++) free(sets[i]);
        free(envp);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (!exec_env_overridden(env[i], sets, n))
            envp[k++] = (char *)env[i];
    memcpy(envp + k, sets, n * sizeof(*sets));
    return envp;
}

/* The test GPU's settings (src/testgpu), which aegisd passes on from its
 * own environment: the jobs of every user then use the GPUs aegisd
 * models, without setting them in their own environments. A production
 * aegisd has none of them set. */
static const char *const exec_test_gpu_vars[] = {
    "AEGIS_TEST_GPUS", "AEGIS_TEST_GPU_DIR", "AEGIS_TEST_GPU_MODEL", NULL};

char **exec_job_vars(const exec_spec *spec, size_t *nvars) {
    size_t nextra = 0, ntest = 0;
    while (spec->extra_env && spec->extra_env[nextra]) nextra++;
    char **vars = calloc(3 + nextra + 3 + 1, sizeof(*vars));
    if (!vars) return NULL;
    char buf[3][4200];
    snprintf(buf[0], sizeof(buf[0]), "CUDA_VISIBLE_DEVICES=%s", spec->visible);
    snprintf(buf[1], sizeof(buf[1]), "AEGIS_JOB_ID=%lld", (long long)spec->id);
    snprintf(buf[2], sizeof(buf[2]), "AEGIS_ATTEMPT=%d", spec->attempt);
    for (size_t i = 0; i < 3 + nextra; i++)
        if (!(vars[i] = strdup(i < 3 ? buf[i] : spec->extra_env[i - 3]))) {
            exec_job_vars_free(vars);
            return NULL;
        }
    for (const char *const *name = exec_test_gpu_vars; *name; name++) {
        const char *value = getenv(*name);
        if (!value) continue;
        char **at = &vars[3 + nextra + ntest++];
        if (asprintf(at, "%s=%s", *name, value) < 0) {
            *at = NULL;
            exec_job_vars_free(vars);
            return NULL;
        }
    }
    *nvars = 3 + nextra + ntest;
    return vars;
}

void exec_job_vars_free(char **vars) {
    for (size_t i = 0; vars && vars[i]; i++) free(vars[i]);
    free(vars);
}

/* The submitter's environment with aegis's own variables
 * (exec_job_vars) set over it. */
static char **exec_envp(const exec_spec *spec, size_t *nset) {
    size_t nvars = 0;
    char **sets = exec_job_vars(spec, &nvars);
    char **envp = sets ? exec_env_over(spec->env, sets, nvars) : NULL;
    free(sets);
    *nset = nvars;
    return envp;
}

static void exec_free_envp(char **envp, size_t nset) {
    if (!envp) return;
    size_t n = exec_count(envp);
    for (size_t i = n - nset; i < n; i++) free(envp[i]);
    free(envp);
}

/* In a child about to run as the job's user: its gid, its user's groups,
 * its uid, in that order (the gid and groups need root, which setuid
 * drops). 0, or -1 said on stderr. */
static int exec_become_user(uid_t uid, gid_t gid, const char *user,
                            int64_t id) {
    if (user_limits_apply(user, id) != 0) return -1;
    if (setgid(gid) == 0 && initgroups(user, gid) == 0 && setuid(uid) == 0)
        return 0;
    dprintf(2, "aegisd: job %lld: cannot become user %s: %s\n",
            (long long)id, user, strerror(errno));
    return -1;
}

/* The command of an array's job, as aegis writes it: "/usr/bin/env
 * AEGIS_ARRAY_INDEX=N CMD..." (proto.c, and the CLI's array files). Where
 * CMD's first word sets no variable, env(1) would only set N and run CMD:
 * the child does that itself, which saves a program's start a job (a
 * tenth of a short job's cost). Returns the argv to run, CMD's or the
 * command whole. */
static const char *const *exec_array_argv(const char *const *argv) {
    if (!outfile_array_index(argv)[0] || !argv[2] || strchr(argv[2], '=') ||
        putenv((char *)argv[1]) != 0) /* the child's own copy */
        return argv;
    return argv + 2;
}

/* In the job's child: its own session, its pids in the status record
 * (before it runs: a job the record does not name never runs, and its
 * watcher has it started again), its user, its directory, its output
 * pipes. */
static void exec_job_child(const exec_spec *spec, char **envp, int out_fd,
                           int err_fd, int status_fd, exec_record *rec) {
    setsid();
    /* as root still, where a change without CAP_SYS_ADMIN may be refused
     * (a tenth of a second apart at most); refused, it weighs as a login */
    (void)autogroup_set_nice(0, spec->session_nice);
    rec->job_pid = getpid();
    if (exec_record_write(status_fd, rec, false) != 0) {
        dprintf(err_fd, "aegisd: job %lld: cannot record its start: %s\n",
                (long long)spec->id, strerror(errno));
        _exit(126);
    }
    close(status_fd);
    /* close-on-exec: the job gets it as its stdin, not as a 4th fd */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
        _exit(126);
    /* as root still, and before the command: nothing escapes its limits */
    if (cg_join(spec->cgroups) != 0) {
        dprintf(2, "aegisd: job %lld: cannot join its cgroup (%s): %s\n",
                (long long)spec->id, spec->cgroups, strerror(errno));
        _exit(126);
    }
    if (spec->as_user && exec_become_user(spec->uid, spec->gid, spec->user,
                                          spec->id) != 0)
        _exit(126);
    /* the submitter's, as Slurm passes it: its -o files and what it makes */
    if (spec->has_umask) umask((mode_t)spec->umask);
    if (chdir(spec->cwd) != 0) {
        dprintf(2, "aegisd: job %lld: cannot enter %s: %s\n",
                (long long)spec->id, spec->cwd, strerror(errno));
        _exit(126);
    }
    /* its own files, opened as its user in its directory (outfile.h) */
    if (outfile_start(spec->out_path, spec->err_path) != 0) {
        dprintf(2, "aegisd: job %lld: cannot open its output file (%s%s%s): "
                "%s\n", (long long)spec->id, spec->out_path ? spec->out_path : "",
                spec->err_path && spec->err_path[0] ? " " : "",
                spec->err_path ? spec->err_path : "", strerror(errno));
        _exit(126);
    }
    /* execvp searches the PATH of environ (execvpe too: the PATH of its
     * caller, not of envp): make it the job's, so the command is found
     * where the submitter would find it, as the submitter */
    environ = envp;
    const char *const *argv = exec_array_argv(spec->argv);
    execvp(argv[0], (char *const *)argv);
    dprintf(2, "aegisd: job %lld: cannot run '%s': %s\n", (long long)spec->id,
            argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126); /* as sh and env(1) tell them */
}

/* Closes every descriptor above 2 but the n in keep (which it sorts): the
 * shim must not keep aegisd's socket, database or client connections open
 * after aegisd exits. */
static void exec_close_others(int *keep, int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (keep[j] < keep[i]) {
                int t = keep[i];
                keep[i] = keep[j];
                keep[j] = t;
            }
    unsigned from = 3;
    for (int i = 0; i < n; i++) {
        if ((unsigned)keep[i] > from) close_range(from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    close_range(from, ~0U, 0);
}

/* One stream of the job's output on its way from its pipe to its log. */
typedef struct exec_stream {
    int pipe_fd;                /* the read end; -1 once at its end */
    int log_fd;
    long long size;             /* the log's size: where the next byte goes */
    long long dropped;          /* the bytes before this are a hole */
} exec_stream;

/* Keeps the end of the log on disk, cap bytes at most and cap/2 at least:
 * past the cap, its head up to cap/2 from the end becomes a hole.
 * The file keeps its size and offsets, so `aegis log -f` following it by
 * offset and the OOM search in the tail of stderr read it as before; a
 * reader skips the hole (SEEK_DATA). A file system that cannot punch
 * holes gets the log started over instead. */
static void exec_cap(exec_stream *s, long long cap) {
    if (s->size - s->dropped <= cap) return;
    long long upto = (s->size - cap / 2) / EXEC_CAP_STEP * EXEC_CAP_STEP;
    if (upto <= s->dropped) return;
    if (fallocate(s->log_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)s->dropped, (off_t)(upto - s->dropped)) == 0)
        s->dropped = upto;
    else if (ftruncate(s->log_fd, 0) == 0)
        s->size = s->dropped = 0;
}

/* Copies what the stream's pipe holds now into its log: how many bytes
 * it read, 0 when there were none, -1 at its end. Output the log cannot
 * take (a full disk) is dropped, so the job never blocks on it. */
static ssize_t exec_copy(exec_stream *s, long long cap) {
    char buf[65536];
    ssize_t n = read(s->pipe_fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (n <= 0) {
        close(s->pipe_fd);
        s->pipe_fd = -1;
        return -1;
    }
    for (ssize_t at = 0; at < n;) {
        ssize_t w = write(s->log_fd, buf + at, (size_t)(n - at));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        at += w;
        s->size += w;
    }
    exec_cap(s, cap);
    return n;
}

/* Copies the job's output until the job (its session leader) exits
 * (sigfd: its SIGCHLD). 0 and its wait status, or -1. */
static int exec_pump(exec_stream *streams, int sigfd, pid_t job, long long cap,
                     int *status) {
    for (;;) {
        struct pollfd p[3] = {{.fd = streams[0].pipe_fd, .events = POLLIN},
                              {.fd = streams[1].pipe_fd, .events = POLLIN},
                              {.fd = sigfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        for (int i = 0; i < 2; i++)
            if (p[i].revents) exec_copy(&streams[i], cap);
        if (!p[2].revents) continue;
        struct signalfd_siginfo si;
        if (read(sigfd, &si, sizeof(si)) < 0 && errno != EAGAIN) return -1;
        /* the job's orphans are the shim's children too (it is their
         * subreaper): reap them as they go */
        pid_t got;
        int ws;
        while ((got = waitpid(-1, &ws, WNOHANG)) > 0)
            if (got == job) {
                *status = ws;
                return 0;
            }
        if (got < 0 && errno != EINTR) return -1;
    }
}

/* Copies what the job's pipes still hold once it has ended, up to
 * EXEC_DRAIN_BYTES of each. */
static void exec_drain(exec_stream *streams, long long cap) {
    for (int i = 0; i < 2; i++) {
        long long left = EXEC_DRAIN_BYTES;
        ssize_t n;
        while (left > 0 && streams[i].pipe_fd >= 0 &&
               (n = exec_copy(&streams[i], cap)) > 0)
            left -= n;
    }
}

/* A stream's pipe, its read end not blocking (see exec_pump). */
static int exec_stream_open(exec_stream *s, int log_fd, int pipe_fds[2]) {
    struct stat st;
    *s = (exec_stream){.pipe_fd = -1, .log_fd = log_fd};
    if (fstat(log_fd, &st) != 0 || pipe2(pipe_fds, O_CLOEXEC) != 0)
        return -1;
    s->pipe_fd = pipe_fds[0];
    s->size = st.st_size;
    return fcntl(s->pipe_fd, F_SETFL, O_NONBLOCK);
}

static void exec_nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Whether pid is in seen (n of at most max); adds it when not and there is
 * room. */
static bool exec_seen(pid_t *seen, int *n, int max, pid_t pid) {
    for (int i = 0; i < *n; i++)
        if (seen[i] == pid) return true;
    if (*n < max) seen[(*n)++] = pid;
    return false;
}

/* In the shim, once the job's leader has exited: SIGKILLs what is left of
 * the job -- its session, and the shim's other children (a subreaper's:
 * the job's orphans, even those that left the session) -- until nothing
 * is, reaping them. Returns how many processes it killed (each counted
 * once up to 256). */
static int exec_end_session(pid_t job) {
    pid_t self = getpid(), seen[256];
    int nseen = 0, killed = 0;
    /* Nothing left, most often: every living process the job started has
     * a living parent up to one that is the shim's child (the shim is
     * their subreaper), so no child means none at all, without a scan of
     * /proc, which on a busy server costs more than a short job. */
    pid_t got;
    while ((got = waitpid(-1, NULL, WNOHANG)) > 0) {
    }
    if (got < 0 && errno == ECHILD) return 0;
    for (;;) {
        int alive = 0;
        DIR *proc = opendir("/proc");
        struct dirent *e;
        while (proc && (e = readdir(proc))) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            char state;
            unsigned long long start;
            pid_t sid, ppid;
            if (*end || pid <= 0 || pid == self ||
                exec_proc_stat((pid_t)pid, &state, &start, &sid, &ppid) != 0 ||
                state == 'Z' || state == 'X' || (sid != job && ppid != self))
                continue;
            kill((pid_t)pid, SIGKILL);
            alive++;
            if (!exec_seen(seen, &nseen, 256, (pid_t)pid)) killed++;
        }
        if (proc) closedir(proc);
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        if (alive == 0) return killed;
        exec_nap_ms(10);
    }
}

/* In the shim, once the job's process has ended (rec: how): its end into
 * the status record, and the shim exits. A process the record does not
 * name could not record its start, and so never ran the command
 * (exec_job_child): the record is left without a job, and aegisd queues
 * the attempt again as never started, where an end recorded here failed
 * the job for a fault of aegisd's disk. */
_Noreturn static void exec_record_end(const exec_spec *spec, int status_fd,
                                      const exec_record *rec) {
    if (!exec_record_names_job(status_fd, rec->job_pid)) {
        dprintf(2, "aegis-shim: job %lld attempt %d: its process did not "
                "record its start (it %s %d; the job's stderr log says why): "
                "not run\n", (long long)spec->id, spec->attempt,
                WIFSIGNALED(rec->status) ? "was killed by signal" : "exited",
                WIFSIGNALED(rec->status) ? WTERMSIG(rec->status)
                                         : WEXITSTATUS(rec->status));
        _exit(1);
    }
    /* Only a read-only disk fails this write (its space was taken at the
     * start): the shim waits for it rather than lose the outcome. */
    for (bool said = false; exec_record_write(status_fd, rec, true) != 0;
         said = true) {
        if (!said)
            dprintf(2, "aegis-shim: job %lld attempt %d: cannot record its end "
                    "(%s); retrying every second\n", (long long)spec->id,
                    spec->attempt, strerror(errno));
        exec_nap_ms(1000);
    }
    _exit(0);
}

/* In the shim: start the job, copy its output until it
 * exits, end what is left of it, copy what its pipes still hold, record
 * the status. */
static void exec_shim(const exec_spec *spec, char **envp, int out_fd,
                      int err_fd, int status_fd,
                      long long err_offset) {
    /* outlive aegisd and its terminal: a no-op (EPERM) where it runs in a
     * session of its own already (spawned so, or forked by the launcher) */
    setsid();
    (void)autogroup_set_nice(0, spec->session_nice); /* as the job's, below */
    prctl(PR_SET_NAME, "aegis-shim");
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int keep[] = {out_fd, err_fd, status_fd};
    exec_close_others(keep, 3);
    sigset_t none, chld;
    sigemptyset(&none);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    /* SIGCHLD blocked before the fork: pending until sigfd reads it */
    sigprocmask(SIG_SETMASK, &chld, NULL);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN); /* aegisd may be gone before it reads the pid */
    exec_record rec = {.err_offset = err_offset, .shim_pid = getpid(),
                       .shim_start = exec_start_time(getpid())};
    exec_stream streams[2];
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    pid_t job = -1;
    if (sigfd >= 0 && exec_stream_open(&streams[0], out_fd, out_pipe) == 0 &&
        exec_stream_open(&streams[1], err_fd, err_pipe) == 0)
        job = fork(); /* cheap: the shim is a small program of its own */
    if (job == 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        exec_job_child(spec, envp, out_pipe[1], err_pipe[1], status_fd, &rec);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    int status;
    if (job < 0) { /* a record without a job: aegisd queues it again */
        dprintf(2, "aegis-shim: job %lld attempt %d: cannot start it: %s\n",
                (long long)spec->id, spec->attempt, strerror(errno));
        _exit(1);
    }
    if (exec_pump(streams, sigfd, job, spec->log_max_bytes, &status) != 0)
        _exit(1);
    struct timespec ended;
    clock_gettime(CLOCK_REALTIME, &ended);
    rec.ended_at = (double)ended.tv_sec + ended.tv_nsec / 1e9;
    rec.job_pid = job;
    rec.status = status;
    rec.left = exec_end_session(job);
    exec_drain(streams, spec->log_max_bytes);
    exec_record_end(spec, status_fd, &rec);
}

int exec_fds_above_shim(int *fds, int n) {
    for (int i = 0; i < n; i++) {
        if (fds[i] >= SHIM_OUT_FD + SHIM_NFDS) continue;
        int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, SHIM_OUT_FD + SHIM_NFDS);
        if (moved < 0) return -1;
        close(fds[i]);
        fds[i] = moved;
    }
    return 0;
}

int exec_posix_spawn_shim(const char *path, char *const *shown,
                          char *const *env, const int *fds, int nfds,
                          pid_t *pid) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    for (int i = 0; rc == 0 && i < nfds; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, fds[i], SHIM_OUT_FD + i);
    /* Its own session from the start, not from its setsid(): where the
     * kernel shares CPU time by session (autogroup, outside CPU cgroups),
     * its exec and loader then count in its group, not in aegisd's, whose
     * threads (the front answering `gpus`) waited behind every starting
     * watcher: the median `gpus` answer during a churn 0.57 -> 0.13 ms. */
    if (rc == 0 && (rc = posix_spawnattr_init(&attr)) == 0) {
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
        if (rc == 0) rc = posix_spawn(pid, path, &fa, &attr, shown, env);
        posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Starts the shim program at path with the nfds of fds (out, err,
 * status) as its descriptors 3 to 5, its arguments argv (exec_shim_argv)
 * in its environment envp (exec_args_in_env), and only its mode and the
 * job's id as arguments. Forked by the launcher where `launched` and it
 * answers (launcher.h), else spawned: posix_spawn, not fork, since glibc's
 * starts the child without copying aegisd's memory (a fork of a big
 * daemon costs a copy-on-write fault per page it touches afterwards).
 * Either way the shim is the caller's child. A launcher started for it
 * weighs as session_nice (autogroup.h), as the jobs whose watchers it
 * forks. 0, or an errno. */
static int exec_spawn_shim(const char *path, char *const *argv,
                           char *const *envp, const int *fds, int nfds,
                           bool launched, int session_nice, pid_t *pid) {
    char **env = exec_args_in_env(argv, envp);
    if (!env) return ENOMEM;
    char *const shown[] = {argv[0], argv[SHIM_MODE], argv[SHIM_ID], NULL};
    int rc = launched ? launcher_spawn(path, session_nice, shown, env, fds,
                                       nfds, pid)
                      : -1;
    if (rc != 0) rc = exec_posix_spawn_shim(path, shown, env, fds, nfds, pid);
    exec_args_in_env_free(env, envp);
    return rc;
}

/* An attempt made ready (exec_prepare): its status file is open and
 * locked, the shim's arguments built; its logs are opened by exec_spawn. */
struct exec_pending {
    char **argv, **envp;        /* the shim's (exec_shim_environ) */
    int fds[SHIM_NFDS];         /* out, err, status: the shim's 3 to 5 */
    const char *shim_path;      /* the spec's: aegisd's, for its life */
    int session_nice;           /* the spec's */
    exec_logs logs;
};

/* The attempt's status file, open in fds[2]: 0, or EXEC_NO_STATUS with a
 * message. Its record's err_offset is 0 until exec_open_logs. */
static int exec_open_status(const exec_spec *spec, int *fds, char *err,
                            size_t errlen) {
    char status_path[4096];
    exec_status_path(status_path, sizeof(status_path), spec->run_dir, spec->id,
                     spec->attempt);
    fds[2] = exec_status_create(status_path, spec->run_dir, spec->spares, err,
                                errlen);
    return fds[2] < 0 ? EXEC_NO_STATUS : 0;
}

/* Opens the attempt's logs into p->fds and puts the size of its stderr
 * log, where this attempt's output starts, in its status record and the
 * shim's arguments. Off the loop: on ext4 without a journal a new file
 * can cost milliseconds (exec_spares). 0, or -1 with a message. */
static int exec_open_logs(exec_pending *p, long long *err_offset, char *err,
                          size_t errlen) {
    p->fds[0] = exec_open_log(&p->logs, false, err, errlen);
    if (p->fds[0] < 0) return -1;
    p->fds[1] = exec_open_log(&p->logs, true, err, errlen);
    if (p->fds[1] < 0) return -1;
    struct stat st;
    char *offset = NULL;
    exec_record rec = {0};
    if (fstat(p->fds[1], &st) != 0 ||
        ((rec.err_offset = st.st_size) > 0 &&
         (exec_record_write(p->fds[2], &rec, false) != 0 ||
          asprintf(&offset, "%lld", rec.err_offset) < 0))) {
        snprintf(err, errlen, "job %lld: cannot start: %s",
                 (long long)p->logs.id, strerror(errno));
        return -1;
    }
    if (offset) {
        free(p->argv[SHIM_ERR_OFFSET]);
        p->argv[SHIM_ERR_OFFSET] = offset;
    }
    *err_offset = rec.err_offset;
    return 0;
}

int exec_prepare(const exec_spec *spec, exec_run *run, exec_pending **out,
                 char *err, size_t errlen) {
    exec_pending *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "job %lld: cannot start: out of memory",
                 (long long)spec->id);
        return -1;
    }
    p->shim_path = spec->shim_path;
    p->session_nice = spec->session_nice;
    p->logs = (exec_logs){.id = spec->id, .log_dirfd = spec->log_dirfd,
                          .log_dir = spec->log_dir, .as_user = spec->as_user,
                          .uid = spec->uid, .gid = spec->gid};
    for (int i = 0; i < SHIM_NFDS; i++) p->fds[i] = -1;
    int rc = exec_open_status(spec, p->fds, err, errlen);
    size_t nset = 0;
    char **envp = rc == 0 ? exec_envp(spec, &nset) : NULL;
    exec_shim_args a = {.mode = "job", .id = spec->id,
                        .attempt = spec->attempt,
                        .log_max_bytes = spec->log_max_bytes,
                        .as_user = spec->as_user, .uid = spec->uid,
                        .gid = spec->gid, .user = spec->user,
                        .cwd = spec->cwd, .cgroups = spec->cgroups,
                        .out_path = spec->out_path,
                        .err_path = spec->err_path,
                        .has_umask = spec->has_umask, .umask = spec->umask};
    if (envp) {
        p->argv = exec_shim_argv(&a, exec_count(envp),
                                 (char *const *)spec->argv);
        p->envp = exec_shim_environ(envp, spec->session_nice);
    }
    if (rc == 0 && (!p->argv || !p->envp)) {
        snprintf(err, errlen, "job %lld: cannot start: out of memory",
                 (long long)spec->id);
        rc = -1;
    }
    exec_free_envp(envp, nset);
    if (rc != 0) {
        exec_pending_free(p);
        return rc;
    }
    *run = (exec_run){0};
    *out = p;
    return 0;
}

int exec_spawn(exec_pending *p, exec_run *run, char *err, size_t errlen) {
    if (exec_open_logs(p, &run->err_offset, err, errlen) != 0) return -1;
    if (exec_fds_above_shim(p->fds, SHIM_NFDS) != 0) {
        snprintf(err, errlen, "job %lld: cannot start: %s",
                 (long long)p->logs.id, strerror(errno));
        return -1;
    }
    int spawned = exec_spawn_shim(p->shim_path, p->argv, p->envp, p->fds,
                                  SHIM_NFDS, true, p->session_nice,
                                  &run->shim_pid);
    if (spawned != 0) {
        snprintf(err, errlen, "job %lld: cannot start its watcher %s: %s",
                 (long long)p->logs.id, p->shim_path, strerror(spawned));
        return -1;
    }
    run->shim_start = exec_start_time(run->shim_pid);
    return 0;
}

void exec_pending_free(exec_pending *p) {
    if (!p) return;
    for (int i = 0; i < SHIM_NFDS; i++)
        if (p->fds[i] >= 0) close(p->fds[i]);
    exec_shim_argv_free(p->argv);
    exec_shim_argv_free(p->envp);
    free(p);
}

int exec_shim_path(char *out, size_t outlen, char *err, size_t errlen) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash = n > 0 ? memchr(self, '/', (size_t)n) : NULL;
    if (slash) {
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        snprintf(out, outlen, "%s/aegis-shim", self);
        if (access(out, X_OK) == 0) return 0;
    }
    snprintf(out, outlen, "%s", AEGIS_SHIM_PATH);
    if (access(out, X_OK) == 0) return 0;
    snprintf(err, errlen, "the job watcher aegis-shim is neither next to "
             "aegisd (%s) nor at %s: %s", slash ? self : "?", AEGIS_SHIM_PATH,
             strerror(errno));
    return -1;
}

static void exec_notify_child(const exec_notify_spec *spec, char **envp);

/* The shim watching a job's attempt (exec_prepare, exec_spawn). */
static int exec_shim_job(const exec_shim_args *a, char **envp, char **argv) {
    /* put in place by dup2 (posix_spawn's, or the launcher's), they are
     * open across exec: the job must not inherit them (it would hold its
     * logs open) */
    for (int fd = SHIM_OUT_FD; fd < SHIM_OUT_FD + SHIM_NFDS; fd++)
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
            dprintf(2, "aegis-shim: job %lld: descriptor %d: %s\n",
                    (long long)a->id, fd, strerror(errno));
            return 2;
        }
    exec_spec spec = {
        .id = a->id, .attempt = a->attempt,
        .argv = (const char *const *)argv, .cwd = a->cwd,
        .as_user = a->as_user, .uid = a->uid, .gid = a->gid,
        .user = a->user, .log_max_bytes = a->log_max_bytes,
        .cgroups = a->cgroups, .out_path = a->out_path,
        .err_path = a->err_path, .has_umask = a->has_umask,
        .umask = a->umask, .session_nice = a->session_nice,
    };
    exec_shim(&spec, envp, SHIM_OUT_FD, SHIM_ERR_FD, SHIM_STATUS_FD,
              a->err_offset);
    return 1; /* exec_shim exits */
}

int exec_shim_main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[SHIM_MODE], "launcher") == 0)
        return launcher_main(SHIM_OUT_FD, argv);
    exec_shim_args a;
    char **envp = NULL, **tail = NULL;
    if (exec_shim_args_read(argc, argv, &a, &envp, &tail) != 0 ||
        (strcmp(a.mode, "job") != 0 && strcmp(a.mode, "notify") != 0)) {
        dprintf(2, "aegis-shim: started by aegisd only (its arguments are "
                "aegisd's, not a user's)\n");
        free(envp);
        return 2;
    }
    /* aegisd may run at a higher priority than its jobs (aegisd.service:
     * Nice=-5), to answer its clients while jobs load every CPU; the
     * watcher and what it starts take the default's back. */
    setpriority(PRIO_PROCESS, 0, 0);
    if (strcmp(a.mode, "job") == 0) return exec_shim_job(&a, envp, tail);
    exec_notify_spec spec = {.id = a.id, .cmd = tail[0], .cwd = a.cwd,
                             .as_user = a.as_user, .uid = a.uid,
                             .gid = a.gid, .user = a.user,
                             .has_umask = a.has_umask, .umask = a.umask};
    exec_notify_child(&spec, envp);
    return 1; /* it execs or exits */
}

/* In a notifier's shell, under its supervisor: no input or output, the
 * job's user and directory (or / when that is gone), then the shell. */
static void exec_notify_shell(const exec_notify_spec *spec, char **envp) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
        dup2(devnull, 2) < 0)
        _exit(126);
    if (devnull > 2) close(devnull);
    if (spec->as_user &&
        exec_become_user(spec->uid, spec->gid, spec->user, spec->id) != 0)
        _exit(126);
    if (spec->has_umask) umask((mode_t)spec->umask);
    if ((!spec->cwd || chdir(spec->cwd) != 0) && chdir("/") != 0) _exit(126);
    execve("/bin/sh", (char *const[]){"sh", "-c", (char *)spec->cmd, NULL},
           envp);
    _exit(127);
}

/* The supervisor ends as the shell ended (status, as waitpid gave it). */
static void exec_exit_as(int status) {
    if (WIFSIGNALED(status)) {
        sigset_t sig;
        sigemptyset(&sig);
        sigaddset(&sig, WTERMSIG(status));
        sigprocmask(SIG_UNBLOCK, &sig, NULL);
        raise(WTERMSIG(status));
        _exit(128 + WTERMSIG(status));
    }
    _exit(WEXITSTATUS(status));
}

/* In a notifier's supervisor, aegisd's child, which stays aegisd's user:
 * a session of its own and the subreaper of everything the notifier's
 * shell starts, so that a process that leaves the session (setsid) and
 * is orphaned comes back to it rather than to init. It runs the shell,
 * waits until the shell and every process it started have ended, and
 * ends as the shell did; at SIGTERM (aegisd's, at notify_timeout_s) it
 * kills them all first, those in other sessions too (exec_end_session).
 * Neither a process group nor a session holds a notifier whole. */
static void exec_notify_child(const exec_notify_spec *spec, char **envp) {
    setsid();
    prctl(PR_SET_NAME, "aegis-notify");
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    exec_close_others(NULL, 0);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, SIGCHLD);
    sigaddset(&wake, SIGTERM);
    sigprocmask(SIG_SETMASK, &wake, NULL); /* pending until sigwait */
    pid_t shell = _Fork(); /* as the shim's: not libuv's atfork handler */
    if (shell == 0) exec_notify_shell(spec, envp);
    if (shell < 0) _exit(126);
    int status = 0, sig, st;
    for (;;) {
        if (sigwait(&wake, &sig) == 0 && sig == SIGTERM) {
            exec_end_session(getpid());
            _exit(128 + SIGKILL);
        }
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
            if (pid == shell) status = st;
        if (pid < 0 && errno == ECHILD) exec_exit_as(status);
    }
}

pid_t exec_notify_start(const exec_notify_spec *spec, char *err,
                        size_t errlen) {
    size_t nvars = 0;
    while (spec->vars[nvars]) nvars++;
    char **sets = calloc(nvars ? nvars : 1, sizeof(*sets));
    for (size_t i = 0; sets && i < nvars; i++) sets[i] = strdup(spec->vars[i]);
    char **envp = sets ? exec_env_over(spec->env, sets, nvars) : NULL;
    free(sets);
    if (!envp) {
        snprintf(err, errlen, "job %lld: notifier: out of memory",
                 (long long)spec->id);
        return -1;
    }
    exec_shim_args a = {.mode = "notify", .id = spec->id,
                        .as_user = spec->as_user, .uid = spec->uid,
                        .gid = spec->gid, .user = spec->user,
                        .cwd = spec->cwd, .has_umask = spec->has_umask,
                        .umask = spec->umask};
    char **argv = exec_shim_argv(&a, exec_count(envp),
                                 (char *const[]){(char *)spec->cmd, NULL});
    char **shim_env = exec_shim_environ(envp, 0);
    exec_free_envp(envp, nvars);
    pid_t pid = -1;
    /* the shim is the notifier's supervisor (exec_notify_child): pid is
     * its, and it stays aegisd's user */
    int rc = argv && shim_env ? exec_spawn_shim(spec->shim_path, argv,
                                                shim_env, NULL, 0, false,
                                                0, &pid)
                              : ENOMEM;
    exec_shim_argv_free(argv);
    exec_shim_argv_free(shim_env);
    if (rc != 0) {
        snprintf(err, errlen, "job %lld: notifier: cannot start %s: %s",
                 (long long)spec->id, spec->shim_path, strerror(rc));
        return -1;
    }
    return pid;
}
