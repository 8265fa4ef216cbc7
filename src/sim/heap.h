/* heap.h -- the simulator's event queue: a binary min-heap by time.
 *
 * Events at equal times come out in the order they were pushed (a sequence
 * number breaks ties), so a run is deterministic. Events are stored by
 * value in one growing array: pushing costs no allocation once the array
 * has reached its working size.
 */
#ifndef AEGIS_HEAP_H
#define AEGIS_HEAP_H

#include <stdint.h>

typedef enum sim_event_kind {
    SIM_EV_ACTIVATE,    /* a launched job shows its first GPU activity */
    SIM_EV_COMPLETE,    /* a job's work is done (if epoch still matches) */
    SIM_EV_WAKEUP       /* a server's core asked to be asked again */
} sim_event_kind;

typedef struct sim_event {
    double t;           /* when, seconds */
    uint64_t seq;       /* push order, breaks ties */
    int32_t id;         /* job index, or server index for SIM_EV_WAKEUP */
    uint32_t epoch;     /* SIM_EV_COMPLETE: the job's epoch when pushed */
    sim_event_kind kind;
} sim_event;

typedef struct sim_heap {
    sim_event *items;
    int count, cap;
    uint64_t next_seq;
} sim_heap;

/* Returns 0, or -1 when out of memory. */
int sim_heap_push(sim_heap *h, double t, sim_event_kind kind, int32_t id,
                  uint32_t epoch);
/* Removes the earliest event into *out; the heap must not be empty. */
void sim_heap_pop(sim_heap *h, sim_event *out);
void sim_heap_free(sim_heap *h);

#endif
