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
#define NVML_ERROR_UNKNOWN 999

/* Buffer sizes nvml.h recommends for UUIDs and names (the _V2 ones). */
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

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

/* What the unversioned nvmlDeviceGetComputeRunningProcesses fills. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
} nvmlProcessInfo_v1_t;

/* What the _v2 and _v3 variants fill (the same four fields). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;       /* MIG; 0xFFFFFFFF when not MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

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
typedef nvmlReturn_t tel_nvml_procs_fn(nvmlDevice_t device,
                                       unsigned int *count,
                                       nvmlProcessInfo_t *infos);
typedef nvmlReturn_t tel_nvml_procs_v1_fn(nvmlDevice_t device,
                                          unsigned int *count,
                                          nvmlProcessInfo_v1_t *infos);
/* samples NULL or *count too small: INSUFFICIENT_SIZE and the count
 * needed; no sample newer than lastSeen (us): NOT_FOUND. */
typedef nvmlReturn_t tel_nvml_proc_util_fn(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples,
    unsigned int *count, unsigned long long lastSeen);
typedef nvmlReturn_t tel_nvml_power_fn(nvmlDevice_t device,
                                       unsigned int *milliwatts);
typedef nvmlReturn_t tel_nvml_energy_fn(nvmlDevice_t device,
                                        unsigned long long *millijoules);

#endif
