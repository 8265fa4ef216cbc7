/* mig_profiles.h -- the MIG GPU-instance profiles of the GPUs aegis can
 * partition: A100-40GB, A100-80GB, H100 80GB and H200 141GB.
 *
 * The one idea: a MIG GPU has 8 memory slices and 7 compute slices. A GPU
 * instance takes `mem_slices` consecutive memory slices starting at one of
 * its profile's valid start slots (NVML's nvmlGpuInstancePlacement_t counts
 * in memory slices), and `compute_slices` of the 7. Two instances may not
 * overlap on the memory axis, and their compute slices may not sum past 7.
 * The planner (mig_plan.h) needs nothing else.
 *
 * Pure data and lookups: no I/O, no NVML; the core, the simulator and the
 * daemon may all include it.
 */
#ifndef AEGIS_MIG_PROFILES_H
#define AEGIS_MIG_PROFILES_H

/* Memory slices of every GPU here (the placement axis), and compute slices. */
#define MIG_MEM_SLICES 8
#define MIG_COMPUTE_SLICES 7

/* Profiles one GPU model lists at most (the table has 6 each). */
#define MIG_MAX_PROFILES 8

/* NVML's GPU-instance profile numbers (nvml.h NVML_GPU_INSTANCE_PROFILE_*):
 * what nvmlDeviceGetGpuInstanceProfileInfo takes. Not the profile "ID"
 * nvidia-smi prints (19, 15, 14, 9, 5, 0), which is that call's info.id. */
#define MIG_NVML_1_SLICE 0
#define MIG_NVML_2_SLICE 1
#define MIG_NVML_3_SLICE 2
#define MIG_NVML_4_SLICE 3
#define MIG_NVML_7_SLICE 4
#define MIG_NVML_8_SLICE 5
#define MIG_NVML_6_SLICE 6
#define MIG_NVML_1_SLICE_REV1 7     /* 1g with media extensions (+me) */
#define MIG_NVML_2_SLICE_REV1 8
#define MIG_NVML_1_SLICE_REV2 9     /* 1g with two memory slices */

typedef struct mig_profile {
    const char *name;       /* "3g.20gb", as the MIG user guide names it */
    int nvml_profile;       /* MIG_NVML_*: NVML's number for it */
    long mem_mib;           /* memory a job gets, MiB, as NVML reports it */
    int compute_slices;     /* of MIG_COMPUTE_SLICES */
    int mem_slices;         /* of MIG_MEM_SLICES: the placement size */
    int max_instances;      /* on an empty GPU */
    unsigned starts;        /* valid placement starts: bit s = slot s */
} mig_profile;

typedef struct mig_model {
    const char *name;       /* "A100-SXM4-40GB": for messages */
    long total_mib;         /* the GPU's memory with MIG off, MiB */
    int nprofiles;
    mig_profile profiles[MIG_MAX_PROFILES]; /* by mem_mib, then compute
                                               slices, ascending: the first
                                               that fits is the smallest */
} mig_model;

/* The model of a GPU from its NVML name ("NVIDIA A100-SXM4-40GB", "NVIDIA
 * H100 80GB HBM3", ...), or NULL when aegis has no MIG table for it (MIG
 * then stays off on that GPU). The result is static: never freed. */
const mig_model *mig_model_find(const char *nvml_name);

/* The profile named `name` ("1g.5gb") in model m, or NULL. */
const mig_profile *mig_profile_find(const mig_model *m, const char *name);

/* The profile NVML numbers `nvml_profile` (MIG_NVML_*) in m, or NULL. */
const mig_profile *mig_profile_by_nvml(const mig_model *m, int nvml_profile);

#endif
