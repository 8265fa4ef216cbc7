/* tel.h -- GPU telemetry for the daemon: NVML, and optionally DCGM, loaded
 * at run time with dlopen, so aegis builds and runs where no GPU driver is
 * installed.
 *
 * The daemon opens one tel_state at start, reads every GPU once a second
 * with tel_read(), and hands the reading to the core (core_sample) and the
 * process list to its observation logic. Any library that exports the NVML
 * functions below works: the real libnvidia-ml.so.1, or the project's test
 * library libaegis-testnvml.so, which models GPUs without hardware.
 * DCGM (libdcgm.so.4, or libaegis-testdcgm.so in tests) adds the profiling
 * fields SMACT, SMOCC and DRAMA when the caller asks for it with
 * tel_open_dcgm(); without it they stay CORE_UNKNOWN and the core's
 * pressure filter uses utilization alone.
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
    double sm_util;         /* 0..100: % of the latest NVML sample period
                               its kernels ran (held while NVML has no
                               newer valid sample, 0 after a few seconds
                               without one); CORE_UNKNOWN when NVML cannot
                               tell */
    int mig_gi, mig_ci;     /* the MIG GPU and compute instance it runs
                               in; -1 when the GPU is not in MIG mode */
} tel_proc;

/* How a reading departs from a whole-GPU one (tel_gpu_reading.flags); the
 * daemon says when each starts and stops holding (tel_flag_text). */
#define TEL_F_NO_UTIL 0x1       /* no utilization, GPU's or per process:
                                   NOT_SUPPORTED (a GPU in MIG mode) */
#define TEL_F_BY_MIG_DEVICE 0x2 /* memory and processes summed over the
                                   MIG devices: in MIG mode the whole-GPU
                                   handle gives them only to root */

typedef struct tel_gpu_reading {
    core_reading r;         /* memory, utilization; DCGM fields CORE_UNKNOWN
                               without DCGM or when it has no fresh value */
    double power_w;         /* CORE_UNKNOWN when not supported */
    double energy_j;        /* total energy counter since driver load, J;
                               CORE_UNKNOWN when not supported */
    unsigned int flags;     /* TEL_F_* */
    int nprocs;             /* NVML's compute and MPS process lists,
                               joined: one entry per pid */
    tel_proc procs[TEL_MAX_PROCS];
} tel_gpu_reading;

typedef struct tel_state tel_state;

/* Loads the NVML library at `path` (NULL: $AEGIS_NVML_LIBRARY, else
 * "libnvidia-ml.so.1"), initialises it and enumerates the GPUs. Returns
 * NULL with a message naming the library and the failing call in err. */
tel_state *tel_open(const char *path, char *err, size_t errlen);
void tel_close(tel_state *tel);

/* Adds DCGM to an open tel_state: loads `path` (NULL: $AEGIS_DCGM_LIBRARY,
 * else the first of libdcgm.so.4, libdcgm.so.3, libdcgm.so that loads),
 * starts an embedded host engine, or connects to the nv-hostengine at
 * $AEGIS_DCGM_HOSTENGINE ("host[:port]", or a Unix socket path starting
 * with '/') when that is set, and watches SMACT, SMOCC and DRAMA on every
 * GPU once a second. DCGM GPU id i is NVML GPU i: both enumerate in the
 * driver's (PCI bus) order, and DCGM must see as many GPUs as NVML.
 * Returns 0, or -1 with a message naming the library and the failing call;
 * tel is then unchanged and tel_read() leaves the DCGM fields unknown. */
int tel_open_dcgm(tel_state *tel, const char *path, char *err, size_t errlen);

/* Why the latest tel_read() had no DCGM fields although DCGM is open (a
 * failed call, a lost host engine), or NULL when it had them or DCGM is not
 * open. DCGM failures never fail tel_read(): they only take the reading
 * back to utilization, so the caller decides whether to log them. */
const char *tel_dcgm_error(const tel_state *tel);

int tel_gpu_count(const tel_state *tel);

/* The driver's version as NVML reports it ("535.54.03"), or "unknown". */
const char *tel_driver_version(const tel_state *tel);

/* The GPU's UUID ("GPU-..."), the value CUDA_VISIBLE_DEVICES takes. */
const char *tel_gpu_uuid(const tel_state *tel, int gpu);

/* The GPU's name as the driver reports it ("NVIDIA A100-SXM4-40GB"). */
const char *tel_gpu_name(const tel_state *tel, int gpu);

/* Reads one GPU now. Returns 0, or -1 with a message in err (the GPU fell
 * off the bus, the library failed); the reading is then unusable. */
int tel_read(tel_state *tel, int gpu, tel_gpu_reading *out, char *err,
             size_t errlen);

/* What flag (one TEL_F_* bit) means, for a log line. */
const char *tel_flag_text(unsigned int flag);

/* Processes left out of readings because a GPU had more than TEL_MAX_PROCS,
 * summed over all tel_read() calls: nonzero means the process lists the
 * daemon saw were cut short. */
long tel_dropped_procs(const tel_state *tel);

/* Splits `joules` among n jobs on one GPU into share[0..n): by activity,
 * util[i] being the summed sm_util of job i's processes (CORE_UNKNOWN when
 * none of them had one), when any job's is known and their sum is above
 * zero; else by memory, mib[i] (negative counts as 0), when that sum is
 * above zero; else evenly. Pure: the daemon's energy accounting and its
 * tests call the same rule. */
void tel_energy_split(int n, const double *util, const double *mib,
                      double joules, double *share);

#endif
