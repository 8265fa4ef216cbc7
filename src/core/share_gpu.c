/* share_gpu.c -- a GPU's sharing mode and MIG instances (see share_gpu.h). */
#include <math.h>
#include <stddef.h>

#include "share_gpu.h"

bool share_gpu_auto_mig(const mig_model *m, long demand_mib, double util_pct) {
    if (mig_auto(m, demand_mib, MIG_AUTO_MAX_WASTE) != MIG_MODE_MIG) return false;
    const mig_profile *p = mig_plan(m, NULL, 0, demand_mib).profile;
    return util_pct < 0 ||
           util_pct <= 100.0 * p->compute_slices / MIG_COMPUTE_SLICES;
}

bool share_gpu_mode_mig(share_mode mode) {
    return mode == SHARE_MIG || mode == SHARE_AUTO;
}

bool share_gpu_wants_mig(const share_gpu *g, int num_gpus, double demand_mib,
                         double util_pct, bool collocating) {
    if (num_gpus != 1 || !collocating || !g->model) return false;
    long demand = (long)ceil(demand_mib);
    if (g->mode == SHARE_AUTO) return share_gpu_auto_mig(g->model, demand, util_pct);
    return g->mode == SHARE_MIG &&
           mig_plan(g->model, NULL, 0, demand).verdict != MIG_TOO_BIG;
}

bool share_gpu_collocates(const share_gpu *g) {
    return g->mode == SHARE_NAIVE || g->mode == SHARE_MPS ||
           (g->mode == SHARE_AUTO && g->ninst == 0);
}

bool share_gpu_mps(const share_gpu *g) {
    return g->mode == SHARE_MPS || (g->mode == SHARE_AUTO && g->ninst == 0);
}

bool share_gpu_mig_open(const share_gpu *g, int njobs) {
    return njobs == g->ninst;
}

share_mode share_gpu_launch_mode(const share_gpu *g, bool in_mig) {
    if (in_mig) return SHARE_MIG;
    switch (g->mode) {
    case SHARE_MIG: return SHARE_EXCLUSIVE;
    case SHARE_AUTO: return SHARE_MPS;
    default: return g->mode;
    }
}

double share_gpu_next_floor(const mig_model *m, double had_mib) {
    for (int i = 0; i < m->nprofiles; i++)
        if ((double)m->profiles[i].mem_mib > had_mib)
            return (double)m->profiles[i].mem_mib;
    return 0;
}

bool share_gpu_fits(const share_gpu *g, mig_instance inst) {
    return g->ninst < MIG_COMPUTE_SLICES && mig_fits(g->inst, g->ninst, inst);
}

void share_gpu_add(share_gpu *g, mig_instance inst) {
    if (g->ninst < MIG_COMPUTE_SLICES) g->inst[g->ninst++] = inst;
}

void share_gpu_remove(share_gpu *g, int start) {
    for (int i = 0; i < g->ninst; i++)
        if (g->inst[i].start == start) {
            g->inst[i] = g->inst[--g->ninst];
            return;
        }
}
