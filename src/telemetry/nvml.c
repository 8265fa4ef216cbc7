/* nvml.c -- tel.h over NVML, loaded at run time with dlopen.
 *
 * The library is found by path, its functions looked up by name into a
 * table of typed pointers (tel_nvml.h). Versioned names come first because
 * the unversioned ones are kept by the driver only for old binaries and can
 * fill older struct layouts: nvmlInit_v2 and friends are what nvml.h has
 * mapped the plain names to since CUDA 5. Power, energy and per-process
 * utilization are optional: a driver or GPU without them gives
 * CORE_UNKNOWN, not an error. DCGM (dcgm.c) is attached here only to fill
 * the profiling fields of each reading.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tel_state.h"

/* The library tried when neither the caller nor the environment name one:
 * the soname the driver package installs. */
#define TEL_DEFAULT_LIBRARY "libnvidia-ml.so.1"

/* Times tel_read asks again for the process list when it grew between the
 * count and the copy; jobs start rarely, so more tries mean a broken driver. */
#define TEL_PROCS_TRIES 3

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
    {{"nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetComputeRunningProcesses_v2"},
     offsetof(tel_fns, procs), 1},
    {{"nvmlDeviceGetComputeRunningProcesses"}, offsetof(tel_fns, procs_v1), 1},
    {{"nvmlDeviceGetPowerUsage"}, offsetof(tel_fns, power), 1},
    {{"nvmlDeviceGetTotalEnergyConsumption"}, offsetof(tel_fns, energy), 1},
    {{"nvmlDeviceGetProcessUtilization"}, offsetof(tel_fns, proc_util), 1},
};

void tel_fail(const tel_state *tel, const char *call, int gpu,
              nvmlReturn_t rc, char *err, size_t errlen) {
    const char *why = tel->fn.error_string ? tel->fn.error_string(rc) : NULL;
    if (gpu >= 0)
        snprintf(err, errlen, "%s: %s (GPU %d): %s (NVML error %d)",
                 tel->path, call, gpu, why ? why : "?", rc);
    else
        snprintf(err, errlen, "%s: %s: %s (NVML error %d)", tel->path, call,
                 why ? why : "?", rc);
}

int tel_syms_load(void *lib, const char *path, const tel_sym *syms,
                  size_t nsyms, void *fns, const char *hint, char *err,
                  size_t errlen) {
    for (size_t i = 0; i < nsyms; i++) {
        const tel_sym *s = &syms[i];
        void *addr = NULL;
        for (int n = 0; n < TEL_SYM_NAMES && s->names[n] && !addr; n++)
            addr = dlsym(lib, s->names[n]);
        if (!addr && !s->optional) {
            snprintf(err, errlen, "%s: dlsym %s: not found (%s)", path,
                     s->names[0], hint);
            return -1;
        }
        /* POSIX guarantees data and function pointers convert via dlsym. */
        memcpy((char *)fns + s->slot, &addr, sizeof addr);
    }
    return 0;
}

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
                 "_v3: not found, nor _v2 or the unversioned one", tel->path);
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

const char *tel_gpu_name(const tel_state *tel, int gpu) {
    return gpu >= 0 && gpu < tel->ngpus ? tel->gpus[gpu].name : NULL;
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

/* Asks the library for the compute processes through whichever variant it
 * has, normalised to the 4-field layout in tel->procs. *n is in: capacity,
 * out: entries (or the entries needed on INSUFFICIENT_SIZE). */
static nvmlReturn_t tel_call_procs(tel_state *tel, nvmlDevice_t h,
                                   unsigned int *n) {
    if (tel->fn.procs)
        return tel->fn.procs(h, n, tel->procs);
    /* The v1 layout is smaller: fill it in place, spread it backwards so no
     * entry is overwritten before it is moved. */
    nvmlProcessInfo_v1_t *v1 = (nvmlProcessInfo_v1_t *)tel->procs;
    nvmlReturn_t rc = tel->fn.procs_v1(h, n, v1);
    if (rc != NVML_SUCCESS)
        return rc;
    for (unsigned int i = *n; i-- > 0;) {
        nvmlProcessInfo_v1_t e = v1[i];
        tel->procs[i] = (nvmlProcessInfo_t){e.pid, e.usedGpuMemory,
                                            0xFFFFFFFFu, 0xFFFFFFFFu};
    }
    return NVML_SUCCESS;
}

/* Fills out->procs; entries past TEL_MAX_PROCS are counted in tel->dropped. */
static int tel_read_procs(tel_state *tel, int gpu, tel_gpu_reading *out,
                          char *err, size_t errlen) {
    unsigned int want = TEL_MAX_PROCS;
    nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int t = 0; t < TEL_PROCS_TRIES && rc == NVML_ERROR_INSUFFICIENT_SIZE;
         t++) {
        if (tel_grow(tel, gpu, (void **)&tel->procs, &tel->procs_cap, want,
                     sizeof *tel->procs, "processes", err, errlen) < 0)
            return -1;
        unsigned int n = tel->procs_cap;
        rc = tel_call_procs(tel, tel->gpus[gpu].handle, &n);
        if (rc == NVML_SUCCESS) {
            unsigned int keep = n < TEL_MAX_PROCS ? n : TEL_MAX_PROCS;
            for (unsigned int i = 0; i < keep; i++) {
                unsigned long long b = tel->procs[i].usedGpuMemory;
                out->procs[i].pid = (pid_t)tel->procs[i].pid;
                out->procs[i].used_mib = b == NVML_VALUE_NOT_AVAILABLE
                    ? CORE_UNKNOWN : (double)b / (1024.0 * 1024.0);
                out->procs[i].sm_util = CORE_UNKNOWN;
            }
            out->nprocs = (int)keep;
            tel->dropped += (long)(n - keep);
            return 0;
        }
        /* Room for the count NVML asked for plus a few that may start
         * before the next call. */
        want = n + 8;
    }
    tel_fail(tel, tel->fn.procs ? "nvmlDeviceGetComputeRunningProcesses"
             : "nvmlDeviceGetComputeRunningProcesses (v1)", gpu, rc, err,
             errlen);
    return -1;
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

/* Per-process SM utilization: each listed process takes its newest sample.
 * NVML samples only processes that ran kernels, so one without a sample (or
 * NOT_FOUND: none has one) was idle, 0; NOT_SUPPORTED or a library without
 * the call leaves CORE_UNKNOWN; any other failure is the GPU's. */
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
    for (int i = 0; i < out->nprocs; i++) {
        tel_proc *p = &out->procs[i];
        unsigned long long newest = 0;
        p->sm_util = 0;
        for (unsigned int s = 0; s < n; s++) {
            const nvmlProcessUtilizationSample_t *u = &tel->samples[s];
            if ((pid_t)u->pid != p->pid || u->timeStamp < newest)
                continue;
            newest = u->timeStamp;
            p->sm_util = u->smUtil > 100 ? 100.0 : (double)u->smUtil;
        }
    }
    for (unsigned int s = 0; s < n; s++)
        if (tel->samples[s].timeStamp > tel->gpus[gpu].util_seen)
            tel->gpus[gpu].util_seen = tel->samples[s].timeStamp;
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

    nvmlMemory_t mem;
    nvmlReturn_t rc = tel->fn.memory(h, &mem);
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceGetMemoryInfo", gpu, rc, err, errlen);
        return -1;
    }
    out->r.used_mib = (double)mem.used / (1024.0 * 1024.0);
    out->r.total_mib = (double)mem.total / (1024.0 * 1024.0);

    nvmlUtilization_t u;
    rc = tel->fn.util(h, &u);
    if (rc == NVML_SUCCESS)
        out->r.util = u.gpu / 100.0;
    else if (rc == NVML_ERROR_NOT_SUPPORTED)
        out->r.util = CORE_UNKNOWN;
    else {
        tel_fail(tel, "nvmlDeviceGetUtilizationRates", gpu, rc, err, errlen);
        return -1;
    }
    if (tel_read_power(tel, gpu, out, err, errlen) < 0 ||
        tel_read_procs(tel, gpu, out, err, errlen) < 0)
        return -1;
    return tel_read_proc_util(tel, gpu, out, err, errlen);
}
