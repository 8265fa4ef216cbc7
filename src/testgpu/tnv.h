/* tnv.h -- what the two halves of libaegis-testnvml.so share: testnvml.c
 * (devices, readings) and testmig.c (MIG). Not exported: the library hides
 * every symbol but the NVML calls.
 *
 * The one idea: a handle is a pointer into a static array, so the library
 * tells its own handles apart by address. GPU handles point into tnv_devs;
 * MIG device handles into testmig.c's own array, which the device queries
 * of testnvml.c ask about with tmig_owns() before treating a handle as a
 * GPU's.
 */
#ifndef AEGIS_TNV_H
#define AEGIS_TNV_H

#include "tel_nvml.h"
#include "tgpu.h"

/* GPU name when AEGIS_TEST_GPU_MODEL is not set: the model of the AEGIS
 * measurement server, so the MIG table (mig_profiles.h) applies. */
#define TNV_DEFAULT_MODEL "NVIDIA A100-SXM4-40GB"

/* The handle NVML gives out for a whole GPU points at one of these. */
struct nvmlDevice_st {
    int index;
};

extern int tnv_refs;                    /* nvmlInit_v2 calls not shut down */
extern tgpu_config tnv_cfg;
extern struct nvmlDevice_st tnv_devs[TGPU_MAX_GPUS];
extern char tnv_model[NVML_DEVICE_NAME_V2_BUFFER_SIZE]; /* the GPUs' model */

/* The checks every device query starts with: initialised, a GPU handle,
 * out not NULL. Returns NVML_SUCCESS and the GPU's index in *gpu, or the
 * error to return. */
nvmlReturn_t tnv_device(const char *call, nvmlDevice_t d, const void *out,
                        int *gpu);

/* Copies text into an NVML string buffer, failing as NVML does when the
 * buffer is too short. */
nvmlReturn_t tnv_string(const char *call, const char *text, char *buf,
                        unsigned int length);

/* Whether d is a MIG device handle (testmig.c). */
int tmig_owns(nvmlDevice_t d);

/* Whether GPU gpu is in MIG mode now (a pending change does not count). */
int tmig_enabled(int gpu);

/* The GPU, GPU instance and compute instance of MIG device d, checked to
 * exist, for `call` on it (logged as the MIG calls are). */
nvmlReturn_t tmig_device_ids(const char *call, nvmlDevice_t d, int *gpu,
                             int *gi, int *ci);

/* nvmlDeviceGetUUID, nvmlDeviceGetName and nvmlDeviceGetMemoryInfo on a
 * MIG device handle. */
nvmlReturn_t tmig_uuid(nvmlDevice_t d, char *buf, unsigned int length);
nvmlReturn_t tmig_name(nvmlDevice_t d, char *buf, unsigned int length);
nvmlReturn_t tmig_memory(nvmlDevice_t d, nvmlMemory_t *memory);

#endif
