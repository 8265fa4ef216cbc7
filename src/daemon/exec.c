/* exec.c -- the job executor: shim and job processes, log files and
 * their cap, exit classification (see exec.h for why a shim sits between
 * aegisd and the job, and copies its output).
 *
 * Everything the children need (argv, envp, paths) is built before fork,
 * so the children only make system calls until exec.
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The cap drops a log's head in whole steps of this many bytes, a
 * multiple of any file system's block, so no partial block of zeros is
 * left where the kept bytes start. */
#define EXEC_CAP_STEP 65536

/* Bytes of each stream copied after the job has exited: what its pipe
 * can hold (Linux's largest pipe by default), not the output of processes
 * it left behind that keep writing, which would keep the shim, and so the
 * job's end, waiting forever. */
#define EXEC_DRAIN_BYTES (1 << 20)

/* What OOM looks like on stderr: PyTorch ("CUDA out of memory",
 * torch.OutOfMemoryError), TensorFlow/JAX/XLA ("RESOURCE_EXHAUSTED"), and
 * the generic wording of CUDA and most tools ("out of memory"). */
static const char *const oom_patterns[] = {
    "CUDA out of memory", "OutOfMemoryError", "RESOURCE_EXHAUSTED",
    "out of memory",
};

/* A job's log in the log folder: "ID.out" or "ID.err". */
static void exec_log_name(char *out, size_t outlen, int64_t id,
                          bool err_stream) {
    snprintf(out, outlen, "%lld.%s", (long long)id, err_stream ? "err" : "out");
}

const char *exec_log_error(int err) {
    if (err == EWOULDBLOCK)
        return "held by a lease (fcntl F_SETLEASE) of another process; "
               "not waiting for it";
    if (err == ELOOP) return "a symbolic link; not followed";
    if (err == EPERM)
        return "not this job's user's (left from an earlier database?)";
    return strerror(err);
}

/* Opens a job's log to read it: O_NONBLOCK makes a lease fail the open
 * with EWOULDBLOCK where it would otherwise wait out the lease's break
 * (45 s by default), with all of aegisd. */
static int exec_log_open(int log_dirfd, int64_t id, bool err_stream) {
    char name[64];
    exec_log_name(name, sizeof(name), id, err_stream);
    return openat(log_dirfd, name,
                  O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

ssize_t exec_log_read(int log_dirfd, int64_t id, bool err_stream, uid_t owner,
                      long long *offset, char *buf, size_t len) {
    int fd = exec_log_open(log_dirfd, id, err_stream);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    ssize_t got = -1;
    struct stat st;
    off_t kept;
    if (fstat(fd, &st) == 0 && st.st_uid != owner) {
        errno = EPERM;
    } else if ((kept = lseek(fd, (off_t)*offset, SEEK_DATA)) >= 0) {
        *offset = kept; /* past the hole of what the cap dropped */
        got = pread(fd, buf, len, kept);
    } else if (errno == ENXIO) { /* at the end */
        got = 0;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return got;
}

static void exec_status_path(char *out, size_t outlen, const char *run_dir,
                             int64_t id, int attempt) {
    snprintf(out, outlen, "%s/%lld.%d.status", run_dir, (long long)id, attempt);
}

/* Opens a job's log for appending, mode 0600: a new one is created for
 * the job's user; an existing one, an earlier attempt's, is appended to
 * only when it is a plain file of that user already (a database restored
 * from a backup hands its ids out again: another user's old log is never
 * reused, nor given away). Never through a link planted at its name, and
 * never waiting on a lease. */
static int exec_open_log(const exec_spec *spec, bool err_stream, char *err,
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

/* The submitter's environment with aegis's own variables set over it:
 * CUDA_VISIBLE_DEVICES, AEGIS_JOB_ID, AEGIS_ATTEMPT, then the spec's
 * extra ones. The set ones are the last entries, freed by
 * exec_free_envp. */
static char **exec_envp(const exec_spec *spec, size_t *nset) {
    size_t n = 0, nextra = 0;
    while (spec->env[n]) n++;
    while (spec->extra_env && spec->extra_env[nextra]) nextra++;
    char **sets = calloc(3 + nextra, sizeof(*sets));
    char **envp = calloc(n + 3 + nextra + 1, sizeof(*envp));
    if (!sets || !envp) goto fail;
    char buf[3][4200];
    snprintf(buf[0], sizeof(buf[0]), "CUDA_VISIBLE_DEVICES=%s", spec->visible);
    snprintf(buf[1], sizeof(buf[1]), "AEGIS_JOB_ID=%lld", (long long)spec->id);
    snprintf(buf[2], sizeof(buf[2]), "AEGIS_ATTEMPT=%d", spec->attempt);
    for (size_t i = 0; i < 3 + nextra; i++)
        if (!(sets[i] = strdup(i < 3 ? buf[i] : spec->extra_env[i - 3])))
            goto fail;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!exec_env_overridden(spec->env[i], sets, 3 + nextra))
            envp[k++] = (char *)spec->env[i];
    memcpy(envp + k, sets, (3 + nextra) * sizeof(*sets));
    free(sets);
    *nset = 3 + nextra;
    return envp;
fail:
    for (size_t i = 0; sets && i < 3 + nextra; i++) free(sets[i]);
    free(sets);
    free(envp);
    return NULL;
}

static void exec_free_envp(char **envp, size_t nset) {
    if (!envp) return;
    size_t n = 0;
    while (envp[n]) n++;
    for (size_t i = n - nset; i < n; i++) free(envp[i]);
    free(envp);
}

/* In the job's child: its own session, its user, its directory, its
 * output pipes. */
static void exec_job_child(const exec_spec *spec, char **envp, int out_fd,
                           int err_fd) {
    setsid();
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
        _exit(126);
    if (spec->as_user &&
        (setgid(spec->gid) != 0 || initgroups(spec->user, spec->gid) != 0 ||
         setuid(spec->uid) != 0)) {
        dprintf(2, "aegisd: job %lld: cannot become user %s: %s\n",
                (long long)spec->id, spec->user, strerror(errno));
        _exit(126);
    }
    if (chdir(spec->cwd) != 0) {
        dprintf(2, "aegisd: job %lld: cannot enter %s: %s\n",
                (long long)spec->id, spec->cwd, strerror(errno));
        _exit(126);
    }
    /* execvp searches the PATH of environ (execvpe too: the PATH of its
     * caller, not of envp): make it the job's, so the command is found
     * where the submitter would find it, as the submitter */
    environ = envp;
    execvp(spec->argv[0], (char *const *)spec->argv);
    dprintf(2, "aegisd: job %lld: cannot run '%s': %s\n", (long long)spec->id,
            spec->argv[0], strerror(errno));
    _exit(127);
}

/* Closes every descriptor above 2 but the three given: the shim must not
 * keep aegisd's socket, database or client connections open after aegisd
 * exits. */
static void exec_close_others(int a, int b, int c) {
    int keep[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (keep[j] < keep[i]) {
                int t = keep[i];
                keep[i] = keep[j];
                keep[j] = t;
            }
    unsigned from = 3;
    for (int i = 0; i < 3; i++) {
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
 * (sigfd: its SIGCHLD), then what its pipes still hold, up to
 * EXEC_DRAIN_BYTES. 0 and its wait status, or -1. */
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
        pid_t got = waitpid(job, status, WNOHANG);
        if (got == job) break;
        if (got < 0 && errno != EINTR) return -1;
    }
    for (int i = 0; i < 2; i++) {
        long long left = EXEC_DRAIN_BYTES;
        ssize_t n;
        while (left > 0 && streams[i].pipe_fd >= 0 &&
               (n = exec_copy(&streams[i], cap)) > 0)
            left -= n;
    }
    return 0;
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

/* In the shim: start the job, report its pid, copy its output, leave the
 * status. */
static void exec_shim(const exec_spec *spec, char **envp, int out_fd,
                      int err_fd, int report_fd, const char *status_path) {
    setsid(); /* outlive aegisd and its terminal */
    prctl(PR_SET_NAME, "aegis-shim");
    exec_close_others(out_fd, err_fd, report_fd);
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
    exec_stream streams[2];
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    int sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    pid_t job = -1;
    if (sigfd >= 0 && exec_stream_open(&streams[0], out_fd, out_pipe) == 0 &&
        exec_stream_open(&streams[1], err_fd, err_pipe) == 0)
        job = _Fork(); /* not fork: the atfork handler libuv left in this
                          process would close and reuse the descriptors it
                          had in aegisd, which are the pipes' now */
    if (job == 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(report_fd);
        exec_job_child(spec, envp, out_pipe[1], err_pipe[1]);
    }
    if (write(report_fd, &job, sizeof(job)) != (ssize_t)sizeof(job)) _exit(1);
    close(report_fd);
    close(out_pipe[1]);
    close(err_pipe[1]);
    int status;
    if (job < 0 ||
        exec_pump(streams, sigfd, job, spec->log_max_bytes, &status) != 0)
        _exit(1);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", status) < 0 || fclose(f) != 0 ||
        rename(tmp, status_path) != 0)
        _exit(1);
    _exit(0);
}

int exec_start(const exec_spec *spec, exec_run *run, char *err,
               size_t errlen) {
    char status_path[4096];
    exec_status_path(status_path, sizeof(status_path), spec->run_dir, spec->id,
                     spec->attempt);
    unlink(status_path);
    int out_fd = exec_open_log(spec, false, err, errlen);
    if (out_fd < 0) return -1;
    int err_fd = exec_open_log(spec, true, err, errlen);
    size_t nset = 0;
    char **envp = exec_envp(spec, &nset);
    int report[2] = {-1, -1};
    struct stat st;
    if (err_fd < 0 || !envp || fstat(err_fd, &st) != 0 ||
        pipe2(report, O_CLOEXEC) != 0) {
        if (err_fd >= 0)
            snprintf(err, errlen, "job %lld: cannot start: %s",
                     (long long)spec->id, strerror(errno));
        goto fail;
    }
    run->err_offset = st.st_size;
    run->shim_pid = fork();
    if (run->shim_pid == 0) {
        close(report[0]);
        exec_shim(spec, envp, out_fd, err_fd, report[1], status_path);
    }
    if (run->shim_pid < 0) {
        snprintf(err, errlen, "job %lld: fork: %s", (long long)spec->id,
                 strerror(errno));
        goto fail;
    }
    close(report[1]);
    report[1] = -1;
    ssize_t got;
    while ((got = read(report[0], &run->job_pid, sizeof(run->job_pid))) < 0 &&
           errno == EINTR) {
    }
    if (got != (ssize_t)sizeof(run->job_pid) || run->job_pid <= 0) {
        snprintf(err, errlen, "job %lld: the shim could not fork the job",
                 (long long)spec->id);
        goto fail;
    }
    run->shim_start = exec_start_time(run->shim_pid);
    close(report[0]);
    close(out_fd);
    close(err_fd);
    exec_free_envp(envp, nset);
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        if (report[i] >= 0) close(report[i]);
    close(out_fd);
    if (err_fd >= 0) close(err_fd);
    exec_free_envp(envp, nset);
    return -1;
}

/* Field 3 (state) and field 22 (starttime) of /proc/PID/stat; the command
 * name (field 2) may hold spaces and parentheses, so parse after its last
 * ')'. */
static int exec_proc_stat(pid_t pid, char *state, unsigned long long *start,
                          pid_t *session) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    int ppid, pgrp, sid;
    if (!p || sscanf(p + 2, "%c %d %d %d", state, &ppid, &pgrp, &sid) != 4)
        return -1;
    *session = sid;
    /* p at ")"; the k-th space after it opens field 2 + k: go to 22 */
    for (int field = 3; field <= 22 && p; field++) p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", start) != 1) return -1;
    return 0;
}

unsigned long long exec_start_time(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid;
    if (pid <= 0 || exec_proc_stat(pid, &state, &start, &sid) != 0 ||
        state == 'Z' || state == 'X')
        return 0;
    return start;
}

bool exec_alive(pid_t pid, unsigned long long start) {
    return start != 0 && exec_start_time(pid) == start;
}

bool exec_in_job(pid_t pid, pid_t job_pid) {
    char state;
    unsigned long long start;
    pid_t sid;
    return exec_proc_stat(pid, &state, &start, &sid) == 0 && sid == job_pid;
}

void exec_kill(pid_t job_pid, int sig) {
    if (job_pid > 1) kill(-job_pid, sig);
}

int exec_status(const char *run_dir, int64_t id, int attempt, int *status) {
    char path[4096];
    exec_status_path(path, sizeof(path), run_dir, id, attempt);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fscanf(f, "%d", status) == 1;
    fclose(f);
    unlink(path);
    return ok ? 0 : -1;
}

core_exit exec_classify(int status, int log_dirfd, int64_t id,
                        long long err_offset, char *why, size_t whylen) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        snprintf(why, whylen, "exit 0");
        return CORE_EXIT_OK;
    }
    char code[48];
    if (WIFEXITED(status))
        snprintf(code, sizeof(code), "exit %d", WEXITSTATUS(status));
    else
        snprintf(code, sizeof(code), "killed by signal %d", WTERMSIG(status));
    char tail[EXEC_TAIL_BYTES + 1];
    size_t n = 0;
    int fd = exec_log_open(log_dirfd, id, true);
    if (fd < 0 && errno != ENOENT) {
        snprintf(why, whylen, "%s (stderr not searched for an OOM message: "
                 "%s)", code, exec_log_error(errno));
        return CORE_EXIT_FAILED;
    }
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        /* a log that started over at its cap (exec_cap) is all new */
        if (err_offset > st.st_size) err_offset = 0;
        long long from = st.st_size - EXEC_TAIL_BYTES;
        if (from < err_offset) from = err_offset;
        if (from < st.st_size) {
            ssize_t got = pread(fd, tail, EXEC_TAIL_BYTES, (off_t)from);
            if (got > 0) n = (size_t)got;
        }
    }
    if (fd >= 0) close(fd);
    /* The tail may hold NUL bytes: search it piecewise. */
    tail[n] = '\0';
    for (size_t at = 0; at < n; at += strlen(tail + at) + 1)
        for (size_t p = 0; p < sizeof(oom_patterns) / sizeof(*oom_patterns); p++)
            if (strstr(tail + at, oom_patterns[p])) {
                snprintf(why, whylen, "%s, out of GPU memory (\"%s\" on stderr)",
                         code, oom_patterns[p]);
                return CORE_EXIT_OOM;
            }
    snprintf(why, whylen, "%s", code);
    return CORE_EXIT_FAILED;
}
