/* mig.c -- tel_mig.h over NVML: MIG instances made, found and destroyed
 * through the library nvml.c loaded.
 *
 * Every call goes by id, not by handle kept from an earlier call: handles
 * do not survive a restart of aegisd, ids do, so the same code creates an
 * instance and cleans up one a crashed aegisd left behind.
 */
#include <stdio.h>
#include <string.h>

#include "tel_mig.h"
#include "tel_state.h"
#include "tel_syms.h"

static const tel_sym tel_mig_syms[] = {
    {{"nvmlDeviceGetMigMode"}, offsetof(tel_mig_fns, mode), 1},
    {{"nvmlDeviceSetMigMode"}, offsetof(tel_mig_fns, set_mode), 1},
    {{"nvmlDeviceGetGpuInstanceProfileInfo"},
     offsetof(tel_mig_fns, gi_profile), 1},
    {{"nvmlDeviceCreateGpuInstanceWithPlacement"},
     offsetof(tel_mig_fns, gi_create), 1},
    {{"nvmlDeviceGetGpuInstanceById"}, offsetof(tel_mig_fns, gi_by_id), 1},
    {{"nvmlGpuInstanceGetInfo"}, offsetof(tel_mig_fns, gi_info), 1},
    {{"nvmlGpuInstanceDestroy"}, offsetof(tel_mig_fns, gi_destroy), 1},
    {{"nvmlGpuInstanceGetComputeInstanceProfileInfo"},
     offsetof(tel_mig_fns, ci_profile), 1},
    {{"nvmlGpuInstanceCreateComputeInstance"},
     offsetof(tel_mig_fns, ci_create), 1},
    {{"nvmlGpuInstanceGetComputeInstanceById"},
     offsetof(tel_mig_fns, ci_by_id), 1},
    {{"nvmlComputeInstanceDestroy"}, offsetof(tel_mig_fns, ci_destroy), 1},
    {{"nvmlDeviceGetMaxMigDeviceCount"}, offsetof(tel_mig_fns, mig_max), 1},
    {{"nvmlDeviceGetMigDeviceHandleByIndex"},
     offsetof(tel_mig_fns, mig_handle), 1},
    {{"nvmlDeviceGetGpuInstanceId"}, offsetof(tel_mig_fns, gi_id), 1},
    {{"nvmlDeviceGetComputeInstanceId"}, offsetof(tel_mig_fns, ci_id), 1},
};

#define TEL_MIG_NSYMS (sizeof tel_mig_syms / sizeof tel_mig_syms[0])

/* NVML's compute-instance profile numbers (NVML_COMPUTE_INSTANCE_PROFILE_
 * *_SLICE) by the compute slices they take: the one that takes a whole GPU
 * instance is the one with its sliceCount. */
static const struct {
    unsigned int slices;
    unsigned int profile;
} tel_ci_profiles[] = {
    {1, 0}, {2, 1}, {3, 2}, {4, 3}, {7, 4}, {8, 5}, {6, 6},
};

void tel_mig_load(tel_state *tel) {
    char unused[8];
    tel_syms_load(tel->lib, tel->path, tel_mig_syms, TEL_MIG_NSYMS, &tel->mig,
                  "", unused, sizeof unused);
    tel->mig.complete = 1;
    for (size_t i = 0; i < TEL_MIG_NSYMS; i++) {
        void *p;
        memcpy(&p, (char *)&tel->mig + tel_mig_syms[i].slot, sizeof p);
        tel->mig.complete &= p != NULL;
    }
}

int tel_mig_supported(const tel_state *tel) {
    return tel->mig.complete;
}

/* The checks every call but tel_mig_enabled starts with. */
static int tel_mig_usable(const tel_state *tel, int gpu, char *err,
                          size_t errlen) {
    if (gpu < 0 || gpu >= tel->ngpus) {
        snprintf(err, errlen, "%s: GPU %d: no such GPU (%d found)", tel->path,
                 gpu, tel->ngpus);
        return -1;
    }
    if (!tel->mig.complete) {
        snprintf(err, errlen, "%s: no MIG calls in this library (a driver "
                 "older than 470?)", tel->path);
        return -1;
    }
    return 0;
}

int tel_mig_enabled(tel_state *tel, int gpu, char *err, size_t errlen) {
    if (gpu < 0 || gpu >= tel->ngpus)
        return tel_mig_usable(tel, gpu, err, errlen); /* -1, saying why */
    if (!tel->mig.complete)
        return 0;
    unsigned int current = 0, pending = 0;
    nvmlReturn_t rc = tel->mig.mode(tel->gpus[gpu].handle, &current,
                                    &pending);
    if (rc == NVML_ERROR_NOT_SUPPORTED)
        return 0;
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceGetMigMode", gpu, rc, err, errlen);
        return -1;
    }
    return current == NVML_DEVICE_MIG_ENABLE;
}

int tel_mig_set_mode(tel_state *tel, int gpu, int on, char *err,
                     size_t errlen) {
    if (tel_mig_usable(tel, gpu, err, errlen) < 0)
        return -1;
    nvmlDevice_t h = tel->gpus[gpu].handle;
    unsigned int want = on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    nvmlReturn_t activation = NVML_SUCCESS;
    nvmlReturn_t rc = tel->mig.set_mode(h, want, &activation);
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceSetMigMode", gpu, rc, err, errlen);
        return -1;
    }
    if (activation == NVML_ERROR_IN_USE) {
        /* Accepted but pending: processes hold the GPU. Left pending, the
         * change would land at the GPU's next reset, whenever that is:
         * take it back, and let the caller ask again once it is idle. */
        nvmlReturn_t ignored;
        tel->mig.set_mode(h, on ? NVML_DEVICE_MIG_DISABLE
                                : NVML_DEVICE_MIG_ENABLE, &ignored);
        tel_fail(tel, on ? "nvmlDeviceSetMigMode (MIG on: the GPU is busy, "
                           "left off)"
                         : "nvmlDeviceSetMigMode (MIG off: the GPU is busy, "
                           "left on)", gpu, activation, err, errlen);
        return TEL_MIG_BUSY;
    }
    if (activation == NVML_ERROR_RESET_REQUIRED) {
        tel_fail(tel, "nvmlDeviceSetMigMode (pending until the GPU is reset: "
                 "nvidia-smi -r, or a reboot where the GPU is passed "
                 "through)", gpu, activation, err, errlen);
        return -1;
    }
    if (activation != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceSetMigMode (not activated)", gpu,
                 activation, err, errlen);
        return -1;
    }
    int now = tel_mig_enabled(tel, gpu, err, errlen);
    if (now < 0)
        return -1;
    if (now != (on != 0)) {
        snprintf(err, errlen, "%s: nvmlDeviceSetMigMode (GPU %d): activated, "
                 "yet MIG mode is still %s", tel->path, gpu,
                 now ? "on" : "off");
        return -1;
    }
    return 0;
}

/* The MIG device of GPU instance gi_id on gpu: its compute instance id
 * and UUID into out. Returns 0, or -1 with a message. */
static int tel_mig_find_dev(tel_state *tel, int gpu, unsigned int gi_id,
                            tel_mig_dev *out, char *err, size_t errlen) {
    nvmlDevice_t h = tel->gpus[gpu].handle;
    unsigned int n = 0;
    nvmlReturn_t rc = tel->mig.mig_max(h, &n);
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, "nvmlDeviceGetMaxMigDeviceCount", gpu, rc, err, errlen);
        return -1;
    }
    for (unsigned int i = 0; i < n; i++) {
        nvmlDevice_t m = NULL;
        unsigned int id = 0;
        rc = tel->mig.mig_handle(h, i, &m);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue;
        if (rc == NVML_SUCCESS)
            rc = tel->mig.gi_id(m, &id);
        if (rc == NVML_SUCCESS && id != gi_id)
            continue;
        if (rc == NVML_SUCCESS)
            rc = tel->mig.ci_id(m, &out->ci_id);
        if (rc == NVML_SUCCESS)
            rc = tel->fn.uuid(m, out->uuid, sizeof out->uuid);
        if (rc != NVML_SUCCESS) {
            tel_fail(tel, "MIG device lookup", gpu, rc, err, errlen);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "%s: GPU %d: no MIG device for GPU instance %u",
             tel->path, gpu, gi_id);
    return -1;
}

/* Creates a compute instance taking all of gi's slices. */
static nvmlReturn_t tel_mig_whole_ci(tel_state *tel, nvmlGpuInstance_t gi,
                                     unsigned int slices,
                                     nvmlComputeInstance_t *ci,
                                     const char **call) {
    unsigned int profile = ~0u;
    for (size_t i = 0; i < sizeof tel_ci_profiles / sizeof *tel_ci_profiles;
         i++)
        if (tel_ci_profiles[i].slices == slices)
            profile = tel_ci_profiles[i].profile;
    nvmlComputeInstanceProfileInfo_t info;
    *call = "nvmlGpuInstanceGetComputeInstanceProfileInfo";
    nvmlReturn_t rc = tel->mig.ci_profile(
        gi, profile, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc != NVML_SUCCESS)
        return rc;
    *call = "nvmlGpuInstanceCreateComputeInstance";
    return tel->mig.ci_create(gi, info.id, ci);
}

int tel_mig_create(tel_state *tel, int gpu, int nvml_profile,
                   unsigned int start, unsigned int size, tel_mig_dev *out,
                   char *err, size_t errlen) {
    if (tel_mig_usable(tel, gpu, err, errlen) < 0)
        return -1;
    nvmlDevice_t h = tel->gpus[gpu].handle;
    memset(out, 0, sizeof *out);
    out->gpu = gpu;
    out->start = start;
    out->size = size;
    nvmlGpuInstanceProfileInfo_t pinfo;
    nvmlGpuInstanceInfo_t ginfo;
    nvmlGpuInstance_t gi = NULL;
    nvmlComputeInstance_t ci = NULL;
    const char *call = "nvmlDeviceGetGpuInstanceProfileInfo";
    nvmlReturn_t rc = tel->mig.gi_profile(h, (unsigned int)nvml_profile,
                                          &pinfo);
    if (rc == NVML_SUCCESS) {
        nvmlGpuInstancePlacement_t pl = {start, size};
        call = "nvmlDeviceCreateGpuInstanceWithPlacement";
        rc = tel->mig.gi_create(h, pinfo.id, &pl, &gi);
    }
    if (rc == NVML_SUCCESS) {
        call = "nvmlGpuInstanceGetInfo";
        rc = tel->mig.gi_info(gi, &ginfo);
    }
    if (rc == NVML_SUCCESS)
        rc = tel_mig_whole_ci(tel, gi, pinfo.sliceCount, &ci, &call);
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, call, gpu, rc, err, errlen);
        if (gi)
            tel->mig.gi_destroy(gi);
        /* Slices the caller planned as free are taken: an instance whose
         * destruction waits for its processes to go. */
        return rc == NVML_ERROR_INSUFFICIENT_RESOURCES ? TEL_MIG_BUSY : -1;
    }
    out->gi_id = ginfo.id;
    out->profile_id = pinfo.id;
    if (tel_mig_find_dev(tel, gpu, ginfo.id, out, err, errlen) < 0) {
        tel->mig.ci_destroy(ci);
        tel->mig.gi_destroy(gi);
        return -1;
    }
    return 0;
}

int tel_mig_destroy(tel_state *tel, int gpu, unsigned int gi_id,
                    unsigned int ci_id, char *err, size_t errlen) {
    if (tel_mig_usable(tel, gpu, err, errlen) < 0)
        return -1;
    nvmlGpuInstance_t gi = NULL;
    nvmlComputeInstance_t ci = NULL;
    nvmlReturn_t rc = tel->mig.gi_by_id(tel->gpus[gpu].handle, gi_id, &gi);
    /* Already gone: NOT_FOUND, or NOT_SUPPORTED once MIG mode is off (a
     * reset or an admin turned it off, taking every instance with it). */
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_NOT_SUPPORTED)
        return 0;
    const char *call = "nvmlDeviceGetGpuInstanceById";
    if (rc == NVML_SUCCESS) {
        call = "nvmlGpuInstanceGetComputeInstanceById";
        rc = tel->mig.ci_by_id(gi, ci_id, &ci);
        if (rc == NVML_SUCCESS) {
            call = "nvmlComputeInstanceDestroy";
            rc = tel->mig.ci_destroy(ci);
        } else if (rc == NVML_ERROR_NOT_FOUND) {
            rc = NVML_SUCCESS; /* created the GI, crashed before the CI */
        }
    }
    if (rc == NVML_SUCCESS) {
        call = "nvmlGpuInstanceDestroy";
        rc = tel->mig.gi_destroy(gi);
    }
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, call, gpu, rc, err, errlen);
        return -1;
    }
    return 0;
}

/* Fills d's GPU-instance fields from GPU instance d->gi_id. */
static nvmlReturn_t tel_mig_gi_fields(tel_state *tel, int gpu, tel_mig_dev *d,
                                      const char **call) {
    nvmlGpuInstance_t gi = NULL;
    nvmlGpuInstanceInfo_t info;
    *call = "nvmlDeviceGetGpuInstanceById";
    nvmlReturn_t rc = tel->mig.gi_by_id(tel->gpus[gpu].handle, d->gi_id, &gi);
    if (rc != NVML_SUCCESS)
        return rc;
    *call = "nvmlGpuInstanceGetInfo";
    rc = tel->mig.gi_info(gi, &info);
    if (rc == NVML_SUCCESS) {
        d->profile_id = info.profileId;
        d->start = info.placement.start;
        d->size = info.placement.size;
    }
    return rc;
}

/* Fills d from the MIG device at index i of gpu, if there is one there:
 * rc NOT_FOUND means none. *call names the NVML call that answered. */
static nvmlReturn_t tel_mig_read_dev(tel_state *tel, int gpu, unsigned int i,
                                     tel_mig_dev *d, const char **call) {
    nvmlDevice_t m = NULL;
    memset(d, 0, sizeof *d);
    d->gpu = gpu;
    *call = "nvmlDeviceGetMigDeviceHandleByIndex";
    nvmlReturn_t rc = tel->mig.mig_handle(tel->gpus[gpu].handle, i, &m);
    if (rc != NVML_SUCCESS)
        return rc;
    *call = "nvmlDeviceGetGpuInstanceId";
    if ((rc = tel->mig.gi_id(m, &d->gi_id)) != NVML_SUCCESS)
        return rc;
    *call = "nvmlDeviceGetComputeInstanceId";
    if ((rc = tel->mig.ci_id(m, &d->ci_id)) != NVML_SUCCESS)
        return rc;
    *call = "nvmlDeviceGetUUID";
    if ((rc = tel->fn.uuid(m, d->uuid, sizeof d->uuid)) != NVML_SUCCESS)
        return rc;
    return tel_mig_gi_fields(tel, gpu, d, call);
}

int tel_mig_list(tel_state *tel, int gpu, tel_mig_dev *out, int max,
                 char *err, size_t errlen) {
    int on = tel_mig_enabled(tel, gpu, err, errlen);
    if (on <= 0)
        return on;
    unsigned int n = 0;
    const char *call = "nvmlDeviceGetMaxMigDeviceCount";
    nvmlReturn_t rc = tel->mig.mig_max(tel->gpus[gpu].handle, &n);
    int got = 0;
    for (unsigned int i = 0; rc == NVML_SUCCESS && i < n && got < max; i++) {
        rc = tel_mig_read_dev(tel, gpu, i, &out[got], &call);
        if (rc == NVML_SUCCESS)
            got++;
        else if (rc == NVML_ERROR_NOT_FOUND)
            rc = NVML_SUCCESS; /* no device at this index */
    }
    if (rc != NVML_SUCCESS) {
        tel_fail(tel, call, gpu, rc, err, errlen);
        return -1;
    }
    return got;
}
