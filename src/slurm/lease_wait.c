/* lease_wait.c -- the plugin's wait for a lease's grant: one JSON line to
 * aegisd's socket, one line back, which comes when aegisd places the
 * lease, maybe hours later.
 *
 * Why not the aegis command's client_call (src/cli/client_conn.c), which
 * does the same in one blocking read: the task waits in its own process
 * inside slurmstepd, before it execs, and there Slurm does not signal it
 * (Slurm 22.05 signals a step's tasks once they run; SIGTERM is blocked
 * in them until then), so a blocking read outlived a scancel or the
 * job's time limit: the job sat in COMPLETING until the grant ran the
 * cancelled script, or until UnkillableStepTimeout drained the node.
 * Here the read is a poll in steps of one second, and now and then (ever
 * less often, lease_check_step) the caller's still() says whether the job
 * is alive; when it is not, the connection is closed, and aegisd
 * withdraws a request whose task hung up.
 */
#include "lease_wait.h"
#include "client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An answer is a few KiB (the grant's environment); more is not aegisd. */
#define LEASE_ANSWER_MAX (1 << 20)

/* Connects to aegisd (client_conn.c's connect): the socket, or -1 with
 * how it failed. While aegisd's queue of connections stays full (aegisd
 * stopped or stuck, each waiting client holding a place) a connect
 * blocks, and a task blocked there outlived its job as a blocking read
 * did: each try gives up at the next of the steps lease_await asks
 * still() at, and is made again while the job runs. */
static int lease_connect(const char *path, lease_wait_still still, void *arg,
                         lease_wait_end *end, char *err, size_t errlen) {
    double step = LEASE_WAIT_CHECK_S;
    int fd;
    while ((fd = client_socket_connect(path, client_deadline((long)step))) < 0 &&
           errno == EAGAIN) {
        if (still && !still(arg)) {
            *end = LEASE_STOPPED;
            snprintf(err, errlen, "aegisd at %s took no connection (its "
                     "queue full) before the job ended", path);
            return -1;
        }
        step = lease_check_step(step);
    }
    if (fd >= 0) return fd;
    *end = client_no_daemon(errno) ? LEASE_NO_DAEMON : LEASE_ERROR;
    if (errno == ENAMETOOLONG)
        snprintf(err, errlen, "%s: socket path too long", path);
    else
        snprintf(err, errlen, "cannot reach aegisd at %s: %s", path,
                 strerror(errno));
    return -1;
}

/* Reads what fd has into *buf (grown; *len so far): 1 once a whole line
 * is in, 0 for more to come, -1 when aegisd hung up or too much came. */
static int lease_read_some(int fd, char **buf, size_t *len) {
    char chunk[4096];
    ssize_t r = read(fd, chunk, sizeof(chunk));
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0 || *len + (size_t)r > LEASE_ANSWER_MAX) return -1;
    char *grown = realloc(*buf, *len + (size_t)r + 1);
    if (!grown) return -1;
    memcpy(grown + *len, chunk, (size_t)r);
    *len += (size_t)r;
    grown[*len] = '\0';
    *buf = grown;
    return memchr(chunk, '\n', (size_t)r) ? 1 : 0;
}

double lease_check_step(double step_s) {
    return 2 * step_s < LEASE_WAIT_CHECK_MAX_S ? 2 * step_s
                                               : LEASE_WAIT_CHECK_MAX_S;
}

/* Waits on fd for the answer line, asking still() LEASE_WAIT_CHECK_S
 * seconds in, then at steps lease_check_step makes longer. */
static lease_wait_end lease_await(int fd, lease_wait_still still, void *arg,
                                  json_t **answer, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    double step = LEASE_WAIT_CHECK_S;
    double next_check = client_now_s() + step;
    lease_wait_end end = LEASE_ERROR;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, 1000);
        if (n < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            break;
        }
        int got = n > 0 ? lease_read_some(fd, &buf, &len) : 0;
        if (got < 0) {
            end = LEASE_CLOSED;
            snprintf(err, errlen, "aegisd closed the connection");
            break;
        }
        if (got > 0) {
            *answer = json_loadb(buf, (size_t)(strchr(buf, '\n') - buf), 0,
                                 NULL);
            end = *answer ? LEASE_ANSWERED : LEASE_ERROR;
            if (!*answer) snprintf(err, errlen, "aegisd's answer is not JSON");
            break;
        }
        if (client_now_s() < next_check) continue;
        if (still && !still(arg)) {
            end = LEASE_STOPPED;
            break;
        }
        step = lease_check_step(step);
        next_check = client_now_s() + step;
    }
    free(buf);
    return end;
}

lease_wait_end lease_wait(const char *socket_path, json_t *req,
                          lease_wait_still still, void *arg, json_t **answer,
                          char *err, size_t errlen) {
    *answer = NULL;
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return LEASE_ERROR;
    }
    lease_wait_end end;
    int fd = lease_connect(socket_path, still, arg, &end, err, errlen);
    if (fd >= 0) {
        if (client_write_all(fd, text, strlen(text)) == 0 &&
            client_write_all(fd, "\n", 1) == 0)
            end = lease_await(fd, still, arg, answer, err, errlen);
        else /* aegisd turning a client away writes why, then closes */
            end = lease_await(fd, NULL, NULL, answer, err, errlen);
        close(fd);
    }
    free(text);
    return end;
}
