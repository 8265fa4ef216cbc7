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
 * It is the driver AEGIS_TEST_NVML_DRIVER names (default TNV_DRIVER), as
 * far as the ABI goes: acting as one of 535.43.02 to 535.86.x, its
 * process list _v3 fills 32-byte entries, as those drivers' did
 * (tel_nvml.h); _v2 always fills 24-byte ones.
 *
 * What NVIDIA documents and the model keeps:
 *   - per-process utilization is sampled once per period,
 *     AEGIS_TEST_NVML_SAMPLE_MS (default TNV_SAMPLE_MS): every busy
 *     process has one sample stamped with the period's start, and a call
 *     that finds none newer than lastSeenTimeStamp returns NOT_FOUND,
 *     whether or not the processes are busy; with
 *     AEGIS_TEST_NVML_STALE_SAMPLES=1 it gives the period's samples again
 *     however old lastSeenTimeStamp is, and a sample is its allocation's
 *     SMACT x 100 uncapped (an SMACT over 1 gives one over 100%): the two
 *     kinds of bad sample drivers are known to return, which a reader
 *     must drop (nvtop does);
 *   - MPS clients (allocations marked "mps", tgpu.h) are listed by the
 *     MPS process list (nvmlDeviceGetMPSComputeRunningProcesses) only,
 *     not by the compute one;
 *   - on a GPU in MIG mode, utilization (the GPU's and per process) is
 *     NOT_SUPPORTED, and memory and the process list through the
 *     whole-GPU handle need privileges: a caller that is not root (or
 *     sets AEGIS_TEST_NVML_UNPRIVILEGED=1) gets NO_PERMISSION there, and
 *     reads them per MIG device handle instead; listed processes carry
 *     their GPU and compute instance ids.
 *
 * Built with TNV_OLD_DRIVER (libaegis-testnvml-old.so, for tests) it is an
 * old GPU and driver instead (one before 450.66 by default): only the
 * unversioned process lists with their two-field entries, and no power,
 * energy or per-process utilization readings (NOT_SUPPORTED).
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
#define TNV_DRIVER "440.118.02" /* before 450.66: no _v2 process list */
#else
#define TNV_OLD 0
#define TNV_DRIVER "575.57.08"
#endif

/* NVML's per-process utilization sample period, ms: a second is what
 * drivers use on data-centre boards. */
#define TNV_SAMPLE_MS 1000

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
TNV_EXPORT tel_nvml_system_string_fn nvmlSystemGetDriverVersion;
#ifdef TNV_OLD_DRIVER
TNV_EXPORT tel_nvml_procs_v1_fn nvmlDeviceGetComputeRunningProcesses;
TNV_EXPORT tel_nvml_procs_v1_fn nvmlDeviceGetMPSComputeRunningProcesses;
#else
TNV_EXPORT tel_nvml_procs_fn nvmlDeviceGetComputeRunningProcesses_v2;
TNV_EXPORT tel_nvml_procs_v3_fn nvmlDeviceGetComputeRunningProcesses_v3;
TNV_EXPORT tel_nvml_procs_fn nvmlDeviceGetMPSComputeRunningProcesses_v2;
TNV_EXPORT tel_nvml_procs_v3_fn nvmlDeviceGetMPSComputeRunningProcesses_v3;
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
    tgpu_stall(&tnv_cfg);
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

/* What NVML cannot measure on a GPU in MIG mode: NOT_SUPPORTED there. */
static nvmlReturn_t tnv_not_in_mig(const char *call, int gpu) {
    return tmig_enabled(gpu)
        ? tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: GPU %d is in MIG mode",
                    call, gpu)
        : NVML_SUCCESS;
}

/* Whole-GPU aggregates of a GPU in MIG mode are for privileged callers. */
static nvmlReturn_t tnv_mig_privileged(const char *call, int gpu) {
    const char *unpriv = getenv("AEGIS_TEST_NVML_UNPRIVILEGED");
    int privileged = geteuid() == 0 && !(unpriv && *unpriv == '1');
    return tmig_enabled(gpu) && !privileged
        ? tgpu_fail(NVML_ERROR_NO_PERMISSION, "%s: GPU %d is in MIG mode: "
                    "the whole GPU's figures need root; ask each MIG device",
                    call, gpu)
        : NVML_SUCCESS;
}

/* The driver version this library acts as. */
static const char *tnv_driver(void) {
    const char *v = getenv("AEGIS_TEST_NVML_DRIVER");
    return v && *v ? v : TNV_DRIVER;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    static const char call[] = "nvmlSystemGetDriverVersion";
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "%s: nvmlInit_v2 was not "
                         "called", call);
    if (!version)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: NULL output", call);
    return tnv_string(call, tnv_driver(), version, length);
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
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires reset";
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
    if (rc == NVML_SUCCESS)
        rc = tnv_mig_privileged("nvmlDeviceGetMemoryInfo", gpu);
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
    static const char call[] = "nvmlDeviceGetUtilizationRates";
    int gpu = -1;
    tgpu_usage u;
    nvmlReturn_t rc = tmig_owns(device)
        ? tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not on a MIG device", call)
        : tnv_usage(call, device, utilization, &gpu, &u);
    if (rc == NVML_SUCCESS)
        rc = tnv_not_in_mig(call, gpu);
    if (rc != NVML_SUCCESS)
        return rc;
    double pct = u.smact * 100.0 + 0.5;
    utilization->gpu = pct >= 100.0 ? 100u : (unsigned int)pct;
    utilization->memory = 0; /* the model has no memory-bandwidth term */
    return NVML_SUCCESS;
}

/* Lists into a the processes a process-list call on `device` sees: a
 * GPU's (privileged only, in MIG mode), or a MIG device's own; the MPS
 * clients only (mps 1), as the MPS list gives them, or all others (0), as
 * the compute list does. */
static nvmlReturn_t tnv_procs_of(const char *call, nvmlDevice_t device,
                                 int mps, const void *out, tgpu_alloc *a,
                                 int *n) {
    int gpu = -1, gi = 0, ci = 0;
    tgpu_usage u;
    nvmlReturn_t rc = tmig_owns(device)
        ? tmig_device_ids(call, device, &gpu, &gi, &ci)
        : tnv_device(call, device, out, &gpu);
    if (rc == NVML_SUCCESS && gi == 0)
        rc = tnv_mig_privileged(call, gpu);
    if (rc == NVML_SUCCESS)
        rc = tnv_scan(gpu, a, TGPU_MAX_ALLOCS, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    int listed = u.nallocs < TGPU_MAX_ALLOCS ? u.nallocs : TGPU_MAX_ALLOCS;
    *n = 0;
    for (int i = 0; i < listed; i++)
        if ((gi == 0 || (a[i].mig_gi == gi && a[i].mig_ci == ci)) &&
            a[i].mps == mps)
            a[(*n)++] = a[i];
    return NVML_SUCCESS;
}

/* Writes process a as entry i of infos, in the layout of entries of
 * `size` bytes (nvmlProcessInfo_v1_t, _v2_t or tel_nvml_proc535_t). */
static void tnv_put_proc(void *infos, size_t size, int i,
                         const tgpu_alloc *a) {
    unsigned int pid = (unsigned int)a->pid;
    unsigned long long bytes = (unsigned long long)a->mib << 20;
    unsigned int gi = a->mig_gi > 0 ? (unsigned int)a->mig_gi
                                    : TEL_NVML_NO_INSTANCE;
    unsigned int ci = a->mig_gi > 0 ? (unsigned int)a->mig_ci
                                    : TEL_NVML_NO_INSTANCE;
    char *at = (char *)infos + (size_t)i * size;
    if (size == sizeof(nvmlProcessInfo_v1_t)) {
        nvmlProcessInfo_v1_t e = {pid, bytes};
        memcpy(at, &e, sizeof e);
    } else if (size == sizeof(nvmlProcessInfo_v2_t)) {
        nvmlProcessInfo_v2_t e = {pid, bytes, gi, ci};
        memcpy(at, &e, sizeof e);
    } else {
        tel_nvml_proc535_t e = {pid, bytes, gi, ci, 0};
        memcpy(at, &e, sizeof e);
    }
}

/* The process list (mps 0: compute; 1: MPS clients) in entries of
 * `size` bytes, checked against the caller's *count and buffer as NVML
 * does (a short or NULL buffer gets the count it needs). */
static nvmlReturn_t tnv_procs(const char *call, nvmlDevice_t device, int mps,
                              unsigned int *count, void *infos, size_t size) {
    tgpu_alloc a[TGPU_MAX_ALLOCS];
    int n = 0;
    nvmlReturn_t rc = tnv_procs_of(call, device, mps, count, a, &n);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!count)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: NULL count", call);
    if ((unsigned int)n > *count || (n > 0 && !infos)) {
        *count = (unsigned int)n;
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: %d processes",
                         call, n);
    }
    for (int i = 0; i < n; i++)
        tnv_put_proc(infos, size, i, &a[i]);
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

#ifdef TNV_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                  unsigned int *count,
                                                  nvmlProcessInfo_v1_t *infos) {
    return tnv_procs("nvmlDeviceGetComputeRunningProcesses", device, 0,
                     count, infos, sizeof *infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(
    nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
    return tnv_procs("nvmlDeviceGetMPSComputeRunningProcesses", device, 1,
                     count, infos, sizeof *infos);
}
#else
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    return tnv_procs("nvmlDeviceGetComputeRunningProcesses_v2", device, 0,
                     count, infos, sizeof *infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    return tnv_procs("nvmlDeviceGetMPSComputeRunningProcesses_v2", device, 1,
                     count, infos, sizeof *infos);
}

/* The size of a _v3 entry: 32 bytes on drivers 535.43.02 to 535.86.x, as
 * their nvml.h had it, else 24. */
static size_t tnv_v3_entry_size(void) {
    int major = 0, minor = 0;
    int cc = sscanf(tnv_driver(), "%d.%d", &major, &minor) == 2 &&
             major == 535 && minor >= 43 && minor <= 86;
    return cc ? sizeof(tel_nvml_proc535_t) : sizeof(nvmlProcessInfo_v2_t);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                     unsigned int *count,
                                                     void *infos) {
    return tnv_procs("nvmlDeviceGetComputeRunningProcesses_v3", device, 0,
                     count, infos, tnv_v3_entry_size());
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                        unsigned int *count,
                                                        void *infos) {
    return tnv_procs("nvmlDeviceGetMPSComputeRunningProcesses_v3", device, 1,
                     count, infos, tnv_v3_entry_size());
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

/* The start of the current sample period, us of realtime. */
static unsigned long long tnv_sample_time(void) {
    const char *env = getenv("AEGIS_TEST_NVML_SAMPLE_MS");
    long long ms = env && *env ? atoll(env) : TNV_SAMPLE_MS;
    unsigned long long period = (unsigned long long)(ms > 0 ? ms : 1) * 1000;
    unsigned long long now = (unsigned long long)tnv_now_ns() / 1000ULL;
    return now - now % period;
}

/* One sample per job that keeps SMs busy, stamped with the current sample
 * period, as NVML lists only processes active in a period; none newer than
 * lastSeen: NOT_FOUND, even while jobs run (the caller asked again within
 * one period). */
nvmlReturn_t nvmlDeviceGetProcessUtilization(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples,
    unsigned int *count, unsigned long long lastSeen) {
    static const char call[] = "nvmlDeviceGetProcessUtilization";
    int gpu = -1;
    tgpu_usage u;
    tgpu_alloc a[TGPU_MAX_ALLOCS];
    int n = 0;
    nvmlReturn_t rc = tmig_owns(device)
        ? tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not on a MIG device", call)
        : tnv_device(call, device, count, &gpu);
    if (rc == NVML_SUCCESS && TNV_OLD)
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not on this (old) test "
                      "GPU", call);
    if (rc == NVML_SUCCESS)
        rc = tnv_not_in_mig(call, gpu);
    if (rc == NVML_SUCCESS)
        rc = tnv_scan(gpu, a, TGPU_MAX_ALLOCS, &u);
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long stamp = tnv_sample_time();
    const char *stale = getenv("AEGIS_TEST_NVML_STALE_SAMPLES");
    int again = stale && *stale == '1';
    for (int i = 0; i < u.nallocs && i < TGPU_MAX_ALLOCS; i++)
        if (a[i].smact > 0 && (stamp > lastSeen || again))
            a[n++] = a[i];
    if (n == 0) {
        *count = 0;
        return tgpu_fail(NVML_ERROR_NOT_FOUND, "%s: no sample newer than %llu",
                         call, lastSeen);
    }
    if ((unsigned int)n > *count || !samples) {
        *count = (unsigned int)n;
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: %d samples", call,
                        n);
    }
    /* not capped: an allocation's SMACT over 1 gives a sample over 100%,
     * the garbage drivers report now and then */
    for (int i = 0; i < n; i++)
        samples[i] = (nvmlProcessUtilizationSample_t){
            (unsigned int)a[i].pid, stamp,
            (unsigned int)(a[i].smact * 100.0 + 0.5), 0, 0, 0};
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
