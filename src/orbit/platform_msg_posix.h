/* platform_msg_posix.h -- one datagram with descriptors on a SOCK_SEQPACKET
 * pair: how the caller, the fork server and its workers talk, and what a
 * new one of them keeps of its parent's descriptors (internal to the
 * POSIX fork server). */
#ifndef DIPP_PLATFORM_MSG_POSIX_H
#define DIPP_PLATFORM_MSG_POSIX_H

#include <stddef.h>
#include <sys/types.h>

/* Sends a then b (blen may be 0) as one datagram, with nfds descriptors
 * as SCM_RIGHTS. 0 or -errno (-EPIPE when the other end is gone). */
int msg_send(int sock, const void *a, size_t alen, const void *b, size_t blen,
             const int *fds, int nfds);
/* One datagram into buf, its descriptors (close-on-exec) into fds, at most
 * PLAT_MAX_FDS. Bytes, or -errno (-EPIPE when the other end is gone). */
ssize_t msg_recv(int sock, void *buf, size_t len, int *fds, int *nfds);

/* Closes every descriptor but 0-2 and keep (keep > 2): a new worker or
 * server holds nothing it was not given. */
void fds_close_all_but(int keep);

#endif
