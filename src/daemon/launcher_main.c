/* launcher_main.c -- the watcher launcher's side (launcher.h), in
 * aegis-shim: reads each request, forks its watcher as its own parent's
 * child (CLONE_PARENT: aegisd's), and answers the watcher's pid.
 *
 * The launcher is small and single-threaded, and holds nothing between
 * requests: a request's descriptors are closed as soon as its watcher has
 * its copies (the status file's lock is the watcher's from then on). It
 * ends when its parent closes the socket or dies (PR_SET_PDEATHSIG); a
 * watcher keeps running, as a spawned one does. A request that is not
 * well formed ends it too, with a message: only aegisd can write on its
 * socket, so it is a bug, and aegisd spawns its watchers itself after. */
#include "launcher.h"

#include "exec.h"
#include "exec_shim_args.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

/* A request read whole: its strings as vectors into buf. */
typedef struct launcher_job {
    int fds[SHIM_NFDS];
    char *buf;
    char **argv, **envp;        /* nargv and nenv strings, NULL-ended */
    uint32_t nargv;
} launcher_job;

/* The request's descriptors closed: once its watcher has its copies, the
 * status file's lock is the watcher's alone. */
static void launcher_job_close(launcher_job *j) {
    for (int i = 0; i < SHIM_NFDS; i++)
        if (j->fds[i] >= 0) close(j->fds[i]);
    for (int i = 0; i < SHIM_NFDS; i++) j->fds[i] = -1;
}

static void launcher_job_free(launcher_job *j) {
    launcher_job_close(j);
    free(j->buf);
    free(j->argv);
    free(j->envp);
}

/* The header and its descriptors: 1 at the end of the stream, 0, or -1. */
static int launcher_read_header(int sock, launcher_request *req,
                                launcher_job *j) {
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int) * SHIM_NFDS)];
    } ctl;
    struct iovec iov = {.iov_base = req, .iov_len = sizeof(*req)};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = ctl.bytes,
                         .msg_controllen = sizeof(ctl.bytes)};
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n == 0) return 1;
    struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int) * SHIM_NFDS))
        memcpy(j->fds, CMSG_DATA(c), sizeof(int) * SHIM_NFDS);
    else if (c && c->cmsg_type == SCM_RIGHTS) /* the wrong count: closed */
        for (int *fd = (int *)CMSG_DATA(c);
             (char *)(fd + 1) <= (char *)c + c->cmsg_len; fd++)
            close(*fd);
    if (n != (ssize_t)sizeof(*req) || (msg.msg_flags & MSG_CTRUNC) ||
        j->fds[0] < 0 || req->magic != LAUNCHER_MAGIC ||
        req->bytes > LAUNCHER_MAX_BYTES || req->nargv == 0 ||
        req->nargv > req->bytes || req->nenv > req->bytes - req->nargv) {
        if (n < 0)
            fprintf(stderr, "aegis-launcher: cannot read a request: %s; "
                    "ending\n", strerror(errno));
        else
            fprintf(stderr, "aegis-launcher: a request not as aegisd writes "
                    "it (%zd bytes); ending\n", n);
        return -1;
    }
    return 0;
}

/* n NUL-ended strings from *at into a new vector; NULL when buf's end
 * comes first or out of memory. */
static char **launcher_strings(char **at, const char *end, uint32_t n) {
    char **v = calloc((size_t)n + 1, sizeof(*v));
    for (uint32_t i = 0; v && i < n; i++) {
        char *nul = *at < end ? memchr(*at, '\0', (size_t)(end - *at)) : NULL;
        if (!nul) {
            free(v);
            return NULL;
        }
        v[i] = *at;
        *at = nul + 1;
    }
    return v;
}

static int launcher_read_strings(int sock, const launcher_request *req,
                                 launcher_job *j) {
    j->buf = malloc(req->bytes ? req->bytes : 1);
    ssize_t n = 0;
    if (j->buf && req->bytes > 0) {
        do
            n = recv(sock, j->buf, req->bytes, MSG_WAITALL);
        while (n < 0 && errno == EINTR);
    }
    char *at = j->buf;
    if (!j->buf || n != (ssize_t)req->bytes ||
        !(j->argv = launcher_strings(&at, j->buf + n, req->nargv)) ||
        !(j->envp = launcher_strings(&at, j->buf + n, req->nenv)) ||
        at != j->buf + n) {
        fprintf(stderr, "aegis-launcher: a request's strings are cut or "
                "malformed; ending\n");
        return -1;
    }
    j->nargv = req->nargv;
    return 0;
}

/* Writes what ps shows of this watcher, as it shows a spawned one (the
 * shim, its mode and the job's id), over the launcher's own arguments
 * own, which launcher_start left room in. The area's last byte made not
 * NUL, the kernel shows its first string alone (as for setproctitle), so
 * the room left over does not show. */
static void launcher_show(char **own, char *const *argv) {
    int n = 0;
    while (own[n]) n++;
    if (n < 3 || !argv[SHIM_MODE] || !argv[SHIM_ID]) return;
    char *start = own[0], *end = own[n - 1] + strlen(own[n - 1]);
    size_t room = (size_t)(end - start);
    int len = snprintf(start, room, "%s %s %s", argv[0], argv[SHIM_MODE],
                       argv[SHIM_ID]);
    if (len < 0 || (size_t)len >= room) return;
    memset(start + len + 1, ' ', room - (size_t)len); /* up to and with end */
}

/* In the forked watcher: waits for the launcher's go (sent once aegisd
 * has the watcher's pid), then its descriptors as 3 to 5, a session of
 * its own, the request's environment, and the shim's main. A launcher
 * that ends before its answer reached aegisd sends no go, and aegisd,
 * seeing the launcher gone, spawns the watcher itself: this one must then
 * end without touching the attempt, or the job would run twice. Never
 * returns. */
static void launcher_child(int sock, int go, launcher_job *j, char **own) {
    prctl(PR_SET_NAME, "aegis-shim"); /* not the launcher's in ps, ever */
    close(sock);
    char byte;
    ssize_t n;
    do
        n = read(go, &byte, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(0);
    close(go);
    if (exec_fds_above_shim(j->fds, SHIM_NFDS) != 0) _exit(127);
    for (int i = 0; i < SHIM_NFDS; i++)
        if (dup2(j->fds[i], SHIM_OUT_FD + i) < 0) _exit(127);
    setsid();
    launcher_show(own, j->argv);
    environ = j->envp;
    _exit(exec_shim_main((int)j->nargv, j->argv));
}

/* A fork whose child is the launcher's parent's: glibc's fork has no such
 * flag. It skips what glibc's fork does for threads (the child's thread
 * id in its thread block, the robust mutex list, the atfork handlers):
 * the launcher has one thread, and the watcher starts none. The launcher
 * registers no atfork handler, but an NSS module it loaded may have (to
 * forget a cached pid or a connection in a child): the watcher makes no
 * NSS call, and forks its job, which does, with glibc's fork, which runs
 * them. */
static pid_t launcher_fork(void) {
    return (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL,
                          NULL);
}

static int launcher_answer(int sock, pid_t pid, int error) {
    launcher_reply reply = {.pid = pid, .error = error};
    return send(sock, &reply, sizeof(reply), MSG_NOSIGNAL) ==
                   (ssize_t)sizeof(reply)
               ? 0
               : -1;
}

/* Forks the request's watcher and answers aegisd, then lets the watcher
 * go: 0, or -1 when aegisd could not be answered (the watcher then ends
 * unstarted). */
static int launcher_start_watcher(int sock, launcher_job *j, char **own) {
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) return launcher_answer(sock, -1, errno);
    pid_t pid = launcher_fork();
    int fork_error = errno;
    if (pid == 0) {
        close(go[1]);
        launcher_child(sock, go[0], j, own);
    }
    close(go[0]);
    launcher_job_close(j);
    int rc = launcher_answer(sock, pid, pid < 0 ? fork_error : 0);
    if (rc == 0 && pid > 0 && write(go[1], "g", 1) != 1) rc = -1;
    close(go[1]);
    return rc;
}

/* One request: 0 served, 1 the end of the stream, -1 an error. */
static int launcher_serve(int sock, char **own) {
    launcher_request req;
    launcher_job j = {.fds = {-1, -1, -1}};
    int rc = launcher_read_header(sock, &req, &j);
    if (rc == 0) rc = launcher_read_strings(sock, &req, &j);
    if (rc == 0) rc = launcher_start_watcher(sock, &j, own);
    launcher_job_free(&j);
    return rc;
}

/* Loads the group database's NSS modules here, once: every watcher is
 * forked from the launcher, and each job's initgroups() before its exec
 * would otherwise load them again (libnss_systemd, with libcap and libm:
 * three libraries opened, mapped and relocated a job). glibc keeps a
 * module it has loaded, and rereads nsswitch.conf when it changes. A
 * slow directory server delays the launcher's start as much as it would
 * have the first job's. */
static void launcher_load_nss(void) {
    gid_t groups[1];
    int n = 1;
    getgrouplist("root", 0, groups, &n);
}

int launcher_main(int sock, char **own) {
    prctl(PR_SET_NAME, "aegis-launcher");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* nothing of aegisd's but its socket and 0-2 reaches a watcher */
    close_range((unsigned)sock + 1, ~0U, 0);
    launcher_load_nss(); /* after: a module may keep a descriptor open */
    setpriority(PRIO_PROCESS, 0, 0); /* aegisd's Nice=-5 is not the jobs' */
    int rc;
    while ((rc = launcher_serve(sock, own)) == 0) {
    }
    return rc > 0 ? 0 : 2;
}
