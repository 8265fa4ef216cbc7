/* tel_mig.h -- MIG instances through NVML, for the daemon's mig and auto
 * sharing modes: check that MIG mode is on, carve an instance for a job,
 * find its MIG device's UUID, destroy it afterwards, and list what exists.
 *
 * The one idea: a job's instance is a pair, a GPU instance (GI: memory
 * slices at a placement) and one compute instance (CI) taking all of that
 * GI's compute slices; CUDA sees the pair as one MIG device, named by a
 * "MIG-..." UUID in CUDA_VISIBLE_DEVICES. tel_mig_create() makes both or
 * neither; tel_mig_destroy() removes the CI, then the GI (NVML refuses a
 * GI that still has CIs). Ids are what identify an instance across
 * restarts: GI ids are unique on a GPU, CI ids within their GI.
 *
 * MIG mode changes only on an idle GPU: NVML accepts the change on a busy
 * one but leaves it pending (activationStatus IN_USE), which
 * tel_mig_set_mode() takes back and reports as TEL_MIG_BUSY, for the
 * caller to try again once the GPU is idle; where only a reset applies it
 * (RESET_REQUIRED: pass-through virtualisation) that is a failure saying
 * so. A compute instance that still has processes cannot be destroyed
 * (IN_USE): the caller keeps its record and tries again later.
 *
 * A library without the MIG calls (an old driver) has no MIG: every GPU
 * reports MIG off, and the other calls fail saying so.
 */
#ifndef AEGIS_TEL_MIG_H
#define AEGIS_TEL_MIG_H

#include <stddef.h>

#include "tel.h"

/* What tel_mig_set_mode() and tel_mig_create() return when the GPU is
 * busy for now (processes hold it, or an instance not yet destroyed holds
 * the slices): not a failure of the job, try again later. */
#define TEL_MIG_BUSY (-2)

/* Room for a MIG device UUID: NVML's NVML_DEVICE_UUID_V2_BUFFER_SIZE. */
#define TEL_MIG_UUID_LEN 96

/* MIG devices listed per GPU at most: one per compute slice of 7. */
#define TEL_MIG_MAX_DEVS 7

/* One MIG device: its GPU and compute instance, and what CUDA calls it. */
typedef struct tel_mig_dev {
    int gpu;                        /* the parent GPU's index */
    unsigned int gi_id;             /* GPU instance id, unique on the GPU */
    unsigned int ci_id;             /* compute instance id in that GI */
    unsigned int profile_id;        /* the GI profile's NVML id (info.id) */
    unsigned int start;             /* the GI's first memory slice */
    unsigned int size;              /* its memory slices */
    char uuid[TEL_MIG_UUID_LEN];    /* "MIG-...", for CUDA_VISIBLE_DEVICES */
} tel_mig_dev;

/* Whether the library has every MIG call tel_mig needs. */
int tel_mig_supported(const tel_state *tel);

/* 1 when GPU gpu has MIG mode on, 0 when it is off or the GPU or library
 * has no MIG, -1 with a message in err when NVML failed. */
int tel_mig_enabled(tel_state *tel, int gpu, char *err, size_t errlen);

/* Turns MIG mode on (on != 0) or off on GPU gpu, and checks that it took
 * effect. Returns 0; TEL_MIG_BUSY with a message when processes hold the
 * GPU (the mode is left as it was); or -1 with a message (pending a
 * reset, GPU instances left, no permission). */
int tel_mig_set_mode(tel_state *tel, int gpu, int on, char *err,
                     size_t errlen);

/* Creates a GPU instance of NVML profile number nvml_profile
 * (NVML_GPU_INSTANCE_PROFILE_*: mig_profile.nvml_profile) at memory
 * slices start..start+size-1, a compute instance taking it whole, and
 * fills *out with the MIG device. Returns 0, or -1 (TEL_MIG_BUSY when the
 * slices are taken) with a message naming the NVML call that failed;
 * whatever was created is destroyed again. */
int tel_mig_create(tel_state *tel, int gpu, int nvml_profile,
                   unsigned int start, unsigned int size, tel_mig_dev *out,
                   char *err, size_t errlen);

/* Destroys compute instance ci_id of GPU instance gi_id on GPU gpu, then
 * the GPU instance. A GPU instance that no longer exists is not an error
 * (a cleanup may run twice). Returns 0, or -1 with a message. */
int tel_mig_destroy(tel_state *tel, int gpu, unsigned int gi_id,
                    unsigned int ci_id, char *err, size_t errlen);

/* Lists GPU gpu's MIG devices (GI/CI pairs) into out, at most max, in
 * NVML's order (GI id, then CI id). Returns how many, 0 when MIG is off,
 * or -1 with a message. */
int tel_mig_list(tel_state *tel, int gpu, tel_mig_dev *out, int max,
                 char *err, size_t errlen);

#endif
