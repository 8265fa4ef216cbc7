/* client.c -- one request to aegisd over its Unix socket: connect, write a
 * JSON line, read the JSON line that answers it.
 */
#include "client.h"

#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

const char *client_socket(const char *opt) {
    if (opt) return opt;
    const char *env = getenv("AEGIS_SOCKET");
    return env && env[0] ? env : CLIENT_DEFAULT_SOCKET;
}

static char *complaints;
static size_t complaints_size;

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

static int client_connect(const char *cmd, const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(addr.sun_path)) {
        client_complain(cmd, "%s: socket path too long", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        client_complain(cmd, "cannot reach aegisd at %s: %s", path,
                        strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

/* send(), not write(): a daemon that hangs up (busy, or stopping) is an
 * EPIPE to report, not a SIGPIPE that ends aegis without a word. */
static int client_write_all(int fd, const char *buf, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads up to the first newline; the answer may be megabytes (ls --all). */
static char *client_read_line(int fd, size_t *len) {
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) break;
            buf = grown;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        char *nl = memchr(buf + n, '\n', (size_t)r);
        n += (size_t)r;
        if (nl) {
            *len = (size_t)(nl - buf);
            return buf;
        }
    }
    free(buf);
    return NULL;
}

/* The answer line to a request text, or NULL; a daemon that turns the
 * client away may close before reading the request, after writing why. */
static char *client_exchange(int fd, const char *text, size_t *len) {
    if (client_write_all(fd, text, strlen(text)) == 0)
        client_write_all(fd, "\n", 1);
    return client_read_line(fd, len);
}

json_t *client_call(const char *cmd, const char *socket, json_t *req,
                    int *rc) {
    return client_call_open(cmd, socket, req, rc, NULL);
}

json_t *client_call_open(const char *cmd, const char *socket, json_t *req,
                         int *rc, int *keep) {
    *rc = CLI_FAIL;
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text) {
        client_complain(cmd, "out of memory");
        return NULL;
    }
    int fd = client_connect(cmd, socket);
    json_t *answer = NULL;
    size_t len = 0;
    char *line = fd >= 0 ? client_exchange(fd, text, &len) : NULL;
    if (fd >= 0 && !line)
        client_complain(cmd, "aegisd at %s closed the connection", socket);
    if (line) answer = json_loadb(line, len, 0, NULL);
    if (line && !answer) client_complain(cmd, "aegisd's answer is not JSON");
    if (answer && !json_is_true(json_object_get(answer, "ok"))) {
        const char *err = json_string_value(json_object_get(answer, "error"));
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

void client_cmd_line(json_t *cmd, char *line, size_t size) {
    size_t at = 0;
    size_t i;
    json_t *w;
    snprintf(line, size, "%s", cmd ? "" : "-");
    json_array_foreach(cmd, i, w) {
        int n = snprintf(line + at, size - at, "%s%s", i ? " " : "",
                         json_string_value(w));
        if (n < 0 || (size_t)n >= size - at) break;
        at += (size_t)n;
    }
}

int client_parse_id(const char *cmd, const char *text, json_int_t *id) {
    long v;
    if (cli_parse_long(cmd, "ID", text, 1, 0x7fffffffL, &v) != 0) return -1;
    *id = v;
    return 0;
}

int client_options(const char *cmd, int argc, char **argv, const char *help,
                   const char *allowed, int min_args, int max_args,
                   client_flags *f) {
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},
        {"follow", no_argument, NULL, 'f'},
        {"stderr", no_argument, NULL, 'e'},
        {"both", no_argument, NULL, 'b'},
        {"user", required_argument, NULL, 'u'},
        {"state", required_argument, NULL, 'S'},
        {"reason", required_argument, NULL, 'r'},
        {"drain", no_argument, NULL, 'd'},
        {"history", no_argument, NULL, 'H'},
        {"spark", no_argument, NULL, 'k'},
        {"svg", required_argument, NULL, 'g'},
        {"slurm-job", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(f, 0, sizeof(*f));
    int ch;
    while ((ch = getopt_long(argc, argv, "hfu:", opts, NULL)) != -1) {
        if (ch == 'h') {
            fputs(help, stdout);
            return -1;
        }
        if (ch == 's') {
            f->socket = optarg;
            continue;
        }
        if (ch == '?' || !strchr(allowed, ch)) goto usage;
        switch (ch) {
        case 'j': f->json = 1; break;
        case 'a': f->all = 1; break;
        case 'f': f->follow = 1; break;
        case 'e': f->err_stream = 1; break;
        case 'b': f->both = 1; break;
        case 'u': f->user = optarg; break;
        case 'S': f->states = optarg; break;
        case 'r': f->reason = optarg; break;
        case 'd': f->drain = 1; break;
        case 'H': f->history = 1; break;
        case 'k': f->history = f->spark = 1; break;
        case 'g': f->history = 1; f->svg = optarg; break;
        case 'L': f->slurm_job = optarg; break;
        }
    }
    f->first_arg = optind;
    int nargs = argc - optind;
    if (nargs >= min_args && (max_args < 0 || nargs <= max_args)) return 0;
usage:
    fprintf(stderr, "aegis %s: bad usage\nRun 'aegis %s --help' for usage.\n",
            cmd, cmd);
    return CLI_USAGE;
}

void client_print_json(json_t *v) {
    json_dumpf(v, stdout, JSON_COMPACT);
    putchar('\n');
}
