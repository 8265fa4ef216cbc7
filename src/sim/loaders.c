/* loaders.c -- the CPU a server's data loading costs (loaders.h). */
#include "loaders.h"

#include <stdlib.h>

double sim_loaders_share(const sim_loaders *l) {
    return l->cores > 0 && l->cpus > l->cores ? l->cores / l->cpus : 1;
}

/* Brings cpu_s up to t at the cores busy since the last change: those
 * wanted, as far as the server has them. */
static void loaders_account(sim_loaders *l, double t) {
    if (t > l->since)
        l->cpu_s += l->cpus * sim_loaders_share(l) * (t - l->since);
    l->since = t;
}

/* The feed's loader on gpu, or NULL. A few feeds run at once, so a list. */
static sim_loader *loaders_find(sim_loaders *l, uint32_t feed, int gpu) {
    for (int i = 0; i < l->n; i++)
        if (l->shared[i].feed == feed && l->shared[i].gpu == gpu)
            return &l->shared[i];
    return NULL;
}

int sim_loaders_join(sim_loaders *l, uint32_t feed, int gpu, double cpus,
                     double t) {
    loaders_account(l, t);
    if (feed == 0) {
        l->cpus += cpus;
        return 0;
    }
    sim_loader *s = loaders_find(l, feed, gpu);
    if (!s) {
        if (l->n == l->cap) {
            int cap = l->cap ? l->cap * 2 : 8;
            sim_loader *more = realloc(l->shared, (size_t)cap * sizeof(*more));
            if (!more) return -1;
            l->shared = more;
            l->cap = cap;
        }
        s = &l->shared[l->n++];
        *s = (sim_loader){feed, gpu, 0, cpus};
        l->cpus += cpus;
    }
    s->jobs++;
    return 0;
}

void sim_loaders_leave(sim_loaders *l, uint32_t feed, int gpu, double cpus,
                       double t) {
    loaders_account(l, t);
    sim_loader *s = feed ? loaders_find(l, feed, gpu) : NULL;
    if (!feed) {
        l->cpus -= cpus;
    } else if (s && --s->jobs == 0) {
        l->cpus -= s->cpus;
        *s = l->shared[--l->n];
    }
    if (l->cpus < 1e-9) l->cpus = 0; /* no drift below nothing */
}

void sim_loaders_free(sim_loaders *l) {
    free(l->shared);
    l->shared = NULL;
    l->n = l->cap = 0;
}
