/* fakemps.c -- aegis-fake-mps-control, a stand-in for NVIDIA's
 * nvidia-cuda-mps-control, so aegisd's MPS lifecycle is tested without a
 * GPU.
 *
 * It keeps the real program's interface: `-d` starts a control daemon in
 * the background for the GPUs in CUDA_VISIBLE_DEVICES, with its control
 * socket in $CUDA_MPS_PIPE_DIRECTORY and its log in
 * $CUDA_MPS_LOG_DIRECTORY; without -d it is a client that sends the
 * commands on its stdin, one a line, to the daemon of that pipe directory
 * and prints the answers. It runs no MPS server: jobs never talk to it.
 *
 * The one idea: every lifecycle event is one line appended to
 * $AEGIS_TEST_GPU_DIR/mps-calls.log, so a test compares the exact
 * sequence a daemon caused:
 *
 *   <event> gpus=<CUDA_VISIBLE_DEVICES> pipe=<dir> log=<dir>
 *
 * events: "start" (a control daemon is up), "refused" (-d while one
 * already runs there), "command <text>" (each command received), "stop"
 * (it exits after quit).
 */
#include <errno.h>
#include <fcntl.h>
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

/* Appends one event line to mps-calls.log, in one write. */
__attribute__((format(printf, 2, 3)))
static void mps_log(const mps_env *e, const char *fmt, ...) {
    char line[2 * MPS_LINE + 4096], path[4096 + 32];
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
    snprintf(path, sizeof path, "%s/mps-calls.log", e->test_dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n);
        (void)w; /* a lost line fails the test that reads it */
        close(fd);
    }
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
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
        snprintf(out, outlen, "\n"); /* no MPS server runs */
    else if (sscanf(cmd, "set_default_active_thread_percentage %d", &v) ==
                 1 && v > 0 && v <= 100)
        *pct = v, snprintf(out, outlen, "%d.0\n", v);
    else if (!strcmp(cmd, "get_default_active_thread_percentage"))
        snprintf(out, outlen, "%d.0\n", *pct);
    else
        snprintf(out, outlen, "Invalid command: %s\n", cmd);
    return 0;
}

/* Serves one client until it hangs up; 1 when it sent quit. */
static int mps_serve(const mps_env *e, int client, int *pct) {
    FILE *in = fdopen(client, "r");
    if (!in) {
        close(client);
        return 0;
    }
    char line[MPS_LINE], out[MPS_LINE + 32];
    int quit = 0;
    while (!quit && fgets(line, sizeof line, in)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        quit = mps_answer(e, line, pct, out, sizeof out);
        if (quit) {
            /* Gone before the client hears back, so that a client that
             * returned from quit finds "stop" logged and the pipe free. */
            unlink(e->addr.sun_path);
            mps_log(e, "stop");
        }
        ssize_t w = write(client, out, strlen(out));
        (void)w; /* a client that left needs no answer */
    }
    fclose(in);
    return quit;
}

/* The control daemon: listens, serves, exits after quit. Tells the parent
 * (ready, one byte) once it listens. */
static void mps_daemon(const mps_env *e, int ready) {
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0)
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
    int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(e->addr.sun_path); /* stale: no daemon answered on it */
    if (srv < 0 || bind(srv, (const struct sockaddr *)&e->addr,
                        sizeof e->addr) != 0 || listen(srv, 16) != 0)
        _exit(1);
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
    int pct = 100, quit = 0;
    while (!quit) {
        int c = accept(srv, NULL, NULL);
        if (c >= 0)
            quit = mps_serve(e, c, &pct);
        else if (errno != EINTR)
            break;
    }
    _exit(quit ? 0 : 1);
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

/* The client: each stdin line to the daemon, its answer to stdout. */
static int mps_client(const mps_env *e) {
    int fd = mps_connect(e);
    if (fd < 0) {
        fprintf(stderr, "Cannot find MPS control daemon process (%s: %s)\n",
                e->addr.sun_path, strerror(errno));
        return 1;
    }
    char line[MPS_LINE], answer[MPS_LINE + 32];
    FILE *from = fdopen(fd, "r+");
    if (!from) {
        close(fd);
        return 1;
    }
    while (fgets(line, sizeof line, stdin)) {
        if (fputs(line, from) < 0 || fflush(from) != 0)
            break;
        if (line[strspn(line, " \r\n")] == '\0')
            continue;
        if (!fgets(answer, sizeof answer, from))
            break;
        fputs(answer, stdout);
    }
    fclose(from);
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
