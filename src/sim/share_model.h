/* share_model.h -- how the simulator models each GPU sharing mode.
 *
 * The engine asks three questions of a job's attempt, each answered here
 * from how the core said it runs (core_launch.share and .mig):
 *   - how much slower than alone does it run (share_model_slowdown);
 *   - how much of its profiled activity does its GPU read (share_model_scale),
 *     which drives telemetry and power;
 *   - does its true peak memory fit (share_model_fits).
 * The one idea: MIG instances do not interfere but are small (compute and
 * memory bandwidth in proportion to their slices, memory capped at the
 * instance); whole-GPU sharing interferes, by the fitted model (model.h),
 * which represents naive time-slicing, and MPS takes part of that penalty
 * away (sim_model.mps_excess). README "Sharing modes" gives the sources.
 */
#ifndef AEGIS_SHARE_MODEL_H
#define AEGIS_SHARE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog.h"
#include "core.h"
#include "model.h"

/* The MIG table called `name`: a short name ("A100-40GB", "A100-80GB",
 * "H100-80GB", "H200-141GB", any case) or an NVML device name. NULL when
 * none matches. */
const mig_model *share_model_gpu(const char *name);

/* "A100-40GB, A100-80GB, H100-80GB, H200-141GB": for --help and errors. */
#define SHARE_MODEL_GPU_LIST "A100-40GB, A100-80GB, H100-80GB, H200-141GB"

/* Sets every GPU of `core` (ngpus) to `mode`, with `mig` as the MIG table.
 * Returns 0, or -1 with the core's message in err. */
int share_model_setup(core_state *core, int ngpus, share_mode mode,
                      const mig_model *mig, char *err, size_t errlen);

/* The slowdown of a job running as `share` (in instance `mig` when
 * SHARE_MIG), given `shared_sd`, what the fitted interference model says
 * for it beside its co-runners under naive time-slicing. */
double share_model_slowdown(const sim_model *m, share_mode share,
                            const mig_profile *mig, const cat_workload *w,
                            double shared_sd);

/* The factor applied to the job's profiled SMACT, SMOCC, DRAMA and
 * utilization in its GPU's reading: 1 on a whole GPU (the fitted model
 * reads the co-runners' sum), 1 / slowdown in a MIG instance, where the
 * same work is spread over a longer time on fewer SMs. */
double share_model_scale(const sim_model *m, share_mode share,
                         const mig_profile *mig, const cat_workload *w);

/* True when the job's true peak `peak_mib` fits: in its instance under
 * MIG, else beside the `used_mib` its GPU's active jobs hold of
 * `gpu_mib`. */
bool share_model_fits(const mig_profile *mig, double peak_mib, double used_mib,
                      double gpu_mib);

#endif
