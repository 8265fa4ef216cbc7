/* exec.c -- the job executor: shim and job processes, log files, exit
 * classification (see exec.h for why a shim sits between aegisd and the
 * job).
 *
 * Everything the children need (argv, envp, paths) is built before fork,
 * so the children only make system calls until exec.
 */
#include "exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The status record: one line at offset 0, padded to a fixed size so that
 * every later write lands in the space taken when the file was made. */
#define EXEC_RECORD_BYTES 128
#define EXEC_RECORD_TAG "aegis-status"

/* What OOM looks like on stderr: PyTorch ("CUDA out of memory",
 * torch.OutOfMemoryError), TensorFlow/JAX/XLA ("RESOURCE_EXHAUSTED"), and
 * the generic wording of CUDA and most tools ("out of memory"). */
static const char *const oom_patterns[] = {
    "CUDA out of memory", "OutOfMemoryError", "RESOURCE_EXHAUSTED",
    "out of memory",
};

void exec_log_path(char *out, size_t outlen, const char *log_dir, int64_t id,
                   bool err_stream) {
    snprintf(out, outlen, "%s/%lld.%s", log_dir, (long long)id,
             err_stream ? "err" : "out");
}

static void exec_status_path(char *out, size_t outlen, const char *run_dir,
                             int64_t id, int attempt) {
    snprintf(out, outlen, "%s/%lld.%d.status", run_dir, (long long)id, attempt);
}

/* Writes rec over the status record; 0, or -1 with errno set. */
static int exec_record_write(int fd, const exec_record *rec, bool ended) {
    char line[EXEC_RECORD_BYTES];
    memset(line, ' ', sizeof(line));
    int n = snprintf(line, sizeof(line), EXEC_RECORD_TAG " %lld %d %llu %d %s %d %d",
                     rec->err_offset, (int)rec->shim_pid, rec->shim_start,
                     (int)rec->job_pid, ended ? "ended" : "running",
                     ended ? rec->status : 0, ended ? rec->left : 0);
    if (n < 0 || n >= (int)sizeof(line)) {
        errno = EOVERFLOW;
        return -1;
    }
    line[n] = ' ';
    line[sizeof(line) - 1] = '\n';
    ssize_t w = pwrite(fd, line, sizeof(line), 0);
    if (w == (ssize_t)sizeof(line)) return 0;
    if (w >= 0) errno = ENOSPC;
    return -1;
}

/* Parses a status record into rec (state ENDED or, with pids, LOST: what
 * it is when no shim holds it; UNSTARTED without). -1: not a record. */
static int exec_record_parse(const char *text, exec_record *rec) {
    char how[16];
    int pid, job;
    if (sscanf(text, EXEC_RECORD_TAG " %lld %d %llu %d %15s %d %d",
               &rec->err_offset, &pid, &rec->shim_start, &job, how,
               &rec->status, &rec->left) != 7)
        return -1;
    rec->shim_pid = pid;
    rec->job_pid = job;
    rec->state = strcmp(how, "ended") == 0 ? EXEC_ENDED
                 : job > 0                 ? EXEC_LOST
                                           : EXEC_UNSTARTED;
    return 0;
}

/* Creates a status file at path at its full size, locked (an attempt's
 * shim inherits the descriptor and with it the lock). Returns the
 * descriptor, or -1 with a message naming the file. */
static int exec_status_create(const char *path, long long err_offset,
                              char *err, size_t errlen) {
    exec_record rec = {.err_offset = err_offset};
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
        exec_record_write(fd, &rec, false) != 0 || fdatasync(fd) != 0) {
        bool held = errno == EWOULDBLOCK;
        snprintf(err, errlen, "status file %s: %s", path,
                 held ? "a watcher of this attempt still runs"
                      : strerror(errno));
        if (fd >= 0) close(fd);
        if (fd >= 0 && !held) unlink(path);
        return -1;
    }
    return fd;
}

int exec_run_dir_check(const char *run_dir, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/.check.status", run_dir);
    int fd = exec_status_create(path, 0, err, errlen);
    if (fd >= 0) close(fd);
    unlink(path);
    return fd >= 0 ? 0 : -1;
}

/* Opens a job's log for appending, owned by the job's user, mode 0600. */
static int exec_open_log(const exec_spec *spec, bool err_stream, char *err,
                         size_t errlen) {
    char path[4096];
    exec_log_path(path, sizeof(path), spec->log_dir, spec->id, err_stream);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || (spec->as_user && fchown(fd, spec->uid, spec->gid) != 0)) {
        snprintf(err, errlen, "job %lld: log %s: %s", (long long)spec->id,
                 path, strerror(errno));
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

/* In the job's child: its own session, its pids in the status record
 * (before it runs: a job the record does not name never runs), its user,
 * its directory, its logs. */
static void exec_job_child(const exec_spec *spec, char **envp, int out_fd,
                           int err_fd, int status_fd, exec_record *rec) {
    setsid();
    rec->job_pid = getpid();
    if (exec_record_write(status_fd, rec, false) != 0) {
        dprintf(err_fd, "aegisd: job %lld: cannot record its start: %s\n",
                (long long)spec->id, strerror(errno));
        _exit(126);
    }
    close(status_fd);
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
    execvpe(spec->argv[0], (char *const *)spec->argv, envp);
    dprintf(2, "aegisd: job %lld: cannot run '%s': %s\n", (long long)spec->id,
            spec->argv[0], strerror(errno));
    _exit(127);
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

static int exec_proc_stat(pid_t pid, char *state, unsigned long long *start,
                          pid_t *session, pid_t *parent);

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

/* In the shim: start the job, report its pid, wait, end what is left of
 * it, record the status. */
static void exec_shim(const exec_spec *spec, char **envp, int out_fd,
                      int err_fd, int report_fd, int status_fd,
                      long long err_offset) {
    setsid(); /* outlive aegisd and its terminal */
    prctl(PR_SET_NAME, "aegis-shim");
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int keep[] = {out_fd, err_fd, report_fd, status_fd};
    exec_close_others(keep, 4);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN); /* aegisd may be gone before it reads the pid */
    exec_record rec = {.err_offset = err_offset, .shim_pid = getpid(),
                       .shim_start = exec_start_time(getpid())};
    pid_t job = fork();
    if (job == 0) {
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        close(report_fd);
        exec_job_child(spec, envp, out_fd, err_fd, status_fd, &rec);
    }
    /* Unread when aegisd died meanwhile: the next one finds the pids in the
     * status record. */
    ssize_t reported = write(report_fd, &job, sizeof(job));
    (void)reported;
    close(report_fd);
    close(out_fd);
    close(err_fd);
    if (job < 0) _exit(1);
    /* the job's orphans are the shim's children too: reap them as they go */
    int status;
    pid_t got;
    while ((got = waitpid(-1, &status, 0)) != job)
        if (got < 0 && errno != EINTR) _exit(1);
    rec.job_pid = job;
    rec.status = status;
    rec.left = exec_end_session(job);
    /* Only a read-only disk fails this write (its space was taken at the
     * start): the shim waits for it rather than lose the outcome. */
    for (bool said = false; exec_record_write(status_fd, &rec, true) != 0;
         said = true) {
        if (!said)
            dprintf(2, "aegis-shim: job %lld attempt %d: cannot record its end "
                    "(%s); retrying every second\n", (long long)spec->id,
                    spec->attempt, strerror(errno));
        exec_nap_ms(1000);
    }
    _exit(0);
}

int exec_start(const exec_spec *spec, exec_run *run, char *err,
               size_t errlen) {
    int status_fd = -1, rc = -1;
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
    char status_path[4096];
    exec_status_path(status_path, sizeof(status_path), spec->run_dir, spec->id,
                     spec->attempt);
    status_fd = exec_status_create(status_path, run->err_offset, err, errlen);
    if (status_fd < 0) {
        rc = -2;
        goto fail;
    }
    run->shim_pid = fork();
    if (run->shim_pid == 0) {
        close(report[0]);
        exec_shim(spec, envp, out_fd, err_fd, report[1], status_fd,
                  run->err_offset);
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
    close(status_fd);
    exec_free_envp(envp, nset);
    return 0;
fail:
    for (int i = 0; i < 2; i++)
        if (report[i] >= 0) close(report[i]);
    if (status_fd >= 0) close(status_fd);
    close(out_fd);
    if (err_fd >= 0) close(err_fd);
    exec_free_envp(envp, nset);
    return rc;
}

/* Field 3 (state), 4 (parent), 6 (session) and 22 (starttime) of
 * /proc/PID/stat; the command name (field 2) may hold spaces and
 * parentheses, so parse after its last ')'. */
static int exec_proc_stat(pid_t pid, char *state, unsigned long long *start,
                          pid_t *session, pid_t *parent) {
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
    *parent = ppid;
    /* p at ")"; the k-th space after it opens field 2 + k: go to 22 */
    for (int field = 3; field <= 22 && p; field++) p = strchr(p + 1, ' ');
    if (!p || sscanf(p + 1, "%llu", start) != 1) return -1;
    return 0;
}

unsigned long long exec_start_time(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid, ppid;
    if (pid <= 0 || exec_proc_stat(pid, &state, &start, &sid, &ppid) != 0 ||
        state == 'Z' || state == 'X')
        return 0;
    return start;
}

bool exec_alive(pid_t pid, unsigned long long start) {
    return start != 0 && exec_start_time(pid) == start;
}

pid_t exec_session(pid_t pid) {
    char state;
    unsigned long long start;
    pid_t sid, ppid;
    return exec_proc_stat(pid, &state, &start, &sid, &ppid) == 0 ? sid : -1;
}

bool exec_in_job(pid_t pid, pid_t job_pid) {
    return exec_session(pid) == job_pid;
}

bool exec_named(pid_t pid, const char *name) {
    char path[64], comm[64];
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (n <= 0) return false;
    comm[n] = '\0';
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, name) == 0;
}

void exec_kill(pid_t job_pid, int sig) {
    if (job_pid > 1) kill(-job_pid, sig);
}

void exec_probe(const char *run_dir, int64_t id, int attempt,
                exec_record *rec) {
    char path[4096], text[EXEC_RECORD_BYTES + 1];
    exec_status_path(path, sizeof(path), run_dir, id, attempt);
    memset(rec, 0, sizeof(*rec));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        /* unreadable for another reason: live, for nothing is known */
        rec->state = errno == ENOENT ? EXEC_ABSENT : EXEC_LIVE;
        return;
    }
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0;
    ssize_t n = pread(fd, text, EXEC_RECORD_BYTES, 0);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    int old = 0;
    if (exec_record_parse(text, rec) != 0) {
        memset(rec, 0, sizeof(*rec));
        /* an older shim's "STATUS\n", written whole at its end; empty: its
         * making failed, and nothing started */
        rec->state = sscanf(text, "%d", &old) == 1 ? EXEC_ENDED
                     : text[0]                      ? EXEC_LOST
                                                    : EXEC_UNSTARTED;
        rec->status = old;
    }
    if (held) rec->state = EXEC_LIVE;
}

void exec_status_remove(const char *run_dir, int64_t id, int attempt) {
    char path[4096];
    exec_status_path(path, sizeof(path), run_dir, id, attempt);
    unlink(path);
}

void exec_status_each(const char *run_dir,
                      void (*fn)(void *ctx, int64_t id, int attempt),
                      void *ctx) {
    DIR *dir = opendir(run_dir);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        long long id;
        int attempt, end = 0;
        if (sscanf(e->d_name, "%lld.%d.status%n", &id, &attempt, &end) == 2 &&
            end > 0 && e->d_name[end] == '\0')
            fn(ctx, id, attempt);
    }
    if (dir) closedir(dir);
}

core_exit exec_classify(int status, const char *err_path,
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
    int fd = open(err_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
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
