/* usock.c -- asking whether a server listens on a Unix socket's path
 * (see usock.h). */
#include "usock.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

bool usock_answers(const char *path, int type) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path), "%s", path) >=
        sizeof(a.sun_path))
        return false;
    /* Non-blocking: a full backlog answers EAGAIN at once instead of
     * making the caller wait for the server to accept. */
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return false;
    bool up = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ||
              errno == EAGAIN;
    close(fd);
    return up;
}
