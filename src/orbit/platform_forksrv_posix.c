/* platform_forksrv_posix.c -- the fork server of platform.h on POSIX. The
 * caller forks it once, early and small; it forks the workers that run
 * the caller's function (platform_workers_posix.c) and watches each call.
 * The caller's process never forks a module's worker itself, and never
 * runs a module in its own memory.
 *
 * Messages on the socket pair: a call is one datagram (struct call_hdr,
 * the key, then the request bytes) with its descriptors as SCM_RIGHTS;
 * the answer is one datagram (plat_outcome + result bytes). */
#include "platform.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform_msg_posix.h"
#include "platform_workers_posix.h"

typedef struct call_hdr {
    work_hdr work;
    uint32_t key_len; /* with its NUL */
} call_hdr;

#define MAX_CALL (sizeof(call_hdr) + PLAT_MAX_KEY + PLAT_MAX_REQ)

/* A call as the server received it: n bytes in buf. */
static void serve_one(int sock, plat_child_fn fn, const uint8_t *buf, size_t n,
                      const int *fds, int nfds) {
    static answer a;
    call_hdr h;
    memcpy(&h, buf, sizeof h);
    const char *key = (const char *)buf + sizeof h;
    if (h.key_len == 0 || h.key_len > PLAT_MAX_KEY || h.work.req_len > PLAT_MAX_REQ ||
        n != sizeof h + h.key_len + h.work.req_len || key[h.key_len - 1] != '\0') {
        memset(&a, 0, sizeof a);
        a.out.end = PLAT_END_SPAWN, a.out.status = EPROTO;
    } else {
        workers_call(fn, key, &h.work, buf + sizeof h + h.key_len, fds, nfds, &a);
    }
    msg_send(sock, &a.out, sizeof a.out, a.result, a.out.result_len, NULL, 0);
}

static void serve(int sock, plat_child_fn fn) {
    static uint8_t buf[MAX_CALL];
    for (;;) {
        int fds[PLAT_MAX_FDS], nfds = 0;
        ssize_t n = msg_recv(sock, buf, sizeof buf, fds, &nfds);
        if (n == -EPIPE || (n < 0 && n != -EINTR)) {
            workers_end_all();
            _exit(0);
        }
        if (n >= (ssize_t)sizeof(call_hdr))
            serve_one(sock, fn, buf, (size_t)n, fds, nfds);
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
        fds_close_all_but(sv[1]); /* a restarted server is forked from a grown caller */
        signal(SIGPIPE, SIG_IGN);
        preload_libs(preload);
        serve(sv[1], fn);
    }
    close(sv[1]);
    s->sock = sv[0], s->pid = pid;
    return 0;
}

int plat_forksrv_call(plat_forksrv *s, const char *key, const void *req,
                      size_t req_len, const int *fds, int nfds,
                      const plat_limits *lim, int cpu, plat_outcome *out,
                      void *result) {
    size_t key_len = strlen(key) + 1;
    if (req_len > PLAT_MAX_REQ || nfds > PLAT_MAX_FDS || key_len > PLAT_MAX_KEY)
        return -EINVAL;
    static uint8_t msg[MAX_CALL];
    call_hdr h = {{*lim, (uint32_t)req_len, cpu}, (uint32_t)key_len};
    memcpy(msg, &h, sizeof h);
    memcpy(msg + sizeof h, key, key_len);
    memcpy(msg + sizeof h + key_len, req, req_len);
    int rc = msg_send(s->sock, msg, sizeof h + key_len + req_len, NULL, 0, fds, nfds);
    if (rc)
        return rc;
    static answer a;
    int none[PLAT_MAX_FDS], n0 = 0;
    ssize_t n = msg_recv(s->sock, &a, sizeof a, none, &n0);
    for (int k = 0; k < n0; k++)
        close(none[k]);
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
