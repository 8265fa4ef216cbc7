/* daemon.c -- aegisd's event loop: one libuv loop serves the Unix socket,
 * fires the 1 s telemetry tick, reaps children and handles signals. All
 * state changes happen on this one thread, in callbacks, so nothing needs
 * a lock. The one other thread, the front (front.h), accepts the
 * connections and answers `gpus` from a copy the loop publishes; it
 * touches no state of the loop's.
 *
 * Signals: SIGTERM/SIGINT stop accepting requests and leave running jobs
 * to their shims (a restarted aegisd re-adopts them), or, with
 * --drain-on-stop, wait for them first; `aegis shutdown [--drain]` does
 * the same from a client (d_stop). SIGHUP reloads the configuration.
 */
#include "daemon.h"

#include "autogroup.h"
#include "config.h"
#include "exec.h"
#include "front.h"
#include "ready.h"
#include "usock.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Clients connected at once; more are turned away with an error, so a
 * flood of idle connections cannot exhaust descriptors. Root is always let
 * in, so that an administrator can act on a full server. */
#define D_MAX_CONNS 512
/* Connections of one user at once (root aside): one user's idle or waiting
 * clients cannot lock the other users out. */
#define D_MAX_CONNS_PER_USER 64
/* Bytes of answers a client may leave unread; past them its requests are
 * not read until it catches up, so that a client pipelining requests
 * without reading cannot make aegisd queue answers without bound. */
#define D_MAX_UNREAD (1u << 20)

double d_now(const d_daemon *d) {
    return (double)uv_hrtime() / 1e9 - d->t0;
}

double d_wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- connections --------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
    d_conn *c = h->data;
    free(c->buf);
    free(c->wait_ids);
    json_decref(c->wait_result);
    json_decref(c->later);
    free(c);
}

static bool d_conn_closing(d_conn *c) {
    return uv_is_closing((uv_handle_t *)&c->pipe);
}

/* Takes c off the list of connections (d->conns), which a job's end walks
 * (d->job_done) until its memory is freed (on_conn_closed). */
static void d_conn_unlink(d_conn *c) {
    d_daemon *d = c->d;
    if (c->prev) c->prev->next = c->next;
    else d->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    c->prev = c->next = NULL;
    d->nconns--;
}

static void d_conn_close(d_conn *c) {
    d_daemon *d = c->d;
    if (d_conn_closing(c)) return;
    if (c->lease_id) d_lease_conn_gone(d, c); /* a task gone before its grant */
    if (c->cancel_waiting) d_cancel_conn_gone(d, c);
    d_conn_unlink(c);
    uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

/* Whether the client has closed its end. Not merely its sending half: a
 * client may shut that down after its requests and still read answers. */
static bool d_conn_hung_up(d_conn *c) {
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0) return true;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static bool d_conn_backlogged(const d_conn *c) {
    return uv_stream_get_write_queue_size((const uv_stream_t *)&c->pipe) >
           D_MAX_UNREAD;
}

/* The answers written, shutdown() tells the client there are no more. */
static void on_shutdown(uv_shutdown_t *req, int status) {
    d_conn *c = req->handle->data;
    free(req);
    d_conn_close(c);
}

typedef struct d_write {
    uv_write_t req;
    char *text;
} d_write;

static void d_conn_pump(d_conn *c);

static void on_written(uv_write_t *req, int status) {
    d_write *w = (d_write *)req;
    d_conn *c = req->handle->data;
    free(w->text);
    free(w);
    if (status < 0) d_conn_close(c); /* EPIPE, ECONNRESET: the client left */
    else if (!c->reading && !d_conn_closing(c)) d_conn_pump(c);
}

/* An answer may tell a change the front's copy of the `gpus` answer does
 * not have yet: until the turn ends, `gpus` requests come to the loop, so
 * that a client told of a change is answered after it (front.h). */
static void d_gpus_told(d_daemon *d) {
    if (d->front && d->gpus_changes != d->gpus_published) front_stale(d->front);
}

/* msg as one line of the protocol, its '\n' ending it (no NUL), its
 * length in *len; msg is released. NULL when out of memory. */
static char *d_json_line(json_t *msg, size_t *len) {
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!text) return NULL;
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves the NUL's byte to spare */
    *len = n + 1;
    return text;
}

void d_reply(d_conn *c, json_t *msg) {
    d_gpus_told(c->d);
    d_wal_answer(c->d, c->commits_seen);
    size_t n;
    char *text = d_json_line(msg, &n);
    d_write *w = malloc(sizeof(*w));
    if (!text || !w) {
        free(text);
        free(w);
        d_conn_close(c);
        return;
    }
    w->text = text;
    uv_buf_t buf = uv_buf_init(text, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, on_written) != 0) {
        free(text);
        free(w);
        d_conn_close(c);
    }
}

static void d_reply_failure(d_conn *c, bool server, const char *fmt,
                            va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    json_t *ans = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
    if (!ans) { /* not UTF-8: a byte of the request, or a character cut */
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80) *p = '?';
        ans = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
    }
    if (ans && server) json_object_set_new(ans, "server_error", json_true());
    d_reply(c, ans);
}

void d_reply_error(d_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    d_reply_failure(c, false, fmt, ap);
    va_end(ap);
}

void d_reply_fault(d_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    d_reply_failure(c, true, fmt, ap);
    va_end(ap);
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

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void d_conn_reading(d_conn *c, bool on) {
    if (on == c->reading) return;
    c->reading = on;
    if (on) uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
    else uv_read_stop((uv_stream_t *)&c->pipe);
}

/* No more requests from c: close it once its answers are written. */
static void d_conn_finish(d_conn *c) {
    c->eof = true;
    if (c->shutting) return;
    c->shutting = true;
    d_conn_reading(c, false);
    uv_shutdown_t *sd = malloc(sizeof(*sd));
    if (!sd || uv_shutdown(sd, (uv_stream_t *)&c->pipe, on_shutdown) != 0) {
        free(sd);
        d_conn_close(c);
    }
}

static void d_conn_request(d_conn *c, const char *line, size_t len) {
    proto_request req;
    char err[512];
    c->commits_seen = store_commits(c->d->st);
    if (proto_parse(line, len, &req, err, sizeof(err)) != 0) {
        d_reply_error(c, "%s", err);
    } else {
        if (!proto_read_only(req.op)) c->d->gpus_changes++;
        d_handle(c, &req);
    }
    proto_request_free(&req);
}

static bool d_conn_waiting(const d_conn *c) {
    return c->wait_ids || c->later || c->lease_id || c->cancel_waiting;
}

static bool d_conn_has_line(const d_conn *c) {
    return c->len > 0 && memchr(c->buf, '\n', c->len);
}

/* Answers the complete request lines buffered, in order, while no `wait`
 * is pending and the client reads its answers; then goes on reading, or
 * pauses: while the client is behind on its answers, or while a `wait`
 * holds a full buffer behind it. A waiting client is still read, so that
 * its hang-up is seen and frees its slot. */
static void d_conn_pump(d_conn *c) {
    size_t start = 0;
    char *nl;
    while (!d_conn_waiting(c) && !d_conn_backlogged(c) && !d_conn_closing(c) &&
           start < c->len &&
           (nl = memchr(c->buf + start, '\n', c->len - start))) {
        size_t len = (size_t)(nl - (c->buf + start));
        d_conn_request(c, c->buf + start, len);
        start += len + 1;
    }
    if (d_conn_closing(c)) return;
    if (start > 0) memmove(c->buf, c->buf + start, c->len - start);
    c->len -= start;
    bool pending = d_conn_waiting(c) || d_conn_has_line(c);
    if (!pending && c->len > PROTO_MAX_REQUEST) {
        d_reply_error(c, "request: longer than %u bytes", PROTO_MAX_REQUEST);
        c->len = 0;
        d_conn_finish(c);
    } else if (c->eof) {
        if (!pending) d_conn_finish(c);
    } else {
        d_conn_reading(c, !d_conn_backlogged(c) &&
                              c->len <= PROTO_MAX_REQUEST);
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    d_conn *c = s->data;
    if (n == 0) return;
    if (n == UV_EOF && !d_conn_hung_up(c)) {
        c->eof = true; /* half-closed: answer what was asked, then close */
        d_conn_reading(c, false);
    } else if (n < 0) {
        d_conn_close(c);
        return;
    } else {
        c->len += (size_t)n;
    }
    d_conn_pump(c);
}

static void on_wake(uv_idle_t *h) {
    d_daemon *d = h->data;
    uv_idle_stop(h);
    /* Sending one answer may answer other requests, which may finish jobs
     * and so give other clients theirs: from the list's head each time. */
    for (bool sent = true; sent;) {
        sent = false;
        for (d_conn *c = d->conns; c && !sent; c = c->next) {
            if (!c->later) continue;
            json_t *msg = c->later;
            c->later = NULL;
            d_reply(c, msg);
            if (!d_conn_closing(c)) d_conn_pump(c);
            sent = true;
        }
    }
}

void d_conn_answer_later(d_conn *c, json_t *msg) {
    json_decref(c->later);
    c->later = msg;
    uv_idle_start(&c->d->wake, on_wake);
}

/* Waiting and paused clients are not read: a hang-up shows only here. */
static void d_conns_check_hangups(d_daemon *d) {
    for (d_conn *c = d->conns, *next; c; c = next) {
        next = c->next;
        if (!c->reading && d_conn_hung_up(c)) d_conn_close(c);
    }
}

static int d_conns_of(const d_daemon *d, uid_t uid) {
    int n = 0;
    for (const d_conn *c = d->conns; c; c = c->next) n += c->uid == uid;
    return n;
}

/* Serves a connection the front accepted and handed over (fd, its
 * request bytes unread). */
static void d_conn_adopt(d_daemon *d, int fd) {
    d_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->d = d;
    uv_pipe_init(d->loop, &c->pipe, 0);
    c->pipe.data = c;
    c->next = d->conns;
    if (d->conns) d->conns->prev = c;
    d->conns = c;
    d->nconns++;
    if (uv_pipe_open(&c->pipe, fd) != 0) {
        close(fd);
        d_conn_close(c);
        return;
    }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        d_conn_close(c);
        return;
    }
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    int mine = c->uid == 0 ? 0 : d_conns_of(d, c->uid);
    if (mine > D_MAX_CONNS_PER_USER) {
        d_reply_fault(c, "server busy: uid %d has %d connections open (at "
                      "most %d per user)", (int)c->uid, mine - 1,
                      D_MAX_CONNS_PER_USER);
        d_conn_finish(c);
    } else if (c->uid != 0 && d->nconns > D_MAX_CONNS) {
        d_reply_fault(c, "server busy: %d connections", D_MAX_CONNS);
        d_conn_finish(c);
    } else {
        d_conn_reading(c, true);
    }
}

/* The connections the front handed over: a bounded number a turn, so that
 * a flood of them leaves the loop its other work; the rest next turn. */
static void on_handoff(uv_async_t *h) {
    enum { PER_TURN = 64 };
    d_daemon *d = h->data;
    int fds[PER_TURN];
    int n = d->front ? front_take(d->front, fds, PER_TURN) : 0;
    for (int i = 0; i < n; i++) d_conn_adopt(d, fds[i]);
    if (n == PER_TURN) uv_async_send(h);
}

/* Called on the front's thread. */
static void d_front_wake(void *arg) {
    d_daemon *d = arg;
    uv_async_send(&d->handoff);
}

/* The front gets a fresh `gpus` answer where the loop may have changed it
 * since the last: before each poll (after the timers: the tick) and after
 * it (the requests and exits it read), so that a copy made stale by an
 * answer is fresh again before the next tick, which may block in NVML. */
static void d_publish(d_daemon *d) {
    if (!d->front || d->gpus_published == d->gpus_changes) return;
    d->gpus_published = d->gpus_changes;
    size_t n;
    char *text = d_json_line(d_gpus_answer(d), &n);
    if (!text) {
        front_stale(d->front); /* out of memory: the loop answers */
        return;
    }
    front_publish(d->front, text, n);
    free(text);
}

static void on_before_poll(uv_prepare_t *h) { d_publish(h->data); }

static void on_after_poll(uv_check_t *h) { d_publish(h->data); }

/* ---- timer and signals --------------------------------------------------- */

static void d_maybe_exit(d_daemon *d) {
    if (!d->stopping) return;
    /* a drain waits for the jobs that end, not the supervisors (which run
     * until stopped, and are adopted again by the next aegisd) */
    if (d->opt.drain_on_stop && d->nrunning > d_pipelines_running(d)) return;
    uv_stop(d->loop);
}

static void on_tick(uv_timer_t *t) {
    d_daemon *d = t->data;
    d_conns_check_hangups(d);
    d_jobs_state_retry(d); /* outside a transaction: it makes its own */
    d_turn_begin(d);
    d_jobs_tick(d);
    d_limits_tick(d);
    d_jobs_restart_due(d);
    d_retention_tick(d);
    d_notify_tick(d);
    d_leases_tick(d);
    d_scontrol_tick(d);
    d_jobs_check_exits(d);
    d_jobs_schedule(d);
    d_turn_end(d);
    d_wal_sync_later(d);
    d_maybe_exit(d);
}

/* Children reaped in one turn whose jobs alone are looked at; past it,
 * every running job is. */
#define D_REAPED_MAX 64

/* The work of the SIGCHLDs caught in one loop turn, done once after its
 * poll. Done in the signal's own callback, it kept aegisd from its clients
 * while short jobs churned: libuv drains its signal pipe until it is
 * empty, and each callback's launches ended in new SIGCHLDs before that,
 * so the loop never polled a socket again until the churn was over (root's
 * `aegis gpus` waited 24 s). */
static void on_children_ended(uv_check_t *h) {
    d_daemon *d = h->data;
    uv_check_stop(h);
    int status;
    pid_t pid, reaped[D_REAPED_MAX];
    size_t nreaped = 0;
    bool more = false; /* than reaped holds: every job is looked at */
    d_turn_begin(d);
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (d_notify_reaped(d, pid, status)) continue;
        d_scontrol_reaped(d, pid, status);
        /* a watcher's end is in its job's status file, read below */
        if (nreaped < D_REAPED_MAX) reaped[nreaped++] = pid;
        else more = true;
    }
    if (more) d_jobs_check_exits(d);
    else d_jobs_check_reaped(d, reaped, nreaped);
    d_jobs_schedule(d);
    d_turn_end(d);
    d_maybe_exit(d);
}

static void on_schedule_more(uv_idle_t *h) {
    d_daemon *d = h->data;
    uv_idle_stop(h);
    d_jobs_schedule(d);
    d_maybe_exit(d);
}

void d_schedule_more(d_daemon *d) { uv_idle_start(&d->more, on_schedule_more); }

static void on_sigchld(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    uv_check_start(&d->reap, on_children_ended);
}

void d_stop(d_daemon *d, const char *why, bool drain) {
    d->opt.drain_on_stop = d->opt.drain_on_stop || drain;
    if (d->stopping) return;
    d_log("%s: no longer accepting requests; %s", why,
          d->opt.drain_on_stop ? "waiting for running jobs"
                               : "running jobs keep running");
    d->stopping = true;
    d_ready_stopping(why);
    store_begin(d->st); /* the next aegisd adopts the jobs with it */
    d_jobs_keep_energy(d, true);
    store_commit(d->st);
    front_stop(d->front);
    d->front = NULL;
    uv_close((uv_handle_t *)&d->server, NULL);
    unlink(d->opt.socket_path);
}

static void on_sigterm(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    char why[32];
    snprintf(why, sizeof(why), "signal %d", signum);
    d_stop(d, why, false);
    d_maybe_exit(d);
}

/* The keys a reload leaves for the next start (the metrics listener, the
 * socket's group): each changed one is said and kept as it was in keys,
 * read from path; a group the next start would refuse is said too. */
bool d_keep_for_restart(const char *key, char *value, size_t size,
                        const char *kept, const char *shown,
                        const char *kept_shown) {
    if (strcmp(value, kept) == 0) return false;
    d_log("SIGHUP: %s '%s' applies when aegisd restarts; still '%s'", key,
          shown, kept_shown);
    snprintf(value, size, "%s", kept);
    return true;
}

static void d_keys_for_restart(d_daemon *d, config_keys *keys,
                               const char *path) {
    char err[512];
    d_keep_for_restart("metrics_listen", keys->metrics_listen,
                       sizeof(keys->metrics_listen), d->keys.metrics_listen,
                       keys->metrics_listen, d->keys.metrics_listen);
    if (config_group_check(path, keys, err, sizeof(err)) != 0)
        d_error("SIGHUP: %s: aegisd will not start with this file", err);
    if (d_keep_for_restart("socket_group", keys->socket_group,
                           sizeof(keys->socket_group), d->keys.socket_group,
                           keys->socket_group, d->keys.socket_group))
        keys->socket_group_line = d->keys.socket_group_line;
}

static void on_sighup(uv_signal_t *s, int signum) {
    d_daemon *d = s->data;
    d->gpus_changes++;
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[1024];
    const char *path = d->opt.config_path ? d->opt.config_path
                                          : CONFIG_DEFAULT_PATH;
    if (config_load_daemon(path, !d->opt.config_path, &cfg, &acct, &share,
                           &keys, err, sizeof(err)) != 0 ||
        d_share_check_reload(d, &share, err, sizeof(err)) != 0 ||
        core_reconfigure(d->core, &cfg, err, sizeof(err)) != 0) {
        d_error("SIGHUP: configuration not reloaded: %s", err);
        return;
    }
    d_share_reload(d, &share);
    d->cfg = cfg;
    d->acct = acct;
    d_keys_for_restart(d, &keys, path);
    d->keys = keys; /* the log cap: for attempts started from now on */
    if (!d->opt.config_path && access(path, F_OK) != 0 && errno == ENOENT)
        d_log("SIGHUP: %s is gone: every key is now at its default", path);
    d_log("SIGHUP: reloaded %s", path);
    d_jobs_schedule(d);
}

/* ---- start and stop ------------------------------------------------------ */

/* Makes (where missing) and opens the state folder `name` in the folder
 * `at` (AT_FDCWD for the state folder itself, whose path may be a link
 * the administrator made; logs/ and run/ never are), and checks it is
 * aegisd's own and closed to others: whoever may write in it could plant
 * a link at a log's name, and have aegisd write through it, or swap the
 * database. Returns its descriptor, or -1 with a log line naming path. */
static int d_state_dir(int at, const char *name, const char *path) {
    if (mkdirat(at, name, 0700) != 0 && errno != EEXIST) {
        d_error("%s: %s", path, strerror(errno));
        return -1;
    }
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                                  (at == AT_FDCWD ? 0 : O_NOFOLLOW));
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        d_error("%s: %s", path, strerror(errno));
    } else if (st.st_uid != geteuid()) {
        d_error("%s: owned by uid %d, not by aegisd's uid %d: refused as "
                "aegisd's state (its owner could plant links in it); chown it "
                "or use another --state-dir", path, (int)st.st_uid,
                (int)geteuid());
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        d_error("%s: writable by its group or others (mode %04o): refused as "
                "aegisd's state; chmod go-w it", path,
                (unsigned)(st.st_mode & 07777));
    } else {
        return fd;
    }
    if (fd >= 0) close(fd);
    return -1;
}

/* Opens the state folders: the log folder's descriptor stays open in
 * d->log_dirfd (logs are opened relative to it). 0, or -1. */
static int d_state_dirs(d_daemon *d) {
    int state = d_state_dir(AT_FDCWD, d->opt.state_dir, d->opt.state_dir);
    if (state < 0) return -1;
    int run = d_state_dir(state, "run", d->run_dir);
    d->log_dirfd = run < 0 ? -1 : d_state_dir(state, "logs", d->log_dir);
    if (run >= 0) close(run);
    close(state);
    return d->log_dirfd < 0 ? -1 : 0;
}

/* A new database (none, or an empty file) beside logs of earlier jobs
 * would hand their ids, and so their logs, to new jobs: the database was
 * lost or reset while its logs were kept. Refused: 0 when the database is
 * not new or there are no logs, else -1 with a log line. */
static int d_check_new_db(d_daemon *d, const char *db_path) {
    struct stat st;
    bool missing = stat(db_path, &st) != 0;
    if (missing ? errno != ENOENT : st.st_size > 0) return 0;
    int fd = openat(d->log_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (!dir) {
        d_error("%s: %s", d->log_dir, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(dir)) &&
           (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)) {
    }
    char name[256] = "";
    if (e) snprintf(name, sizeof(name), "%s", e->d_name);
    closedir(dir);
    if (!name[0]) return 0;
    d_error("%s is %s, but %s holds the logs of earlier jobs (%s, ...): a new "
            "database would give their ids, and so their logs, to new jobs. "
            "Restore the database, or move %s away to start afresh", db_path,
            missing ? "missing" : "empty", d->log_dir, name, d->log_dir);
    return -1;
}

/* One daemon per state directory: a lock held for the daemon's life (the
 * kernel drops it when the process dies, even by kill -9). The file holds
 * the daemon's pid, for scripts and tests (its shims share its name). */
static int d_lock(const char *state_dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/aegisd.lock", state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        d_error("%s: %s", path,
                errno == EWOULDBLOCK
                    ? "another aegisd uses this state directory"
                    : strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    /* over the last pid, then cut to length: the file keeps its block,
     * so once it has one a full disk cannot empty it (written after a
     * truncation, the pid needed a block anew) */
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if (pwrite(fd, pid, (size_t)n, 0) != n || ftruncate(fd, n) != 0)
        d_error("%s: cannot record the pid: %s", path, strerror(errno));
    return fd;
}

/* Clears the way to bind the socket path: the lock only says no aegisd
 * uses this state folder, not that none serves this path from another, so
 * a socket file is removed only when nothing answers on it (its daemon
 * died), and anything else there is left alone. */
static int d_socket_free(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        d_error("%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        d_error("%s: exists and is not a socket: left alone; give --socket a "
                "free path", path);
        return -1;
    }
    if (usock_answers(path, SOCK_STREAM)) {
        d_error("%s: another aegisd answers on this socket (or another "
                "server): left alone; stop it first, or give this aegisd "
                "another --socket", path);
        return -1;
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        d_error("%s: stale socket not removed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The socket's folder must exist: aegisd makes none (systemd's
 * RuntimeDirectory does), and libuv's bind reports a missing one as
 * "permission denied". 0, or -1 with a log line naming the folder. */
static int d_socket_folder(const char *path) {
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", path);
    const char *folder = dirname(copy);
    struct stat st;
    if (stat(folder, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    d_error("%s: no such folder %s (make it, or give --socket a path in a "
            "folder that exists)", path, folder);
    return -1;
}

/* Who may connect: anyone (0666; each request is checked against the
 * peer's uid), or with the config's socket_group only root, aegisd's user
 * and that group's members (0660). Logged, as the first thing an admin
 * checks when a user cannot reach aegisd. A group that cannot be given
 * leaves the socket to aegisd's user alone (0600): closed, not open. */
static void d_socket_access(d_daemon *d) {
    const char *path = d->opt.socket_path;
    const char *group = d->keys.socket_group;
    if (!group[0]) {
        chmod(path, 0666);
        d_log("listening on %s (mode 0666: any local user)", path);
        return;
    }
    struct group *gr = getgrnam(group);
    if (!gr || chown(path, (uid_t)-1, gr->gr_gid) != 0 ||
        chmod(path, 0660) != 0) {
        d_error("%s: socket_group %s: %s: only aegisd's user may connect",
                path, group, gr ? strerror(errno) : "no such group");
        chmod(path, 0600);
        return;
    }
    d_log("listening on %s (mode 0660: root, aegisd's user and group %s)",
          path, group);
}

/* Listens on the bound socket through the front, which accepts (front.h):
 * libuv's handle keeps the socket, never watched by the loop. */
static int d_front_open(d_daemon *d) {
    uv_os_fd_t fd;
    char err[256];
    if (uv_fileno((uv_handle_t *)&d->server, &fd) != 0 || listen(fd, 128) != 0) {
        d_error("%s: listen: %s", d->opt.socket_path, strerror(errno));
        return -1;
    }
    uv_async_init(d->loop, &d->handoff, on_handoff);
    d->handoff.data = d;
    uv_prepare_init(d->loop, &d->publish_before);
    d->publish_before.data = d;
    uv_prepare_start(&d->publish_before, on_before_poll);
    uv_check_init(d->loop, &d->publish_after);
    d->publish_after.data = d;
    uv_check_start(&d->publish_after, on_after_poll);
    d->gpus_changes = d->gpus_published + 1; /* the first poll publishes */
    d->front = front_start(fd, d_front_wake, d, err, sizeof(err));
    if (!d->front) {
        d_error("%s: %s", d->opt.socket_path, err);
        return -1;
    }
    int rt = front_realtime_error(d->front);
    if (rt == 0)
        d_log("CPU: `gpus` is answered ahead of the jobs (SCHED_FIFO, for a "
              "fifth of a CPU at most)");
    else
        d_log("CPU: `gpus` is answered at aegisd's priority: SCHED_FIFO: %s",
              strerror(rt));
    d_socket_access(d);
    return 0;
}

static int d_listen(d_daemon *d) {
    uv_pipe_init(d->loop, &d->server, 0);
    d->server.data = d;
    if (d_socket_folder(d->opt.socket_path) != 0 ||
        d_socket_free(d->opt.socket_path) != 0)
        return -1;
    /* made closed when a group is to be given it, so that no other user
     * connects before it is; else anyone may (requests check the peer) */
    mode_t old = umask(d->keys.socket_group[0] ? 0177 : 0);
    int rc = uv_pipe_bind(&d->server, d->opt.socket_path);
    umask(old);
    if (rc != 0) {
        d_error("%s: %s", d->opt.socket_path, uv_strerror(rc));
        return rc;
    }
    return d_front_open(d);
}

/* The CPUs aegisd may run on, and so its jobs (a cpuset or CPUAffinity
 * narrows them below the machine's online ones); the online count where
 * the affinity cannot be read. */
static long d_cpus_allowed(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

static int d_open(d_daemon *d) {
    char err[4096], path[4200]; /* err: every problem of the config */
    const char *cfg_path = d->opt.config_path ? d->opt.config_path
                                              : CONFIG_DEFAULT_PATH;
    if (exec_shim_path(d->shim_path, sizeof(d->shim_path), err,
                       sizeof(err)) != 0) {
        d_error("%s", err);
        return -1;
    }
    bool bad = config_load_daemon(cfg_path, !d->opt.config_path, &d->cfg,
                                  &d->acct, &d->share, &d->keys, err,
                                  sizeof(err)) != 0;
    if (bad) d_error("%s", err);
    /* every problem at once: the group too, where the rest is bad */
    if (config_group_check(cfg_path, &d->keys, err, sizeof(err)) != 0) {
        d_error("%s", err);
        bad = true;
    }
    if (bad) return -1;
    d->tel = tel_open(d->opt.nvml_path, err, sizeof(err));
    if (!d->tel) {
        d_error("no GPU telemetry: %s (aegisd needs NVML: the driver's "
                "libnvidia-ml.so.1, or a test library given with "
                "--nvml-library)", err);
        return -1;
    }
    d_log("NVML: %d GPUs, driver %s", tel_gpu_count(d->tel),
          tel_driver_version(d->tel));
    for (int g = 0; g < tel_gpu_count(d->tel) && g < CORE_MAX_GPUS; g++)
        d_log("GPU %d: %s, %s", g, tel_gpu_name(d->tel, g),
              tel_gpu_uuid(d->tel, g));
    if (tel_open_dcgm(d->tel, d->opt.dcgm_path, err, sizeof(err)) == 0)
        d_log("DCGM: SMACT/SMOCC/DRAMA pressure filter");
    else
        d_log("no DCGM: utilization-only pressure filter (%s)", err);
    d->ngpus = tel_gpu_count(d->tel);
    if (d->ngpus < 1 || d->ngpus > CORE_MAX_GPUS) {
        d_error("NVML reports %d GPUs; aegisd manages 1 to %d", d->ngpus,
                CORE_MAX_GPUS);
        return -1;
    }
    double total[CORE_MAX_GPUS];
    for (int g = 0; g < d->ngpus; g++) {
        if (tel_read(d->tel, g, &d->gpus[g].last, err, sizeof(err)) != 0) {
            d_error("GPU %d: %s", g, err);
            return -1;
        }
        d->gpus[g].ok = true;
        d->gpus[g].energy_seen_j = d->gpus[g].last.energy_j;
        d->gpus[g].energy_seen_at = d_now(d);
        total[g] = d->gpus[g].last.r.total_mib;
    }
    d->core = core_create(&d->cfg, d->ngpus, total, err, sizeof(err));
    if (!d->core) {
        d_error("%s: %s", cfg_path, err);
        return -1;
    }
    /* the CPUs the jobs' cgroups share (aegis-plus counts them) */
    long cpus = d_cpus_allowed();
    if (core_set_cpus(d->core, cpus > 0 ? (double)cpus : 0, err,
                      sizeof(err)) != 0) {
        d_error("%s", err);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/aegis.db", d->opt.state_dir);
    if (d_check_new_db(d, path) != 0) return -1;
    d->st = store_open(path, err, sizeof(err));
    if (!d->st) {
        d_error("%s", err);
        return -1;
    }
    return d_share_open(d); /* after the store: it knows aegisd's MIG
                               instances */
}

/* aegisd's nice value (aegisd.service: Nice=-5) for its whole session
 * against its jobs' (autogroup.h), said in the log either way. */
static void d_session_priority(void) {
    int nice_value;
    int rc = autogroup_nice_as_process(&nice_value);
    if (rc == 0)
        d_log("CPU: aegisd's session weighs as nice %d against each job's "
              "(autogroup)", nice_value);
    else if (rc < 0)
        d_log("CPU: aegisd runs at nice %d, but its session weighs as each "
              "job's: /proc/self/autogroup: %s", nice_value, strerror(errno));
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

/* In the background: STATE_DIR/aegisd.log, opened as soon as the state
 * folder is known good. Until aegisd listens, its lines go both there and
 * to the terminal that started it (which sees why a start failed); -1
 * when it cannot be opened. */
static int d_log_open(const char *state_dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/aegisd.log", state_dir);
    int log = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    dlog_copy_to(log);
    return log;
}

/* From the moment the parent has exited: stdin from /dev/null, stdout and
 * stderr to the log (log, from d_log_open, is closed). */
static void d_log_to_file(int log) {
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, 0), close(in);
    if (log >= 0) dup2(log, 1), dup2(log, 2), close(log);
    dlog_copy_to(-1);
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
    /* off the list first: the last turns may still end a job (a watcher's
     * spawn reported after its end, d_job_spawned), and its `aegis wait`
     * clients were then looked for in freed connections (ASan:
     * heap-use-after-free in d_waiters_job_done after a SIGTERM) */
    if (conn) d_conn_unlink(h->data);
    uv_close(h, conn ? on_conn_closed : NULL);
}

static void d_free(d_daemon *d) {
    if (d->tel) d_share_close(d);
    for (size_t i = 0; i < d->njobs; i++) {
        free(d->jobs[i]->cg); /* its folders stay for the next aegisd */
        free(d->jobs[i]);
    }
    free(d->jobs);
    free(d->running);
    free(d->unsaved);
    free(d->settled);
    free(d->ended);
    d_cancels_free(d);
    free(d->notifiers); /* those running finish on their own */
    free(d->notices);
    metrics_counts_free(&d->counts);
    if (d->core) core_destroy(d->core);
    if (d->st) d_wal_close(d);
    store_close(d->st);
    if (d->tel) tel_close(d->tel);
}

int d_run(const d_options *opt) {
    static d_daemon daemon; /* the one instance; signals find it via data */
    d_daemon *d = &daemon;
    d->opt = *opt;
    d->as_root = geteuid() == 0;
    d->wal.fd = -1;
    snprintf(d->log_dir, sizeof(d->log_dir), "%s/logs", opt->state_dir);
    snprintf(d->run_dir, sizeof(d->run_dir), "%s/run", opt->state_dir);
    int ready_fd = -1, log_fd = -1;
    dlog_setup(opt->log_format);
    if (d_state_dirs(d) != 0) return 1;
    if (!opt->foreground && d_daemonize(&ready_fd) != 0) {
        d_error("cannot start in the background: %s", strerror(errno));
        return 1;
    }
    if (!opt->foreground) log_fd = d_log_open(opt->state_dir);
    int lock = d_lock(opt->state_dir);
    d->loop = uv_default_loop();
    d->t0 = (double)uv_hrtime() / 1e9;
    metrics_counts_init(&d->counts);
    d_handlers_register(d);
    uv_idle_init(d->loop, &d->wake);
    d->wake.data = d;
    uv_check_init(d->loop, &d->reap);
    d->reap.data = d;
    uv_idle_init(d->loop, &d->more);
    d->more.data = d;
    /* A client that hangs up before its answer is written is an EPIPE to
     * handle, not a signal that ends aegisd (jobs get SIG_DFL back). */
    signal(SIGPIPE, SIG_IGN);
    int rc = 1;
    if (lock < 0 || d_open(d) != 0) goto out;
    exec_spares_clear(d->run_dir); /* this aegisd's alone now: the lock */
    d_session_priority();
    /* Before anything that starts a child: recovery runs scontrol, and a
     * child that ends while SIGCHLD has no handler is never reaped (the
     * signal is lost), so its run would wait for a timeout. */
    d_signals(d);
    d_drains_recover(d);
    d_jobs_recover(d);
    if (d_listen(d) != 0) goto out;
    /* a metrics address that cannot be bound is logged; the jobs matter
     * more than their monitoring */
    d_metrics_open(d);
    uv_timer_init(d->loop, &d->tick);
    d->tick.data = d;
    uv_timer_start(&d->tick, on_tick, 1000, 1000);
    char status[4400];
    snprintf(status, sizeof(status), "serving %s: %d GPUs, policy %s, "
             "state in %s", opt->socket_path, d->ngpus, d->cfg.policy,
             opt->state_dir);
    d_log("%s", status);
    d_ready_notify(status);
    if (ready_fd >= 0) {
        char ok = 1;
        if (write(ready_fd, &ok, 1) != 1) goto out;
        close(ready_fd);
        ready_fd = -1;
        d_log_to_file(log_fd);
        log_fd = -1;
        dlog_setup(opt->log_format);
    }
    d_jobs_schedule(d);
    uv_run(d->loop, UV_RUN_DEFAULT);
    rc = 0;
    d_log("stopped");
out:
    front_stop(d->front);
    d->front = NULL;
    d_metrics_close(d);
    d_scontrol_close(d);
    d_leases_close(d);
    uv_walk(d->loop, on_walk_close, &d->server);
    uv_run(d->loop, UV_RUN_DEFAULT);
    uv_loop_close(d->loop);
    d_free(d);
    if (lock >= 0) close(lock);
    if (log_fd >= 0) close(log_fd);
    close(d->log_dirfd);
    return rc;
}
