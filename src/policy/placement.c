/* placement.c -- the placement rules that rank the GPUs which passed every
 * gate: magm, lug, bf, ff and rr (AEGIS placement/policies.py: MAGM sorts
 * free memory descending, BF ascending, LUG by SMACT ascending, FF keeps
 * GPU order; all sorts are stable, so ties keep GPU order). */
#include "policy.h"

#include <string.h>

static const char *const placement_names[] = {"magm", "lug", "bf", "ff", "rr",
                                              NULL};

const char *const *core_placement_names(void) { return placement_names; }

int policy_placement_find(const char *name) {
    for (int i = 0; name && placement_names[i]; i++)
        if (strcmp(placement_names[i], name) == 0) return i;
    return -1;
}

/* LUG ranks by SMACT; without DCGM, utilization is the nearest measure. */
static double placement_load(const policy_gpu *g) {
    if (g->smact >= 0) return g->smact;
    return g->util >= 0 ? g->util : 0;
}

double policy_placement_key(policy_placement rule, const policy_gpu *g,
                            int rr_next, int num_gpus) {
    switch (rule) {
    case POLICY_PLACE_MAGM: return -g->free_mib;
    case POLICY_PLACE_LUG: return placement_load(g);
    case POLICY_PLACE_BF: return g->free_mib;
    case POLICY_PLACE_FF: return g->index;
    case POLICY_PLACE_RR: return (g->index - rr_next + num_gpus) % num_gpus;
    }
    return g->index;
}
