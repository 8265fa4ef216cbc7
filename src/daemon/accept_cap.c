/* accept_cap.c -- a listening stream's connections, a few a loop turn
 * (accept_cap.h says why). */
#include "accept_cap.h"

/* After the turn's I/O: a new count, and the connection left waiting. */
static void on_turn_end(uv_check_t *h) {
    accept_cap *a = h->data;
    a->taken = 0;
    uv_check_stop(h);
    if (!a->deferred) return;
    a->deferred = false;
    accept_cap_offer(a);
}

void accept_cap_init(accept_cap *a, uv_loop_t *loop, int per_turn,
                     bool (*take)(void *owner), void *owner) {
    *a = (accept_cap){.take = take, .owner = owner, .per_turn = per_turn};
    uv_check_init(loop, &a->turn_end);
    a->turn_end.data = a;
}

void accept_cap_offer(accept_cap *a) {
    if (a->taken < a->per_turn && a->take(a->owner)) a->taken++;
    else a->deferred = true;
    uv_check_start(&a->turn_end, on_turn_end); /* no-op when started */
}

void accept_cap_close(accept_cap *a, uv_close_cb cb) {
    uv_close((uv_handle_t *)&a->turn_end, cb);
}
