/* mig_plan.c -- the MIG planner (see mig_plan.h).
 *
 * The GPU's occupancy is a bitmask of its 8 memory slices plus a count of
 * compute slices used; a profile fits at start s when its slices from s on
 * are all free, s is one of its valid starts, its compute slices are left
 * and the GPU holds fewer than max_instances of it. The lowest start is
 * taken: profiles' valid starts are aligned to their size, so filling from
 * slot 0 up keeps the big aligned blocks at the top whole longest.
 */
#include <stdbool.h>
#include <stddef.h>

#include "mig_plan.h"

typedef struct mig_use {
    unsigned mem;           /* bit s: memory slice s taken */
    int compute;            /* compute slices taken */
} mig_use;

static mig_use mig_usage(const mig_instance *have, int n) {
    mig_use u = {0, 0};
    for (int i = 0; i < n; i++) {
        const mig_profile *p = have[i].profile;
        u.mem |= ((1u << p->mem_slices) - 1u) << have[i].start;
        u.compute += p->compute_slices;
    }
    return u;
}

static int mig_count(const mig_instance *have, int n, const mig_profile *p) {
    int k = 0;
    for (int i = 0; i < n; i++)
        k += have[i].profile == p;
    return k;
}

static int mig_popcount(unsigned x) {
    int k = 0;
    for (; x; x &= x - 1)
        k++;
    return k;
}

/* Whether p may start at slot s: a valid start whose slices are free. */
static bool mig_start_free(const mig_profile *p, int s, mig_use u) {
    if (s < 0 || s + p->mem_slices > MIG_MEM_SLICES || !(p->starts >> s & 1u))
        return false;
    return !((((1u << p->mem_slices) - 1u) << s) & u.mem);
}

/* Whether one more instance of p stays within the compute slices and p's
 * instance count, wherever it starts. */
static bool mig_room(const mig_profile *p, mig_use u, const mig_instance *have,
                     int n) {
    return p->compute_slices <= MIG_COMPUTE_SLICES - u.compute &&
           mig_count(have, n, p) < p->max_instances;
}

/* The lowest free valid start of p, or -1. */
static int mig_free_start(const mig_profile *p, mig_use u) {
    for (int s = 0; s + p->mem_slices <= MIG_MEM_SLICES; s++)
        if (mig_start_free(p, s, u))
            return s;
    return -1;
}

bool mig_fits(const mig_instance *have, int n, mig_instance inst) {
    mig_use u = mig_usage(have, n);
    return mig_room(inst.profile, u, have, n) &&
           mig_start_free(inst.profile, inst.start, u);
}

mig_pick mig_plan(const mig_model *m, const mig_instance *have, int n,
                  long demand_mib) {
    mig_use u = mig_usage(have, n);
    int free_mem = MIG_MEM_SLICES - mig_popcount(u.mem);
    mig_pick pick = {MIG_TOO_BIG, NULL, -1};
    for (int i = 0; i < m->nprofiles; i++) {
        const mig_profile *p = &m->profiles[i];
        if (p->mem_mib < demand_mib)
            continue;
        if (!pick.profile) {
            pick.profile = p;
            pick.verdict = MIG_FULL;
        }
        if (!mig_room(p, u, have, n))
            continue;
        int s = mig_free_start(p, u);
        if (s >= 0)
            return (mig_pick){MIG_PLACED, p, s};
        /* Room in total, none where the profile may start. */
        if (p->mem_slices <= free_mem)
            pick.verdict = MIG_FRAGMENTED;
    }
    return pick;
}

mig_mode mig_auto(const mig_model *m, long demand_mib, double max_waste) {
    mig_pick p = mig_plan(m, NULL, 0, demand_mib);
    if (p.verdict == MIG_TOO_BIG || demand_mib <= 0)
        return MIG_MODE_MPS;
    return (double)p.profile->mem_mib <= max_waste * (double)demand_mib
               ? MIG_MODE_MIG : MIG_MODE_MPS;
}

const char *mig_verdict_name(mig_verdict v) {
    switch (v) {
    case MIG_PLACED: return "placed";
    case MIG_FULL: return "full";
    case MIG_FRAGMENTED: return "fragmented";
    case MIG_TOO_BIG: return "too big";
    }
    return "?";
}
