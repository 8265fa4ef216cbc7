/* tel.h -- GPU telemetry for the daemon: NVML (and later DCGM) loaded at
 * run time with dlopen, so aegis builds and runs where no GPU driver is
 * installed.
 *
 * The daemon opens one tel_state at start, reads every GPU once a second
 * with tel_read(), and hands the reading to the core (core_sample) and the
 * process list to its observation logic. Any library that exports the NVML
 * functions below works: the real libnvidia-ml.so.1, or the project's test
 * library libaegis-testnvml.so, which models GPUs without hardware.
 *
 * Ownership: tel_open() allocates a tel_state the caller frees with
 * tel_close(); tel_read() fills caller-owned structs.
 */
#ifndef AEGIS_TEL_H
#define AEGIS_TEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

/* Processes reported per GPU at most; more are ignored (and counted). */
#define TEL_MAX_PROCS 64

typedef struct tel_proc {
    pid_t pid;
    double used_mib;        /* its device memory, MiB */
} tel_proc;

typedef struct tel_gpu_reading {
    core_reading r;         /* memory, utilization; DCGM fields CORE_UNKNOWN
                               when DCGM is absent */
    double power_w;         /* CORE_UNKNOWN when not supported */
    double energy_j;        /* total energy counter since driver load, J;
                               CORE_UNKNOWN when not supported */
    int nprocs;
    tel_proc procs[TEL_MAX_PROCS];
} tel_gpu_reading;

typedef struct tel_state tel_state;

/* Loads the NVML library at `path` (NULL: $AEGIS_NVML_LIBRARY, else
 * "libnvidia-ml.so.1"), initialises it and enumerates the GPUs. Returns
 * NULL with a message naming the library and the failing call in err. */
tel_state *tel_open(const char *path, char *err, size_t errlen);
void tel_close(tel_state *tel);

int tel_gpu_count(const tel_state *tel);

/* The GPU's UUID ("GPU-..."), the value CUDA_VISIBLE_DEVICES takes. */
const char *tel_gpu_uuid(const tel_state *tel, int gpu);

/* The GPU's name as the driver reports it ("NVIDIA A100-SXM4-40GB"). */
const char *tel_gpu_name(const tel_state *tel, int gpu);

/* Reads one GPU now. Returns 0, or -1 with a message in err (the GPU fell
 * off the bus, the library failed); the reading is then unusable. */
int tel_read(tel_state *tel, int gpu, tel_gpu_reading *out, char *err,
             size_t errlen);

/* Processes left out of readings because a GPU had more than TEL_MAX_PROCS,
 * summed over all tel_read() calls: nonzero means the process lists the
 * daemon saw were cut short. */
long tel_dropped_procs(const tel_state *tel);

#endif
