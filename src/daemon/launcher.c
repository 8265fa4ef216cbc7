/* launcher.c -- aegisd's side of the watcher launcher (launcher.h): starts
 * the launcher on first use, sends it each watcher's request, and reads
 * back the watcher's pid.
 *
 * A launcher that cannot be started, or whose socket fails, is dropped,
 * and the caller spawns the shim itself. A new one is tried no sooner than
 * LAUNCHER_RETRY_S later, so that a shim without the mode (an older one
 * left installed) costs one try, not one a job. There is no time limit on
 * an answer: a request timed out might still have forked its watcher, and
 * a second one for the same attempt would run the job twice. */
#include "launcher.h"

#include "autogroup.h"
#include "exec.h"
#include "exec_shim_args.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { LAUNCHER_RETRY_S = 10 };

/* One launcher per process, asked by one thread at a time. Invariant:
 * launcher_fd >= 0, and launcher_pid > 0, exactly while a launcher was
 * started and has not failed since. */
static pthread_mutex_t launcher_lock = PTHREAD_MUTEX_INITIALIZER;
static int launcher_fd = -1;            /* this end of its socket */
static pid_t launcher_pid;              /* its pid; 0 while there is none */
static bool launcher_has_failed;
static struct timespec launcher_failed; /* when it last failed */

static bool launcher_resting(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return launcher_has_failed &&
           now.tv_sec - launcher_failed.tv_sec < LAUNCHER_RETRY_S;
}

static void launcher_drop(void) {
    if (launcher_fd >= 0) close(launcher_fd); /* it exits on the EOF */
    launcher_fd = -1;
    launcher_pid = 0;
    launcher_has_failed = true;
    clock_gettime(CLOCK_MONOTONIC, &launcher_failed);
}

/* Spawns `aegis-shim launcher` (the program at shim_path) in a session of
 * its own, with the other end of a socket pair as its descriptor
 * SHIM_OUT_FD and the caller's environment, as a spawned shim has it (its
 * LD_PRELOAD too); its argv[2] is room for what each watcher shows in ps
 * (launcher_main.c). Its PR_SET_PDEATHSIG fires when the thread that
 * spawned it ends, not the process: in aegisd that is a worker of libuv's
 * pool (or the loop), which lives as long as aegisd. 0, or an errno. */
static int launcher_start(const char *shim_path, int session_nice) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return errno;
    char room[] = "                                ";
    char *const argv[] = {"aegis-shim", "launcher", room, NULL};
    pid_t pid;
    int rc = exec_posix_spawn_shim(shim_path, argv, environ, &pair[1], 1,
                                   &pid);
    close(pair[1]);
    if (rc != 0) {
        close(pair[0]);
        return rc;
    }
    launcher_fd = pair[0];
    launcher_pid = pid;
    /* its session is made before its exec, and so before the spawn
     * returns; not weighed, it weighs as a login */
    (void)autogroup_set_nice(pid, session_nice);
    return 0;
}

/* The strings of v, each with its NUL, appended at *at. */
static char *launcher_pack(char *at, char *const *v) {
    for (; *v; v++) at = stpcpy(at, *v) + 1;
    return at;
}

static size_t launcher_size(char *const *v, uint32_t *n) {
    size_t bytes = 0;
    for (*n = 0; v[*n]; (*n)++) bytes += strlen(v[*n]) + 1;
    return bytes;
}

/* Sends the request's header with the descriptors. */
static int launcher_send_header(const launcher_request *req, const int *fds,
                                int nfds) {
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int) * SHIM_NFDS)];
    } ctl = {0};
    struct iovec iov = {.iov_base = (void *)req, .iov_len = sizeof(*req)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = ctl.bytes,
                         .msg_controllen = CMSG_SPACE(sizeof(int) * nfds)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    ssize_t n;
    do
        n = sendmsg(launcher_fd, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(*req) ? 0 : n < 0 ? errno : EPIPE;
}

static int launcher_send_all(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(launcher_fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EPIPE;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int launcher_read_reply(launcher_reply *reply) {
    ssize_t n;
    do
        n = recv(launcher_fd, reply, sizeof(*reply), MSG_WAITALL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(*reply) ? 0 : n < 0 ? errno : EPIPE;
}

/* One request and its answer: 0 with *pid, -1 when the launcher answered
 * that its fork failed (*pid's errno in *fork_error), or an errno of the
 * socket. */
static int launcher_ask(char *const *argv, char *const *envp, const int *fds,
                        int nfds, pid_t *pid, int *fork_error) {
    launcher_request req = {.magic = LAUNCHER_MAGIC};
    size_t bytes = launcher_size(argv, &req.nargv) +
                   launcher_size(envp, &req.nenv);
    if (bytes > LAUNCHER_MAX_BYTES) return E2BIG;
    req.bytes = (uint32_t)bytes;
    char *buf = malloc(bytes);
    if (!buf) return ENOMEM;
    launcher_pack(launcher_pack(buf, argv), envp);
    launcher_reply reply;
    int rc = launcher_send_header(&req, fds, nfds);
    if (rc == 0) rc = launcher_send_all(buf, bytes);
    free(buf);
    if (rc == 0) rc = launcher_read_reply(&reply);
    if (rc != 0) return rc;
    *pid = reply.pid;
    *fork_error = reply.error;
    return reply.pid > 0 ? 0 : -1;
}

/* A request through the launcher, started first where there is none: 0,
 * the fork's errno, or an errno of the socket (the launcher dropped). */
static int launcher_request_locked(const char *shim_path, int session_nice,
                                   char *const *argv, char *const *envp,
                                   const int *fds, int nfds, pid_t *pid) {
    int rc = launcher_fd >= 0 ? 0 : launcher_start(shim_path, session_nice);
    int fork_error = 0;
    if (rc == 0) rc = launcher_ask(argv, envp, fds, nfds, pid, &fork_error);
    if (rc == -1) return fork_error ? fork_error : EAGAIN;
    if (rc != 0 && rc != E2BIG && rc != ENOMEM) launcher_drop();
    return rc;
}

int launcher_spawn(const char *shim_path, int session_nice, char *const *argv,
                   char *const *envp, const int *fds, int nfds, pid_t *pid) {
    if (nfds != SHIM_NFDS) return EINVAL;
    pthread_mutex_lock(&launcher_lock);
    int rc = launcher_fd < 0 && launcher_resting()
                 ? EAGAIN
                 : launcher_request_locked(shim_path, session_nice, argv,
                                           envp, fds, nfds, pid);
    pthread_mutex_unlock(&launcher_lock);
    return rc;
}

int launcher_locked(int (*fn)(void *arg, pid_t launcher), void *arg) {
    pthread_mutex_lock(&launcher_lock);
    assert((launcher_fd >= 0) == (launcher_pid > 0));
    int rc = fn(arg, launcher_pid);
    pthread_mutex_unlock(&launcher_lock);
    return rc;
}
