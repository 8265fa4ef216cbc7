/* exec.c -- the job executor: shim and job processes, log files, exit
 * classification (see exec.h for why a shim sits between aegisd and the
 * job).
 *
 * Everything the children need (argv, envp, paths) is built before fork,
 * so the children only make system calls until exec.
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* In the job's child: its own session, its user, its directory, its logs. */
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
    execvpe(spec->argv[0], (char *const *)spec->argv, envp);
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

/* In the shim: start the job, report its pid, wait, leave the status. */
static void exec_shim(const exec_spec *spec, char **envp, int out_fd,
                      int err_fd, int report_fd, const char *status_path) {
    setsid(); /* outlive aegisd and its terminal */
    prctl(PR_SET_NAME, "aegis-shim");
    exec_close_others(out_fd, err_fd, report_fd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    pid_t job = fork();
    if (job == 0) {
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        close(report_fd);
        exec_job_child(spec, envp, out_fd, err_fd);
    }
    if (write(report_fd, &job, sizeof(job)) != (ssize_t)sizeof(job)) _exit(1);
    close(report_fd);
    close(out_fd);
    close(err_fd);
    if (job < 0) _exit(1);
    int status;
    while (waitpid(job, &status, 0) < 0)
        if (errno != EINTR) _exit(1);
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
