/* mps.c -- running the MPS control program (see mps.h).
 *
 * The program runs as a child that aegisd waits for at once, inside the
 * loop's callback: the loop's SIGCHLD handler reaps only after the
 * callback returns, and by then this child is gone. Its stdout and stderr
 * go to an unnamed file in the log folder, read after it exits to explain
 * a failure: not a pipe, which a daemon that keeps its descriptors would
 * hold open and aegisd would wait on forever.
 */
#include "mps.h"
#include "usock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What a failing control program printed, kept for the message. */
#define MPS_OUTPUT_BYTES 512
/* How long aegisd waits for the control program, on its loop: one that
 * hangs (a wedged control daemon does not answer "quit") is killed then,
 * so that aegisd stalls 10 s at most, not for ever. Starting a daemon and
 * asking it to quit take well under a second. */
#define MPS_RUN_LIMIT_MS 10000

bool mps_running(const char *pipe_dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/control", pipe_dir);
    /* The control socket is SOCK_SEQPACKET: a stream connect() to it fails
     * (EPROTOTYPE), which would read as no daemon and start a second one
     * on the same pipe folder. */
    return usock_answers(path, SOCK_SEQPACKET);
}

/* Whether path is a file this process may execute. */
static bool mps_executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           access(path, X_OK) == 0;
}

int mps_program_check(const char *program, char *err, size_t errlen) {
    if (strchr(program, '/')) {
        if (mps_executable(program)) return 0;
        snprintf(err, errlen, "the MPS control program %s cannot run: %s",
                 program, access(program, F_OK) == 0 ? "not an executable "
                 "file" : strerror(errno));
        return -1;
    }
    /* As execlp() looks: each folder of PATH, or its default without one. */
    const char *path = getenv("PATH");
    if (!path) path = "/bin:/usr/bin";
    for (const char *dir = path; ; dir += strcspn(dir, ":") + 1) {
        int len = (int)strcspn(dir, ":");
        char file[4200];
        snprintf(file, sizeof(file), "%.*s/%s", len, len ? dir : ".", program);
        if (mps_executable(file)) return 0;
        if (!dir[len]) break;
    }
    snprintf(err, errlen, "the MPS control program %s is not on PATH (%.200s)",
             program, path);
    return -1;
}

bool mps_dir_blocked(const char *dir, char *blocker, size_t len,
                     int *mode) {
    char prefix[4096];
    snprintf(prefix, sizeof(prefix), "%s", dir);
    /* every folder from / down to dir itself; those not made yet will be
     * 0755 (mps_mkdirs) */
    for (char *p = prefix + 1; ; p++) {
        bool end = *p == '\0';
        if (*p != '/' && !end) continue;
        *p = '\0';
        struct stat st;
        if (stat(prefix, &st) == 0 && !(st.st_mode & S_IXOTH)) {
            snprintf(blocker, len, "%s", prefix);
            *mode = (int)(st.st_mode & 07777);
            return true;
        }
        if (end) return false;
        *p = '/';
    }
}

/* mkdir -p for the two levels aegisd makes (DIR/N/pipe). */
static int mps_mkdirs(const char *path, char *err, size_t errlen) {
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) break;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "MPS folder %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* In the child: the target's environment over aegisd's, input from
 * in_fd, output to out_fd, then the program with `arg` (or none). */
static void mps_child(const mps_target *t, const char *arg, int in_fd,
                      int out_fd) {
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
        _exit(126);
    signal(SIGPIPE, SIG_DFL); /* aegisd ignores it */
    setenv("CUDA_VISIBLE_DEVICES", t->gpu_uuid, 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", t->pipe_dir, 1);
    setenv("CUDA_MPS_LOG_DIRECTORY", t->log_dir, 1);
    execlp(t->program, t->program, arg, (char *)NULL);
    fprintf(stderr, "cannot run: %s\n", strerror(errno));
    _exit(127);
}

/* Waits for child pid at most MPS_RUN_LIMIT_MS, then kills it: 0 with
 * its wait status, or -1 when it had to be killed. */
static int mps_wait(pid_t pid, int *status) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR)) return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms = (now.tv_sec - start.tv_sec) * 1000 +
                  (now.tv_nsec - start.tv_nsec) / 1000000;
        if (ms >= MPS_RUN_LIMIT_MS) break;
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

/* Runs the program with arg, `input` on its stdin. Returns 0 when it
 * exits 0, else -1 with what it printed. */
static int mps_run(const mps_target *t, const char *arg, const char *input,
                   char *err, size_t errlen) {
    int in[2] = {-1, -1};
    int out = open(t->log_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (out < 0 || pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: output file in %s: %s", t->program,
                 t->log_dir, strerror(errno));
        if (out >= 0) close(out);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) mps_child(t, arg, in[0], out);
    close(in[0]);
    if (pid > 0 && input) {
        ssize_t w = write(in[1], input, strlen(input));
        (void)w; /* a program that exits without reading fails below */
    }
    close(in[1]);
    int status = -1;
    bool hung = pid > 0 && mps_wait(pid, &status) != 0;
    char text[MPS_OUTPUT_BYTES] = "";
    ssize_t n = pread(out, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(out);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    text[strcspn(text, "\n")] = '\0';
    snprintf(err, errlen, "%s%s%s (GPU %s, pipe %s): %s", t->program,
             arg ? " " : "", arg ? arg : "", t->gpu_uuid, t->pipe_dir,
             pid < 0 ? strerror(errno)
             : hung  ? "did not end within 10 s: killed"
             : text[0] ? text : "failed");
    return -1;
}

int mps_start(const mps_target *t, char *err, size_t errlen) {
    if (mps_mkdirs(t->pipe_dir, err, errlen) != 0 ||
        mps_mkdirs(t->log_dir, err, errlen) != 0)
        return -1;
    return mps_run(t, "-d", NULL, err, errlen);
}

int mps_stop(const mps_target *t, char *err, size_t errlen) {
    return mps_run(t, NULL, "quit\n", err, errlen);
}
