/* client_conn.c -- one request to aegisd over its Unix socket: connect,
 * write a JSON line, read the JSON line that answers it. A file of its own
 * because two programs share it: the `aegis` command and the Slurm plugin
 * spank_aegis.so (src/slurm), which cannot take the rest of the CLI.
 */
#include "client.h"

#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

const char *client_socket(const char *opt) {
    if (opt) return opt;
    const char *env = getenv("AEGIS_SOCKET");
    return env && env[0] ? env : CLIENT_DEFAULT_SOCKET;
}

static char *complaints;
static size_t complaints_size;
/* How the last call ended (client_last_end()). */
static client_end last_end = CLIENT_ANSWERED;

client_end client_last_end(void) { return last_end; }

void client_complaints_to(char *buf, size_t size) {
    complaints = buf;
    complaints_size = size;
}

void client_complain(const char *cmd, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (complaints)
        snprintf(complaints, complaints_size, "aegis %s: %s", cmd, what);
    else fprintf(stderr, "aegis %s: %s\n", cmd, what);
}

double client_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double client_deadline(long timeout_s) {
    return timeout_s > 0 ? client_now_s() + (double)timeout_s : 0;
}

/* Lets a connect or a send on fd block until give_up_at (0: no limit),
 * then fail with EAGAIN: while aegisd is stopped its queue of connections
 * fills (each client waiting for an answer holds a place), and a connect
 * then blocks, as a request bigger than the socket's buffer does. */
static void client_send_until(int fd, double give_up_at) {
    if (give_up_at <= 0) return;
    double left = give_up_at - client_now_s();
    if (left < 0.001) left = 0.001; /* 0 would mean no limit */
    struct timeval tv = {.tv_sec = (time_t)left};
    tv.tv_usec = (suseconds_t)((left - (double)tv.tv_sec) * 1e6);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int client_socket_connect(const char *path, double give_up_at) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) client_send_until(fd, give_up_at);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
        return fd;
    int why = errno;
    if (fd >= 0) close(fd);
    errno = why;
    return -1;
}

bool client_no_daemon(int err) { return err == ENOENT || err == ECONNREFUSED; }

static int client_connect(const char *cmd, const char *path, long timeout_s,
                          double give_up_at) {
    int fd = client_socket_connect(path, give_up_at);
    if (fd >= 0) return fd;
    if (errno == ENAMETOOLONG) {
        client_complain(cmd, "%s: socket path too long", path);
        return -1;
    }
    if (errno == EAGAIN && give_up_at > 0) {
        last_end = CLIENT_TIMEOUT;
        client_complain(cmd, "aegisd at %s took no connection in %ld s "
                        "(AEGIS_TIMEOUT_S): its queue of connections is "
                        "full (stopped, or stuck)", path, timeout_s);
        return -1;
    }
    if (client_no_daemon(errno)) last_end = CLIENT_NO_DAEMON;
    client_complain(cmd, "cannot reach aegisd at %s: %s", path,
                    strerror(errno));
    return -1;
}

int client_write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

long client_env_seconds(const char *name, long fallback) {
    const char *env = getenv(name);
    if (!env || !env[0]) return fallback;
    char *end;
    long v = strtol(env, &end, 10);
    return *end || v < 0 ? fallback : v;
}

/* Seconds to wait for the answer to a request of operation op: none (0)
 * for those aegisd answers once something has happened, however long
 * that takes: the jobs' ends (`wait`; `cancel`, once the cancelled jobs'
 * processes are gone and the cancels asked before are done), the copy's
 * last page (`db_backup`); else $AEGIS_TIMEOUT_S, default
 * CLIENT_TIMEOUT_S. */
static long client_answer_timeout_s(const char *op) {
    static const char *const waiting[] = {"wait", "cancel", "db_backup"};
    for (size_t i = 0; op && i < sizeof(waiting) / sizeof(*waiting); i++)
        if (strcmp(op, waiting[i]) == 0) return 0;
    return client_env_seconds("AEGIS_TIMEOUT_S", CLIENT_TIMEOUT_S);
}

int client_await(int fd, double give_up_at) {
    for (;;) {
        int ms = -1;
        if (give_up_at > 0) {
            double left = give_up_at - client_now_s();
            if (left <= 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            /* a minute at a time: any $AEGIS_TIMEOUT_S fits an int */
            ms = left < 60 ? (int)(left * 1000) + 1 : 60000;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, ms);
        if (n > 0) return 0;
        if (n < 0 && errno != EINTR) return -1;
    }
}

/* Reads up to the first newline, giving up at give_up_at (0: never),
 * NULL then with errno ETIMEDOUT; the answer may be megabytes (ls --all). */
static char *client_read_line(int fd, size_t *len, double give_up_at) {
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) break;
            buf = grown;
        }
        if (client_await(fd, give_up_at) != 0) break;
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = ECONNRESET; /* closed: not an earlier call's */
        if (r <= 0) break;
        char *nl = memchr(buf + n, '\n', (size_t)r);
        n += (size_t)r;
        if (nl) {
            *len = (size_t)(nl - buf);
            return buf;
        }
    }
    int why = errno;
    free(buf);
    errno = why;
    return NULL;
}

/* The answer line to a request text (json_dumps's, whose NUL byte becomes
 * the newline: the line goes in one write, which aegisd's front reads
 * whole at once), or NULL; a daemon that turns the client away may close
 * before reading the request, after writing why. */
static char *client_exchange(int fd, char *text, size_t *len,
                             double give_up_at) {
    size_t n = strlen(text);
    text[n] = '\n';
    client_send_until(fd, give_up_at); /* the time the connect left */
    client_write_all(fd, text, n + 1); /* refused: its answer says why */
    text[n] = '\0';
    return client_read_line(fd, len, give_up_at);
}

/* Says why no answer line came on a connection aegisd took. */
static void client_no_answer(const char *cmd, const char *socket,
                             long timeout_s) {
    if (errno == ENOMEM) {
        client_complain(cmd, "out of memory for aegisd's answer");
        return;
    }
    if (errno != ETIMEDOUT) {
        last_end = CLIENT_CLOSED;
        client_complain(cmd, "aegisd at %s closed the connection", socket);
        return;
    }
    last_end = CLIENT_TIMEOUT;
    client_complain(cmd, "no answer from aegisd at %s in %ld s "
                    "(AEGIS_TIMEOUT_S): it took the request but does not "
                    "answer (stopped, or stuck), and may still act on it",
                    socket, timeout_s);
}

/* client_call_open(), a refusal said in w's words where w is not NULL. */
static json_t *client_call_as(const char *cmd, const char *socket,
                              json_t *req, const request_words *w, int *rc,
                              int *keep) {
    *rc = CLI_FAIL;
    last_end = CLIENT_OTHER;
    long timeout_s = client_answer_timeout_s(
        json_string_value(json_object_get(req, "op")));
    double give_up_at = client_deadline(timeout_s);
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text) {
        client_complain(cmd, "out of memory");
        return NULL;
    }
    int fd = client_connect(cmd, socket, timeout_s, give_up_at);
    json_t *answer = NULL;
    size_t len = 0;
    char *line = fd >= 0 ? client_exchange(fd, text, &len, give_up_at) : NULL;
    if (fd >= 0 && !line) client_no_answer(cmd, socket, timeout_s);
    if (line) {
        last_end = CLIENT_ANSWERED;
        answer = json_loadb(line, len, 0, NULL);
    }
    if (line && !answer) client_complain(cmd, "aegisd's answer is not JSON");
    if (answer && !json_is_true(json_object_get(answer, "ok"))) {
        const char *err = json_string_value(json_object_get(answer, "error"));
        char typed[1024];
        if (err && w) err = request_words_say(w, err, typed, sizeof(typed));
        client_complain(cmd, "%s", err ? err : "request failed");
        if (!json_is_true(json_object_get(answer, "server_error")))
            *rc = CLI_USAGE;
        json_decref(answer);
        answer = NULL;
    }
    free(line);
    free(text);
    if (answer && keep) *keep = fd;
    else if (fd >= 0) close(fd);
    return answer;
}

json_t *client_call(const char *cmd, const char *socket, json_t *req,
                    int *rc) {
    return client_call_as(cmd, socket, req, NULL, rc, NULL);
}

json_t *client_call_open(const char *cmd, const char *socket, json_t *req,
                         int *rc, int *keep) {
    return client_call_as(cmd, socket, req, NULL, rc, keep);
}

json_t *client_call_words(const char *cmd, const char *socket, json_t *req,
                          const request_words *w, int *rc) {
    return client_call_as(cmd, socket, req, w, rc, NULL);
}
