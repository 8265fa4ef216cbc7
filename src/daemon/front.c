/* front.c -- the thread that answers `gpus` apart from the loop (front.h).
 *
 * One poll() loop over a stop pipe, the listening socket and the
 * connections it holds. A held connection is looked at (MSG_PEEK) when it
 * becomes readable and when its wait ends; it leaves the front closed (its
 * client left), answered and then closed or handed over, or handed over at
 * once. Nothing of a connection is ever read but the `gpus` lines the
 * front answers, so a connection handed over is, to the loop, one it could
 * have accepted itself.
 */
#include "front.h"

#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bytes of a connection looked at for its first line: a `gpus` request is
 * a few dozen; a longer line is not one, and goes to the loop. */
#define FRONT_PEEK 512

/* How long the front stops accepting when it is out of descriptors: the
 * listening socket stays readable, and polling it would spin. */
#define FRONT_FULL_MS 100

/* How often a connection waiting for a full queue is offered again. */
#define FRONT_RETRY_MS 10

typedef struct held {
    int fd;
    uint64_t until_ms;  /* its wait for a line ends */
    bool handing;       /* to be handed over; the queue was full */
} held;

struct d_front {
    pthread_t thread;
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

/* Queues fd for the loop: false when the queue is full. */
static bool hand_over(d_front *f, int fd) {
    pthread_mutex_lock(&f->lock);
    bool room = f->nqueue < FRONT_QUEUE;
    if (room) f->queue[f->nqueue++] = fd;
    pthread_mutex_unlock(&f->lock);
    if (room) f->wake(f->arg);
    return room;
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
 * writes the answer, whole: a client that leaves it unread past a socket
 * buffer (hundreds of KB, against a few KB an answer) is dropped. */
static held_next answer(d_front *f, int fd, size_t line_len, size_t reply_len) {
    char sink[FRONT_PEEK];
    if (recv(fd, sink, line_len, MSG_DONTWAIT) != (ssize_t)line_len)
        return HELD_GONE;
    ssize_t sent = send(fd, f->reply, reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    return sent == (ssize_t)reply_len ? HELD_KEEP : HELD_GONE;
}

/* What becomes of a held connection, looked at `now`. */
static held_next look(d_front *f, held *h, uint64_t now) {
    char buf[FRONT_PEEK];
    ssize_t n = recv(h->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    bool late = now >= h->until_ms;
    if (n == 0) return HELD_GONE;
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? (late ? HELD_HAND : HELD_KEEP)
                                                 : HELD_GONE;
    const char *nl = memchr(buf, '\n', (size_t)n);
    if (!nl) return late || n == (ssize_t)sizeof(buf) ? HELD_HAND : HELD_KEEP;
    size_t line_len = (size_t)(nl - buf) + 1;
    if (!is_gpus_request(buf, line_len - 1)) return HELD_HAND;
    size_t reply_len = copy_answer(f);
    if (reply_len == 0) return HELD_HAND;
    held_next next = answer(f, h->fd, line_len, reply_len);
    h->until_ms = now + FRONT_WAIT_MS; /* a next line, or the hang-up */
    return next;
}

/* Acts on a held connection's fate; false when it left the front. */
static bool settle(d_front *f, held *h, held_next next) {
    if (next == HELD_KEEP) return true;
    if (next == HELD_GONE) {
        close(h->fd);
        return false;
    }
    h->handing = !hand_over(f, h->fd);
    return h->handing;
}

static void drop_held(d_front *f, int i) {
    f->held[i] = f->held[--f->nheld];
}

/* ---- accepting --------------------------------------------------------- */

static void accept_some(d_front *f, uint64_t now) {
    while (f->nheld < FRONT_PENDING) {
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM)
                f->paused_until_ms = now + FRONT_FULL_MS;
            return;
        }
        held *h = &f->held[f->nheld++];
        *h = (held){.fd = fd, .until_ms = now + FRONT_WAIT_MS};
        /* the client writes its request right after connecting: most
         * often it is there already */
        if (!settle(f, h, look(f, h, now))) drop_held(f, f->nheld - 1);
    }
}

/* ---- the thread -------------------------------------------------------- */

/* Fills pfd (the stop pipe, the listening socket where it may accept, then
 * the held connections not waiting for the queue) and the poll timeout. */
static int poll_set(d_front *f, struct pollfd *pfd, int *nfds, uint64_t now) {
    int n = 0, timeout = -1;
    pfd[n++] = (struct pollfd){.fd = f->stop[0], .events = POLLIN};
    bool may_accept = f->nheld < FRONT_PENDING && now >= f->paused_until_ms;
    pfd[n++] = (struct pollfd){.fd = may_accept ? f->listen_fd : -1,
                               .events = POLLIN};
    if (now < f->paused_until_ms) timeout = (int)(f->paused_until_ms - now);
    for (int i = 0; i < f->nheld; i++) {
        const held *h = &f->held[i];
        int wait = h->handing ? FRONT_RETRY_MS
                   : h->until_ms > now ? (int)(h->until_ms - now) : 0;
        if (timeout < 0 || wait < timeout) timeout = wait;
        pfd[n++] = (struct pollfd){.fd = h->handing ? -1 : h->fd,
                                   .events = POLLIN};
    }
    *nfds = n;
    return timeout;
}

/* Looks again at each held connection that became readable or whose wait
 * ended, and offers again those waiting for the queue. pfd[2 + i] was
 * held[i]'s, in the order poll_set() left them. */
static void serve_held(d_front *f, const struct pollfd *pfd, uint64_t now) {
    int n = f->nheld;
    held before[FRONT_PENDING];
    memcpy(before, f->held, (size_t)n * sizeof(*before));
    f->nheld = 0;
    for (int i = 0; i < n; i++) {
        held h = before[i];
        bool keep;
        if (h.handing) keep = settle(f, &h, HELD_HAND);
        else if (pfd[2 + i].revents || now >= h.until_ms)
            keep = settle(f, &h, look(f, &h, now));
        else keep = true;
        if (keep) f->held[f->nheld++] = h;
    }
}

static void *front_main(void *arg) {
    d_front *f = arg;
    struct pollfd pfd[2 + FRONT_PENDING];
    for (;;) {
        int nfds;
        int timeout = poll_set(f, pfd, &nfds, now_ms());
        if (poll(pfd, (nfds_t)nfds, timeout) < 0 && errno != EINTR) break;
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
        rc = pthread_create(&f->thread, NULL, front_main, f);
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
