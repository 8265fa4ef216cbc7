/* dispatch.c -- least-loaded server choice by tournament tree. */
#include "dispatch.h"

#include <stdlib.h>

/* Padding leaves hold the largest key and never win. */
#define NO_SERVER UINT64_MAX

static uint64_t winner(uint64_t a, uint64_t b) { return a < b ? a : b; }

int sim_dispatch_init(sim_dispatch *d, int servers) {
    d->servers = servers;
    d->leaves = 1;
    while (d->leaves < servers) d->leaves *= 2;
    d->tree = malloc(2 * (size_t)d->leaves * sizeof(*d->tree));
    if (!d->tree) return -1;
    for (int i = 0; i < d->leaves; i++)
        d->tree[d->leaves + i] = i < servers ? (uint64_t)i : NO_SERVER;
    for (int i = d->leaves - 1; i >= 1; i--)
        d->tree[i] = winner(d->tree[2 * i], d->tree[2 * i + 1]);
    return 0;
}

void sim_dispatch_free(sim_dispatch *d) {
    free(d->tree);
    d->tree = NULL;
}

int sim_dispatch_pick(const sim_dispatch *d) {
    return (int)(d->tree[1] & UINT32_MAX);
}

/* Only s's key changed, so a node whose key stays the same keeps every
 * node above it the same too: the climb stops there. */
void sim_dispatch_add(sim_dispatch *d, int s, int delta) {
    int i = d->leaves + s;
    d->tree[i] += (uint64_t)(int64_t)delta << 32;
    for (i /= 2; i >= 1; i /= 2) {
        uint64_t key = winner(d->tree[2 * i], d->tree[2 * i + 1]);
        if (key == d->tree[i]) break;
        d->tree[i] = key;
    }
}
