/* heap.h -- the simulator's event queue: a min-heap by time, plus an
 * in-order lane.
 *
 * Events at equal times come out in the order they were pushed (a sequence
 * number breaks ties), so a run is deterministic. Most events of a run are
 * activations, each due a constant delay after its launch, so they are
 * pushed in time order: those go to a FIFO lane at O(1) instead of the
 * heap, and pop compares the lane's head with the heap's top, which gives
 * exactly the order one heap would. Events are stored by value in growing
 * arrays: pushing costs no allocation once they have reached their working
 * size.
 *
 * Completion events are keyed by job: a job has at most one, and when its
 * rate changes sim_heap_update() moves it in place (new time, new sequence
 * number) instead of leaving a stale event behind to be skipped. That took
 * a sixth of a big run's completion events off the heap. Moving an event
 * gives the same order as removing it and pushing a new one, since the
 * order is total on (time, sequence number).
 */
#ifndef AEGIS_HEAP_H
#define AEGIS_HEAP_H

#include <stdint.h>

typedef enum sim_event_kind {
    SIM_EV_ACTIVATE,    /* a launched job shows its first GPU activity */
    SIM_EV_COMPLETE,    /* a job's work is done; keyed by job */
    SIM_EV_WAKEUP       /* the core asked to be asked again */
} sim_event_kind;

typedef struct sim_event {
    double t;           /* when, seconds */
    int32_t id;         /* job index; 0 for SIM_EV_WAKEUP */
    sim_event_kind kind;
} sim_event;

/* The most events one heap takes pushes of: the sequence number has the
 * 31 bits above id and kind in a node's key. */
#define SIM_HEAP_MAX_PUSHES (UINT64_C(1) << 31)

/* An event as queued: id and kind ride below the sequence number in one
 * key, which keeps the order (sequence numbers are unique, so the low bits
 * never decide) and makes a node 16 bytes: a node's four children fill
 * one cache line instead of spanning two. */
typedef struct sim_node {
    double t;
    uint64_t key;       /* seq << 33 | id << 2 | kind */
} sim_node;

typedef struct sim_heap {
    sim_node *items;    /* 4-ary min-heap: children of i are 4i+1..4i+4 */
    int nheap, cap;
    sim_node *lane;     /* ring of in-order events, oldest at lane_head */
    int lane_head, nlane, lane_cap; /* lane_cap is a power of two */
    int count;          /* events queued, heap and lane together */
    int32_t *pos;       /* per job: index of its SIM_EV_COMPLETE in items,
                           or -1; NULL until sim_heap_keys() */
    int nkeys;          /* jobs pos has room for */
    uint64_t next_seq;
} sim_heap;

/* Returns 0, or -1 when out of memory or past SIM_HEAP_MAX_PUSHES. id is
 * at least 0. */
int sim_heap_push(sim_heap *h, double t, sim_event_kind kind, int32_t id);
/* The same, for an event due no earlier than every event pushed with this
 * function before it. */
int sim_heap_push_ordered(sim_heap *h, double t, sim_event_kind kind,
                          int32_t id);
/* Makes room for keyed completion events of jobs 0..njobs-1, keeping the
 * jobs' it had room for (a replay that takes jobs as they come grows it).
 * Returns 0, or -1 when out of memory. */
int sim_heap_keys(sim_heap *h, int njobs);
/* Sets job id's completion event to time t, pushing it if it has none.
 * SIM_EV_COMPLETE events go through here only, after sim_heap_keys(). */
int sim_heap_update(sim_heap *h, double t, int32_t id);
/* Time of the earliest event; the heap must not be empty. */
double sim_heap_next_t(const sim_heap *h);
/* Removes the earliest event into *out; the heap must not be empty. */
void sim_heap_pop(sim_heap *h, sim_event *out);
void sim_heap_free(sim_heap *h);

#endif
