/* heap.c -- binary min-heap of simulator events (heap.h). */
#include "heap.h"

#include <stdlib.h>

static int earlier(const sim_event *a, const sim_event *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int sim_heap_push(sim_heap *h, double t, sim_event_kind kind, int32_t id,
                  uint32_t epoch) {
    if (h->count == h->cap) {
        int cap = h->cap ? h->cap * 2 : 1024;
        sim_event *more = realloc(h->items, (size_t)cap * sizeof(*more));
        if (!more) return -1;
        h->items = more;
        h->cap = cap;
    }
    sim_event ev = {t, h->next_seq++, id, epoch, kind};
    int i = h->count++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!earlier(&ev, &h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = ev;
    return 0;
}

void sim_heap_pop(sim_heap *h, sim_event *out) {
    *out = h->items[0];
    sim_event last = h->items[--h->count];
    int i = 0, n = h->count;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && earlier(&h->items[child + 1], &h->items[child]))
            child++;
        if (!earlier(&h->items[child], &last)) break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (n > 0) h->items[i] = last;
}

void sim_heap_free(sim_heap *h) {
    free(h->items);
    h->items = NULL;
    h->count = h->cap = 0;
}
