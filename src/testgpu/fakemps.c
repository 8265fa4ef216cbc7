/* fakemps.c -- aegis-fake-mps-control, a stand-in for NVIDIA's
 * nvidia-cuda-mps-control, so aegisd's MPS lifecycle is tested without a
 * GPU.
 *
 * It keeps the real program's interface: `-d` starts a control daemon in
 * the background for the GPUs in CUDA_VISIBLE_DEVICES, with its control
 * socket in $CUDA_MPS_PIPE_DIRECTORY and its log in
 * $CUDA_MPS_LOG_DIRECTORY; without -d it is a client that sends the
 * commands on its stdin, one a line, to the daemon of that pipe directory
 * and prints the answers. The control socket is AF_UNIX SOCK_SEQPACKET,
 * as the real one is: one command or answer a packet.
 *
 * It runs no MPS server process, but it keeps the real daemon's rule of
 * one server per user (nvidia-cuda-mps-control(1)): aegis-fakegpu, as an
 * MPS client, connects and sends "mps-client"; the daemon reads its uid
 * from the socket (SO_PEERCRED) and answers "ready" when the server it
 * runs is that user's or none runs. A client of another user gets no
 * answer, so it waits (in CUDA initialisation, for the real one) until
 * every client of the current server has hung up, and from then on the
 * server takes no new client; then the server of the first waiting user
 * starts, serving that user's waiting clients. A client ends by closing its connection
 * (exiting).
 *
 * The one idea: every lifecycle event is one line appended to
 * $AEGIS_TEST_GPU_DIR/mps-calls.log, so a test compares the exact
 * sequence a daemon caused:
 *
 *   <event> gpus=<CUDA_VISIBLE_DEVICES> pipe=<dir> log=<dir>
 *
 * events: "start" (a control daemon is up), "refused" (-d while one
 * already runs there), "command <text>" (each command received), "stop"
 * (it exits after quit). Clients go to mps-clients.log in the same
 * folder, "<event> uid=<uid> pid=<pid> pipe=<dir>": "server" (a server
 * starts for that user's client), "client" (a client is served), "wait"
 * (a client waits for another user's server), "exit" (the server ends,
 * its last client gone; pid is that client's).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const char usage[] =
    "usage: aegis-fake-mps-control [-d | -h]\n"
    "\n"
    "A stand-in for nvidia-cuda-mps-control on the test GPUs.\n"
    "  -d   start the MPS control daemon in the background and return once\n"
    "       it listens; exit 1 when one already runs in the pipe directory\n"
    "  (no option) send the commands on stdin (quit,\n"
    "       get_server_list, set_default_active_thread_percentage N,\n"
    "       get_default_active_thread_percentage, ...) to the daemon and\n"
    "       print its answers; exit 1 when no daemon answers\n"
    "\n"
    "environment: CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps),\n"
    "CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps),\n"
    "CUDA_VISIBLE_DEVICES (the GPUs served), AEGIS_TEST_GPU_DIR (required:\n"
    "mps-calls.log goes there)\n";

/* Bytes of one command line; the real commands are a few dozen. */
#define MPS_LINE 512

typedef struct mps_env {
    const char *pipe_dir;
    const char *log_dir;
    const char *gpus;
    const char *test_dir;
    struct sockaddr_un addr;        /* pipe_dir/control */
} mps_env;

/* Appends one line, in one write, to `file` in the test folder. */
static void mps_append(const mps_env *e, const char *file, const char *line,
                       size_t n) {
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%s", e->test_dir, file);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, n);
        (void)w; /* a lost line fails the test that reads it */
        close(fd);
    }
}

/* Appends one event line to mps-calls.log. */
__attribute__((format(printf, 2, 3)))
static void mps_log(const mps_env *e, const char *fmt, ...) {
    char line[2 * MPS_LINE + 4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    n += snprintf(line + n, sizeof line - (size_t)n,
                  " gpus=%s pipe=%s log=%s\n", e->gpus, e->pipe_dir,
                  e->log_dir);
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    mps_append(e, "mps-calls.log", line, (size_t)n);
}

/* Appends one client event to mps-clients.log. */
static void mps_log_client(const mps_env *e, const char *event, uid_t uid,
                           pid_t pid) {
    char line[4096 + 128];
    int n = snprintf(line, sizeof line, "%s uid=%ld pid=%ld pipe=%s\n",
                     event, (long)uid, (long)pid, e->pipe_dir);
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    mps_append(e, "mps-clients.log", line, (size_t)n);
}

static const char *mps_getenv(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static int mps_env_load(mps_env *e) {
    e->pipe_dir = mps_getenv("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
    e->log_dir = mps_getenv("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps");
    e->gpus = mps_getenv("CUDA_VISIBLE_DEVICES", "all");
    e->test_dir = getenv("AEGIS_TEST_GPU_DIR");
    if (!e->test_dir || !*e->test_dir) {
        fprintf(stderr, "aegis-fake-mps-control: AEGIS_TEST_GPU_DIR is not "
                "set (mps-calls.log goes there)\n");
        return -1;
    }
    memset(&e->addr, 0, sizeof e->addr);
    e->addr.sun_family = AF_UNIX;
    if ((size_t)snprintf(e->addr.sun_path, sizeof e->addr.sun_path,
                         "%s/control", e->pipe_dir) >=
        sizeof e->addr.sun_path) {
        fprintf(stderr, "aegis-fake-mps-control: CUDA_MPS_PIPE_DIRECTORY=%s: "
                "too long for a socket path\n", e->pipe_dir);
        return -1;
    }
    return 0;
}

/* A connection to the running daemon, or -1. */
static int mps_connect(const mps_env *e) {
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd >= 0 &&
        connect(fd, (const struct sockaddr *)&e->addr, sizeof e->addr) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The daemon's answer to one command; 1 when it is quit. */
static int mps_answer(const mps_env *e, const char *cmd, int *pct, char *out,
                      size_t outlen) {
    int v = 0;
    mps_log(e, "command %s", cmd);
    if (!strcmp(cmd, "quit")) {
        snprintf(out, outlen, "\n");
        return 1;
    }
    if (!strcmp(cmd, "get_server_list"))
        snprintf(out, outlen, "\n"); /* no MPS server process runs */
    else if (sscanf(cmd, "set_default_active_thread_percentage %d", &v) ==
                 1 && v > 0 && v <= 100)
        *pct = v, snprintf(out, outlen, "%d.0\n", v);
    else if (!strcmp(cmd, "get_default_active_thread_percentage"))
        snprintf(out, outlen, "%d.0\n", *pct);
    else
        snprintf(out, outlen, "Invalid command: %s\n", cmd);
    return 0;
}

/* Connections a daemon holds at once: aegisd's commands and a test
 * server's clients, a few dozen at most. */
#define MPS_CONNS 128

/* What a connection is, once its first packet said so. */
typedef enum { MPS_COMMANDS, MPS_WAITING, MPS_SERVED } mps_kind;

typedef struct mps_conn {
    int fd;
    mps_kind kind;
    struct ucred peer;              /* a client's uid and pid */
} mps_conn;

/* The control daemon's state: its connections and the one server. */
typedef struct mps_daemon_state {
    const mps_env *e;
    mps_conn conns[MPS_CONNS];
    int nconns;
    int pct;                        /* default active thread percentage */
    int server;                     /* a server runs: for server_uid */
    uid_t server_uid;
    int served;                     /* its clients */
} mps_daemon_state;

/* Client c is served by its user's server, started when none runs. */
static void mps_serve_client(mps_daemon_state *d, mps_conn *c) {
    if (!d->server) {
        d->server = 1;
        d->server_uid = c->peer.uid;
        mps_log_client(d->e, "server", c->peer.uid, c->peer.pid);
    }
    c->kind = MPS_SERVED;
    d->served++;
    mps_log_client(d->e, "client", c->peer.uid, c->peer.pid);
    ssize_t w = send(c->fd, "ready", 5, MSG_NOSIGNAL);
    (void)w; /* a client that left is dropped at its hangup */
}

/* Whether a client waits: the server then takes no new client, as the
 * real one, asked to shut down once its clients are done, does not. */
static int mps_someone_waits(const mps_daemon_state *d) {
    for (int i = 0; i < d->nconns; i++)
        if (d->conns[i].kind == MPS_WAITING)
            return 1;
    return 0;
}

/* A new client: served now, or waiting for another user's server. */
static void mps_client_arrives(mps_daemon_state *d, mps_conn *c) {
    socklen_t len = sizeof c->peer;
    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) != 0)
        c->peer = (struct ucred){0, (uid_t)-1, (gid_t)-1};
    if (!d->server ||
        (d->server_uid == c->peer.uid && !mps_someone_waits(d))) {
        mps_serve_client(d, c);
        return;
    }
    c->kind = MPS_WAITING;
    mps_log_client(d->e, "wait", c->peer.uid, c->peer.pid);
}

/* The server's last client is gone: it ends, and the first waiting
 * client's user gets the next one, with all of that user's waiting
 * clients. */
static void mps_server_ends(mps_daemon_state *d, pid_t last) {
    mps_log_client(d->e, "exit", d->server_uid, last);
    d->server = 0;
    for (int i = 0; i < d->nconns; i++) {
        mps_conn *c = &d->conns[i];
        if (c->kind == MPS_WAITING &&
            (!d->server || c->peer.uid == d->server_uid))
            mps_serve_client(d, c);
    }
}

/* Connection i hung up: closed, and its server ended if it was the last
 * client. */
static void mps_hangup(mps_daemon_state *d, int i) {
    mps_conn c = d->conns[i];
    close(c.fd);
    /* in order: waiting clients are served first come, first served */
    memmove(&d->conns[i], &d->conns[i + 1],
            (size_t)(d->nconns - i - 1) * sizeof d->conns[0]);
    d->nconns--;
    if (c.kind == MPS_SERVED && --d->served == 0)
        mps_server_ends(d, c.peer.pid);
}

/* One packet from connection c: a client's hello or a command. Returns 1
 * when it was quit. */
static int mps_packet(mps_daemon_state *d, mps_conn *c, char *text) {
    text[strcspn(text, "\r\n")] = '\0';
    if (c->kind == MPS_COMMANDS && !strcmp(text, "mps-client")) {
        mps_client_arrives(d, c);
        return 0;
    }
    if (c->kind != MPS_COMMANDS || !text[0])
        return 0;
    char out[MPS_LINE + 32];
    int quit = mps_answer(d->e, text, &d->pct, out, sizeof out);
    if (quit) {
        /* Gone before the client hears back, so that a client that
         * returned from quit finds "stop" logged and the pipe free. */
        unlink(d->e->addr.sun_path);
        mps_log(d->e, "stop");
    }
    ssize_t w = send(c->fd, out, strlen(out), MSG_NOSIGNAL);
    (void)w; /* a client that left needs no answer */
    return quit;
}

/* Reads what connection i sent. Returns 1 after quit. */
static int mps_readable(mps_daemon_state *d, int i) {
    char text[MPS_LINE];
    ssize_t n = recv(d->conns[i].fd, text, sizeof text - 1, 0);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n <= 0) {
        mps_hangup(d, i);
        return 0;
    }
    text[n] = '\0';
    return mps_packet(d, &d->conns[i], text);
}

/* Takes a new connection, or refuses it when the table is full. */
static void mps_accept(mps_daemon_state *d, int srv) {
    int fd = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (d->nconns == MPS_CONNS) {
        close(fd);
        return;
    }
    d->conns[d->nconns++] = (mps_conn){fd, MPS_COMMANDS, {0, 0, 0}};
}

/* Serves the listening socket and every connection until quit. */
static int mps_loop(mps_daemon_state *d, int srv) {
    struct pollfd p[MPS_CONNS + 1];
    for (;;) {
        p[0] = (struct pollfd){srv, POLLIN, 0};
        int n = d->nconns;
        for (int i = 0; i < n; i++)
            p[i + 1] = (struct pollfd){d->conns[i].fd, POLLIN, 0};
        if (poll(p, (nfds_t)n + 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        /* backwards: a hangup moves only the connections after it */
        for (int i = n - 1; i >= 0; i--)
            if (p[i + 1].revents && mps_readable(d, i))
                return 0;
        if (p[0].revents & POLLIN)
            mps_accept(d, srv);
    }
}

/* The control daemon: listens, serves, exits after quit. Tells the parent
 * (ready, one byte) once it listens. */
static void mps_daemon(const mps_env *e, int ready) {
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0)
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
    int srv = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    unlink(e->addr.sun_path); /* stale: no daemon answered on it */
    if (srv < 0 || bind(srv, (const struct sockaddr *)&e->addr,
                        sizeof e->addr) != 0 || listen(srv, 16) != 0)
        _exit(1);
    /* every user's clients connect, as to the real daemon's socket */
    chmod(e->addr.sun_path, 0777);
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/control.log", e->log_dir);
    FILE *log = fopen(path, "a");
    if (log) {
        fprintf(log, "[aegis-fake-mps-control] started, pid %d\n",
                (int)getpid());
        fclose(log);
    }
    mps_log(e, "start");
    char ok = 1;
    if (write(ready, &ok, 1) != 1)
        _exit(1);
    close(ready);
    static mps_daemon_state d;
    d.e = e;
    d.pct = 100;
    _exit(mps_loop(&d, srv));
}

static int mps_start(const mps_env *e) {
    int fd = mps_connect(e);
    if (fd >= 0) {
        close(fd);
        mps_log(e, "refused");
        fprintf(stderr, "An instance of this daemon is already running "
                "(%s)\n", e->addr.sun_path);
        return 1;
    }
    int p[2];
    if (pipe(p) != 0) {
        perror("aegis-fake-mps-control: pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("aegis-fake-mps-control: fork");
        return 1;
    }
    if (pid == 0) {
        close(p[0]);
        if (fork() == 0) /* not the caller's child: it is not waited for */
            mps_daemon(e, p[1]);
        _exit(0);
    }
    close(p[1]);
    char ok = 0;
    ssize_t n = read(p[0], &ok, 1);
    close(p[0]);
    if (n != 1 || ok != 1) {
        fprintf(stderr, "aegis-fake-mps-control: %s: cannot listen\n",
                e->addr.sun_path);
        return 1;
    }
    return 0;
}

/* The client: each stdin line to the daemon as a packet, its answer to
 * stdout. */
static int mps_client(const mps_env *e) {
    int fd = mps_connect(e);
    if (fd < 0) {
        fprintf(stderr, "Cannot find MPS control daemon process (%s: %s)\n",
                e->addr.sun_path, strerror(errno));
        return 1;
    }
    char line[MPS_LINE], answer[MPS_LINE + 32];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[strspn(line, " ")] == '\0')
            continue;
        if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0)
            break;
        ssize_t n = recv(fd, answer, sizeof answer - 1, 0);
        if (n <= 0)
            break;
        answer[n] = '\0';
        fputs(answer, stdout);
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "-d") != 0)) {
        int help = argc == 2 && (!strcmp(argv[1], "-h") ||
                                 !strcmp(argv[1], "--help"));
        fputs(usage, help ? stdout : stderr);
        return help ? 0 : 2;
    }
    mps_env e;
    if (mps_env_load(&e) < 0)
        return 2;
    return argc == 2 ? mps_start(&e) : mps_client(&e);
}
