/* testdcgm.c -- libaegis-testdcgm.so, a stand-in for libdcgm.so.4 over the
 * same test GPUs as libaegis-testnvml.so (AEGIS_TEST_GPUS,
 * AEGIS_TEST_GPU_DIR), so the DCGM loader is tested without hardware.
 *
 * It exports exactly the DCGM functions aegis calls, typed by tel_dcgm.h.
 * The fields are arbitrary test models, not measurements: SMACT = min(1,
 * sum of the GPU's fake jobs' smact), SMOCC = 0.5 x SMACT, DRAMA = 0.4 x
 * SMACT. As in DCGM, values exist only once the fields are watched, and
 * the first only after one update period (the updateFreq of
 * dcgmWatchFields): before it they are blank (DCGM_ST_NO_DATA), after it
 * stamped with the latest update. The profiling counters are one per GPU:
 * while AEGIS_TEST_DCGM_PROF_HELD=1 (another host engine, or a profiler
 * such as Nsight, holds them) watching the profiling fields fails IN_USE,
 * and fields already watched come back blank.
 * AEGIS_TEST_DCGM_FAIL=<function name> makes that function fail, so tests
 * can reach the loader's error paths.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tel_dcgm.h"
#include "tgpu.h"

#define TDC_EXPORT __attribute__((visibility("default")))

TDC_EXPORT tel_dcgm_init_fn dcgmInit;
TDC_EXPORT tel_dcgm_shutdown_fn dcgmShutdown;
TDC_EXPORT tel_dcgm_error_string_fn errorString;
TDC_EXPORT tel_dcgm_start_embedded_fn dcgmStartEmbedded;
TDC_EXPORT tel_dcgm_connect_fn dcgmConnect_v2;
TDC_EXPORT tel_dcgm_devices_fn dcgmGetAllDevices;
TDC_EXPORT tel_dcgm_field_group_fn dcgmFieldGroupCreate;
TDC_EXPORT tel_dcgm_watch_fn dcgmWatchFields;
TDC_EXPORT tel_dcgm_latest_fn dcgmGetLatestValuesForFields;

/* The one handle and field group the test engine gives out. */
#define TDC_HANDLE ((dcgmHandle_t)0x5eed)
#define TDC_FIELD_GROUP ((dcgmFieldGrp_t)1)

static int tdc_inits;                   /* dcgmInit calls not shut down */
static int tdc_started;                 /* an engine was started/joined */
static int tdc_grouped;                 /* the field group exists */
static int tdc_watched;                 /* dcgmWatchFields was called */
static int64_t tdc_watched_at;          /* when, us of realtime */
static long long tdc_update_us;         /* its updateFreq */
static tgpu_config tdc_cfg;

/* Fails with rc when AEGIS_TEST_DCGM_FAIL names call, else DCGM_ST_OK. */
static dcgmReturn_t tdc_injected(const char *call, dcgmReturn_t rc) {
    const char *fail = getenv("AEGIS_TEST_DCGM_FAIL");
    if (fail && strcmp(fail, call) == 0)
        return tgpu_fail(rc, "%s: failed as AEGIS_TEST_DCGM_FAIL asks", call);
    return DCGM_ST_OK;
}

/* The checks a call needing dcgmInit (and, with h, an engine) starts with. */
static dcgmReturn_t tdc_check(const char *call, const dcgmHandle_t *h) {
    dcgmReturn_t rc = tdc_injected(call, DCGM_ST_GENERIC_ERROR);
    if (rc != DCGM_ST_OK)
        return rc;
    if (tdc_inits == 0)
        return tgpu_fail(DCGM_ST_UNINITIALIZED, "%s: dcgmInit was not called",
                        call);
    if (h && (*h != TDC_HANDLE || !tdc_started))
        return tgpu_fail(DCGM_ST_BADPARAM, "%s: not a handle from "
                        "dcgmStartEmbedded or dcgmConnect_v2", call);
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmInit(void) {
    dcgmReturn_t rc = tdc_injected("dcgmInit", DCGM_ST_INIT_ERROR);
    if (rc != DCGM_ST_OK)
        return rc;
    if (tdc_inits == 0) {
        char err[512];
        if (tgpu_config_load(&tdc_cfg, err, sizeof err) < 0)
            return tgpu_fail(DCGM_ST_INIT_ERROR, "%s", err);
    }
    tdc_inits++;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmShutdown(void) {
    if (tdc_inits == 0)
        return tgpu_fail(DCGM_ST_UNINITIALIZED, "dcgmShutdown: dcgmInit was "
                        "not called");
    if (--tdc_inits == 0)
        tdc_started = tdc_grouped = tdc_watched = 0;
    return DCGM_ST_OK;
}

const char *errorString(dcgmReturn_t rc) {
    const char *why = tgpu_why(rc);
    if (why)
        return why;
    switch (rc) {
    case DCGM_ST_OK: return "Success";
    case DCGM_ST_BADPARAM: return "Bad parameter passed to function";
    case DCGM_ST_UNINITIALIZED: return "Uninitialized";
    default: return "Unknown error";
    }
}

/* Starting an engine and joining one are the same to the test GPUs. */
static dcgmReturn_t tdc_start(const char *call, dcgmHandle_t *handle) {
    dcgmReturn_t rc = tdc_check(call, NULL);
    if (rc != DCGM_ST_OK)
        return rc;
    if (!handle)
        return tgpu_fail(DCGM_ST_BADPARAM, "%s: NULL handle", call);
    tdc_started = 1;
    *handle = TDC_HANDLE;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmStartEmbedded(int opMode, dcgmHandle_t *handle) {
    if (opMode != DCGM_OPERATION_MODE_AUTO &&
        opMode != DCGM_OPERATION_MODE_MANUAL)
        return tgpu_fail(DCGM_ST_BADPARAM, "dcgmStartEmbedded: opMode %d",
                        opMode);
    return tdc_start("dcgmStartEmbedded", handle);
}

dcgmReturn_t dcgmConnect_v2(const char *address,
                            dcgmConnectV2Params_v2 *params,
                            dcgmHandle_t *handle) {
    if (!params || params->version != dcgmConnectV2Params_version2)
        return tgpu_fail(DCGM_ST_VER_MISMATCH, "dcgmConnect_v2: params "
                        "version %#x, want %#x", params ? params->version : 0,
                        dcgmConnectV2Params_version2);
    if (!address || !*address)
        return tgpu_fail(DCGM_ST_BADPARAM, "dcgmConnect_v2: no address");
    return tdc_start("dcgmConnect_v2", handle);
}

dcgmReturn_t dcgmGetAllDevices(dcgmHandle_t h,
                               unsigned int gpuIds[DCGM_MAX_NUM_DEVICES],
                               int *count) {
    dcgmReturn_t rc = tdc_check("dcgmGetAllDevices", &h);
    if (rc != DCGM_ST_OK)
        return rc;
    if (!gpuIds || !count)
        return tgpu_fail(DCGM_ST_BADPARAM, "dcgmGetAllDevices: NULL output");
    /* DCGM manages at most DCGM_MAX_NUM_DEVICES: a bigger test box shows
     * that many, as the real engine would. */
    int n = tdc_cfg.ngpus < DCGM_MAX_NUM_DEVICES ? tdc_cfg.ngpus
                                                 : DCGM_MAX_NUM_DEVICES;
    for (int i = 0; i < n; i++)
        gpuIds[i] = (unsigned int)i;
    *count = n;
    return DCGM_ST_OK;
}

dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int numFieldIds,
                                  unsigned short *fieldIds, const char *name,
                                  dcgmFieldGrp_t *fieldGroup) {
    dcgmReturn_t rc = tdc_check("dcgmFieldGroupCreate", &h);
    if (rc != DCGM_ST_OK)
        return rc;
    if (numFieldIds < 1 || !fieldIds || !name || !*name || !fieldGroup)
        return tgpu_fail(DCGM_ST_BADPARAM, "dcgmFieldGroupCreate: bad "
                        "arguments");
    tdc_grouped = 1;
    *fieldGroup = TDC_FIELD_GROUP;
    return DCGM_ST_OK;
}

static int64_t tdc_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Whether another client holds the GPUs' profiling counters. */
static int tdc_prof_held(void) {
    const char *held = getenv("AEGIS_TEST_DCGM_PROF_HELD");
    return held && *held == '1';
}

dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t group,
                             dcgmFieldGrp_t fieldGroup, long long updateFreq,
                             double maxKeepAge, int maxKeepSamples) {
    dcgmReturn_t rc = tdc_check("dcgmWatchFields", &h);
    if (rc != DCGM_ST_OK)
        return rc;
    if (group != DCGM_GROUP_ALL_GPUS || fieldGroup != TDC_FIELD_GROUP ||
        !tdc_grouped || updateFreq <= 0 || maxKeepAge < 0 ||
        maxKeepSamples < 0)
        return tgpu_fail(DCGM_ST_BADPARAM, "dcgmWatchFields: bad arguments");
    if (tdc_prof_held())
        return tgpu_fail(DCGM_ST_IN_USE, "dcgmWatchFields: the profiling "
                         "fields are watched by another client "
                         "(AEGIS_TEST_DCGM_PROF_HELD)");
    tdc_watched = 1;
    tdc_watched_at = tdc_now_us();
    tdc_update_us = updateFreq;
    return DCGM_ST_OK;
}

/* The modelled value of one field on a GPU whose jobs sum to smact. */
static int tdc_model(unsigned short field, double smact, double *v) {
    double sm = smact < 1.0 ? smact : 1.0;
    switch (field) {
    case DCGM_FI_PROF_SM_ACTIVE: *v = sm; return 1;
    case DCGM_FI_PROF_SM_OCCUPANCY: *v = 0.5 * sm; return 1;
    case DCGM_FI_PROF_DRAM_ACTIVE: *v = 0.4 * sm; return 1;
    default: return 0;
    }
}

dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t h, int gpuId,
                                          unsigned short fieldIds[],
                                          unsigned int count,
                                          dcgmFieldValue_v1 values[]) {
    static const char call[] = "dcgmGetLatestValuesForFields";
    dcgmReturn_t rc = tdc_check(call, &h);
    if (rc != DCGM_ST_OK)
        return rc;
    if (gpuId < 0 || gpuId >= tdc_cfg.ngpus || gpuId >= DCGM_MAX_NUM_DEVICES ||
        (count > 0 && (!fieldIds || !values)))
        return tgpu_fail(DCGM_ST_BADPARAM, "%s: GPU %d, %u fields", call,
                        gpuId, count);
    tgpu_usage u;
    if (tgpu_scan(&tdc_cfg, gpuId, NULL, 0, &u) < 0)
        return tgpu_fail(DCGM_ST_GENERIC_ERROR, "AEGIS_TEST_GPU_DIR=%s: %s",
                        tdc_cfg.dir, strerror(errno));
    int64_t now = tdc_now_us();
    /* The latest update cycle: the first one ends an update after the
     * watch. */
    int64_t cycles = tdc_watched ? (now - tdc_watched_at) / tdc_update_us : 0;
    for (unsigned int i = 0; i < count; i++) {
        dcgmFieldValue_v1 *v = &values[i];
        v->version = dcgmFieldValue_version1;
        v->fieldId = fieldIds[i];
        v->fieldType = DCGM_FT_DOUBLE;
        v->ts = tdc_watched_at + cycles * tdc_update_us;
        /* DCGM's "not found" blank, BLANK + 1, where there is no value;
         * BLANK itself where the profiler gives none. */
        v->value.dbl = DCGM_FP64_BLANK + 1.0;
        if (!tdc_watched)
            v->status = DCGM_ST_NOT_WATCHED;
        else if (cycles == 0)
            v->status = DCGM_ST_NO_DATA;
        else if (!tdc_model(fieldIds[i], u.smact, &v->value.dbl))
            v->status = DCGM_ST_UNKNOWN_FIELD;
        else
            v->status = DCGM_ST_OK;
        if (v->status == DCGM_ST_OK && tdc_prof_held())
            v->value.dbl = DCGM_FP64_BLANK;
    }
    return DCGM_ST_OK;
}
