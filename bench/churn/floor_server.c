/* floor_server.c -- the reference for bench_churn.sh's latency ratio: a
 * Unix-socket server that does no work at all. It answers each connection's
 * first line with a fixed answer of aegisd's `gpus` size, then closes it.
 *
 * Asked by the same client, at the same priority, during the same churn,
 * its p99 is what the machine itself gives any server: the time to be
 * scheduled while the jobs hold the cores. What aegisd adds is the rest.
 *
 * Usage: floor_server SOCKET [ANSWER_BYTES]  (runs until killed) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int listen_on(const char *path) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        fprintf(stderr, "floor_server: %s: path too long\n", path);
        return -1;
    }
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 64)) {
        perror("floor_server: listen");
        return -1;
    }
    return s;
}

/* Reads until the request's newline (or the client is gone), then answers. */
static void serve(int c, const char *answer, size_t len) {
    char buf[512];
    ssize_t n;
    while ((n = read(c, buf, sizeof buf)) > 0 && !memchr(buf, '\n', (size_t)n)) {}
    if (n > 0 && write(c, answer, len) != (ssize_t)len)
        perror("floor_server: write");
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: floor_server SOCKET [ANSWER_BYTES]\n");
        return 2;
    }
    size_t len = argc == 3 ? strtoul(argv[2], NULL, 10) : 2048;
    char *answer = malloc(len + 1);
    int s = answer && len > 0 ? listen_on(argv[1]) : -1;
    if (s < 0) return 1;
    memset(answer, 'x', len);
    answer[len - 1] = '\n';
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        serve(c, answer, len);
        close(c);
    }
}
