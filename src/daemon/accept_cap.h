/* accept_cap.h -- accepting a listening libuv stream's connections a few
 * at a time.
 *
 * When its listening socket is readable, libuv calls the connection
 * callback again and again until the kernel's backlog is empty, as long
 * as the callback accepts. A flood that keeps refilling the backlog would
 * keep the loop there, away from everything else it serves. An
 * accept_cap takes at most `per_turn` connections in a loop turn's I/O:
 * past that it leaves the next one unaccepted, which makes libuv stop
 * watching the socket. After the turn's I/O (a check handle) the count
 * starts over and that connection is taken, which makes libuv watch the
 * socket again.
 */
#ifndef AEGIS_ACCEPT_CAP_H
#define AEGIS_ACCEPT_CAP_H

#include <stdbool.h>
#include <uv.h>

typedef struct accept_cap {
    uv_check_t turn_end; /* active while a count or a connection waits */
    bool (*take)(void *owner); /* accepts the connection libuv holds;
                                  false when it cannot now (out of memory):
                                  it is offered again at the end of the next
                                  turn, which some other event of the loop
                                  (aegisd's tick) must bring */
    void *owner;
    int per_turn;        /* connections taken in one turn's I/O at most */
    int taken;           /* in this turn's */
    bool deferred;       /* libuv holds one not yet taken */
} accept_cap;

void accept_cap_init(accept_cap *a, uv_loop_t *loop, int per_turn,
                     bool (*take)(void *owner), void *owner);
/* From the stream's connection callback (status 0): the connection is
 * taken now, or after this turn's I/O. */
void accept_cap_offer(accept_cap *a);
/* Closes its handle; cb gets the handle, whose data is a. */
void accept_cap_close(accept_cap *a, uv_close_cb cb);

#endif
