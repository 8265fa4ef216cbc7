/* ring.c -- the bounded, prioritised image ring (ring.h). A few hundred
 * entries: linear scans are cheaper than any index. */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

void ring_init(ring *r, unsigned cap, size_t max_bytes) {
    memset(r, 0, sizeof *r);
    r->cap = cap < RING_MAX ? cap : RING_MAX;
    r->max_bytes = max_bytes;
    r->next_id = 1;
}

/* The entry that goes first when room is needed: lowest priority,
 * newest of equals. */
static unsigned worst(const ring *r) {
    unsigned w = 0;
    for (unsigned k = 1; k < r->count; k++)
        if (r->img[k].priority <= r->img[w].priority)
            w = k;
    return w;
}

static void drop_at(ring *r, unsigned k) {
    r->bytes -= r->img[k].len;
    free(r->img[k].bytes);
    memmove(&r->img[k], &r->img[k + 1], (r->count - k - 1) * sizeof r->img[0]);
    r->count--;
    r->dropped++;
}

uint32_t ring_push(ring *r, int32_t priority, uint32_t width, uint32_t height,
                   uint32_t format, const uint8_t *bytes, size_t len) {
    while (r->count && (r->count == r->cap || r->bytes + len > r->max_bytes)) {
        unsigned w = worst(r);
        if (r->img[w].priority > priority) {
            r->dropped++;
            return 0;
        }
        drop_at(r, w);
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy || len > r->max_bytes || r->cap == 0) {
        free(copy);
        r->dropped++;
        return 0;
    }
    memcpy(copy, bytes, len);
    r->img[r->count++] = (ring_image){r->next_id, priority, width, height, format, copy, len};
    r->bytes += len;
    return r->next_id++;
}

const ring_image *ring_best(const ring *r) {
    const ring_image *best = NULL;
    for (unsigned k = 0; k < r->count; k++)
        if (!best || r->img[k].priority > best->priority)
            best = &r->img[k];
    return best;
}

int ring_remove(ring *r, uint32_t id) {
    for (unsigned k = 0; k < r->count; k++)
        if (r->img[k].id == id) {
            drop_at(r, k);
            r->dropped--; /* sent, not dropped */
            return 0;
        }
    return -1;
}

void ring_free(ring *r) {
    while (r->count)
        drop_at(r, 0);
}
