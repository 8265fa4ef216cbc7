/* model.c -- parameters and formulas of the modelled server (model.h). */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The parameter table: the one place defaults and their sources live.
 *
 * | name               | default | source                                    |
 * |--------------------|---------|-------------------------------------------|
 * | beta               | 0.3     | fitted by tools/fidelity.py --fit to the   |
 * | threshold          | 0.7     |   philly and saturn runs and the pairwise  |
 * | delta              | 0.6     |   A100 runs; venus is held out. README,    |
 * | gamma              | 0       |   "The interference model", has the error |
 * | idle_w             | 55      | ASSUMPTION: typical idle draw of an A100   |
 * |                    |         |   SXM; not measured in the AEGIS data      |
 * | max_w              | 400     | NVIDIA A100-40GB SXM TDP (datasheet)       |
 * | exec_factor        | 1.01    | AEGIS exclusive runs: mean execution span  |
 * |                    |         |   / mean solo = 1.0096-1.0112 (data README)|
 * | activation_delay_s | 8.2     | AEGIS: median launch-to-first-activity     |
 * | mps_excess         | 0.75    | ASSUMPTION: arXiv 2209.06018 ranks MPS     |
 * |                    |         |   above naive; the ratio is ours.          |
 * |                    |         |   README "Sharing modes" shows 0.5 and 1   |
 * | mig_sm_frac        | 0.907   | A100: MIG exposes 7 x 14 = 98 of 108 SMs   |
 * |                    |         |   (NVIDIA MIG user guide, 1g = 14 SMs)     |
 * | oom_crash_s        | 10.3    | least squares on the 16 failed attempts of |
 * | oom_knee_mib       | 18432   |   data/results_per_job.csv against their   |
 * | oom_s_per_gib      | 2.19    |   peaks (tools/fidelity.py --oom; the knee |
 * |                    |         |   is the best of a 2 GiB grid)             |
 */
typedef struct model_param {
    const char *name;
    size_t offset;
    double def, lo, hi;
    const char *meaning;
} model_param;

static const model_param params[] = {
    {"beta", offsetof(sim_model, beta), 0.3, 0, 100,
     "slowdown per unit of SMACT above the threshold, times the"
     " co-runners' share of it"},
    {"threshold", offsetof(sim_model, threshold), 0.7, 0, 10,
     "SMACT sum a GPU absorbs before its jobs slow down"},
    {"delta", offsetof(sim_model, delta), 0.6, 0, 100,
     "slowdown per unit of the co-runners' DRAMA sum"},
    {"gamma", offsetof(sim_model, gamma), 0, 0, 100,
     "slowdown per co-runner beyond the first (host CPU, PCIe, caches)"},
    {"idle_w", offsetof(sim_model, idle_w), 55, 0, 10000,
     "GPU power when idle, W (an assumption, not measured)"},
    {"max_w", offsetof(sim_model, max_w), 400, 0, 10000,
     "GPU power at SMACT 1, W (A100 SXM TDP)"},
    {"exec_factor", offsetof(sim_model, exec_factor), 1.01, 0.01, 100,
     "end-to-end runtime alone / catalog solo_duration_s"},
    {"activation_delay_s", offsetof(sim_model, activation_delay_s), 8.2, 0,
     1e6, "launch to first GPU activity, s (measured median)"},
    {"mps_excess", offsetof(sim_model, mps_excess), 0.75, 0, 1,
     "MPS keeps this share of the naive slowdown above 1 (an assumption)"},
    {"mig_sm_frac", offsetof(sim_model, mig_sm_frac), 0.907, 0.01, 1,
     "share of the GPU's SMs in a 7-slice MIG instance (A100: 98/108)"},
    {"feed_share", offsetof(sim_model, feed_share), 1, 0, 1,
     "1: jobs of one feed share its data loading per GPU; 0: each job"
     " loads its own (independent loaders)"},
    {"oom_crash_s", offsetof(sim_model, oom_crash_s), 10.3, 0, 1e6,
     "launch to the crash of an attempt out of memory, s, for a peak up"
     " to oom_knee_mib (fitted to the measured failed attempts)"},
    {"oom_knee_mib", offsetof(sim_model, oom_knee_mib), 18432, 0, 1e12,
     "peak memory above which an attempt out of memory crashes later, MiB"},
    {"oom_s_per_gib", offsetof(sim_model, oom_s_per_gib), 2.19, 0, 1e6,
     "seconds later per GiB of peak above oom_knee_mib"},
};

#define NPARAMS (sizeof(params) / sizeof(*params))

static double *field(sim_model *m, const model_param *p) {
    return (double *)((char *)m + p->offset);
}

void sim_model_default(sim_model *m) {
    for (size_t i = 0; i < NPARAMS; i++) *field(m, &params[i]) = params[i].def;
}

int sim_model_set(sim_model *m, const char *name, const char *value,
                  char *err, size_t errlen) {
    for (size_t i = 0; i < NPARAMS; i++) {
        const model_param *p = &params[i];
        if (strcmp(p->name, name) != 0) continue;
        char *stop;
        errno = 0;
        double v = strtod(value, &stop);
        if (value[0] == '\0' || *stop != '\0' || errno || !(v >= p->lo) ||
            !(v <= p->hi)) {
            snprintf(err, errlen, "model parameter '%s': '%s' is not a "
                     "number in [%.15g, %.15g]", name, value, p->lo, p->hi);
            return -1;
        }
        *field(m, p) = v;
        return 0;
    }
    snprintf(err, errlen, "unknown model parameter '%s' (see aegis sim "
             "--help)", name);
    return -1;
}

void sim_model_describe(void (*line)(const char *text, void *ctx), void *ctx) {
    char text[160];
    for (size_t i = 0; i < NPARAMS; i++) {
        snprintf(text, sizeof(text), "%-20s %-6g %s", params[i].name,
                 params[i].def, params[i].meaning);
        line(text, ctx);
    }
}

/* slowdown_i = 1 + beta * max(0, L - threshold) * (L - u_i) / L + delta * D_o
 *
 * L is the SMACT sum of the GPU's active jobs, u_i the job's own SMACT and
 * D_o its co-runners' DRAMA sum. Below the threshold the SMs have room for
 * everyone. Above it the excess is shared out by the co-runners' part of the
 * load, so a job beside a heavy one suffers more than the heavy one does:
 * in the pairwise A100 runs VGG16 slowed its partners by 1.6-2.3x while
 * running at 1.0-1.2x itself. A job alone has D_o = 0 and (L - u_i) = 0. */
double sim_model_slowdown(const sim_model *m, double smact_sum,
                          double own_smact, double others_drama, int n_others) {
    double crowd = n_others > 1 ? m->gamma * (n_others - 1) : 0;
    if (smact_sum <= 0) return 1 + crowd;
    double excess = smact_sum > m->threshold ? smact_sum - m->threshold : 0;
    double others_share = (smact_sum - own_smact) / smact_sum;
    return 1 + m->beta * excess * others_share + m->delta * others_drama + crowd;
}

double sim_model_power_w(const sim_model *m, double smact_sum) {
    double busy = smact_sum < 1 ? smact_sum : 1;
    return m->idle_w + (m->max_w - m->idle_w) * busy;
}

double sim_model_crash_s(const sim_model *m, double peak_mib,
                         double gpu_mem_mib) {
    /* Bigger models load and build longer before they reach their peak.
     * One whose peak is past its GPU's memory crashes when its allocations
     * reach that memory, not its peak: without this bound a trace's
     * peak_mib of 10^9 held its GPUs for weeks before crashing. */
    double reached = fmin(peak_mib, gpu_mem_mib);
    double above = fmax(0, reached - m->oom_knee_mib) / 1024;
    return m->oom_crash_s + m->oom_s_per_gib * above;
}
