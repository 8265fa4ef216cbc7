/* platform_msg_posix.c -- one datagram with its descriptors (SCM_RIGHTS)
 * over a SOCK_SEQPACKET pair: the fork server's only message shape; and
 * closing what a forked process must not keep. */
#define _GNU_SOURCE /* close_range */
#include "platform_msg_posix.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "platform.h"

int msg_send(int sock, const void *a, size_t alen, const void *b, size_t blen,
             const int *fds, int nfds) {
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

ssize_t msg_recv(int sock, void *buf, size_t len, int *fds, int *nfds) {
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

void fds_close_all_but(int keep) {
    if ((keep <= 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
        close_range((unsigned)keep + 1, ~0u, 0) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX); /* a kernel before close_range (5.9) */
    for (int fd = 3; fd < max; fd++)
        if (fd != keep)
            close(fd);
}
