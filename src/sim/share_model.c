/* share_model.c -- the sharing modes in the simulator (share_model.h).
 *
 * MIG: an instance of c compute slices and k memory slices gets c/7 of the
 * GPU's compute (times mig_sm_frac: an A100 exposes 7 x 14 = 98 of its 108
 * SMs to MIG) and k/8 of its memory bandwidth. A job that keeps the whole
 * GPU's SMs busy a fraction u of the time (SMACT) and its DRAM a fraction d
 * (DRAMA) is slowed by its tighter resource:
 *     slowdown = max(1, u / (c/7 * mig_sm_frac), d / (k/8))
 * which assumes its GPU work overlaps its other work (data loading, host
 * code). If it does not overlap at all, the slowdown is 1 - u + u/f
 * instead (f the instance's share of SMs): 3.0 rather than 2.3 for u = 0.3
 * on a 1g instance. The study's first version (Kaas, Paleykov, Robroek,
 * Tozun, "Deep Learning Training on Multi-Instance GPUs", 2022) saw about
 * 3x the throughput of one A100 from seven small ResNet runs on 1g
 * instances, each at 3/7 of its solo speed, a slowdown of 2.3: what this
 * formula gives a job of SMACT 0.3, and no interference between them.
 */
#include "share_model.h"

#include <math.h>
#include <stdio.h>
#include <strings.h>

/* Short names the simulator takes for the tables src/share keys by NVML
 * device name. */
static const struct {
    const char *name, *nvml;
} gpu_names[] = {
    {"A100-40GB", "NVIDIA A100-SXM4-40GB"},
    {"A100-80GB", "NVIDIA A100-SXM4-80GB"},
    {"H100-80GB", "NVIDIA H100 80GB HBM3"},
    {"H200-141GB", "NVIDIA H200"},
};

const mig_model *share_model_gpu(const char *name) {
    for (size_t i = 0; i < sizeof gpu_names / sizeof gpu_names[0]; i++)
        if (strcasecmp(name, gpu_names[i].name) == 0)
            return mig_model_find(gpu_names[i].nvml);
    return mig_model_find(name);
}

int share_model_setup(core_state *core, int ngpus, share_mode mode,
                      const mig_model *mig, char *err, size_t errlen) {
    for (int g = 0; g < ngpus; g++)
        if (core_gpu_share(core, g, mode, mig, err, errlen) != 0) return -1;
    return 0;
}

static double mig_slowdown(const sim_model *m, const mig_profile *p,
                           const cat_workload *w) {
    double sm_share = (double)p->compute_slices / MIG_COMPUTE_SLICES * m->mig_sm_frac;
    double bw_share = (double)p->mem_slices / MIG_MEM_SLICES;
    return fmax(1, fmax(w->smact / sm_share, w->drama / bw_share));
}

double share_model_slowdown(const sim_model *m, share_mode share,
                            const mig_profile *mig, const cat_workload *w,
                            double shared_sd) {
    if (share == SHARE_MIG && mig) return mig_slowdown(m, mig, w);
    if (share == SHARE_MPS) return 1 + (shared_sd - 1) * m->mps_excess;
    return shared_sd;
}

double share_model_scale(const sim_model *m, share_mode share,
                         const mig_profile *mig, const cat_workload *w) {
    return share == SHARE_MIG && mig ? 1 / mig_slowdown(m, mig, w) : 1;
}

bool share_model_fits(const mig_profile *mig, double peak_mib, double used_mib,
                      double gpu_mib) {
    if (mig) return peak_mib <= (double)mig->mem_mib;
    return used_mib + peak_mib <= gpu_mib;
}
