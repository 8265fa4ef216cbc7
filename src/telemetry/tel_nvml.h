/* tel_nvml.h -- the slice of the NVML C API that aegis uses, declared here
 * so that nothing needs nvml.h or a driver at build time.
 *
 * The one idea: every NVML function aegis calls has a function *type* below
 * (tel_nvml_*_fn). The loader (nvml.c) keeps pointers of these types, and the
 * test library (src/testgpu/testnvml.c) declares its exports with the same
 * types, so the compiler checks that the stand-in matches what the loader
 * calls. Layouts and values are NVML's own (nvml.h, driver 525+).
 */
#ifndef AEGIS_TEL_NVML_H
#define AEGIS_TEL_NVML_H

/* nvmlReturn_t values (nvml.h). Only those aegis tests for or produces. */
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16        /* MIG mode: pending a reset */
#define NVML_ERROR_IN_USE 19                /* MIG: GPU busy, instance has
                                               compute instances */
#define NVML_ERROR_INSUFFICIENT_RESOURCES 23 /* MIG: the slices are taken */
#define NVML_ERROR_UNKNOWN 999

/* Buffer sizes nvml.h recommends for UUIDs and names (the _V2 ones). */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/* usedGpuMemory when the driver cannot attribute memory to a process
 * (Windows WDDM, some MIG setups). */
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef int nvmlReturn_t;             /* an enum in nvml.h: same ABI as int */
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
    unsigned long long total;         /* bytes */
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int gpu;                 /* % of the sample period a kernel ran */
    unsigned int memory;              /* % of it memory was read or written */
} nvmlUtilization_t;

/* The process list comes in three layouts, and which one a call fills is
 * the whole ABI question:
 *
 *   unversioned   nvmlProcessInfo_v1_t, 16 bytes (every driver);
 *   _v2           nvmlProcessInfo_v2_t, 24 bytes (driver 450.66 on, in
 *                 every version since: what aegis calls);
 *   _v3           24 bytes too, except on drivers 535.43.02 to 535.86.x,
 *                 whose nvml.h made nvmlProcessInfo_t 32 bytes (an added
 *                 usedGpuCcProtectedMemory, tel_nvml_proc535_t) and mapped
 *                 _v3 to it; 535.98 dropped _v3 from nvml.h and 535.104.05
 *                 went back to 24 bytes. A caller that hands _v3 24-byte entries
 *                 on such a driver reads every entry after the first
 *                 wrongly and lets NVML write past its buffer, which is why
 *                 aegis never calls _v3; the test library models it. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
} nvmlProcessInfo_v1_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;       /* MIG; 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory; /* confidential computing */
} tel_nvml_proc535_t;

/* gpuInstanceId and computeInstanceId of a process not in a MIG instance. */
#define TEL_NVML_NO_INSTANCE 0xFFFFFFFFu

/* One sample of nvmlDeviceGetProcessUtilization: NVML lists a process only
 * when it kept an engine busy during the driver's last sample period. */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;     /* CPU time of the sample, us */
    unsigned int smUtil;              /* % of the period its kernels ran */
    unsigned int memUtil;             /* % of it its memory was accessed */
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef nvmlReturn_t tel_nvml_init_fn(void);
typedef nvmlReturn_t tel_nvml_shutdown_fn(void);
typedef const char *tel_nvml_error_string_fn(nvmlReturn_t result);
typedef nvmlReturn_t tel_nvml_count_fn(unsigned int *count);
typedef nvmlReturn_t tel_nvml_handle_fn(unsigned int index,
                                        nvmlDevice_t *device);
typedef nvmlReturn_t tel_nvml_string_fn(nvmlDevice_t device, char *buf,
                                        unsigned int length);
typedef nvmlReturn_t tel_nvml_memory_fn(nvmlDevice_t device,
                                        nvmlMemory_t *memory);
typedef nvmlReturn_t tel_nvml_util_fn(nvmlDevice_t device,
                                      nvmlUtilization_t *utilization);
/* On a GPU in MIG mode the whole-GPU handle lists every instance's
 * processes only for a privileged caller (else NO_PERMISSION); a MIG
 * device handle lists its own instance's. */
typedef nvmlReturn_t tel_nvml_procs_fn(nvmlDevice_t device,
                                       unsigned int *count,
                                       nvmlProcessInfo_v2_t *infos);
typedef nvmlReturn_t tel_nvml_procs_v1_fn(nvmlDevice_t device,
                                          unsigned int *count,
                                          nvmlProcessInfo_v1_t *infos);
/* infos: nvmlProcessInfo_v2_t entries, or tel_nvml_proc535_t ones on
 * drivers 535.43.02 to 535.86.x (see above). The MPS clients' list,
 * nvmlDeviceGetMPSComputeRunningProcesses (unversioned, _v2, _v3), has the
 * same types and layouts: NVML lists an MPS client there, not in the
 * compute list. */
typedef nvmlReturn_t tel_nvml_procs_v3_fn(nvmlDevice_t device,
                                          unsigned int *count, void *infos);
/* The driver's version, "535.54.03". */
typedef nvmlReturn_t tel_nvml_system_string_fn(char *buf,
                                               unsigned int length);
/* samples NULL or *count too small: INSUFFICIENT_SIZE and the count
 * needed; no sample newer than lastSeen (us): NOT_FOUND. */
typedef nvmlReturn_t tel_nvml_proc_util_fn(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples,
    unsigned int *count, unsigned long long lastSeen);
typedef nvmlReturn_t tel_nvml_power_fn(nvmlDevice_t device,
                                       unsigned int *milliwatts);
typedef nvmlReturn_t tel_nvml_energy_fn(nvmlDevice_t device,
                                        unsigned long long *millijoules);

/* MIG (driver 470+). A GPU instance (GI) owns memory slices at a placement
 * and compute slices; a compute instance (CI) runs inside a GI; the CUDA
 * device a job sees is a MIG device, one per CI, with its own handle and a
 * "MIG-..." UUID. Profiles have two numbers: the enum the *ProfileInfo
 * calls take (NVML_GPU_INSTANCE_PROFILE_*, MIG_NVML_* in mig_profiles.h)
 * and the id those calls return, which every other call takes. */
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0     /* 2_SLICE 1, 3_SLICE 2,
                                                       4_SLICE 3, 7_SLICE 4 */
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 4
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0

typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

typedef struct {
    unsigned int start;               /* first memory slice */
    unsigned int size;                /* memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct {
    unsigned int id;                  /* the profile id other calls take */
    unsigned int isP2pSupported;
    unsigned int sliceCount;          /* compute slices */
    unsigned int instanceCount;       /* on an empty GPU */
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;  /* MiB, despite the name */
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
    nvmlDevice_t device;              /* the parent GPU */
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef nvmlReturn_t tel_nvml_mig_mode_fn(nvmlDevice_t device,
                                          unsigned int *currentMode,
                                          unsigned int *pendingMode);
/* GPU not idle (processes on it): IN_USE. */
typedef nvmlReturn_t tel_nvml_set_mig_mode_fn(nvmlDevice_t device,
                                              unsigned int mode,
                                              nvmlReturn_t *activationStatus);
/* profile: NVML_GPU_INSTANCE_PROFILE_*; a GPU without it: NOT_SUPPORTED. */
typedef nvmlReturn_t tel_nvml_gi_profile_fn(nvmlDevice_t device,
                                            unsigned int profile,
                                            nvmlGpuInstanceProfileInfo_t *info);
/* placements NULL: the count only. */
typedef nvmlReturn_t tel_nvml_gi_placements_fn(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t *placements, unsigned int *count);
/* Slots taken: INSUFFICIENT_RESOURCES; a start the profile does not
 * allow: INVALID_ARGUMENT; MIG mode off: NOT_SUPPORTED. */
typedef nvmlReturn_t tel_nvml_gi_create_fn(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gi);
typedef nvmlReturn_t tel_nvml_gi_list_fn(nvmlDevice_t device,
                                         unsigned int profileId,
                                         nvmlGpuInstance_t *gis,
                                         unsigned int *count);
typedef nvmlReturn_t tel_nvml_gi_by_id_fn(nvmlDevice_t device,
                                          unsigned int id,
                                          nvmlGpuInstance_t *gi);
typedef nvmlReturn_t tel_nvml_gi_info_fn(nvmlGpuInstance_t gi,
                                         nvmlGpuInstanceInfo_t *info);
/* Compute instances left in it: IN_USE. */
typedef nvmlReturn_t tel_nvml_gi_destroy_fn(nvmlGpuInstance_t gi);
typedef nvmlReturn_t tel_nvml_ci_profile_fn(
    nvmlGpuInstance_t gi, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info);
typedef nvmlReturn_t tel_nvml_ci_create_fn(nvmlGpuInstance_t gi,
                                           unsigned int profileId,
                                           nvmlComputeInstance_t *ci);
typedef nvmlReturn_t tel_nvml_ci_by_id_fn(nvmlGpuInstance_t gi,
                                          unsigned int id,
                                          nvmlComputeInstance_t *ci);
typedef nvmlReturn_t tel_nvml_ci_destroy_fn(nvmlComputeInstance_t ci);
/* MIG devices a GPU may have; index them 0..count-1 (NOT_FOUND: none at
 * that index). */
typedef nvmlReturn_t tel_nvml_mig_max_fn(nvmlDevice_t device,
                                         unsigned int *count);
typedef nvmlReturn_t tel_nvml_mig_handle_fn(nvmlDevice_t device,
                                            unsigned int index,
                                            nvmlDevice_t *migDevice);
/* A MIG device's GPU instance or compute instance id. */
typedef nvmlReturn_t tel_nvml_mig_id_fn(nvmlDevice_t migDevice,
                                        unsigned int *id);

#endif
