/* share_gpu.h -- one GPU's sharing mode and the MIG instances on it, as the
 * scheduling core sees them (src/core internal; core.h documents the rules).
 *
 * The one idea: a job runs on a GPU either in a MIG instance of its own or
 * on the whole GPU (alone, or beside others under time-slicing or MPS).
 * Which of the two follows from the GPU's mode and the job's demand alone,
 * so the core asks share_gpu_wants_mig() first and then uses either the
 * MIG planner or its usual gates. A GPU never mixes the two: while it holds
 * an instance no whole-GPU job joins it, and the reverse.
 */
#ifndef AEGIS_SHARE_GPU_H
#define AEGIS_SHARE_GPU_H

#include <stdbool.h>

#include "../share/mig_plan.h"
#include "../share/share_mode.h"

typedef struct share_gpu {
    share_mode mode;            /* as configured; SHARE_NAIVE by default */
    const mig_model *model;     /* mig and auto: the profile table, else NULL */
    mig_instance inst[MIG_COMPUTE_SLICES]; /* instances of running jobs: at
                                   most one per compute slice */
    int ninst;
} share_gpu;

/* True for the modes under which jobs may run in MIG instances (mig,
 * auto): those that need the GPU's profile table. */
bool share_gpu_mode_mig(share_mode mode);

/* True when a job of num_gpus GPUs demanding demand_mib runs in a MIG
 * instance on this GPU: the GPU is mig, or auto and share_gpu_auto_mig()
 * says so; the job uses one GPU; some profile holds the demand; and
 * `collocating` (the policy collocates and the job need not run alone).
 * Otherwise the job takes the whole GPU. */
bool share_gpu_wants_mig(const share_gpu *g, int num_gpus, double demand_mib,
                         double util_pct, bool collocating);

/* auto's choice: MIG when mig_auto() finds a profile whose memory fits the
 * demand well and, when the job's profiled utilization is known
 * (util_pct >= 0), that profile's share of the compute slices covers it;
 * a job that keeps the whole GPU busy would crawl in a small instance. */
bool share_gpu_auto_mig(const mig_model *m, long demand_mib, double util_pct);

/* True when whole-GPU jobs may share this GPU (naive, mps, or auto while it
 * holds no instance). */
bool share_gpu_collocates(const share_gpu *g);

/* True when whole-GPU jobs here run as clients of the GPU's MPS server
 * (mps, or auto while it holds no instance). MPS serves one user at a
 * time (nvidia-cuda-mps-control(1): one server per user; another user's
 * client waits in CUDA initialisation until the server's clients are all
 * gone), so such a GPU belongs to the user of its jobs while it has any. */
bool share_gpu_mps(const share_gpu *g);

/* True when a new instance may be created now on a GPU running njobs jobs:
 * every one of them is in an instance. This is also what keeps a whole-GPU
 * job on a mig GPU (MIG off) alone, as share_gpu_collocates() keeps one on
 * an exclusive GPU. */
bool share_gpu_mig_open(const share_gpu *g, int njobs);

/* How a job placed here runs, for core_launch.share: SHARE_MIG in an
 * instance; else the mode, with mig read as exclusive (MIG off, alone) and
 * auto as mps. */
share_mode share_gpu_launch_mode(const share_gpu *g, bool in_mig);

/* The memory floor after a job OOMed in an instance of `had_mib` MiB: the
 * smallest profile of the model with more memory, or 0 when none is left
 * (the job then needs the whole GPU). */
double share_gpu_next_floor(const mig_model *m, double had_mib);

/* True when `inst` (a profile of g's table) may be made next to g's
 * instances (mig_fits(), and room in g's table). For instances found
 * running (core_adopt()); the planner chooses new ones. */
bool share_gpu_fits(const share_gpu *g, mig_instance inst);

void share_gpu_add(share_gpu *g, mig_instance inst);
void share_gpu_remove(share_gpu *g, int start);

#endif
