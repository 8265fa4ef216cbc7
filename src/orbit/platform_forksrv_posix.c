/* platform_forksrv_posix.c -- the fork server of platform.h on POSIX. The
 * caller forks it once, early and small; for each call it forks a child
 * that runs the caller's function, and watches that child: a pipe carries
 * its result, poll() on that pipe is the watchdog (SIGKILL at the deadline;
 * the child also has alarm() as a first line). The caller's process never
 * forks a module's child itself, and never runs one in its own memory.
 *
 * Messages on the socket pair: a call is one datagram (struct call_hdr +
 * request bytes) with its descriptors as SCM_RIGHTS; the answer is one
 * datagram (plat_outcome + result bytes). */
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct call_hdr {
    plat_limits lim;
    uint32_t req_len;
} call_hdr;

typedef struct answer {
    plat_outcome out;
    uint8_t result[PLAT_MAX_RESULT];
} answer;

static int send_msg(int sock, const void *a, size_t alen, const void *b,
                    size_t blen, const int *fds, int nfds) {
    struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * PLAT_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = blen ? 2 : 1};
    if (nfds > 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET, c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return n < 0 ? -errno : 0;
}

/* One datagram into buf; its descriptors into fds. Bytes, or -errno
 * (-EPIPE when the other end is gone). */
static ssize_t recv_msg(int sock, void *buf, size_t len, int *fds, int *nfds) {
    struct iovec iov = {buf, len};
    union {
        char buf[CMSG_SPACE(sizeof(int) * PLAT_MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1,
                       .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n;
    while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n <= 0)
        return n == 0 ? -EPIPE : -errno;
    *nfds = 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        *nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)*nfds);
    }
    return n;
}

/* Reads the child's result until EOF or the deadline. */
static int collect(int rfd, uint64_t deadline, answer *a) {
    for (;;) {
        uint64_t now = plat_now_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = {rfd, POLLIN, 0};
        int r = poll(&p, 1, (int)(deadline - now));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return -ETIMEDOUT;
        size_t room = sizeof a->result - a->out.result_len;
        ssize_t n = read(rfd, a->result + a->out.result_len, room ? room : 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || !room)
            return 0;
        a->out.result_len += (size_t)n;
    }
}

static void end_of(int status, answer *a) {
    if (WIFSIGNALED(status)) {
        a->out.status = WTERMSIG(status);
        a->out.end = a->out.status == SIGALRM ? PLAT_END_TIMEOUT : PLAT_END_SIGNAL;
    } else {
        a->out.status = WEXITSTATUS(status);
        a->out.end = a->out.result_len && !a->out.status ? PLAT_END_RESULT
                                                         : PLAT_END_NORESULT;
    }
}

static void child(int sock, plat_child_fn fn, const call_hdr *h,
                  const uint8_t *req, const int *fds, int nfds, int wfd) {
    close(sock);
    /* a module dies of its own faults, whatever handlers the process that
     * started the fork server had (a test harness's, a daemon's) */
    static const int fatal[] = {SIGALRM, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t k = 0; k < sizeof fatal / sizeof fatal[0]; k++)
        signal(fatal[k], SIG_DFL);
    alarm((h->lim.timeout_ms + 999) / 1000);
    fn(req, h->req_len, fds, nfds, &h->lim, wfd);
    _exit(0);
}

static void serve_one(int sock, plat_child_fn fn, const call_hdr *h,
                      const uint8_t *req, const int *fds, int nfds) {
    answer a;
    memset(&a, 0, sizeof a);
    int pfd[2];
    uint64_t t0 = plat_now_ms();
    pid_t pid = pipe(pfd) == 0 ? fork() : -1;
    if (pid == 0)
        child(sock, fn, h, req, fds, nfds, pfd[1]);
    if (pid < 0) {
        a.out.end = PLAT_END_SPAWN, a.out.status = errno;
    } else {
        close(pfd[1]);
        int status = 0;
        int timed_out = collect(pfd[0], t0 + h->lim.timeout_ms, &a) == -ETIMEDOUT;
        if (timed_out)
            kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        close(pfd[0]);
        end_of(status, &a);
        if (timed_out)
            a.out.end = PLAT_END_TIMEOUT;
    }
    a.out.ms = (uint32_t)(plat_now_ms() - t0);
    send_msg(sock, &a.out, sizeof a.out, a.result, a.out.result_len, NULL, 0);
}

static void serve(int sock, plat_child_fn fn) {
    static uint8_t buf[sizeof(call_hdr) + PLAT_MAX_REQ];
    for (;;) {
        int fds[PLAT_MAX_FDS], nfds = 0;
        ssize_t n = recv_msg(sock, buf, sizeof buf, fds, &nfds);
        if (n == -EPIPE || (n < 0 && n != -EINTR))
            _exit(0);
        call_hdr h;
        memcpy(&h, buf, sizeof h);
        if ((size_t)n == sizeof h + h.req_len)
            serve_one(sock, fn, &h, buf + sizeof h, fds, nfds);
        for (int k = 0; k < nfds; k++)
            close(fds[k]);
    }
}

static void preload_libs(const char *const *preload) {
    for (; preload && *preload; preload++)
        dlopen(*preload, RTLD_NOW | RTLD_GLOBAL);
}

int plat_forksrv_start(plat_forksrv *s, plat_child_fn fn,
                       const char *const *preload) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int err = -errno;
        close(sv[0]), close(sv[1]);
        return err;
    }
    if (pid == 0) {
        close(sv[0]);
        signal(SIGPIPE, SIG_IGN);
        preload_libs(preload);
        serve(sv[1], fn);
    }
    close(sv[1]);
    s->sock = sv[0], s->pid = pid;
    return 0;
}

int plat_forksrv_call(plat_forksrv *s, const void *req, size_t req_len,
                      const int *fds, int nfds, const plat_limits *lim,
                      plat_outcome *out, void *result) {
    if (req_len > PLAT_MAX_REQ || nfds > PLAT_MAX_FDS)
        return -EINVAL;
    uint8_t msg[sizeof(call_hdr) + PLAT_MAX_REQ];
    call_hdr h = {*lim, (uint32_t)req_len};
    memcpy(msg, &h, sizeof h);
    memcpy(msg + sizeof h, req, req_len);
    int rc = send_msg(s->sock, msg, sizeof h + req_len, NULL, 0, fds, nfds);
    if (rc)
        return rc;
    answer a;
    int none[PLAT_MAX_FDS], n0;
    ssize_t n = recv_msg(s->sock, &a, sizeof a, none, &n0);
    if (n < (ssize_t)sizeof a.out)
        return n < 0 ? (int)n : -EPROTO;
    *out = a.out;
    memcpy(result, a.result, a.out.result_len);
    return 0;
}

void plat_forksrv_stop(plat_forksrv *s) {
    if (s->sock < 0)
        return;
    close(s->sock);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    s->sock = -1;
}
