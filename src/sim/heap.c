/* heap.c -- 4-ary min-heap of simulator events and the in-order lane
 * (heap.h). Four children per node halve the depth of a binary heap, and
 * the four 24-byte children span two cache lines at most: fewer levels and
 * fewer misses per pop, which was a tenth of a big run. */
#include "heap.h"

#include <stdlib.h>

#define KIND_BITS 2
#define ID_BITS 31
#define ARITY 4

static int earlier(const sim_node *a, const sim_node *b) {
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

static sim_event_kind kind_of(const sim_node *n) {
    return (sim_event_kind)(n->key & ((1u << KIND_BITS) - 1));
}

static int32_t id_of(const sim_node *n) {
    return (int32_t)(n->key >> KIND_BITS & ((UINT64_C(1) << ID_BITS) - 1));
}

static int keyed(const sim_node *n) { return kind_of(n) == SIM_EV_COMPLETE; }

/* Stores node n at items[i], keeping a keyed node's position known. */
static void place(sim_heap *h, int i, sim_node n) {
    h->items[i] = n;
    if (keyed(&n)) h->pos[id_of(&n)] = i;
}

/* Moves n up from hole i to where it belongs. */
static void sift_up(sim_heap *h, int i, sim_node n) {
    while (i > 0) {
        int parent = (i - 1) / ARITY;
        if (!earlier(&n, &h->items[parent])) break;
        place(h, i, h->items[parent]);
        i = parent;
    }
    place(h, i, n);
}

/* Moves `last` down from hole i to where it belongs. */
static void sift_down(sim_heap *h, int i, sim_node last) {
    int n = h->nheap;
    for (;;) {
        int first = ARITY * i + 1;
        if (first >= n) break;
        int end = first + ARITY < n ? first + ARITY : n, best = first;
        for (int c = first + 1; c < end; c++)
            if (earlier(&h->items[c], &h->items[best])) best = c;
        if (!earlier(&h->items[best], &last)) break;
        place(h, i, h->items[best]);
        i = best;
    }
    place(h, i, last);
}

/* The next node in push order into *n; -1 once the sequence numbers
 * have run out. */
static int node_new(sim_heap *h, double t, sim_event_kind kind, int32_t id,
                    sim_node *n) {
    if (h->next_seq >= SIM_HEAP_MAX_PUSHES) return -1;
    *n = (sim_node){t, h->next_seq++ << (ID_BITS + KIND_BITS) |
                           (uint64_t)id << KIND_BITS | (uint64_t)kind};
    return 0;
}

static int heap_grow(sim_heap *h) {
    if (h->nheap == h->cap) {
        int cap = h->cap ? h->cap * 2 : 1024;
        sim_node *more = realloc(h->items, (size_t)cap * sizeof(*more));
        if (!more) return -1;
        h->items = more;
        h->cap = cap;
    }
    return 0;
}

int sim_heap_push(sim_heap *h, double t, sim_event_kind kind, int32_t id) {
    sim_node n;
    if (heap_grow(h) < 0 || node_new(h, t, kind, id, &n) < 0) return -1;
    sift_up(h, h->nheap++, n);
    h->count++;
    return 0;
}

int sim_heap_keys(sim_heap *h, int njobs) {
    if (njobs <= h->nkeys) return 0;
    int32_t *more = realloc(h->pos, (size_t)njobs * sizeof(*h->pos));
    if (!more) return -1;
    h->pos = more;
    for (int i = h->nkeys; i < njobs; i++) h->pos[i] = -1;
    h->nkeys = njobs;
    return 0;
}

int sim_heap_update(sim_heap *h, double t, int32_t id) {
    int i = h->pos[id];
    if (i < 0) return sim_heap_push(h, t, SIM_EV_COMPLETE, id);
    sim_node n;
    if (node_new(h, t, SIM_EV_COMPLETE, id, &n) < 0) return -1;
    /* The new sequence number is the largest yet, so a node that is not
     * earlier than its parent can only need to go down. */
    if (i > 0 && earlier(&n, &h->items[(i - 1) / ARITY])) sift_up(h, i, n);
    else sift_down(h, i, n);
    return 0;
}

int sim_heap_push_ordered(sim_heap *h, double t, sim_event_kind kind,
                          int32_t id) {
    sim_node n;
    if (node_new(h, t, kind, id, &n) < 0) return -1;
    if (h->nlane == h->lane_cap) {
        int cap = h->lane_cap ? h->lane_cap * 2 : 1024;
        sim_node *more = realloc(h->lane, (size_t)cap * sizeof(*more));
        if (!more) return -1;
        /* Unwrap: the part of the ring before lane_head follows the rest. */
        for (int i = 0; i < h->lane_head; i++) more[h->lane_cap + i] = more[i];
        h->lane = more;
        h->lane_cap = cap;
    }
    int at = (h->lane_head + h->nlane++) & (h->lane_cap - 1);
    h->lane[at] = n;
    h->count++;
    return 0;
}

/* True when the lane's head comes out before the heap's top. */
static int lane_first(const sim_heap *h) {
    if (h->nlane == 0) return 0;
    return h->nheap == 0 || earlier(&h->lane[h->lane_head], &h->items[0]);
}

double sim_heap_next_t(const sim_heap *h) {
    return lane_first(h) ? h->lane[h->lane_head].t : h->items[0].t;
}

static void heap_pop_top(sim_heap *h) {
    if (keyed(&h->items[0])) h->pos[id_of(&h->items[0])] = -1;
    sim_node last = h->items[--h->nheap];
    if (h->nheap > 0) sift_down(h, 0, last);
}

void sim_heap_pop(sim_heap *h, sim_event *out) {
    sim_node top;
    if (lane_first(h)) {
        top = h->lane[h->lane_head];
        h->lane_head = (h->lane_head + 1) & (h->lane_cap - 1);
        h->nlane--;
    } else {
        top = h->items[0];
        heap_pop_top(h);
    }
    h->count--;
    *out = (sim_event){.t = top.t, .id = id_of(&top), .kind = kind_of(&top)};
}

void sim_heap_free(sim_heap *h) {
    free(h->items);
    free(h->lane);
    free(h->pos);
    *h = (sim_heap){0};
}
