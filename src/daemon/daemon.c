/* daemon.c -- aegisd's event loop: one libuv loop serves the Unix socket,
 * fires the 1 s telemetry tick, reaps children and handles signals. All
 * state changes happen on this one thread, in callbacks, so nothing needs
 * a lock.
 *
 * Signals: SIGTERM/SIGINT stop accepting requests and leave running jobs
 * to their shims (a restarted aegisd re-adopts them), or, with
 * --drain-on-stop, wait for them first. SIGHUP reloads the configuration.
 */
#include "daemon.h"

#include "config.h"
#include "exec.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Clients connected at once; more are turned away with an error, so a
 * flood of idle connections cannot exhaust descriptors. */
#define D_MAX_CONNS 512

double d_now(const d_daemon *d) {
    return (double)uv_hrtime() / 1e9 - d->t0;
}

double d_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void d_log(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "aegisd: %s\n", line);
}

/* ---- connections --------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
    d_conn *c = h->data;
    free(c->buf);
    free(c->wait_ids);
    json_decref(c->wait_result);
    free(c);
}

static void d_conn_close(d_conn *c) {
    d_daemon *d = c->d;
    if (uv_is_closing((uv_handle_t *)&c->pipe)) return;
    if (c->prev) c->prev->next = c->next;
    else d->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    d->nconns--;
    uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

typedef struct d_write {
    uv_write_t req;
    char *text;
} d_write;

static void on_written(uv_write_t *req, int status) {
    d_write *w = (d_write *)req;
    free(w->text);
    free(w);
}

void d_reply(d_conn *c, json_t *msg) {
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    d_write *w = malloc(sizeof(*w));
    if (!text || !w) {
        free(text);
        free(w);
        d_conn_close(c);
        return;
    }
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves the NUL's byte to spare */
    w->text = text;
    uv_buf_t buf = uv_buf_init(text, (unsigned)n + 1);
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, on_written) != 0) {
        free(text);
        free(w);
        d_conn_close(c);
    }
}

void d_reply_error(d_conn *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    d_reply(c, json_pack("{s:b, s:s}", "ok", 0, "error", msg));
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    d_conn *c = h->data;
    if (c->cap - c->len < 65536) {
        size_t cap = c->cap ? c->cap * 2 : 65536;
        char *grown = realloc(c->buf, cap);
        if (!grown) {
            *buf = uv_buf_init(NULL, 0);
            return;
        }
        c->buf = grown;
        c->cap = cap;
    }
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void d_conn_request(d_conn *c, const char *line, size_t len) {
    proto_request req;
    char err[512];
    if (proto_parse(line, len, &req, err, sizeof(err)) != 0)
        d_reply_error(c, "%s", err);
    else
        d_handle(c, &req);
    proto_request_free(&req);
}

/* The error answer to an oversized request is written: hang up. */
static void on_shutdown(uv_shutdown_t *req, int status) {
    d_conn *c = req->handle->data;
    free(req);
    d_conn_close(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    d_conn *c = s->data;
    if (n < 0) {
        d_conn_close(c);
        return;
    }
    c->len += (size_t)n;
    size_t start = 0;
    char *nl;
    /* Each complete line is one request; stop at a `wait`, which answers
     * later and resumes reading then. */
    while (!c->wait_ids &&
           (nl = memchr(c->buf + start, '\n', c->len - start))) {
        size_t len = (size_t)(nl - (c->buf + start));
        d_conn_request(c, c->buf + start, len);
        start += len + 1;
    }
    memmove(c->buf, c->buf + start, c->len - start);
    c->len -= start;
    if (c->len > PROTO_MAX_REQUEST) {
        d_reply_error(c, "request: longer than %u bytes", PROTO_MAX_REQUEST);
        uv_read_stop(s);
        c->len = 0;
        uv_shutdown_t *sd = malloc(sizeof(*sd));
        if (!sd || uv_shutdown(sd, s, on_shutdown) != 0) {
            free(sd);
            d_conn_close(c);
        }
    }
}

void d_conn_resume(d_conn *c) {
    if (c->len > 0 && memchr(c->buf, '\n', c->len)) {
        on_read((uv_stream_t *)&c->pipe, 0, NULL);
        return;
    }
    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

static void on_connection(uv_stream_t *server, int status) {
    d_daemon *d = server->data;
    if (status < 0) return;
    d_conn *c = calloc(1, sizeof(*c));
    if (!c) return;
    c->d = d;
    uv_pipe_init(d->loop, &c->pipe, 0);
    c->pipe.data = c;
    c->next = d->conns;
    if (d->conns) d->conns->prev = c;
    d->conns = c;
    d->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0) {
        d_conn_close(c);
        return;
    }
    uv_os_fd_t fd;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        d_conn_close(c);
        return;
    }
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    if (d->nconns > D_MAX_CONNS) {
        d_reply_error(c, "server busy: %d connections", D_MAX_CONNS);
        d_conn_close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

/* ---- timer and signals --------------------------------------------------- */

static void d_maybe_exit(d_daemon *d) {
    if (!d->stopping) return;
    if (d->opt.drain_on_stop)
        for (size_t i = 0; i < d->njobs; i++)
            if (d->jobs[i]->state == D_RUNNING) return;
    uv_stop(d->loop);
}

static void on_tick(uv_timer_t *t) {
    d_daemon *d = t->data;
    d_jobs_tick(d);
    d_jobs_check_exits(d);
    if (!d->stopping) d_jobs_schedule(d);
    d_maybe_exit(d);
}

static void on_sigchld(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    int status;
    while (waitpid(-1, &status, WNOHANG) > 0) {
    }
    d_jobs_check_exits(d);
    if (!d->stopping) d_jobs_schedule(d);
    d_maybe_exit(d);
}

static void on_sigterm(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    if (!d->stopping) {
        d_log("signal %d: no longer accepting requests; %s", signum,
              d->opt.drain_on_stop ? "waiting for running jobs"
                                   : "running jobs keep running");
        d->stopping = true;
        uv_close((uv_handle_t *)&d->server, NULL);
        unlink(d->opt.socket_path);
    }
    d_maybe_exit(d);
}

static void on_sighup(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    core_config cfg;
    acct_params acct;
    sharing_config share;
    char err[1024];
    const char *path = d->opt.config_path ? d->opt.config_path
                                          : CONFIG_DEFAULT_PATH;
    if (config_load_daemon(path, !d->opt.config_path, &cfg, &acct, &share,
                           err, sizeof(err)) != 0 ||
        d_share_check_reload(d, &share, err, sizeof(err)) != 0 ||
        core_reconfigure(d->core, &cfg, err, sizeof(err)) != 0) {
        d_log("SIGHUP: configuration not reloaded: %s", err);
        return;
    }
    d_share_reload(d, &share);
    d->cfg = cfg;
    d->acct = acct;
    d_log("SIGHUP: reloaded %s", path);
    d_jobs_schedule(d);
}

/* ---- start and stop ------------------------------------------------------ */

static int d_mkdir(const char *path, mode_t mode) {
    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        d_log("%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* One daemon per state directory: a lock held for the daemon's life (the
 * kernel drops it when the process dies, even by kill -9). The file holds
 * the daemon's pid, for scripts and tests (its shims share its name). */
static int d_lock(const char *state_dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/aegisd.lock", state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        d_log("%s: %s", path,
              errno == EWOULDBLOCK ? "another aegisd uses this state directory"
                                   : strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t)n) != n)
        d_log("%s: cannot record the pid: %s", path, strerror(errno));
    return fd;
}

static int d_listen(d_daemon *d) {
    uv_pipe_init(d->loop, &d->server, 0);
    d->server.data = d;
    unlink(d->opt.socket_path); /* stale: the lock says no aegisd owns it */
    mode_t old = umask(0); /* anyone may connect; requests check the peer */
    int rc = uv_pipe_bind(&d->server, d->opt.socket_path);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&d->server, 128, on_connection);
    umask(old);
    if (rc == 0) chmod(d->opt.socket_path, 0666);
    if (rc != 0) d_log("%s: %s", d->opt.socket_path, uv_strerror(rc));
    return rc;
}

static int d_open(d_daemon *d) {
    char err[512], path[4200];
    const char *cfg_path = d->opt.config_path ? d->opt.config_path
                                              : CONFIG_DEFAULT_PATH;
    if (config_load_daemon(cfg_path, !d->opt.config_path, &d->cfg, &d->acct,
                           &d->share, err, sizeof(err)) != 0) {
        d_log("%s", err);
        return -1;
    }
    d->tel = tel_open(d->opt.nvml_path, err, sizeof(err));
    if (!d->tel) {
        d_log("no GPU telemetry: %s (aegisd needs NVML: the driver's "
              "libnvidia-ml.so.1, or a test library given with "
              "--nvml-library)", err);
        return -1;
    }
    if (tel_open_dcgm(d->tel, d->opt.dcgm_path, err, sizeof(err)) == 0)
        d_log("DCGM: SMACT/SMOCC/DRAMA pressure filter");
    else
        d_log("no DCGM: utilization-only pressure filter (%s)", err);
    d->ngpus = tel_gpu_count(d->tel);
    if (d->ngpus < 1 || d->ngpus > CORE_MAX_GPUS) {
        d_log("NVML reports %d GPUs; aegisd manages 1 to %d", d->ngpus,
              CORE_MAX_GPUS);
        return -1;
    }
    double total[CORE_MAX_GPUS];
    for (int g = 0; g < d->ngpus; g++) {
        if (tel_read(d->tel, g, &d->gpus[g].last, err, sizeof(err)) != 0) {
            d_log("GPU %d: %s", g, err);
            return -1;
        }
        d->gpus[g].ok = true;
        d->gpus[g].energy_seen_j = d->gpus[g].last.energy_j;
        total[g] = d->gpus[g].last.r.total_mib;
    }
    d->core = core_create(&d->cfg, d->ngpus, total, err, sizeof(err));
    if (!d->core) {
        d_log("%s: %s", cfg_path, err);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/aegis.db", d->opt.state_dir);
    d->st = store_open(path, err, sizeof(err));
    if (!d->st) {
        d_log("%s", err);
        return -1;
    }
    return d_share_open(d); /* after the store: it knows aegisd's MIG
                               instances */
}

/* Without --foreground: fork, and let the parent exit only once the child
 * listens, so a script may use the socket as soon as `aegisd` returns. */
static int d_daemonize(int *ready_fd) {
    int p[2];
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid > 0) {
        close(p[1]);
        char ok = 0;
        ssize_t n = read(p[0], &ok, 1);
        _exit(n == 1 && ok == 1 ? 0 : 1);
    }
    close(p[0]);
    setsid();
    *ready_fd = p[1];
    return 0;
}

/* In the background, from the moment the parent has exited: stdin from
 * /dev/null, stdout and stderr to STATE_DIR/aegisd.log. */
static void d_log_to_file(const char *state_dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/aegisd.log", state_dir);
    int in = open("/dev/null", O_RDONLY);
    int log = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (in >= 0) dup2(in, 0), close(in);
    if (log >= 0) dup2(log, 1), dup2(log, 2), close(log);
}

static void d_signals(d_daemon *d) {
    uv_signal_t *sigs[] = {&d->sig_chld, &d->sig_term, &d->sig_int,
                           &d->sig_hup};
    uv_signal_cb cbs[] = {on_sigchld, on_sigterm, on_sigterm, on_sighup};
    int nums[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 4; i++) {
        uv_signal_init(d->loop, sigs[i]);
        sigs[i]->data = d;
        uv_signal_start(sigs[i], cbs[i], nums[i]);
    }
}

/* Closes every handle left at exit; client connections free their
 * d_conn, the server (arg) and the daemon's own handles free nothing. */
static void on_walk_close(uv_handle_t *h, void *arg) {
    if (uv_is_closing(h)) return;
    bool conn = h->type == UV_NAMED_PIPE && h != (uv_handle_t *)arg;
    uv_close(h, conn ? on_conn_closed : NULL);
}

static void d_free(d_daemon *d) {
    if (d->tel) d_share_close(d);
    for (size_t i = 0; i < d->njobs; i++) free(d->jobs[i]);
    free(d->jobs);
    free(d->unsaved);
    if (d->core) core_destroy(d->core);
    store_close(d->st);
    if (d->tel) tel_close(d->tel);
}

int d_run(const d_options *opt) {
    static d_daemon daemon; /* the one instance; signals find it via data */
    d_daemon *d = &daemon;
    d->opt = *opt;
    d->as_root = geteuid() == 0;
    snprintf(d->log_dir, sizeof(d->log_dir), "%s/logs", opt->state_dir);
    snprintf(d->run_dir, sizeof(d->run_dir), "%s/run", opt->state_dir);
    int ready_fd = -1;
    if (d_mkdir(opt->state_dir, 0700) || d_mkdir(d->log_dir, 0700) ||
        d_mkdir(d->run_dir, 0700))
        return 1;
    if (!opt->foreground && d_daemonize(&ready_fd) != 0) {
        d_log("cannot start in the background: %s", strerror(errno));
        return 1;
    }
    int lock = d_lock(opt->state_dir);
    d->loop = uv_default_loop();
    d->t0 = (double)uv_hrtime() / 1e9;
    int rc = 1;
    if (lock < 0 || d_open(d) != 0) goto out;
    d_jobs_recover(d);
    if (d_listen(d) != 0) goto out;
    d_signals(d);
    uv_timer_init(d->loop, &d->tick);
    d->tick.data = d;
    uv_timer_start(&d->tick, on_tick, 1000, 1000);
    d_log("serving %s: %d GPUs, policy %s, state in %s", opt->socket_path,
          d->ngpus, d->cfg.policy, opt->state_dir);
    if (ready_fd >= 0) {
        char ok = 1;
        if (write(ready_fd, &ok, 1) != 1) goto out;
        close(ready_fd);
        ready_fd = -1;
        d_log_to_file(opt->state_dir);
    }
    d_jobs_schedule(d);
    uv_run(d->loop, UV_RUN_DEFAULT);
    rc = 0;
    d_log("stopped");
out:
    uv_walk(d->loop, on_walk_close, &d->server);
    uv_run(d->loop, UV_RUN_DEFAULT);
    uv_loop_close(d->loop);
    d_free(d);
    if (lock >= 0) close(lock);
    return rc;
}
