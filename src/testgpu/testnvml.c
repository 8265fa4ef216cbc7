/* testnvml.c -- libaegis-testnvml.so, a stand-in for libnvidia-ml.so.1 that
 * models GPUs without hardware, so aegisd runs and is tested anywhere.
 *
 * It exports the NVML functions aegis calls, with NVML's signatures (the
 * tel_nvml_*_fn types, so the compiler holds them to what the loader
 * calls) and return codes, and nothing else: the build hides every other
 * symbol. Readings come from the allocation files fake jobs write
 * (tgpu.h): memory is their sum, utilization min(100%, sum of SMACT), power
 * the simulator's linear model, energy that power integrated over time, and
 * a process's SM utilization its job's SMACT x 100. The GPUs' name is
 * "aegis test GPU: <model>", the model from AEGIS_TEST_GPU_MODEL (default
 * TNV_DEFAULT_MODEL); MIG on that model lives in testmig.c.
 *
 * Built with TNV_OLD_DRIVER (libaegis-testnvml-old.so, for tests) it is an
 * old GPU and driver instead: only the unversioned process list with its
 * two-field entries, and no power, energy or per-process utilization
 * readings (NOT_SUPPORTED).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stdlib.h>

#include "tnv.h"

#define TNV_EXPORT __attribute__((visibility("default")))

#ifdef TNV_OLD_DRIVER
#define TNV_OLD 1
#else
#define TNV_OLD 0
#endif

/* Power model, W: an idle A100-40GB draws about 55 W and its board limit is
 * 400 W; the simulator uses the same line, idle + (max - idle) x SMACT. */
#define TNV_IDLE_W 55.0
#define TNV_BUSY_W 345.0

TNV_EXPORT tel_nvml_init_fn nvmlInit_v2;
TNV_EXPORT tel_nvml_shutdown_fn nvmlShutdown;
TNV_EXPORT tel_nvml_error_string_fn nvmlErrorString;
TNV_EXPORT tel_nvml_count_fn nvmlDeviceGetCount_v2;
TNV_EXPORT tel_nvml_handle_fn nvmlDeviceGetHandleByIndex_v2;
TNV_EXPORT tel_nvml_string_fn nvmlDeviceGetUUID;
TNV_EXPORT tel_nvml_string_fn nvmlDeviceGetName;
TNV_EXPORT tel_nvml_memory_fn nvmlDeviceGetMemoryInfo;
TNV_EXPORT tel_nvml_util_fn nvmlDeviceGetUtilizationRates;
#ifdef TNV_OLD_DRIVER
TNV_EXPORT tel_nvml_procs_v1_fn nvmlDeviceGetComputeRunningProcesses;
#else
TNV_EXPORT tel_nvml_procs_fn nvmlDeviceGetComputeRunningProcesses_v3;
#endif
TNV_EXPORT tel_nvml_power_fn nvmlDeviceGetPowerUsage;
TNV_EXPORT tel_nvml_energy_fn nvmlDeviceGetTotalEnergyConsumption;
TNV_EXPORT tel_nvml_proc_util_fn nvmlDeviceGetProcessUtilization;

int tnv_refs;
tgpu_config tnv_cfg;
struct nvmlDevice_st tnv_devs[TGPU_MAX_GPUS];
char tnv_model[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

/* The GPU index behind a handle, or -1 when it is not one of ours. */
static int tnv_index(nvmlDevice_t d) {
    uintptr_t p = (uintptr_t)d, base = (uintptr_t)tnv_devs;
    if (p < base || (p - base) % sizeof tnv_devs[0] != 0)
        return -1;
    size_t i = (p - base) / sizeof tnv_devs[0];
    return i < (size_t)tnv_cfg.ngpus ? (int)i : -1;
}

nvmlReturn_t tnv_device(const char *call, nvmlDevice_t d,
                               const void *out, int *gpu) {
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "%s: nvmlInit_v2 was not "
                        "called", call);
    *gpu = tnv_index(d);
    if (*gpu < 0 || !out)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s", call,
                        *gpu < 0 ? "not a test GPU handle" : "NULL output");
    return NVML_SUCCESS;
}

/* Sums GPU gpu's live allocations, listing up to max of them in out. */
static nvmlReturn_t tnv_scan(int gpu, tgpu_alloc *out, int max,
                             tgpu_usage *sum) {
    if (tgpu_scan(&tnv_cfg, gpu, out, max, sum) < 0)
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_DIR=%s: %s",
                        tnv_cfg.dir, strerror(errno));
    return NVML_SUCCESS;
}

/* What most queries do: check the handle, then sum the GPU's jobs. */
static nvmlReturn_t tnv_usage(const char *call, nvmlDevice_t d,
                              const void *out, int *gpu, tgpu_usage *u) {
    nvmlReturn_t rc = tnv_device(call, d, out, gpu);
    return rc == NVML_SUCCESS ? tnv_scan(*gpu, NULL, 0, u) : rc;
}

/* Power and energy: as tnv_usage, but an old test GPU has no meter. */
static nvmlReturn_t tnv_metered(const char *call, nvmlDevice_t d,
                                const void *out, int *gpu, tgpu_usage *u) {
    nvmlReturn_t rc = tnv_usage(call, d, out, gpu, u);
    if (rc == NVML_SUCCESS && TNV_OLD)
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not on this (old) test "
                      "GPU", call);
    return rc;
}

static double tnv_power_w(const tgpu_usage *u) {
    return TNV_IDLE_W + TNV_BUSY_W * (u->smact < 1.0 ? u->smact : 1.0);
}

nvmlReturn_t nvmlInit_v2(void) {
    if (tnv_refs == 0) {
        char err[512];
        if (tgpu_config_load(&tnv_cfg, err, sizeof err) < 0)
            return tgpu_fail(NVML_ERROR_DRIVER_NOT_LOADED, "%s", err);
        for (int i = 0; i < tnv_cfg.ngpus; i++)
            tnv_devs[i].index = i;
        const char *model = getenv("AEGIS_TEST_GPU_MODEL");
        if (!model || !*model)
            model = TNV_DEFAULT_MODEL;
        /* The marker, first so `aegis gpus` keeps it when it cuts names
         * short, stops a test GPU passing for real hardware; the model's
         * words stay for mig_model_find(). */
        snprintf(tnv_model, sizeof tnv_model, TGPU_NAME ": %.60s", model);
    }
    tnv_refs++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "nvmlShutdown: nvmlInit_v2 "
                        "was not called");
    tnv_refs--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t rc) {
    const char *why = tgpu_why(rc);
    if (why)
        return why;
    switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "nvmlDeviceGetCount_v2: "
                        "nvmlInit_v2 was not called");
    if (!count)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "nvmlDeviceGetCount_v2: "
                        "NULL output");
    *count = (unsigned int)tnv_cfg.ngpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                           nvmlDevice_t *device) {
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "nvmlDeviceGetHandleByIndex"
                        "_v2: nvmlInit_v2 was not called");
    if (!device || index >= (unsigned int)tnv_cfg.ngpus)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "nvmlDeviceGetHandleBy"
                        "Index_v2: no GPU %u (%d GPUs)", index,
                        tnv_cfg.ngpus);
    *device = &tnv_devs[index];
    return NVML_SUCCESS;
}

nvmlReturn_t tnv_string(const char *call, const char *text, char *buf,
                               unsigned int length) {
    if (strlen(text) + 1 > length)
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: buffer of %u "
                        "bytes, %zu needed", call, length, strlen(text) + 1);
    memcpy(buf, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid,
                               unsigned int length) {
    if (tmig_owns(device))
        return tmig_uuid(device, uuid, length);
    int gpu = -1;
    nvmlReturn_t rc = tnv_device("nvmlDeviceGetUUID", device, uuid, &gpu);
    if (rc != NVML_SUCCESS)
        return rc;
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    tgpu_uuid(gpu, text, sizeof text);
    return tnv_string("nvmlDeviceGetUUID", text, uuid, length);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name,
                               unsigned int length) {
    if (tmig_owns(device))
        return tmig_name(device, name, length);
    int gpu = -1;
    nvmlReturn_t rc = tnv_device("nvmlDeviceGetName", device, name, &gpu);
    if (rc != NVML_SUCCESS)
        return rc;
    return tnv_string("nvmlDeviceGetName", tnv_model, name, length);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                     nvmlMemory_t *memory) {
    if (tmig_owns(device))
        return tmig_memory(device, memory);
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tnv_usage("nvmlDeviceGetMemoryInfo", device, memory,
                                &gpu, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long mib = 1024ULL * 1024ULL;
    memory->total = (unsigned long long)tnv_cfg.mib * mib;
    memory->used = (unsigned long long)u.used_mib * mib;
    /* Jobs check before they allocate, but a test may write any file. */
    memory->free = memory->used < memory->total
                       ? memory->total - memory->used : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                           nvmlUtilization_t *utilization) {
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tnv_usage("nvmlDeviceGetUtilizationRates", device,
                                utilization, &gpu, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    double pct = u.smact * 100.0 + 0.5;
    utilization->gpu = pct >= 100.0 ? 100u : (unsigned int)pct;
    utilization->memory = 0; /* the model has no memory-bandwidth term */
    return NVML_SUCCESS;
}

/* The process list, whatever the layout: lists GPU gpu's jobs into a and
 * their number into *n, checking them against the caller's *count and
 * buffer as NVML does (a short or NULL buffer gets the count it needs). */
static nvmlReturn_t tnv_procs(const char *call, nvmlDevice_t device,
                              unsigned int *count, const void *infos,
                              tgpu_alloc *a, int *n) {
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tnv_device(call, device, count, &gpu);
    if (rc == NVML_SUCCESS)
        rc = tnv_scan(gpu, a, TGPU_MAX_ALLOCS, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    *n = u.nallocs < TGPU_MAX_ALLOCS ? u.nallocs : TGPU_MAX_ALLOCS;
    if ((unsigned int)*n > *count || (*n > 0 && !infos)) {
        *count = (unsigned int)*n;
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: %d processes",
                        call, *n);
    }
    *count = (unsigned int)*n;
    return NVML_SUCCESS;
}

#ifdef TNV_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                  unsigned int *count,
                                                  nvmlProcessInfo_v1_t *infos) {
    tgpu_alloc a[TGPU_MAX_ALLOCS];
    int n = 0;
    nvmlReturn_t rc = tnv_procs("nvmlDeviceGetComputeRunningProcesses",
                                device, count, infos, a, &n);
    for (int i = 0; rc == NVML_SUCCESS && i < n; i++)
        infos[i] = (nvmlProcessInfo_v1_t){(unsigned int)a[i].pid,
                                          (unsigned long long)a[i].mib << 20};
    return rc;
}
#else
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                     unsigned int *count,
                                                     nvmlProcessInfo_t *infos) {
    tgpu_alloc a[TGPU_MAX_ALLOCS];
    int n = 0;
    nvmlReturn_t rc = tnv_procs("nvmlDeviceGetComputeRunningProcesses_v3",
                                device, count, infos, a, &n);
    for (int i = 0; rc == NVML_SUCCESS && i < n; i++)
        infos[i] = (nvmlProcessInfo_t){(unsigned int)a[i].pid,
                                       (unsigned long long)a[i].mib << 20,
                                       0xFFFFFFFFu, 0xFFFFFFFFu};
    return rc;
}
#endif

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                     unsigned int *milliwatts) {
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tnv_metered("nvmlDeviceGetPowerUsage", device,
                                  milliwatts, &gpu, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    *milliwatts = (unsigned int)(tnv_power_w(&u) * 1000.0 + 0.5);
    return NVML_SUCCESS;
}

static long long tnv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One sample per job that keeps SMs busy, taken now, as NVML lists only
 * processes active in its last sample period; none: NOT_FOUND. Every test
 * sample is newer than any lastSeen the caller can hold, as it is "now". */
nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples,
    unsigned int *count, unsigned long long lastSeen) {
    static const char call[] = "nvmlDeviceGetProcessUtilization";
    int gpu = -1;
    tgpu_usage u;
    tgpu_alloc a[TGPU_MAX_ALLOCS];
    int n = 0;
    nvmlReturn_t rc = tnv_device(call, device, count, &gpu);
    if (rc == NVML_SUCCESS && TNV_OLD)
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not on this (old) test "
                      "GPU", call);
    if (rc == NVML_SUCCESS)
        rc = tnv_scan(gpu, a, TGPU_MAX_ALLOCS, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long now = (unsigned long long)tnv_now_ns() / 1000ULL;
    for (int i = 0; i < u.nallocs && i < TGPU_MAX_ALLOCS; i++)
        if (a[i].smact > 0 && now > lastSeen)
            a[n++] = a[i];
    if (n == 0) {
        *count = 0;
        return tgpu_fail(NVML_ERROR_NOT_FOUND, "%s: no samples", call);
    }
    if ((unsigned int)n > *count || !samples) {
        *count = (unsigned int)n;
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: %d samples", call,
                        n);
    }
    for (int i = 0; i < n; i++) {
        double pct = a[i].smact * 100.0 + 0.5;
        samples[i] = (nvmlProcessUtilizationSample_t){
            (unsigned int)a[i].pid, now,
            pct >= 100.0 ? 100u : (unsigned int)pct, 0, 0, 0};
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

/* Advances GPU gpu's energy counter to now and returns it in *mj. The power
 * recorded at the previous update is taken to have held since: exact when
 * jobs start and stop only between reads, one read period off otherwise.
 * The counter is shared by every reader, so the update holds the lock;
 * realtime is used across processes and clamped so it never runs back. */
static nvmlReturn_t tnv_energy(int gpu, double power_w,
                               unsigned long long *mj) {
    char name[32], path[sizeof tnv_cfg.dir + 32], text[96];
    snprintf(name, sizeof name, "energy%d", gpu);
    snprintf(path, sizeof path, "%s/%s", tnv_cfg.dir, name);
    int lock = tgpu_lock(&tnv_cfg);
    if (lock < 0)
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_DIR=%s: lock: "
                        "%s", tnv_cfg.dir, strerror(errno));
    long long now = tnv_now_ns(), then = now;
    unsigned long long e = 0;
    unsigned int mw = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%lld %llu %u", &then, &e, &mw) != 3)
            then = now, e = 0, mw = 0;
        fclose(f);
    }
    if (now < then)
        now = then;
    e += (unsigned long long)((double)mw * (double)(now - then) / 1e9);
    snprintf(text, sizeof text, "%lld %llu %u\n", now, e,
             (unsigned int)(power_w * 1000.0 + 0.5));
    int wrote = tgpu_write_file(&tnv_cfg, name, text);
    close(lock);
    if (wrote < 0)
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "%s: %s", path,
                        strerror(errno));
    *mj = e;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                 unsigned long long *mj) {
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tnv_metered("nvmlDeviceGetTotalEnergyConsumption",
                                  device, mj, &gpu, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    return tnv_energy(gpu, tnv_power_w(&u), mj);
}
