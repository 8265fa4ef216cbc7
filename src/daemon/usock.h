/* usock.h -- asking whether a server listens on a Unix socket's path.
 *
 * A socket file outlives the process that bound it (kill -9 leaves it), so
 * its presence says nothing; only a connect() tells a live server from a
 * stale file. aegisd asks before it replaces its own socket, and before it
 * starts a GPU's MPS control daemon.
 */
#ifndef AEGIS_USOCK_H
#define AEGIS_USOCK_H

#include <stdbool.h>

/* Whether a server accepts connections of socket type `type` on path (one
 * that is too busy to take another at once counts: it is alive). Never
 * blocks. The type must be the server's: a stream client of a
 * SOCK_SEQPACKET server (MPS's control socket) is refused with
 * EPROTOTYPE, as if nothing listened. */
bool usock_answers(const char *path, int type);

#endif
