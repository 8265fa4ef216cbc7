/* tel_state.h -- the inside of a tel_state, shared by the files that
 * speak NVML: nvml.c (devices, readings) and mig.c (MIG instances). Not
 * public: only src/telemetry includes it.
 *
 * The one idea: one dlopen of NVML serves both files. nvml.c loads the
 * required functions and the reading ones into `fn`; mig.c loads the MIG
 * ones, all optional, into `mig` from the same library: a library or
 * driver without them simply has no MIG.
 */
#ifndef AEGIS_TEL_STATE_H
#define AEGIS_TEL_STATE_H

#include <stddef.h>
#include <sys/types.h>

#include "core.h"
#include "tel.h"
#include "tel_nvml.h"
#include "tel_priv.h"

typedef struct tel_fns {
    tel_nvml_init_fn *init;
    tel_nvml_shutdown_fn *shutdown;
    tel_nvml_error_string_fn *error_string;
    tel_nvml_count_fn *count;
    tel_nvml_handle_fn *handle;
    tel_nvml_string_fn *uuid;
    tel_nvml_string_fn *name;
    tel_nvml_memory_fn *memory;
    tel_nvml_util_fn *util;
    tel_nvml_procs_fn *procs;       /* _v2; NULL before driver 450.66 */
    tel_nvml_procs_v1_fn *procs_v1; /* the unversioned one, else NULL */
    tel_nvml_procs_fn *mps_procs;   /* the MPS clients' list, _v2 */
    tel_nvml_procs_v1_fn *mps_procs_v1; /* its unversioned one; both NULL:
                                       a driver without the MPS list */
    tel_nvml_power_fn *power;       /* NULL: not in this library */
    tel_nvml_energy_fn *energy;     /* NULL: not in this library */
    tel_nvml_proc_util_fn *proc_util; /* NULL: not in this library */
    tel_nvml_system_string_fn *driver_version; /* NULL: not in it */
} tel_fns;

/* The MIG calls (driver 470+). tel_mig_load() fills them; any one missing
 * leaves `complete` 0 and MIG off on every GPU. */
typedef struct tel_mig_fns {
    int complete;
    tel_nvml_mig_mode_fn *mode;
    tel_nvml_set_mig_mode_fn *set_mode;
    tel_nvml_gi_profile_fn *gi_profile;
    tel_nvml_gi_create_fn *gi_create;
    tel_nvml_gi_by_id_fn *gi_by_id;
    tel_nvml_gi_info_fn *gi_info;
    tel_nvml_gi_destroy_fn *gi_destroy;
    tel_nvml_ci_profile_fn *ci_profile;
    tel_nvml_ci_create_fn *ci_create;
    tel_nvml_ci_by_id_fn *ci_by_id;
    tel_nvml_ci_destroy_fn *ci_destroy;
    tel_nvml_mig_max_fn *mig_max;
    tel_nvml_mig_handle_fn *mig_handle;
    tel_nvml_mig_id_fn *gi_id;
    tel_nvml_mig_id_fn *ci_id;
} tel_mig_fns;

/* A process's latest per-process utilization sample, and when aegis got
 * it (monotonic s). */
typedef struct tel_util_memo {
    pid_t pid;
    double sm_util;
    double at;
} tel_util_memo;

typedef struct tel_dev {
    nvmlDevice_t handle;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned long long util_seen;   /* newest process-utilization sample
                                       read, us: the next read asks for
                                       newer ones only */
    tel_util_memo util[TEL_MAX_PROCS]; /* the listed processes' latest
                                          samples, while they stand */
    int nutil;
} tel_dev;

struct tel_state {
    void *lib;                      /* dlopen handle */
    int initialised;                /* nvmlInit_v2 succeeded: shut down */
    char path[256];                 /* the library, for error messages */
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE]; /* "535.54.03" */
    tel_fns fn;
    tel_mig_fns mig;
    int ngpus;
    tel_dev gpus[CORE_MAX_GPUS];
    nvmlProcessInfo_v2_t *procs;       /* process-list buffer, grown on demand */
    unsigned int procs_cap;
    nvmlProcessUtilizationSample_t *samples; /* grown on demand too */
    unsigned int samples_cap;
    long dropped;                   /* processes past TEL_MAX_PROCS, total */
    tel_dcgm *dcgm;                 /* NULL: no DCGM, profiling fields
                                       unknown */
};

/* Fills tel->mig from tel->lib (mig.c). Never fails: what is missing only
 * turns MIG off. */
void tel_mig_load(tel_state *tel);

#endif
