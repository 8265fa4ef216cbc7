/* dispatch.h -- the front dispatcher of a multi-server simulation.
 *
 * An arriving job goes to the server holding the fewest jobs (queued plus
 * running) and stays there. Servers are identical, so "fewest per GPU" is
 * "fewest", and every server has enough GPUs for any job the trace loader
 * accepted. A tournament tree keeps the least-loaded server (lowest index
 * on ties) at its root: picking is O(1), a load change O(log servers).
 */
#ifndef AEGIS_DISPATCH_H
#define AEGIS_DISPATCH_H

#include <stdint.h>

typedef struct sim_dispatch {
    int servers;
    int leaves;         /* power of two >= servers */
    /* Node keys are load << 32 | server, so the smaller key is the winner,
     * ties going to the lower index, with one compare and no lookup; the
     * root tree[1] is the pick, leaves are at [leaves, 2*leaves). */
    uint64_t *tree;
} sim_dispatch;

/* Returns 0, or -1 when out of memory. */
int sim_dispatch_init(sim_dispatch *d, int servers);
void sim_dispatch_free(sim_dispatch *d);

/* The server the next job should go to. */
int sim_dispatch_pick(const sim_dispatch *d);

/* A job arrived at (+1) or left (-1) server s. */
void sim_dispatch_add(sim_dispatch *d, int s, int delta);

#endif
