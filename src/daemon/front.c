/* front.c -- the thread that answers `gpus` apart from the loop (front.h).
 *
 * One poll() loop over a stop pipe, the listening socket and the
 * connections it holds. A held connection is looked at (MSG_PEEK) when it
 * becomes readable, FRONT_ANSWERED_MS after an answer, and when its time
 * in the front ends; it leaves the front closed (its client left), or
 * handed over. Nothing of a connection is ever read but the `gpus` lines
 * the front answers, so a connection handed over is, to the loop, one it
 * could have accepted itself.
 *
 * What one user cannot do to the others: a connection stays in the front
 * FRONT_WAIT_MS from its accept at most, whatever it sends; a user holds
 * at most FRONT_PER_USER of the front's places and only root the last
 * FRONT_ROOT_PLACES, the rest going straight to the loop, which has its
 * own limits per user; a line not whole is looked at again every
 * FRONT_RECHECK_MS, never spun on.
 * When the loop takes no connections (held in an NVML call), the front
 * still answers `gpus` and tells every other client that aegisd is busy
 * once its queue is full.
 */
#include "front.h"

#include "cpu_budget.h"
#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bytes of a connection looked at for its first line: a `gpus` request is
 * a few dozen; a longer line is not one, and goes to the loop. */
#define FRONT_PEEK 512

/* Connections accepted a turn at most: a turn's work is bounded, so its
 * CPU budget (cpu_budget.h), checked between turns, holds whatever the
 * clients do; the rest wait in the backlog for the next turn. */
#define FRONT_ACCEPTS FRONT_PENDING

/* How long the front stops accepting when it is out of descriptors: the
 * listening socket stays readable, and polling it would spin. */
#define FRONT_FULL_MS 100

/* Places of the front one user (root aside) may hold, and the places
 * only root's connections take. */
#define FRONT_PER_USER 16
#define FRONT_ROOT_PLACES 8

/* The answer to a connection the loop cannot take now. */
static const char busy_line[] =
    "{\"ok\":false,\"error\":\"server busy: aegisd is taking no "
    "connections now (its loop is held); try again\",\"server_error\":true}\n";

/* How soon a line not yet whole is looked at again, not woken for:
 * clients write a request and its newline apart (the aegis command does),
 * and its bytes stay readable, so poll() would wake again at once. */
#define FRONT_RECHECK_MS 2

/* How soon an answered connection is looked at again (look()): what a
 * client that asks again on its connection waits for at most. */
#define FRONT_ANSWERED_MS 1

typedef struct held {
    int fd;
    uid_t uid;
    uint64_t until_ms;  /* its time in the front ends */
    uint64_t again_ms;  /* a line not whole, or one just answered: looked
                           at again then, not when readable; 0: when
                           readable */
} held;

struct d_front {
    pthread_t thread;
    sem_t started;              /* posted once realtime_error is set */
    int realtime_error;         /* 0: the thread runs ahead of the jobs
                                   (cpu_budget.h); else why not */
    int listen_fd;
    int stop[2];                /* a pipe: a byte in stop[1] ends the thread */
    front_wake_fn wake;
    void *arg;
    uint64_t paused_until_ms;   /* out of descriptors: no accept before */
    held held[FRONT_PENDING];   /* the thread's own */
    int nheld;
    char *reply;                /* the thread's copy of the answer */
    size_t reply_cap;
    pthread_mutex_t lock;       /* guards what follows */
    char *answer;               /* the published answer line */
    size_t answer_len;
    bool stale;
    int queue[FRONT_QUEUE];     /* handed over, not yet taken */
    int nqueue;
};

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the loop's side --------------------------------------------------- */

int front_take(d_front *f, int *fds, int max) {
    pthread_mutex_lock(&f->lock);
    int n = f->nqueue < max ? f->nqueue : max;
    memcpy(fds, f->queue, (size_t)n * sizeof(*fds));
    memmove(f->queue, f->queue + n, (size_t)(f->nqueue - n) * sizeof(*fds));
    f->nqueue -= n;
    pthread_mutex_unlock(&f->lock);
    return n;
}

void front_publish(d_front *f, const char *line, size_t len) {
    char *copy = malloc(len);
    if (copy) memcpy(copy, line, len);
    pthread_mutex_lock(&f->lock);
    free(f->answer);
    f->answer = copy;
    f->answer_len = copy ? len : 0;
    f->stale = !copy;
    pthread_mutex_unlock(&f->lock);
}

void front_stale(d_front *f) {
    pthread_mutex_lock(&f->lock);
    f->stale = true;
    pthread_mutex_unlock(&f->lock);
}

/* ---- handing over ------------------------------------------------------ */

/* Queues fd for the loop; when the queue is full, tells the client aegisd
 * is busy and closes it. */
static void hand_over(d_front *f, int fd) {
    pthread_mutex_lock(&f->lock);
    bool room = f->nqueue < FRONT_QUEUE;
    if (room) f->queue[f->nqueue++] = fd;
    pthread_mutex_unlock(&f->lock);
    if (room) {
        f->wake(f->arg);
        return;
    }
    (void)!send(fd, busy_line, sizeof(busy_line) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    close(fd);
}

/* ---- answering --------------------------------------------------------- */

static bool is_gpus_request(const char *line, size_t len) {
    proto_request req;
    char err[256];
    bool gpus = proto_parse(line, len, &req, err, sizeof(err)) == 0 &&
                req.op == PROTO_GPUS;
    proto_request_free(&req);
    return gpus;
}

/* The published answer into f->reply; its length, 0 when the answer is
 * stale or none was published yet. */
static size_t copy_answer(d_front *f) {
    pthread_mutex_lock(&f->lock);
    size_t n = f->stale ? 0 : f->answer_len;
    if (n > f->reply_cap) {
        char *more = realloc(f->reply, n);
        if (more) {
            f->reply = more;
            f->reply_cap = n;
        } else {
            n = 0;
        }
    }
    if (n > 0) memcpy(f->reply, f->answer, n);
    pthread_mutex_unlock(&f->lock);
    return n;
}

typedef enum { HELD_KEEP, HELD_GONE, HELD_HAND } held_next;

/* Reads the `gpus` line of `line_len` bytes (peeked, so all there) and
 * writes the answer, whole: a client that leaves its answers unread past
 * a socket buffer (hundreds of KB, against a few KB an answer) is
 * dropped, its last answer cut short. */
static held_next answer(d_front *f, int fd, size_t line_len, size_t reply_len) {
    char sink[FRONT_PEEK];
    if (recv(fd, sink, line_len, MSG_DONTWAIT) != (ssize_t)line_len)
        return HELD_GONE;
    ssize_t sent = send(fd, f->reply, reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    return sent == (ssize_t)reply_len ? HELD_KEEP : HELD_GONE;
}

/* What becomes of a held connection, looked at `now`: its `gpus` lines
 * answered while the copy is fresh and its time in the front lasts, the
 * rest (another request, a line not whole, bytes after the line, a line
 * past its time) the loop's.
 * An answered connection is looked at again FRONT_ANSWERED_MS later, not
 * when it becomes readable: a client's next event is most often its close,
 * right after it reads the answer, and the front, woken then ahead of it
 * (real-time class), would take its CPU from it, which aegisd's busier
 * threads could then keep (up to 1 ms, in the churn benchmark). Found
 * silent then, it is woken for again. */
static held_next look(d_front *f, held *h, uint64_t now) {
    char buf[FRONT_PEEK];
    ssize_t n = recv(h->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    h->again_ms = 0;
    if (n == 0) return HELD_GONE;
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) return HELD_GONE;
        return now >= h->until_ms ? HELD_HAND : HELD_KEEP;
    }
    const char *nl = memchr(buf, '\n', (size_t)n);
    if (!nl) {
        if (now >= h->until_ms || n == (ssize_t)sizeof(buf)) return HELD_HAND;
        h->again_ms = now + FRONT_RECHECK_MS;
        return HELD_KEEP;
    }
    size_t line_len = (size_t)(nl - buf) + 1;
    if (now >= h->until_ms || !is_gpus_request(buf, line_len - 1))
        return HELD_HAND;
    size_t reply_len = copy_answer(f);
    if (reply_len == 0) return HELD_HAND;
    held_next next = answer(f, h->fd, line_len, reply_len);
    if (next == HELD_KEEP && (size_t)n > line_len) return HELD_HAND;
    if (next == HELD_KEEP) h->again_ms = now + FRONT_ANSWERED_MS;
    return next;
}

/* Acts on a held connection's fate; false when it left the front. */
static bool settle(d_front *f, const held *h, held_next next) {
    if (next == HELD_KEEP) return true;
    if (next == HELD_GONE) close(h->fd);
    else hand_over(f, h->fd);
    return false;
}

static void drop_held(d_front *f, int i) {
    f->held[i] = f->held[--f->nheld];
}

/* ---- accepting --------------------------------------------------------- */

static int held_by(const d_front *f, uid_t uid) {
    int n = 0;
    for (int i = 0; i < f->nheld; i++) n += f->held[i].uid == uid;
    return n;
}

/* Whether a new connection of uid may take a place in the front. */
static bool may_hold(const d_front *f, uid_t uid) {
    if (uid == 0) return true;
    return f->nheld < FRONT_PENDING - FRONT_ROOT_PLACES &&
           held_by(f, uid) < FRONT_PER_USER;
}

/* Accepts what the backlog holds while the front has places, FRONT_ACCEPTS
 * at most. An error other than a client gone or a signal pauses
 * accepting: the socket stays readable, and polling it again at once
 * would spin. */
static void accept_some(d_front *f, uint64_t now) {
    for (int n = 0; n < FRONT_ACCEPTS && f->nheld < FRONT_PENDING; n++) {
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == ECONNABORTED || errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                f->paused_until_ms = now + FRONT_FULL_MS;
            return;
        }
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
            !may_hold(f, cred.uid)) {
            hand_over(f, fd); /* the loop's limits say what it gets */
            continue;
        }
        held *h = &f->held[f->nheld++];
        *h = (held){.fd = fd, .uid = cred.uid, .until_ms = now + FRONT_WAIT_MS};
        /* the client writes its request right after connecting: most
         * often it is there already */
        if (!settle(f, h, look(f, h, now))) drop_held(f, f->nheld - 1);
    }
}

/* ---- the thread -------------------------------------------------------- */

/* Fills pfd (the stop pipe, the listening socket where it may accept, then
 * the held connections) and the poll timeout. */
static int poll_set(d_front *f, struct pollfd *pfd, int *nfds, uint64_t now) {
    int n = 0, timeout = -1;
    pfd[n++] = (struct pollfd){.fd = f->stop[0], .events = POLLIN};
    bool may_accept = f->nheld < FRONT_PENDING && now >= f->paused_until_ms;
    pfd[n++] = (struct pollfd){.fd = may_accept ? f->listen_fd : -1,
                               .events = POLLIN};
    if (now < f->paused_until_ms) timeout = (int)(f->paused_until_ms - now);
    for (int i = 0; i < f->nheld; i++) {
        const held *h = &f->held[i];
        uint64_t next = h->again_ms ? h->again_ms : h->until_ms;
        int wait = next > now ? (int)(next - now) : 0;
        if (timeout < 0 || wait < timeout) timeout = wait;
        pfd[n++] = (struct pollfd){.fd = h->again_ms ? -1 : h->fd,
                                   .events = POLLIN};
    }
    *nfds = n;
    return timeout;
}

/* Whether a held connection is to be looked at again: it became
 * readable, its time ended, or its line not yet whole is due a look. */
static bool due(const held *h, const struct pollfd *p, uint64_t now) {
    return p->revents || now >= h->until_ms ||
           (h->again_ms && now >= h->again_ms);
}

/* Looks again at each held connection that is due. pfd[2 + i] was
 * held[i]'s, in the order poll_set() left them. */
static void serve_held(d_front *f, const struct pollfd *pfd, uint64_t now) {
    int n = f->nheld;
    held before[FRONT_PENDING];
    memcpy(before, f->held, (size_t)n * sizeof(*before));
    f->nheld = 0;
    for (int i = 0; i < n; i++) {
        held h = before[i];
        bool keep = !due(&h, &pfd[2 + i], now) || settle(f, &h, look(f, &h, now));
        if (keep) f->held[f->nheld++] = h;
    }
}

/* The front runs in the real-time class where aegisd may (cpu_budget.h),
 * kept to FRONT_BUDGET_NS of CPU in each FRONT_WINDOW_NS: a fifth of one
 * CPU, against some 50 us a `gpus` answer. While jobs keep every CPU busy,
 * a thread of the ordinary class waits for a CPU after each wake-up,
 * behind aegisd's other threads too (their time counts against its
 * session), and the answer with it: in a churn of `true` jobs whose
 * sessions weigh as job_session_nice, 6 to 8 times its idle p99, against
 * 1.5 to 4.6 times ahead of them (docs/benchmarks.md). */
#define FRONT_BUDGET_NS 20000000ULL
#define FRONT_WINDOW_NS 100000000ULL

static void *front_main(void *arg) {
    d_front *f = arg;
    cpu_budget budget;
    f->realtime_error = cpu_budget_take(&budget, FRONT_BUDGET_NS,
                                        FRONT_WINDOW_NS);
    sem_post(&f->started); /* front_start() reads realtime_error now */
    struct pollfd pfd[2 + FRONT_PENDING];
    const struct timespec pause = {.tv_nsec = FRONT_FULL_MS * 1000000L};
    for (;;) {
        int nfds;
        int timeout = poll_set(f, pfd, &nfds, now_ms());
        if (f->realtime_error == 0) {
            cpu_budget_check(&budget);
            int back = cpu_budget_wait_ms(&budget);
            if (back >= 0 && (timeout < 0 || back < timeout)) timeout = back;
        }
        if (poll(pfd, (nfds_t)nfds, timeout) < 0) {
            /* out of memory for the poll, say: the front must not end,
             * or nothing accepts */
            if (errno != EINTR) nanosleep(&pause, NULL);
            continue;
        }
        if (pfd[0].revents) break;
        uint64_t now = now_ms();
        serve_held(f, pfd, now);
        if (pfd[1].revents) accept_some(f, now);
    }
    return NULL;
}

d_front *front_start(int listen_fd, front_wake_fn wake, void *arg, char *err,
                     size_t errlen) {
    d_front *f = calloc(1, sizeof(*f));
    if (!f) {
        snprintf(err, errlen, "front: out of memory");
        return NULL;
    }
    *f = (d_front){.listen_fd = listen_fd, .wake = wake, .arg = arg,
                   .stale = true};
    int flags = fcntl(listen_fd, F_GETFL);
    int rc = flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
                     pipe2(f->stop, O_CLOEXEC) < 0
                 ? errno
                 : 0;
    if (rc == 0) {
        pthread_mutex_init(&f->lock, NULL);
        /* the loop's signals are the loop's: the thread starts with all
         * of them blocked */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        sem_init(&f->started, 0, 0);
        rc = pthread_create(&f->thread, NULL, front_main, f);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc == 0)
            while (sem_wait(&f->started) != 0) continue; /* EINTR */
        sem_destroy(&f->started);
        if (rc != 0) {
            pthread_mutex_destroy(&f->lock);
            close(f->stop[0]);
            close(f->stop[1]);
        }
    }
    if (rc != 0) {
        snprintf(err, errlen, "front: cannot start its thread: %s",
                 strerror(rc));
        free(f);
        return NULL;
    }
    return f;
}

int front_realtime_error(const d_front *f) { return f->realtime_error; }

void front_stop(d_front *f) {
    if (!f) return;
    char byte = 0;
    while (write(f->stop[1], &byte, 1) < 0 && errno == EINTR) continue;
    pthread_join(f->thread, NULL);
    for (int i = 0; i < f->nheld; i++) close(f->held[i].fd);
    for (int i = 0; i < f->nqueue; i++) close(f->queue[i]);
    close(f->stop[0]);
    close(f->stop[1]);
    pthread_mutex_destroy(&f->lock);
    free(f->answer);
    free(f->reply);
    free(f);
}
