/* front.h -- answers `aegis gpus` while aegisd's event loop is busy.
 *
 * Every request waits for the loop turn under way to end. On a busy server
 * a turn is long: while short jobs churn, the jobs' own processes keep the
 * CPUs busy and the loop waits for one (tens of milliseconds a turn); an
 * NVML call that blocks while a GPU recovers blocks the whole loop. Root's
 * `aegis gpus` is what an administrator runs to see why, so it should not
 * wait for either.
 *
 * The front is a thread that owns aegisd's listening socket. It accepts
 * each connection and looks at its first request line without reading it
 * (MSG_PEEK). A `gpus` request it answers itself, from the copy of the
 * answer the loop last published, and then looks at the next line. Any
 * other request, a line not whole, a connection still open FRONT_WAIT_MS
 * after its accept, and every `gpus` request while the copy is stale, go
 * to the loop: the connection is handed over as it came, its unanswered
 * bytes still unread, and the loop serves it as any other.
 *
 * The loop marks the copy stale when it answers a client while the turn
 * has changes the copy lacks, and publishes a fresh copy after the turn:
 * a client that was told of a change (a submit, a drain) and then asks
 * `gpus` is answered after that change, by one or the other. While the
 * loop is still at a request (a submit of thousands of jobs), the copy is
 * what every client can know, and `gpus` is answered from it.
 *
 * Threads: front_start() and front_stop() are the loop's; front_take(),
 * front_publish() and front_stale() may be called by the loop while the
 * front runs (they take the front's lock). `wake` is called on the front's
 * thread and must be safe there (uv_async_send is).
 */
#ifndef AEGIS_FRONT_H
#define AEGIS_FRONT_H

#include <stdbool.h>
#include <stddef.h>

/* How long a connection stays in the front from its accept, answered or
 * not, before it is handed to the loop. */
#define FRONT_WAIT_MS 200

/* Connections the front holds at once; past them it accepts no more until
 * some leave, and the kernel's backlog holds the rest (front.c says what
 * one user may hold). */
#define FRONT_PENDING 64

/* Connections handed over and not yet taken by the loop, at most; past
 * them a client is told that aegisd is busy. */
#define FRONT_QUEUE 256

typedef struct d_front d_front;

typedef void (*front_wake_fn)(void *arg);

/* Starts the front on a listening socket (made non-blocking here); `wake`
 * tells the loop that connections wait for front_take(). NULL with a
 * message in err when the thread cannot start. */
d_front *front_start(int listen_fd, front_wake_fn wake, void *arg, char *err,
                     size_t errlen);

/* 0 where the front's thread runs ahead of the jobs, within a budget of
 * CPU (cpu_budget.h), else why not (an errno: EPERM without the right). */
int front_realtime_error(const d_front *f);

/* Up to max connections handed over, into fds; returns how many. */
int front_take(d_front *f, int *fds, int max);

/* The `gpus` answer, one line ending in '\n', copied; the copy is fresh. */
void front_publish(d_front *f, const char *line, size_t len);

/* The loop tells a client of a change the copy lacks: until the next
 * front_publish(), `gpus` requests go to the loop. */
void front_stale(d_front *f);

/* Stops the thread and closes every connection it holds, handed over and
 * not yet taken too; the listening socket is the caller's. NULL is a
 * no-op. */
void front_stop(d_front *f);

#endif
