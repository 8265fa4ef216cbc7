/* dcgm.c -- DCGM's profiling fields SMACT, SMOCC and DRAMA for tel_read(),
 * loaded at run time with dlopen (the DCGM side of tel_priv.h).
 *
 * DCGM samples the fields on its own: an embedded host engine started in
 * AUTO mode (or a running nv-hostengine) is told once to watch them every
 * second, and a reading only asks for the latest cached values. GPU i is
 * DCGM's i-th GPU id: DCGM takes its GPUs from NVML and numbers them in
 * NVML's (PCI bus) order, so the two agree as long as both see the same
 * GPUs, which is checked by count when DCGM is opened. A value DCGM marks
 * blank, or one older than a few update periods (the engine stopped
 * sampling), is CORE_UNKNOWN: the core then filters on utilization. The
 * first values come one update period after the watch, so blanks in the
 * first TEL_DCGM_WARMUP_US are expected; after that they mean the GPU's
 * profiling counters are held elsewhere (another host engine, a profiler
 * such as Nsight), and tel_dcgm_last_error() says so.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tel_dcgm.h"
#include "tel_priv.h"
#include "tel_syms.h"

/* Tried in order when neither the caller nor the environment names a
 * library: DCGM 4's soname, then DCGM 3's, then the development link. */
static const char *const tel_dcgm_defaults[] = {"libdcgm.so.4",
                                                "libdcgm.so.3", "libdcgm.so"};

/* The core samples once a second (DESIGN.md section 3), so DCGM need not
 * sample faster. */
#define TEL_DCGM_UPDATE_US 1000000LL

/* DCGM keeps a few samples so "latest" is never an empty cache, and no
 * more: aegis reads only the newest. */
#define TEL_DCGM_KEEP_AGE_S 10.0
#define TEL_DCGM_KEEP_SAMPLES 4

/* A value older than five update periods means the engine has stopped
 * sampling (a stalled or restarted nv-hostengine): not a current reading. */
#define TEL_DCGM_STALE_US (5 * TEL_DCGM_UPDATE_US)

/* Blank values this long after the watch are expected: DCGM samples the
 * fields first at the end of the first update period. */
#define TEL_DCGM_WARMUP_US (2 * TEL_DCGM_UPDATE_US)

/* How long connecting to an nv-hostengine may take: tel_open_dcgm runs once
 * at daemon start, and a local engine answers in milliseconds. */
#define TEL_DCGM_CONNECT_MS 2000

typedef struct tel_dcgm_fns {
    tel_dcgm_init_fn *init;
    tel_dcgm_shutdown_fn *shutdown;
    tel_dcgm_error_string_fn *error_string; /* NULL: not in this library */
    tel_dcgm_start_embedded_fn *start_embedded;
    tel_dcgm_connect_fn *connect;
    tel_dcgm_devices_fn *devices;
    tel_dcgm_field_group_fn *field_group;
    tel_dcgm_watch_fn *watch;
    tel_dcgm_latest_fn *latest;
} tel_dcgm_fns;

static const tel_sym tel_dcgm_syms[] = {
    {{"dcgmInit"}, offsetof(tel_dcgm_fns, init), 0},
    {{"dcgmShutdown"}, offsetof(tel_dcgm_fns, shutdown), 0},
    {{"errorString"}, offsetof(tel_dcgm_fns, error_string), 1},
    {{"dcgmStartEmbedded"}, offsetof(tel_dcgm_fns, start_embedded), 0},
    {{"dcgmConnect_v2"}, offsetof(tel_dcgm_fns, connect), 0},
    {{"dcgmGetAllDevices"}, offsetof(tel_dcgm_fns, devices), 0},
    {{"dcgmFieldGroupCreate"}, offsetof(tel_dcgm_fns, field_group), 0},
    {{"dcgmWatchFields"}, offsetof(tel_dcgm_fns, watch), 0},
    {{"dcgmGetLatestValuesForFields"}, offsetof(tel_dcgm_fns, latest), 0},
};

/* The fields read, in the order tel_dcgm_read stores them. */
static unsigned short tel_dcgm_fields[] = {
    DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY,
    DCGM_FI_PROF_DRAM_ACTIVE};
#define TEL_DCGM_NFIELDS \
    (sizeof tel_dcgm_fields / sizeof tel_dcgm_fields[0])

struct tel_dcgm {
    void *lib;                      /* dlopen handle */
    int initialised;                /* dcgmInit succeeded: shut down */
    char path[256];                 /* the library, for error messages */
    tel_dcgm_fns fn;
    dcgmHandle_t handle;            /* embedded engine or connection */
    int ngpus;
    unsigned int ids[DCGM_MAX_NUM_DEVICES]; /* DCGM GPU id of GPU i */
    int64_t watched_at;             /* when the fields were watched, us */
    char error[512];                /* the last read's failure, or "" */
};

/* Formats "<library>: <call>: <DCGM's message> (DCGM error N)" into err. */
static void tel_dcgm_fail(const tel_dcgm *dc, const char *call,
                          dcgmReturn_t rc, char *err, size_t errlen) {
    const char *why = dc->fn.error_string ? dc->fn.error_string(rc) : NULL;
    snprintf(err, errlen, "%s: %s: %s (DCGM error %d)", dc->path, call,
             why ? why : "?", rc);
}

/* dlopens path, or the first default that loads. Returns 0, or -1 with the
 * first default's dlerror when none does (the one a reader looks for). */
static int tel_dcgm_dlopen(tel_dcgm *dc, const char *path, char *err,
                           size_t errlen) {
    size_t n = path ? 1 : sizeof tel_dcgm_defaults / sizeof *tel_dcgm_defaults;
    char first[400] = "";
    for (size_t i = 0; i < n && !dc->lib; i++) {
        const char *p = path ? path : tel_dcgm_defaults[i];
        snprintf(dc->path, sizeof dc->path, "%s", p);
        dc->lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        const char *why = dc->lib ? NULL : dlerror();
        if (i == 0 && why)
            snprintf(first, sizeof first, "%s", why);
    }
    if (dc->lib)
        return 0;
    if (path)
        snprintf(err, errlen, "%s: dlopen: %s", path, first);
    else
        snprintf(err, errlen, "DCGM not installed: dlopen: %s (also tried "
                 "libdcgm.so.3, libdcgm.so; set AEGIS_DCGM_LIBRARY)", first);
    return -1;
}

/* Starts an embedded host engine, or connects to $AEGIS_DCGM_HOSTENGINE. */
static int tel_dcgm_engine(tel_dcgm *dc, char *err, size_t errlen) {
    const char *host = getenv("AEGIS_DCGM_HOSTENGINE");
    dcgmReturn_t rc;
    if (host && *host) {
        dcgmConnectV2Params_v2 p = {dcgmConnectV2Params_version2, 0,
                                    TEL_DCGM_CONNECT_MS, host[0] == '/'};
        rc = dc->fn.connect(host, &p, &dc->handle);
        if (rc != DCGM_ST_OK) {
            char call[300];
            snprintf(call, sizeof call, "dcgmConnect_v2 to %s", host);
            tel_dcgm_fail(dc, call, rc, err, errlen);
            return -1;
        }
        return 0;
    }
    rc = dc->fn.start_embedded(DCGM_OPERATION_MODE_AUTO, &dc->handle);
    if (rc != DCGM_ST_OK) {
        tel_dcgm_fail(dc, "dcgmStartEmbedded", rc, err, errlen);
        return -1;
    }
    return 0;
}

static int64_t tel_dcgm_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Pairs NVML's GPUs with DCGM's ids and watches the fields on all. */
static int tel_dcgm_watch(tel_dcgm *dc, char *err, size_t errlen) {
    int count = 0;
    dcgmReturn_t rc = dc->fn.devices(dc->handle, dc->ids, &count);
    if (rc != DCGM_ST_OK) {
        tel_dcgm_fail(dc, "dcgmGetAllDevices", rc, err, errlen);
        return -1;
    }
    if (count != dc->ngpus) {
        snprintf(err, errlen, "%s: dcgmGetAllDevices: %d GPUs where NVML "
                 "has %d: cannot pair them", dc->path, count, dc->ngpus);
        return -1;
    }
    /* Field-group names are global to a host engine: one per process. */
    char name[64];
    snprintf(name, sizeof name, "aegis-%ld", (long)getpid());
    dcgmFieldGrp_t fg = 0;
    rc = dc->fn.field_group(dc->handle, (int)TEL_DCGM_NFIELDS,
                            tel_dcgm_fields, name, &fg);
    if (rc != DCGM_ST_OK) {
        tel_dcgm_fail(dc, "dcgmFieldGroupCreate", rc, err, errlen);
        return -1;
    }
    rc = dc->fn.watch(dc->handle, DCGM_GROUP_ALL_GPUS, fg, TEL_DCGM_UPDATE_US,
                      TEL_DCGM_KEEP_AGE_S, TEL_DCGM_KEEP_SAMPLES);
    if (rc != DCGM_ST_OK) {
        tel_dcgm_fail(dc, rc == DCGM_ST_IN_USE
                              ? "dcgmWatchFields (SMACT, SMOCC, DRAMA: the "
                                "profiling counters are held by another DCGM "
                                "host engine or a profiler)"
                              : "dcgmWatchFields (SMACT, SMOCC, DRAMA)",
                      rc, err, errlen);
        return -1;
    }
    dc->watched_at = tel_dcgm_now_us();
    return 0;
}

tel_dcgm *tel_dcgm_open(const char *path, int ngpus, char *err,
                        size_t errlen) {
    if (!path || !*path)
        path = getenv("AEGIS_DCGM_LIBRARY");
    if (path && !*path)
        path = NULL;
    tel_dcgm *dc = calloc(1, sizeof *dc);
    if (!dc) {
        snprintf(err, errlen, "DCGM: out of memory");
        return NULL;
    }
    dc->ngpus = ngpus;
    if (tel_dcgm_dlopen(dc, path, err, errlen) < 0 ||
        tel_syms_load(dc->lib, dc->path, tel_dcgm_syms,
                      sizeof tel_dcgm_syms / sizeof tel_dcgm_syms[0], &dc->fn,
                      "not a DCGM library, or older than DCGM 2", err,
                      errlen) < 0)
        goto fail;
    dcgmReturn_t rc = dc->fn.init();
    if (rc != DCGM_ST_OK) {
        tel_dcgm_fail(dc, "dcgmInit", rc, err, errlen);
        goto fail;
    }
    dc->initialised = 1;
    if (tel_dcgm_engine(dc, err, errlen) < 0 ||
        tel_dcgm_watch(dc, err, errlen) < 0)
        goto fail;
    return dc;
fail:
    tel_dcgm_close(dc);
    return NULL;
}

void tel_dcgm_close(tel_dcgm *dc) {
    if (!dc)
        return;
    /* dcgmShutdown also stops the embedded engine, or disconnects (which
     * drops our watches: persistAfterDisconnect is 0). */
    if (dc->initialised)
        dc->fn.shutdown();
    if (dc->lib)
        dlclose(dc->lib);
    free(dc);
}

/* One value as a ratio 0..1, or CORE_UNKNOWN when it is none. */
static double tel_dcgm_ratio(const dcgmFieldValue_v1 *v, int64_t now) {
    if (v->status != DCGM_ST_OK || v->fieldType != DCGM_FT_DOUBLE ||
        v->value.dbl >= DCGM_FP64_BLANK || v->value.dbl < 0 ||
        v->ts < now - TEL_DCGM_STALE_US)
        return CORE_UNKNOWN;
    return v->value.dbl > 1.0 ? 1.0 : v->value.dbl;
}

void tel_dcgm_read(tel_dcgm *dc, int gpu, core_reading *r) {
    double *out[TEL_DCGM_NFIELDS] = {&r->smact, &r->smocc, &r->drama};
    dcgmFieldValue_v1 v[TEL_DCGM_NFIELDS];
    memset(v, 0, sizeof v);
    for (size_t i = 0; i < TEL_DCGM_NFIELDS; i++) {
        v[i].version = dcgmFieldValue_version1;
        *out[i] = CORE_UNKNOWN;
    }
    dcgmReturn_t rc = dc->fn.latest(dc->handle, (int)dc->ids[gpu],
                                    tel_dcgm_fields, TEL_DCGM_NFIELDS, v);
    if (rc != DCGM_ST_OK) {
        char call[64];
        snprintf(call, sizeof call, "dcgmGetLatestValuesForFields (GPU %d)",
                 gpu);
        tel_dcgm_fail(dc, call, rc, dc->error, sizeof dc->error);
        return;
    }
    dc->error[0] = '\0';
    int64_t now = tel_dcgm_now_us();
    int blank = 0;
    for (size_t i = 0; i < TEL_DCGM_NFIELDS; i++) {
        *out[i] = v[i].fieldId == tel_dcgm_fields[i]
                      ? tel_dcgm_ratio(&v[i], now) : CORE_UNKNOWN;
        blank += *out[i] == CORE_UNKNOWN;
    }
    if (blank > 0 && now - dc->watched_at > TEL_DCGM_WARMUP_US)
        snprintf(dc->error, sizeof dc->error, "%s: GPU %d: %d of SMACT, "
                 "SMOCC, DRAMA blank or stale (status %d, %d, %d): another "
                 "DCGM host engine or a profiler (Nsight) may hold its "
                 "profiling counters", dc->path, gpu, blank, v[0].status,
                 v[1].status, v[2].status);
}

const char *tel_dcgm_last_error(const tel_dcgm *dc) {
    return dc->error[0] ? dc->error : NULL;
}
