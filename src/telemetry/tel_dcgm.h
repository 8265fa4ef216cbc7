/* tel_dcgm.h -- the slice of the DCGM C API that aegis uses, declared here
 * so that nothing needs DCGM's headers or libraries at build time.
 *
 * As in tel_nvml.h, every DCGM function aegis calls has a function type
 * below (tel_dcgm_*_fn): the loader (dcgm.c) keeps pointers of these types
 * and the test library (src/testgpu/testdcgm.c) declares its exports with
 * them, so the compiler holds the stand-in to what the loader calls.
 * Layouts and values are DCGM's own (dcgm_structs.h, dcgm_fields.h and
 * dcgm_agent.h, DCGM 3 and 4: the ABI of these calls did not change).
 */
#ifndef AEGIS_TEL_DCGM_H
#define AEGIS_TEL_DCGM_H

#include <stdint.h>

/* dcgmReturn_t values (dcgm_structs.h). Only those aegis tests for or the
 * test library produces. */
#define DCGM_ST_OK 0
#define DCGM_ST_BADPARAM (-1)
#define DCGM_ST_GENERIC_ERROR (-3)
#define DCGM_ST_NOT_SUPPORTED (-6)
#define DCGM_ST_INIT_ERROR (-7)
#define DCGM_ST_UNINITIALIZED (-10)
#define DCGM_ST_VER_MISMATCH (-12)
#define DCGM_ST_UNKNOWN_FIELD (-13)
#define DCGM_ST_NO_DATA (-14)           /* watched, not sampled yet */
#define DCGM_ST_NOT_WATCHED (-16)
#define DCGM_ST_CONNECTION_NOT_VALID (-21)
#define DCGM_ST_IN_USE (-34)            /* profiling: another client holds
                                           the counters */
#define DCGM_ST_PROFILING_NOT_SUPPORTED (-36)

/* dcgmOperationMode_t: AUTO has the engine sample on its own threads, so
 * nobody need call dcgmUpdateAllFields. */
#define DCGM_OPERATION_MODE_AUTO 1
#define DCGM_OPERATION_MODE_MANUAL 2

/* The group id that stands for every GPU, with no group to create. */
#define DCGM_GROUP_ALL_GPUS 0x7fffffff

/* Most GPUs one engine manages: the size of dcgmGetAllDevices's array. */
#define DCGM_MAX_NUM_DEVICES 32

/* The profiling fields the core's pressure filter reads (dcgm_fields.h),
 * each a ratio 0..1 over the update period. */
#define DCGM_FI_PROF_SM_ACTIVE 1002     /* SMACT */
#define DCGM_FI_PROF_SM_OCCUPANCY 1003  /* SMOCC */
#define DCGM_FI_PROF_DRAM_ACTIVE 1005   /* DRAMA */

#define DCGM_FT_DOUBLE 'd'              /* fieldType of a double value */

/* A double at or above this is not a value but a reason there is none
 * (blank, not found, not supported, no permission: BLANK + 0..3). */
#define DCGM_FP64_BLANK 140737488355328.0

#define DCGM_MAX_STR_LENGTH 256
#define DCGM_MAX_BLOB_LENGTH 4096

typedef int dcgmReturn_t;               /* an enum in DCGM: same ABI */
typedef uintptr_t dcgmHandle_t;
typedef uintptr_t dcgmGpuGrp_t;
typedef uintptr_t dcgmFieldGrp_t;

/* DCGM versions its structs: the size in the low 24 bits, the version in
 * the top 8 (MAKE_DCGM_VERSION). */
#define TEL_DCGM_VERSION(type, ver) \
    ((unsigned int)(sizeof(type) | ((unsigned long)(ver) << 24U)))

typedef struct {
    unsigned int version;               /* dcgmFieldValue_version1 */
    unsigned short fieldId;
    unsigned short fieldType;           /* DCGM_FT_* */
    int status;                         /* DCGM_ST_OK, or why no value */
    int64_t ts;                         /* sample time, us since 1970 */
    union {
        int64_t i64;
        double dbl;
        char str[DCGM_MAX_STR_LENGTH];
        char blob[DCGM_MAX_BLOB_LENGTH];
    } value;
} dcgmFieldValue_v1;
#define dcgmFieldValue_version1 TEL_DCGM_VERSION(dcgmFieldValue_v1, 1)

typedef struct {
    unsigned int version;               /* dcgmConnectV2Params_version2 */
    unsigned int persistAfterDisconnect; /* 0: drop our watches on exit */
    unsigned int timeoutMs;             /* give up connecting after this */
    unsigned int addressIsUnixSocket;   /* 1: the address is a socket path */
} dcgmConnectV2Params_v2;
#define dcgmConnectV2Params_version2 TEL_DCGM_VERSION(dcgmConnectV2Params_v2, 2)

typedef dcgmReturn_t tel_dcgm_init_fn(void);
typedef dcgmReturn_t tel_dcgm_shutdown_fn(void);
typedef const char *tel_dcgm_error_string_fn(dcgmReturn_t result);
typedef dcgmReturn_t tel_dcgm_start_embedded_fn(int opMode,
                                                dcgmHandle_t *handle);
typedef dcgmReturn_t tel_dcgm_connect_fn(const char *address,
                                         dcgmConnectV2Params_v2 *params,
                                         dcgmHandle_t *handle);
typedef dcgmReturn_t tel_dcgm_devices_fn(
    dcgmHandle_t handle, unsigned int gpuIds[DCGM_MAX_NUM_DEVICES],
    int *count);
typedef dcgmReturn_t tel_dcgm_field_group_fn(dcgmHandle_t handle,
                                             int numFieldIds,
                                             unsigned short *fieldIds,
                                             const char *name,
                                             dcgmFieldGrp_t *fieldGroup);
/* updateFreq in us, maxKeepAge in s, maxKeepSamples 0: no limit. */
typedef dcgmReturn_t tel_dcgm_watch_fn(dcgmHandle_t handle,
                                       dcgmGpuGrp_t group,
                                       dcgmFieldGrp_t fieldGroup,
                                       long long updateFreq,
                                       double maxKeepAge, int maxKeepSamples);
/* DCGM_ST_OK says the call worked; each value's status says whether it
 * holds a value. */
typedef dcgmReturn_t tel_dcgm_latest_fn(dcgmHandle_t handle, int gpuId,
                                        unsigned short fieldIds[],
                                        unsigned int count,
                                        dcgmFieldValue_v1 values[]);

#endif
