/* nvml.c -- tel.h over NVML, loaded at run time with dlopen.
 *
 * The library is found by path, its functions looked up by name into a
 * table of typed pointers (tel_nvml.h). Versioned names come first because
 * the unversioned ones are kept by the driver only for old binaries and can
 * fill older struct layouts: nvmlInit_v2 and friends are what nvml.h has
 * mapped the plain names to since CUDA 5. The process list is the one
 * exception to "newest first": its _v2 fills 24-byte entries on every
 * driver from 450.66 on, while _v3 filled 32-byte ones on 535.43.02 to
 * 535.86.x (tel_nvml.h), so aegis calls _v2, and the unversioned call on
 * drivers older than 450.66. MPS clients are not in that list: NVML gives
 * them in the MPS list (nvmlDeviceGetMPSComputeRunningProcesses, the same
 * family and layouts), so a reading joins the two, one entry per pid.
 * Power, energy and per-process utilization are
 * optional: a driver or GPU without them gives CORE_UNKNOWN, not an
 * error. DCGM (dcgm.c) is attached here only to fill
 * the profiling fields of each reading.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tel_mig.h"
#include "tel_state.h"
#include "tel_syms.h"

/* The library tried when neither the caller nor the environment name one:
 * the soname the driver package installs. */
#define TEL_DEFAULT_LIBRARY "libnvidia-ml.so.1"

/* Times tel_read asks again for the process list when it grew between the
 * count and the copy; jobs start rarely, so more tries mean a broken driver. */
#define TEL_PROCS_TRIES 3

/* How long a process's latest utilization sample stands for it while NVML
 * has none newer. NVML samples each process once a period (up to a second)
 * and answers NOT_FOUND to a read within the same period, busy processes
 * or not: "no new sample" means "as before" for a while, and "idle" only
 * after this long without one. */
#define TEL_UTIL_HOLD_S 5.0

static const tel_sym tel_syms[] = {
    {{"nvmlInit_v2"}, offsetof(tel_fns, init), 0},
    {{"nvmlShutdown"}, offsetof(tel_fns, shutdown), 0},
    {{"nvmlErrorString"}, offsetof(tel_fns, error_string), 0},
    {{"nvmlDeviceGetCount_v2"}, offsetof(tel_fns, count), 0},
    {{"nvmlDeviceGetHandleByIndex_v2"}, offsetof(tel_fns, handle), 0},
    {{"nvmlDeviceGetUUID"}, offsetof(tel_fns, uuid), 0},
    {{"nvmlDeviceGetName"}, offsetof(tel_fns, name), 0},
    {{"nvmlDeviceGetMemoryInfo"}, offsetof(tel_fns, memory), 0},
    {{"nvmlDeviceGetUtilizationRates"}, offsetof(tel_fns, util), 0},
    {{"nvmlDeviceGetComputeRunningProcesses_v2"}, offsetof(tel_fns, procs),
     1},
    {{"nvmlDeviceGetComputeRunningProcesses"}, offsetof(tel_fns, procs_v1), 1},
    {{"nvmlDeviceGetMPSComputeRunningProcesses_v2"},
     offsetof(tel_fns, mps_procs), 1},
    {{"nvmlDeviceGetMPSComputeRunningProcesses"},
     offsetof(tel_fns, mps_procs_v1), 1},
    {{"nvmlDeviceGetPowerUsage"}, offsetof(tel_fns, power), 1},
    {{"nvmlDeviceGetTotalEnergyConsumption"}, offsetof(tel_fns, energy), 1},
    {{"nvmlDeviceGetProcessUtilization"}, offsetof(tel_fns, proc_util), 1},
    {{"nvmlSystemGetDriverVersion"}, offsetof(tel_fns, driver_version), 1},
};

/* Fills tel->fn from the library. Returns 0, or -1 naming the first
 * required function that is missing. */
static int tel_load_syms(tel_state *tel, char *err, size_t errlen) {
    if (tel_syms_load(tel->lib, tel->path, tel_syms,
                      sizeof tel_syms / sizeof tel_syms[0], &tel->fn,
                      "not an NVML library, or a driver older than CUDA 5",
                      err, errlen) < 0)
        return -1;
    if (!tel->fn.procs && !tel->fn.procs_v1) {
        snprintf(err, errlen, "%s: dlsym nvmlDeviceGetComputeRunningProcesses"
                 "_v2: not found, nor the unversioned one", tel->path);
        return -1;
    }
    return 0;
}

/* Reads each GPU's handle, UUID and name once: they never change while the
 * driver is loaded. */
static int tel_enumerate(tel_state *tel, char *err, size_t errlen) {
    unsigned int n = 0;
    nvmlReturn_t rc = tel->fn.count(&n);
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceGetCount_v2", -1, rc, err, errlen);
        return -1;
    }
    /* The core manages at most CORE_MAX_GPUS; a bigger box is not a target,
     * so say so rather than schedule on a part of it silently. */
    if (n > CORE_MAX_GPUS) {
        snprintf(err, errlen, "%s: %u GPUs, aegis manages at most %d",
                 tel->path, n, CORE_MAX_GPUS);
        return -1;
    }
    for (unsigned int i = 0; i < n; i++) {
        tel_dev *d = &tel->gpus[i];
        rc = tel->fn.handle(i, &d->handle);
        if (rc != NVML_SUCCESS) {
            tel_fail(tel, "nvmlDeviceGetHandleByIndex_v2", (int)i, rc, err,
                     errlen);
            return -1;
        }
        rc = tel->fn.uuid(d->handle, d->uuid, sizeof d->uuid);
        if (rc != NVML_SUCCESS) {
            tel_fail(tel, "nvmlDeviceGetUUID", (int)i, rc, err, errlen);
            return -1;
        }
        rc = tel->fn.name(d->handle, d->name, sizeof d->name);
        if (rc != NVML_SUCCESS) {
            tel_fail(tel, "nvmlDeviceGetName", (int)i, rc, err, errlen);
            return -1;
        }
    }
    tel->ngpus = (int)n;
    /* Only for what aegisd says at start: a driver that cannot tell is
     * no reason not to run. */
    if (!tel->fn.driver_version ||
        tel->fn.driver_version(tel->driver, sizeof tel->driver) !=
            NVML_SUCCESS)
        snprintf(tel->driver, sizeof tel->driver, "unknown");
    return 0;
}

tel_state *tel_open(const char *path, char *err, size_t errlen) {
    if (!path)
        path = getenv("AEGIS_NVML_LIBRARY");
    if (!path || !*path)
        path = TEL_DEFAULT_LIBRARY;
    tel_state *tel = calloc(1, sizeof *tel);
    if (!tel) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(tel->path, sizeof tel->path, "%s", path);
    tel->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!tel->lib) {
        const char *why = dlerror();
        snprintf(err, errlen, "%s: dlopen: %s", path, why ? why : "failed");
        free(tel);
        return NULL;
    }
    if (tel_load_syms(tel, err, errlen) < 0)
        goto fail;
    tel_mig_load(tel);
    nvmlReturn_t rc = tel->fn.init();
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlInit_v2", -1, rc, err, errlen);
        goto fail;
    }
    tel->initialised = 1;
    if (tel_enumerate(tel, err, errlen) < 0)
        goto fail;
    return tel;
fail:
    tel_close(tel);
    return NULL;
}

void tel_close(tel_state *tel) {
    if (!tel)
        return;
    if (tel->initialised)
        tel->fn.shutdown();
    if (tel->lib)
        dlclose(tel->lib);
    tel_dcgm_close(tel->dcgm);
    free(tel->procs);
    free(tel->samples);
    free(tel);
}

int tel_open_dcgm(tel_state *tel, const char *path, char *err, size_t errlen) {
    tel_dcgm *dc = tel_dcgm_open(path, tel->ngpus, err, errlen);
    if (!dc)
        return -1;
    tel_dcgm_close(tel->dcgm);
    tel->dcgm = dc;
    return 0;
}

const char *tel_dcgm_error(const tel_state *tel) {
    return tel->dcgm ? tel_dcgm_last_error(tel->dcgm) : NULL;
}

int tel_gpu_count(const tel_state *tel) {
    return tel->ngpus;
}

const char *tel_gpu_uuid(const tel_state *tel, int gpu) {
    return gpu >= 0 && gpu < tel->ngpus ? tel->gpus[gpu].uuid : NULL;
}

const char *tel_driver_version(const tel_state *tel) {
    return tel->driver;
}

const char *tel_gpu_name(const tel_state *tel, int gpu) {
    return gpu >= 0 && gpu < tel->ngpus ? tel->gpus[gpu].name : NULL;
}

const char *tel_flag_text(unsigned int flag) {
    switch (flag) {
    case TEL_F_NO_UTIL:
        return "NVML has no utilization for it (MIG mode): its utilization "
               "and its processes' are unknown";
    case TEL_F_BY_MIG_DEVICE:
        return "memory and processes read per MIG device (in MIG mode the "
               "whole GPU's need root)";
    default:
        return "?";
    }
}

long tel_dropped_procs(const tel_state *tel) {
    return tel->dropped;
}

/* Makes room for at least `want` entries of `size` bytes in the buffer
 * *buf of *cap entries. Returns 0, or -1 with "out of memory for <want>
 * <what>" in err. */
static int tel_grow(const tel_state *tel, int gpu, void **buf,
                    unsigned int *cap, unsigned int want, size_t size,
                    const char *what, char *err, size_t errlen) {
    if (want <= *cap)
        return 0;
    void *p = realloc(*buf, want * size);
    if (!p) {
        snprintf(err, errlen, "%s: GPU %d: out of memory for %u %s",
                 tel->path, gpu, want, what);
        return -1;
    }
    *buf = p;
    *cap = want;
    return 0;
}

/* One of the two process lists: its _v2 call, else its unversioned one
 * (a driver older than 450.66), and the name said when it fails. */
typedef struct tel_proc_list {
    tel_nvml_procs_fn *v2;
    tel_nvml_procs_v1_fn *v1;
    const char *name_v2, *name_v1;
} tel_proc_list;

/* Asks the library for a list through _v2, or the unversioned call,
 * normalised to the v2 layout in tel->procs. *n is in: capacity, out:
 * entries (or the entries needed on INSUFFICIENT_SIZE). */
static nvmlReturn_t tel_call_procs(tel_state *tel, const tel_proc_list *l,
                                   nvmlDevice_t h, unsigned int *n) {
    if (l->v2)
        return l->v2(h, n, tel->procs);
    /* The v1 layout is smaller: fill it in place, spread it backwards so no
     * entry is overwritten before it is moved. */
    nvmlProcessInfo_v1_t *v1 = (nvmlProcessInfo_v1_t *)tel->procs;
    nvmlReturn_t rc = l->v1(h, n, v1);
    if (rc != NVML_SUCCESS)
        return rc;
    for (unsigned int i = *n; i-- > 0;) {
        nvmlProcessInfo_v1_t e = v1[i];
        tel->procs[i] = (nvmlProcessInfo_v2_t){e.pid, e.usedGpuMemory,
                                            0xFFFFFFFFu, 0xFFFFFFFFu};
    }
    return NVML_SUCCESS;
}

/* An instance id from NVML as tel_proc holds it: -1 for none. */
static int tel_instance_id(unsigned int id) {
    return id == TEL_NVML_NO_INSTANCE ? -1 : (int)id;
}

/* Appends NVML's entry e to out->procs, unless its pid is listed already
 * (a process in both lists); past TEL_MAX_PROCS it is counted in
 * tel->dropped. */
static void tel_add_proc(tel_state *tel, const nvmlProcessInfo_v2_t *e,
                         tel_gpu_reading *out) {
    for (int i = 0; i < out->nprocs; i++)
        if (out->procs[i].pid == (pid_t)e->pid)
            return;
    if (out->nprocs == TEL_MAX_PROCS) {
        tel->dropped++;
        return;
    }
    out->procs[out->nprocs++] = (tel_proc){
        .pid = (pid_t)e->pid,
        .used_mib = e->usedGpuMemory == NVML_VALUE_NOT_AVAILABLE
                        ? CORE_UNKNOWN
                        : (double)e->usedGpuMemory / 1048576.0,
        .sm_util = CORE_UNKNOWN,
        .mig_gi = tel_instance_id(e->gpuInstanceId),
        .mig_ci = tel_instance_id(e->computeInstanceId)};
}

/* Appends the processes of list l for handle h (GPU gpu's, or one of its
 * MIG devices') to out->procs. Returns NVML's answer; err is filled
 * unless it worked. */
static nvmlReturn_t tel_read_list(tel_state *tel, const tel_proc_list *l,
                                  int gpu, nvmlDevice_t h,
                                  tel_gpu_reading *out, char *err,
                                  size_t errlen) {
    unsigned int want = TEL_MAX_PROCS;
    nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int t = 0; t < TEL_PROCS_TRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE;
         t++) {
        if (tel_grow(tel, gpu, (void **)&tel->procs, &tel->procs_cap, want,
                     sizeof *tel->procs, "processes", err, errlen) < 0)
            return NVML_ERROR_UNKNOWN;
        unsigned int n = tel->procs_cap;
        rc = tel_call_procs(tel, l, h, &n);
        if (rc == NVML_SUCCESS) {
            for (unsigned int i = 0; i < n; i++)
                tel_add_proc(tel, &tel->procs[i], out);
            return NVML_SUCCESS;
        }
        /* Room for the count NVML asked for plus a few that may start
         * before the next call. */
        want = n + 8;
    }
    tel_fail(tel, l->v2 ? l->name_v2 : l->name_v1, gpu, rc, err, errlen);
    return rc;
}

/* Appends the processes NVML lists for handle h (GPU gpu's, or one of its
 * MIG devices') to out->procs: the compute list's, then the MPS clients'
 * of the MPS list where the driver has it. Returns NVML's answer; err is
 * filled unless it worked. */
static nvmlReturn_t tel_read_procs(tel_state *tel, int gpu, nvmlDevice_t h,
                                   tel_gpu_reading *out, char *err,
                                   size_t errlen) {
    const tel_proc_list compute = {
        tel->fn.procs, tel->fn.procs_v1,
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetComputeRunningProcesses"};
    const tel_proc_list mps = {
        tel->fn.mps_procs, tel->fn.mps_procs_v1,
        "nvmlDeviceGetMPSComputeRunningProcesses_v2",
        "nvmlDeviceGetMPSComputeRunningProcesses"};
    nvmlReturn_t rc = tel_read_list(tel, &compute, gpu, h, out, err, errlen);
    if (rc != NVML_SUCCESS || (!mps.v2 && !mps.v1))
        return rc;
    rc = tel_read_list(tel, &mps, gpu, h, out, err, errlen);
    /* a GPU without MPS has no MPS clients */
    return rc == NVML_ERROR_NOT_SUPPORTED ? NVML_SUCCESS : rc;
}
/* The handles of GPU gpu's MIG devices into hs (TEL_MIG_MAX_DEVS at
 * most). Returns how many, or -1 with err filled. */
static int tel_mig_handles(tel_state *tel, int gpu, nvmlDevice_t *hs,
                           char *err, size_t errlen) {
    nvmlDevice_t h = tel->gpus[gpu].handle;
    unsigned int max = 0;
    const char *call = "nvmlDeviceGetMaxMigDeviceCount";
    nvmlReturn_t rc = tel->mig.complete ? tel->mig.mig_max(h, &max)
                                        : NVML_ERROR_FUNCTION_NOT_FOUND;
    int n = 0;
    for (unsigned int i = 0; rc == NVML_SUCCESS && i < max &&
                             n < TEL_MIG_MAX_DEVS; i++) {
        call = "nvmlDeviceGetMigDeviceHandleByIndex";
        rc = tel->mig.mig_handle(h, i, &hs[n]);
        if (rc == NVML_SUCCESS)
            n++;
        else if (rc == NVML_ERROR_NOT_FOUND)
            rc = NVML_SUCCESS; /* no device at this index */
    }
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, call, gpu, rc, err, errlen);
        return -1;
    }
    return n;
}

/* Memory and processes of a GPU in MIG mode whose whole-GPU handle
 * refused them (NO_PERMISSION: only a privileged caller gets the
 * aggregate): summed over its MIG devices, which anyone may ask. The
 * total is the GPU's from aegis's MIG table, else its instances' sum. */
static int tel_read_by_mig_devices(tel_state *tel, int gpu,
                                   tel_gpu_reading *out, char *err,
                                   size_t errlen) {
    nvmlDevice_t hs[TEL_MIG_MAX_DEVS];
    int n = tel_mig_handles(tel, gpu, hs, err, errlen);
    if (n < 0)
        return -1;
    double used = 0, total = 0;
    out->nprocs = 0;
    for (int i = 0; i < n; i++) {
        nvmlMemory_t mem;
        nvmlReturn_t rc = tel->fn.memory(hs[i], &mem);
        if (rc != NVML_SUCCESS) {
            tel_fail(tel, "nvmlDeviceGetMemoryInfo (MIG device)", gpu, rc,
                     err, errlen);
            return -1;
        }
        used += (double)mem.used;
        total += (double)mem.total;
        if (tel_read_procs(tel, gpu, hs[i], out, err, errlen) != NVML_SUCCESS)
            return -1;
    }
    const mig_model *model = mig_model_find(tel->gpus[gpu].name);
    out->r.used_mib = used / 1048576.0;
    out->r.total_mib = model ? (double)model->total_mib : total / 1048576.0;
    out->flags |= TEL_F_BY_MIG_DEVICE;
    return 0;
}

/* Memory and processes through the whole-GPU handle, or its MIG devices
 * when that needs privileges aegisd lacks. */
static int tel_read_memory(tel_state *tel, int gpu, tel_gpu_reading *out,
                           char *err, size_t errlen) {
    nvmlDevice_t h = tel->gpus[gpu].handle;
    nvmlMemory_t mem;
    nvmlReturn_t rc = tel->fn.memory(h, &mem);
    if (rc == NVML_SUCCESS)
        rc = tel_read_procs(tel, gpu, h, out, err, errlen);
    else
        tel_fail(tel, "nvmlDeviceGetMemoryInfo", gpu, rc, err, errlen);
    if (rc == NVML_ERROR_NO_PERMISSION && tel_mig_enabled(tel, gpu, err,
                                                          errlen) == 1)
        return tel_read_by_mig_devices(tel, gpu, out, err, errlen);
    if (rc != NVML_SUCCESS)
        return -1;
    out->r.used_mib = (double)mem.used / 1048576.0;
    out->r.total_mib = (double)mem.total / 1048576.0;
    return 0;
}

/* Asks for the process-utilization samples newer than the last read, into
 * tel->samples, growing it as NVML asks. Returns NVML's answer, with err
 * filled unless it is an answer (SUCCESS, NOT_FOUND, NOT_SUPPORTED), or -1
 * when out of memory; *n is the samples got. */
static nvmlReturn_t tel_call_proc_util(tel_state *tel, int gpu,
                                       unsigned int *n, char *err,
                                       size_t errlen) {
    tel_dev *d = &tel->gpus[gpu];
    nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
    unsigned int want = TEL_MAX_PROCS;
    for (int t = 0; t < TEL_PROCS_TRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE;
         t++) {
        if (tel_grow(tel, gpu, (void **)&tel->samples, &tel->samples_cap,
                     want, sizeof *tel->samples, "utilization samples", err,
                     errlen) < 0)
            return -1;
        *n = tel->samples_cap;
        rc = tel->fn.proc_util(d->handle, tel->samples, n, d->util_seen);
        want = *n + 8;
    }
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_FOUND &&
        rc != NVML_ERROR_NOT_SUPPORTED)
        tel_fail(tel, "nvmlDeviceGetProcessUtilization", gpu, rc, err,
                 errlen);
    return rc;
}

static double tel_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The memo for pid among memos[0..n), or NULL. */
static tel_util_memo *tel_memo_find(tel_util_memo *memos, int n, pid_t pid) {
    for (int i = 0; i < n; i++)
        if (memos[i].pid == pid)
            return &memos[i];
    return NULL;
}

/* Whether a utilization sample can be used: newer than the last one read
 * (`seen`; some drivers give older ones again), and at most 100%: drivers
 * report garbage above it now and then, which nvtop drops too; clamped to
 * 100 it would read as a busy process. */
static bool tel_sample_valid(const nvmlProcessUtilizationSample_t *u,
                             unsigned long long seen) {
    return u->timeStamp > seen && u->smUtil <= 100;
}

/* Per-process SM utilization: each listed process takes its newest new
 * valid sample (tel_sample_valid), else its latest one while that stands (TEL_UTIL_HOLD_S: NOT_FOUND
 * only says nothing is newer), else 0: NVML samples only processes that
 * ran kernels, so one without a sample for that long was idle. Samples of
 * processes not listed yet are kept too: a process that started between
 * the two calls has its sample read now, and the next read asks for newer
 * ones only. NOT_SUPPORTED (a GPU in MIG mode) or a library without the
 * call leaves CORE_UNKNOWN; any other failure is the GPU's. */
static int tel_read_proc_util(tel_state *tel, int gpu, tel_gpu_reading *out,
                              char *err, size_t errlen) {
    if (!tel->fn.proc_util)
        return 0;
    unsigned int n = 0;
    nvmlReturn_t rc = tel_call_proc_util(tel, gpu, &n, err, errlen);
    if (rc == NVML_ERROR_NOT_SUPPORTED)
        return 0;
    if (rc == NVML_ERROR_NOT_FOUND)
        n = 0;
    else if (rc != NVML_SUCCESS)
        return -1;
    tel_dev *d = &tel->gpus[gpu];
    tel_util_memo kept[TEL_MAX_PROCS];
    unsigned long long stamp[TEL_MAX_PROCS];
    int nkept = 0;
    double now = tel_now_s();
    unsigned long long seen = d->util_seen;
    for (unsigned int s = 0; s < n; s++) {
        const nvmlProcessUtilizationSample_t *u = &tel->samples[s];
        if (u->timeStamp > d->util_seen)
            d->util_seen = u->timeStamp;
        if (!tel_sample_valid(u, seen))
            continue;
        tel_util_memo *m = tel_memo_find(kept, nkept, (pid_t)u->pid);
        if (!m && nkept == TEL_MAX_PROCS)
            continue;
        if (!m) {
            m = &kept[nkept];
            stamp[nkept++] = 0;
        }
        if (u->timeStamp >= stamp[m - kept]) {
            stamp[m - kept] = u->timeStamp;
            *m = (tel_util_memo){(pid_t)u->pid, (double)u->smUtil, now};
        }
    }
    for (int i = 0; i < out->nprocs; i++) {
        tel_proc *p = &out->procs[i];
        const tel_util_memo *m = tel_memo_find(kept, nkept, p->pid);
        const tel_util_memo *old = tel_memo_find(d->util, d->nutil, p->pid);
        if (!m && old && now - old->at <= TEL_UTIL_HOLD_S &&
            nkept < TEL_MAX_PROCS) {
            kept[nkept] = *old;
            m = &kept[nkept++];
        }
        p->sm_util = m ? m->sm_util : 0.0;
    }
    memcpy(d->util, kept, (size_t)nkept * sizeof kept[0]);
    d->nutil = nkept;
    return 0;
}

/* Power and energy: NOT_SUPPORTED (or a library without the call) is an
 * answer, CORE_UNKNOWN; any other failure is the GPU's. */
static int tel_read_power(tel_state *tel, int gpu, tel_gpu_reading *out,
                          char *err, size_t errlen) {
    nvmlDevice_t h = tel->gpus[gpu].handle;
    out->power_w = CORE_UNKNOWN;
    out->energy_j = CORE_UNKNOWN;
    if (tel->fn.power) {
        unsigned int mw = 0;
        nvmlReturn_t rc = tel->fn.power(h, &mw);
        if (rc == NVML_SUCCESS)
            out->power_w = mw / 1000.0;
        else if (rc != NVML_ERROR_NOT_SUPPORTED) {
            tel_fail(tel, "nvmlDeviceGetPowerUsage", gpu, rc, err, errlen);
            return -1;
        }
    }
    if (tel->fn.energy) {
        unsigned long long mj = 0;
        nvmlReturn_t rc = tel->fn.energy(h, &mj);
        if (rc == NVML_SUCCESS)
            out->energy_j = (double)mj / 1000.0;
        else if (rc != NVML_ERROR_NOT_SUPPORTED) {
            tel_fail(tel, "nvmlDeviceGetTotalEnergyConsumption", gpu, rc, err,
                     errlen);
            return -1;
        }
    }
    return 0;
}

int tel_read(tel_state *tel, int gpu, tel_gpu_reading *out, char *err,
             size_t errlen) {
    if (gpu < 0 || gpu >= tel->ngpus) {
        snprintf(err, errlen, "%s: GPU %d: no such GPU (%d found)", tel->path,
                 gpu, tel->ngpus);
        return -1;
    }
    nvmlDevice_t h = tel->gpus[gpu].handle;
    memset(out, 0, sizeof *out);
    /* Without DCGM the core filters on utilization alone. */
    out->r.smact = out->r.smocc = out->r.drama = CORE_UNKNOWN;
    if (tel->dcgm)
        tel_dcgm_read(tel->dcgm, gpu, &out->r);

    if (tel_read_memory(tel, gpu, out, err, errlen) < 0)
        return -1;
    nvmlUtilization_t u;
    nvmlReturn_t rc = tel->fn.util(h, &u);
    if (rc == NVML_SUCCESS) {
        /* a percent, NVML says; a driver's glitch over 100 is a busy GPU */
        out->r.util = (u.gpu > 100 ? 100 : u.gpu) / 100.0;
    } else if (rc == NVML_ERROR_NOT_SUPPORTED) {
        out->r.util = CORE_UNKNOWN;
        out->flags |= TEL_F_NO_UTIL;
    } else {
        tel_fail(tel, "nvmlDeviceGetUtilizationRates", gpu, rc, err, errlen);
        return -1;
    }
    if (tel_read_power(tel, gpu, out, err, errlen) < 0)
        return -1;
    return tel_read_proc_util(tel, gpu, out, err, errlen);
}
