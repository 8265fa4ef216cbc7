/* dispatch.c -- least-loaded server choice by tournament tree. */
#include "dispatch.h"

#include <limits.h>
#include <stdlib.h>

/* Load of the server a tree node names; padding leaves never win. */
static int load_of(const sim_dispatch *d, int server) {
    return server < d->servers ? d->load[server] : INT_MAX;
}

static int winner(const sim_dispatch *d, int a, int b) {
    int la = load_of(d, a), lb = load_of(d, b);
    return lb < la || (lb == la && b < a) ? b : a;
}

int sim_dispatch_init(sim_dispatch *d, int servers) {
    d->servers = servers;
    d->leaves = 1;
    while (d->leaves < servers) d->leaves *= 2;
    d->load = calloc((size_t)servers, sizeof(*d->load));
    d->tree = malloc(2 * (size_t)d->leaves * sizeof(*d->tree));
    if (!d->load || !d->tree) {
        sim_dispatch_free(d);
        return -1;
    }
    for (int i = 0; i < d->leaves; i++) d->tree[d->leaves + i] = i;
    for (int i = d->leaves - 1; i >= 1; i--)
        d->tree[i] = winner(d, d->tree[2 * i], d->tree[2 * i + 1]);
    return 0;
}

void sim_dispatch_free(sim_dispatch *d) {
    free(d->load);
    free(d->tree);
    d->load = d->tree = NULL;
}

int sim_dispatch_pick(const sim_dispatch *d) { return d->tree[1]; }

/* Only s's load changed, so a node whose winner stays another server
 * keeps its value, and so do all nodes above it: the climb stops there. */
void sim_dispatch_add(sim_dispatch *d, int s, int delta) {
    d->load[s] += delta;
    for (int i = (d->leaves + s) / 2; i >= 1; i /= 2) {
        int was = d->tree[i];
        d->tree[i] = winner(d, d->tree[2 * i], d->tree[2 * i + 1]);
        if (d->tree[i] == was && was != s) break;
    }
}
