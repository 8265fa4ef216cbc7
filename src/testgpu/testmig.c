/* testmig.c -- MIG in libaegis-testnvml.so: GPU instances, compute
 * instances and MIG devices, with the limits the real driver enforces, so
 * the code that partitions GPUs is tested without an A100.
 *
 * The one idea: all MIG state lives in files, never in the library, so
 * every process that loads it (the daemon, a test, a CLI) sees one GPU.
 * Each call takes the folder's lock, reads GPU i's state from mig<i>,
 * checks and changes it, writes it back whole (tgpu_write_file renames),
 * and appends one line to mig-calls.log:
 *
 *   <call> <handle> [<arg>=<value> ...] -> <nvmlReturn_t>
 *
 * handles written gpu0 (a GPU), gpu0/gi1 (a GPU instance), gpu0/gi1/ci0 (a
 * compute instance or its MIG device), "?" for one that is not ours; a
 * mode change left pending adds activation=<its status>. Tests check exact
 * call sequences against it.
 *
 * mig<i> holds "mode <0|1>", "pending <0|1>" while a mode change waits,
 * then "gi <id> <profileId> <start> <MiB>" and "ci <gi id> <ci id> <ci
 * profileId>" lines (<MiB>, the instance's memory, is for aegis-fakegpu,
 * which has no profile table). No file: MIG off, nothing.
 *
 * The model is the GPUs' name (AEGIS_TEST_GPU_MODEL) looked up in the MIG
 * table (mig_profiles.h): a name with no table has no MIG (NOT_SUPPORTED),
 * as on a V100. Enforced as the driver does: MIG mode on before any
 * instance call; turning it off with GPU instances left fails IN_USE;
 * otherwise nvmlDeviceSetMigMode succeeds and the new mode is pending
 * until it can be applied: at once on an idle GPU (activationStatus
 * SUCCESS), while processes run never (activationStatus IN_USE: the
 * caller idles the GPU and sets it again), and with
 * AEGIS_TEST_MIG_RESET_REQUIRED=1 (pass-through virtualisation) only at a
 * reset the model never does (RESET_REQUIRED); a GPU instance only at a
 * valid start of its profile (else INVALID_ARGUMENT) on free memory slices
 * with compute slices to spare (else INSUFFICIENT_RESOURCES); compute
 * instances within their GPU instance's slices, destroyed only without
 * processes in them, and a GPU instance only without compute instances
 * (both else IN_USE); no MIG devices (a count of 0) with MIG mode off.
 * Simplified: no +me profiles (the table leaves them out). A MIG device's
 * memory in use is what aegis-fakegpu jobs charged to its GPU instance.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mig_profiles.h"
#include "tnv.h"

#define TNV_EXPORT __attribute__((visibility("default")))

TNV_EXPORT tel_nvml_mig_mode_fn nvmlDeviceGetMigMode;
TNV_EXPORT tel_nvml_set_mig_mode_fn nvmlDeviceSetMigMode;
TNV_EXPORT tel_nvml_gi_profile_fn nvmlDeviceGetGpuInstanceProfileInfo;
TNV_EXPORT tel_nvml_gi_placements_fn nvmlDeviceGetGpuInstancePossiblePlacements_v2;
TNV_EXPORT tel_nvml_gi_create_fn nvmlDeviceCreateGpuInstanceWithPlacement;
TNV_EXPORT tel_nvml_gi_list_fn nvmlDeviceGetGpuInstances;
TNV_EXPORT tel_nvml_gi_by_id_fn nvmlDeviceGetGpuInstanceById;
TNV_EXPORT tel_nvml_gi_info_fn nvmlGpuInstanceGetInfo;
TNV_EXPORT tel_nvml_gi_destroy_fn nvmlGpuInstanceDestroy;
TNV_EXPORT tel_nvml_ci_profile_fn nvmlGpuInstanceGetComputeInstanceProfileInfo;
TNV_EXPORT tel_nvml_ci_create_fn nvmlGpuInstanceCreateComputeInstance;
TNV_EXPORT tel_nvml_ci_by_id_fn nvmlGpuInstanceGetComputeInstanceById;
TNV_EXPORT tel_nvml_ci_destroy_fn nvmlComputeInstanceDestroy;
TNV_EXPORT tel_nvml_mig_max_fn nvmlDeviceGetMaxMigDeviceCount;
TNV_EXPORT tel_nvml_mig_handle_fn nvmlDeviceGetMigDeviceHandleByIndex;
TNV_EXPORT tel_nvml_mig_id_fn nvmlDeviceGetGpuInstanceId;
TNV_EXPORT tel_nvml_mig_id_fn nvmlDeviceGetComputeInstanceId;

/* GPU instance ids run 1..7 and compute instance ids 0..6 (7 compute
 * slices bound both), so 8 of each index every handle array. */
#define TMIG_IDS 8

/* Streaming multiprocessors per compute slice: an A100's 98 over 7. */
#define TMIG_SMS_PER_SLICE 14

/* The profile ids nvidia-smi prints (`mig -lgip`), the same on A100, H100
 * and H200, by NVML profile number; what ProfileInfo returns as info.id. */
static const struct {
    int nvml;
    unsigned int id;
} tmig_ids[] = {
    {MIG_NVML_1_SLICE, 19}, {MIG_NVML_1_SLICE_REV2, 15},
    {MIG_NVML_2_SLICE, 14}, {MIG_NVML_3_SLICE, 9},
    {MIG_NVML_4_SLICE, 5},  {MIG_NVML_7_SLICE, 0},
};

/* Compute-instance profiles by NVML number (NVML_COMPUTE_INSTANCE_PROFILE_
 * 1/2/3/4/7_SLICE): their compute slices. The profile id is the number. */
static const unsigned int tmig_ci_slices[] = {1, 2, 3, 4, 7};

struct nvmlGpuInstance_st {
    int unused;             /* only the address means anything */
};
struct nvmlComputeInstance_st {
    int unused;
};

static struct nvmlGpuInstance_st tmig_gis[TGPU_MAX_GPUS][TMIG_IDS];
static struct nvmlComputeInstance_st tmig_cis[TGPU_MAX_GPUS][TMIG_IDS][TMIG_IDS];
static struct nvmlDevice_st tmig_devs[TGPU_MAX_GPUS][TMIG_IDS][TMIG_IDS];

typedef struct tmig_ci {
    int id;
    int profile;            /* compute-instance profile id (= number) */
} tmig_ci;

typedef struct tmig_gi {
    int id;
    const mig_profile *profile;
    int start;              /* first memory slice */
    int nci;
    tmig_ci ci[TMIG_IDS];
} tmig_gi;

/* One GPU's MIG state, as mig<i> holds it. */
typedef struct tmig_gpu {
    int mode;               /* NVML_DEVICE_MIG_ENABLE or _DISABLE */
    int pending;            /* the mode set last, applied or not */
    int ngi;
    tmig_gi gi[TMIG_IDS];
} tmig_gpu;

/* One call's hold on a GPU's state: the lock and what was read under it. */
typedef struct tmig_txn {
    char who[32];           /* the handle called, as the log writes it */
    int lock;
    int gpu;
    const mig_model *model;
    tmig_gpu s;
} tmig_txn;

/* A handle's position in a [TGPU_MAX_GPUS][TMIG_IDS]([TMIG_IDS]) array of
 * n elements of `size` bytes, or -1 when p does not point at one. */
static long tmig_slot(const void *p, const void *base, size_t size, size_t n) {
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;
    if (a < b || (a - b) % size != 0 || (a - b) / size >= n)
        return -1;
    return (long)((a - b) / size);
}

int tmig_owns(nvmlDevice_t d) {
    return tmig_slot(d, tmig_devs, sizeof tmig_devs[0][0][0],
                     sizeof tmig_devs / sizeof tmig_devs[0][0][0]) >= 0;
}

/* Decodes a GPU-instance handle into gpu and gi id; -1 if not ours. */
static int tmig_gi_pos(nvmlGpuInstance_t h, int *gpu, int *gi) {
    long k = tmig_slot(h, tmig_gis, sizeof tmig_gis[0][0],
                       sizeof tmig_gis / sizeof tmig_gis[0][0]);
    if (k < 0 || k / TMIG_IDS >= tnv_cfg.ngpus)
        return -1;
    *gpu = (int)(k / TMIG_IDS);
    *gi = (int)(k % TMIG_IDS);
    return 0;
}

/* Decodes a compute-instance or MIG-device handle (base says which). */
static int tmig_ci_pos(const void *h, const void *base, size_t size, int *gpu,
                       int *gi, int *ci) {
    long k = tmig_slot(h, base, size,
                       (size_t)TGPU_MAX_GPUS * TMIG_IDS * TMIG_IDS);
    if (k < 0 || k / (TMIG_IDS * TMIG_IDS) >= tnv_cfg.ngpus)
        return -1;
    *gpu = (int)(k / (TMIG_IDS * TMIG_IDS));
    *gi = (int)(k / TMIG_IDS % TMIG_IDS);
    *ci = (int)(k % TMIG_IDS);
    return 0;
}

/* Writes a handle as the log does ("gpu0", "gpu0/gi1", "gpu0/gi1/ci0"). */
static void tmig_who_dev(nvmlDevice_t d, char *buf, size_t len) {
    int gpu, gi, ci;
    if (tmig_ci_pos(d, tmig_devs, sizeof tmig_devs[0][0][0], &gpu, &gi,
                    &ci) == 0)
        snprintf(buf, len, "gpu%d/gi%d/ci%d", gpu, gi, ci);
    else if (tmig_slot(d, tnv_devs, sizeof tnv_devs[0], (size_t)tnv_cfg.ngpus)
             >= 0)
        snprintf(buf, len, "gpu%d", d->index);
    else
        snprintf(buf, len, "?");
}

static void tmig_who_gi(nvmlGpuInstance_t h, char *buf, size_t len) {
    int gpu, gi;
    if (tmig_gi_pos(h, &gpu, &gi) == 0)
        snprintf(buf, len, "gpu%d/gi%d", gpu, gi);
    else
        snprintf(buf, len, "?");
}

/* Appends "<text> -> <rc>" to mig-calls.log and returns rc. One write() of
 * an O_APPEND file: lines from concurrent processes never interleave. */
__attribute__((format(printf, 2, 3)))
static nvmlReturn_t tmig_log(nvmlReturn_t rc, const char *fmt, ...) {
    if (tnv_refs == 0)
        return rc; /* no folder known to log into */
    char line[512], path[sizeof tnv_cfg.dir + 32];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 24, fmt, ap);
    va_end(ap);
    if (n < 0)
        return rc;
    if ((size_t)n >= sizeof line - 24)
        n = (int)(sizeof line - 25);
    n += snprintf(line + n, sizeof line - (size_t)n, " -> %d\n", rc);
    snprintf(path, sizeof path, "%s/mig-calls.log", tnv_cfg.dir);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n);
        (void)w; /* the log is for tests; a lost line fails theirs */
        close(fd);
    }
    return rc;
}

static unsigned int tmig_profile_id(const mig_profile *p) {
    for (size_t i = 0; i < sizeof tmig_ids / sizeof tmig_ids[0]; i++)
        if (tmig_ids[i].nvml == p->nvml_profile)
            return tmig_ids[i].id;
    return 0xFFFFFFFFu;
}

static const mig_profile *tmig_profile_by_id(const mig_model *m,
                                             unsigned int id) {
    for (int i = 0; i < m->nprofiles; i++)
        if (tmig_profile_id(&m->profiles[i]) == id)
            return &m->profiles[i];
    return NULL;
}

/* Reads GPU gpu's state. Returns 0, or -1 when mig<gpu> is not one. */
static int tmig_read(const mig_model *m, int gpu, tmig_gpu *s) {
    char path[sizeof tnv_cfg.dir + 32], line[128];
    snprintf(path, sizeof path, "%s/mig%d", tnv_cfg.dir, gpu);
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    int ok = 1;
    s->pending = -1;
    while (ok && fgets(line, sizeof line, f)) {
        int a = 0, b = 0, c = 0;
        if (sscanf(line, "mode %d", &a) == 1) {
            s->mode = a;
        } else if (sscanf(line, "pending %d", &a) == 1) {
            s->pending = a;
        } else if (sscanf(line, "gi %d %d %d", &a, &b, &c) == 3) {
            const mig_profile *p = tmig_profile_by_id(m, (unsigned int)b);
            ok = p && s->ngi < TMIG_IDS && a > 0 && a < TMIG_IDS;
            if (ok)
                s->gi[s->ngi++] = (tmig_gi){a, p, c, 0, {{0, 0}}};
        } else if (sscanf(line, "ci %d %d %d", &a, &b, &c) == 3) {
            tmig_gi *g = NULL;
            for (int i = 0; i < s->ngi; i++)
                if (s->gi[i].id == a)
                    g = &s->gi[i];
            ok = g && g->nci < TMIG_IDS && b >= 0 && b < TMIG_IDS;
            if (ok)
                g->ci[g->nci++] = (tmig_ci){b, c};
        } else {
            ok = 0;
        }
    }
    fclose(f);
    if (s->pending < 0)
        s->pending = s->mode;
    return ok ? 0 : -1;
}

static int tmig_write(int gpu, const tmig_gpu *s) {
    char name[32], text[2048];
    size_t n = (size_t)snprintf(text, sizeof text, "mode %d\n", s->mode);
    if (s->pending != s->mode)
        n += (size_t)snprintf(text + n, sizeof text - n, "pending %d\n",
                              s->pending);
    for (int i = 0; i < s->ngi; i++) {
        const tmig_gi *g = &s->gi[i];
        n += (size_t)snprintf(text + n, sizeof text - n, "gi %d %u %d %ld\n",
                              g->id, tmig_profile_id(g->profile), g->start,
                              g->profile->mem_mib);
        for (int c = 0; c < g->nci; c++)
            n += (size_t)snprintf(text + n, sizeof text - n, "ci %d %d %d\n",
                                  g->id, g->ci[c].id, g->ci[c].profile);
    }
    snprintf(name, sizeof name, "mig%d", gpu);
    return tgpu_write_file(&tnv_cfg, name, text);
}

/* Starts a call on GPU gpu: a model with MIG, the lock, the state. On
 * failure nothing is held. */
static nvmlReturn_t tmig_begin(const char *call, int gpu, tmig_txn *t) {
    t->gpu = gpu;
    t->model = mig_model_find(tnv_model);
    if (!t->model)
        return tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: %s has no MIG", call,
                         tnv_model);
    t->lock = tgpu_lock(&tnv_cfg);
    if (t->lock < 0)
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_DIR=%s: "
                         "lock: %s", tnv_cfg.dir, strerror(errno));
    if (tmig_read(t->model, gpu, &t->s) < 0) {
        close(t->lock);
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "%s/mig%d: not a MIG state "
                         "file", tnv_cfg.dir, gpu);
    }
    return NVML_SUCCESS;
}

/* Ends a call: writes the state back when `write` and rc is success, drops
 * the lock, and returns rc (or the write's failure). */
static nvmlReturn_t tmig_end(tmig_txn *t, nvmlReturn_t rc, int write) {
    if (rc == NVML_SUCCESS && write && tmig_write(t->gpu, &t->s) < 0)
        rc = tgpu_fail(NVML_ERROR_GPU_IS_LOST, "%s/mig%d: %s", tnv_cfg.dir,
                       t->gpu, strerror(errno));
    close(t->lock);
    return rc;
}

/* tmig_begin for a GPU handle, plus MIG mode on when `need_mig`. */
static nvmlReturn_t tmig_begin_dev(const char *call, nvmlDevice_t d,
                                   const void *out, int need_mig,
                                   tmig_txn *t) {
    int gpu = -1;
    tmig_who_dev(d, t->who, sizeof t->who);
    nvmlReturn_t rc = tnv_device(call, d, out, &gpu);
    if (rc == NVML_SUCCESS)
        rc = tmig_begin(call, gpu, t);
    if (rc == NVML_SUCCESS && need_mig &&
        t->s.mode != NVML_DEVICE_MIG_ENABLE)
        rc = tmig_end(t, tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: MIG mode "
                                   "is off on GPU %d", call, gpu), 0);
    return rc;
}

static tmig_gi *tmig_find_gi(tmig_gpu *s, int id) {
    for (int i = 0; i < s->ngi; i++)
        if (s->gi[i].id == id)
            return &s->gi[i];
    return NULL;
}

static tmig_ci *tmig_find_ci(tmig_gi *g, int id) {
    for (int i = 0; i < g->nci; i++)
        if (g->ci[i].id == id)
            return &g->ci[i];
    return NULL;
}

/* tmig_begin for a GPU-instance handle: *g is the instance, which exists. */
static nvmlReturn_t tmig_begin_gi(const char *call, nvmlGpuInstance_t h,
                                  const void *out, tmig_txn *t, tmig_gi **g) {
    int gpu = -1, id = -1;
    tmig_who_gi(h, t->who, sizeof t->who);
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "%s: nvmlInit_v2 was not "
                         "called", call);
    if (tmig_gi_pos(h, &gpu, &id) < 0 || !out)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s", call,
                         !out ? "NULL output" : "not a GPU instance handle");
    nvmlReturn_t rc = tmig_begin(call, gpu, t);
    if (rc == NVML_SUCCESS && !(*g = tmig_find_gi(&t->s, id)))
        rc = tmig_end(t, tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: GPU %d "
                                   "has no GPU instance %d", call, gpu, id),
                      0);
    return rc;
}

/* tmig_begin for a compute-instance or MIG-device handle. */
static nvmlReturn_t tmig_begin_ci(const char *call, const void *h,
                                  const void *base, size_t size,
                                  const void *out, tmig_txn *t, tmig_gi **g,
                                  tmig_ci **c) {
    int gpu = -1, gi = -1, ci = -1;
    int ours = tmig_ci_pos(h, base, size, &gpu, &gi, &ci) == 0;
    snprintf(t->who, sizeof t->who, ours ? "gpu%d/gi%d/ci%d" : "?", gpu, gi,
             ci);
    if (tnv_refs == 0)
        return tgpu_fail(NVML_ERROR_UNINITIALIZED, "%s: nvmlInit_v2 was not "
                         "called", call);
    if (!ours || !out)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s", call,
                         !out ? "NULL output" : "not a MIG handle");
    nvmlReturn_t rc = tmig_begin(call, gpu, t);
    if (rc == NVML_SUCCESS && (!(*g = tmig_find_gi(&t->s, gi)) ||
                               !(*c = tmig_find_ci(*g, ci))))
        rc = tmig_end(t, tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: GPU %d "
                                   "has no compute instance %d/%d", call, gpu,
                                   gi, ci), 0);
    return rc;
}

static nvmlReturn_t tmig_begin_mig(const char *call, nvmlDevice_t d,
                                   const void *out, tmig_txn *t, tmig_gi **g,
                                   tmig_ci **c) {
    return tmig_begin_ci(call, d, tmig_devs, sizeof tmig_devs[0][0][0], out,
                         t, g, c);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
                                  unsigned int *currentMode,
                                  unsigned int *pendingMode) {
    static const char call[] = "nvmlDeviceGetMigMode";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, currentMode, 0, &t);
    if (rc == NVML_SUCCESS) {
        if (!pendingMode)
            rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: NULL output",
                           call);
        else
            *currentMode = (unsigned int)t.s.mode,
            *pendingMode = (unsigned int)t.s.pending;
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

/* Why a mode change set on t's GPU cannot be applied now, as
 * nvmlDeviceSetMigMode's activationStatus, or SUCCESS. */
static nvmlReturn_t tmig_activation(const char *call, const tmig_txn *t) {
    const char *reset = getenv("AEGIS_TEST_MIG_RESET_REQUIRED");
    tgpu_usage u = {0, 0.0, 0};
    if (reset && *reset == '1')
        return tgpu_fail(NVML_ERROR_RESET_REQUIRED, "%s: GPU %d applies the "
                         "new MIG mode at its next reset", call, t->gpu);
    if (tgpu_scan(&tnv_cfg, t->gpu, NULL, 0, &u) < 0)
        return tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_DIR=%s: %s",
                         tnv_cfg.dir, strerror(errno));
    if (u.nallocs > 0)
        return tgpu_fail(NVML_ERROR_IN_USE, "%s: GPU %d is not idle (%d "
                         "processes): the new MIG mode is pending", call,
                         t->gpu, u.nallocs);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus) {
    static const char call[] = "nvmlDeviceSetMigMode";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, activationStatus, 0, &t);
    if (rc != NVML_SUCCESS) {
        if (activationStatus)
            *activationStatus = rc;
        return tmig_log(rc, "%s %s mode=%u", call, t.who, mode);
    }
    nvmlReturn_t act = NVML_SUCCESS;
    if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE)
        rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: mode %u", call, mode);
    else if (mode == NVML_DEVICE_MIG_DISABLE && t.s.ngi > 0)
        rc = tgpu_fail(NVML_ERROR_IN_USE, "%s: GPU %d still has %d GPU "
                       "instances", call, t.gpu, t.s.ngi);
    else if ((int)mode != t.s.mode)
        act = tmig_activation(call, &t);
    if (rc == NVML_SUCCESS) {
        t.s.pending = (int)mode;
        if (act == NVML_SUCCESS)
            t.s.mode = (int)mode;
    }
    *activationStatus = rc != NVML_SUCCESS ? rc : act;
    rc = tmig_end(&t, rc, 1);
    if (*activationStatus != rc)
        return tmig_log(rc, "%s %s mode=%u activation=%d", call, t.who, mode,
                        *activationStatus);
    return tmig_log(rc, "%s %s mode=%u", call, t.who, mode);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile,
    nvmlGpuInstanceProfileInfo_t *info) {
    static const char call[] = "nvmlDeviceGetGpuInstanceProfileInfo";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, info, 1, &t);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s profile=%u", call, t.who, profile);
    const mig_profile *p = mig_profile_by_nvml(t.model, (int)profile);
    if (!p)
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: %s has no GPU instance "
                       "profile %u", call, t.model->name, profile);
    else
        *info = (nvmlGpuInstanceProfileInfo_t){
            .id = tmig_profile_id(p),
            .sliceCount = (unsigned int)p->compute_slices,
            .instanceCount = (unsigned int)p->max_instances,
            .multiprocessorCount =
                (unsigned int)(p->compute_slices * TMIG_SMS_PER_SLICE),
            .copyEngineCount = (unsigned int)p->compute_slices,
            .memorySizeMB = (unsigned long long)p->mem_mib};
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s profile=%u", call, t.who, profile);
}

/* The profile of id profileId in t's model, or NULL with rc failed. */
static const mig_profile *tmig_profile_arg(const char *call, tmig_txn *t,
                                           unsigned int profileId,
                                           nvmlReturn_t *rc) {
    const mig_profile *p = tmig_profile_by_id(t->model, profileId);
    if (!p)
        *rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s has no GPU "
                        "instance profile id %u", call, t->model->name,
                        profileId);
    return p;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId,
    nvmlGpuInstancePlacement_t *placements, unsigned int *count) {
    static const char call[] = "nvmlDeviceGetGpuInstancePossiblePlacements_v2";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, count, 1, &t);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
    const mig_profile *p = tmig_profile_arg(call, &t, profileId, &rc);
    unsigned int n = 0;
    for (int s = 0; p && s < MIG_MEM_SLICES; s++) {
        if (!(p->starts & (1u << s)))
            continue;
        if (placements && n < *count)
            placements[n] = (nvmlGpuInstancePlacement_t){
                (unsigned int)s, (unsigned int)p->mem_slices};
        n++;
    }
    if (p && placements && n > *count)
        rc = tgpu_fail(NVML_ERROR_INSUFFICIENT_SIZE, "%s: %u placements",
                       call, n);
    if (p)
        *count = n;
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
}

/* Why a new instance of p at start cannot go on s, or 0 when it can. */
static nvmlReturn_t tmig_check_place(const char *call, const tmig_txn *t,
                                     const mig_profile *p,
                                     const nvmlGpuInstancePlacement_t *pl) {
    if (pl->start >= MIG_MEM_SLICES || !(p->starts & (1u << pl->start)) ||
        pl->size != (unsigned int)p->mem_slices)
        return tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s is not placed "
                         "at start %u size %u", call, p->name, pl->start,
                         pl->size);
    int compute = p->compute_slices, same = 0;
    for (int i = 0; i < t->s.ngi; i++) {
        const tmig_gi *g = &t->s.gi[i];
        compute += g->profile->compute_slices;
        same += g->profile == p;
        if ((int)pl->start < g->start + g->profile->mem_slices &&
            g->start < (int)pl->start + p->mem_slices)
            return tgpu_fail(NVML_ERROR_INSUFFICIENT_RESOURCES, "%s: memory "
                             "slices %u..%d overlap GPU instance %d (%s at "
                             "%d)", call, pl->start,
                             (int)pl->start + p->mem_slices - 1, g->id,
                             g->profile->name, g->start);
    }
    if (compute > MIG_COMPUTE_SLICES || same >= p->max_instances ||
        t->s.ngi >= MIG_COMPUTE_SLICES)
        return tgpu_fail(NVML_ERROR_INSUFFICIENT_RESOURCES, "%s: GPU %d has "
                         "no compute slices left for %s", call, t->gpu,
                         p->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId,
    const nvmlGpuInstancePlacement_t *placement, nvmlGpuInstance_t *gi) {
    static const char call[] = "nvmlDeviceCreateGpuInstanceWithPlacement";
    unsigned int start = placement ? placement->start : 0;
    unsigned int size = placement ? placement->size : 0;
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, gi, 1, &t);
    if (rc == NVML_SUCCESS) {
        const mig_profile *p = tmig_profile_arg(call, &t, profileId, &rc);
        if (p && !placement)
            rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: NULL placement",
                           call);
        else if (p)
            rc = tmig_check_place(call, &t, p, placement);
        if (rc == NVML_SUCCESS) {
            int id = 1;
            while (tmig_find_gi(&t.s, id))
                id++;
            t.s.gi[t.s.ngi++] = (tmig_gi){id, p, (int)start, 0, {{0, 0}}};
            *gi = &tmig_gis[t.gpu][id];
        }
        rc = tmig_end(&t, rc, 1);
    }
    return tmig_log(rc, "%s %s profileId=%u start=%u size=%u", call, t.who,
                    profileId, start, size);
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                       unsigned int profileId,
                                       nvmlGpuInstance_t *gis,
                                       unsigned int *count) {
    static const char call[] = "nvmlDeviceGetGpuInstances";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, count, 1, &t);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
    const mig_profile *p = tmig_profile_arg(call, &t, profileId, &rc);
    if (p && !gis)
        rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: NULL output", call);
    if (rc == NVML_SUCCESS) {
        /* NVML fills up to the profile's instanceCount: the caller sizes
         * the buffer from ProfileInfo, and *count is output only. */
        unsigned int n = 0;
        for (int id = 1; id < TMIG_IDS; id++) {
            tmig_gi *g = tmig_find_gi(&t.s, id);
            if (g && g->profile == p)
                gis[n++] = &tmig_gis[t.gpu][id];
        }
        *count = n;
    }
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device,
                                          unsigned int id,
                                          nvmlGpuInstance_t *gi) {
    static const char call[] = "nvmlDeviceGetGpuInstanceById";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, gi, 1, &t);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s id=%u", call, t.who, id);
    if (id >= TMIG_IDS || !tmig_find_gi(&t.s, (int)id))
        rc = tgpu_fail(NVML_ERROR_NOT_FOUND, "%s: GPU %d has no GPU instance "
                       "%u", call, t.gpu, id);
    else
        *gi = &tmig_gis[t.gpu][id];
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s id=%u", call, t.who, id);
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi,
                                    nvmlGpuInstanceInfo_t *info) {
    static const char call[] = "nvmlGpuInstanceGetInfo";
    tmig_txn t;
    tmig_gi *g = NULL;
    nvmlReturn_t rc = tmig_begin_gi(call, gi, info, &t, &g);
    if (rc == NVML_SUCCESS) {
        *info = (nvmlGpuInstanceInfo_t){
            &tnv_devs[t.gpu], (unsigned int)g->id,
            tmig_profile_id(g->profile),
            {(unsigned int)g->start, (unsigned int)g->profile->mem_slices}};
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi) {
    static const char call[] = "nvmlGpuInstanceDestroy";
    tmig_txn t;
    tmig_gi *g = NULL;
    /* no output: `call` stands for the non-NULL pointer begin checks */
    nvmlReturn_t rc = tmig_begin_gi(call, gi, call, &t, &g);
    if (rc == NVML_SUCCESS) {
        if (g->nci > 0)
            rc = tgpu_fail(NVML_ERROR_IN_USE, "%s: GPU instance %d still has "
                           "%d compute instances", call, g->id, g->nci);
        else
            *g = t.s.gi[--t.s.ngi];
        rc = tmig_end(&t, rc, 1);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

/* Compute slices of compute-instance profile `profile`, or 0. */
static unsigned int tmig_ci_profile_slices(unsigned int profile) {
    return profile < sizeof tmig_ci_slices / sizeof tmig_ci_slices[0]
               ? tmig_ci_slices[profile] : 0;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gi, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t *info) {
    static const char call[] = "nvmlGpuInstanceGetComputeInstanceProfileInfo";
    tmig_txn t;
    tmig_gi *g = NULL;
    nvmlReturn_t rc = tmig_begin_gi(call, gi, info, &t, &g);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s profile=%u engProfile=%u", call, t.who,
                        profile, engProfile);
    unsigned int slices = tmig_ci_profile_slices(profile);
    unsigned int have = (unsigned int)g->profile->compute_slices;
    if (slices == 0 || slices > have ||
        engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: %s has no compute "
                       "instance profile %u/%u", call, g->profile->name,
                       profile, engProfile);
    else
        *info = (nvmlComputeInstanceProfileInfo_t){
            .id = profile, .sliceCount = slices,
            .instanceCount = have / slices,
            .multiprocessorCount = slices * TMIG_SMS_PER_SLICE,
            .sharedCopyEngineCount = have};
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s profile=%u engProfile=%u", call, t.who, profile,
                    engProfile);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t *ci) {
    static const char call[] = "nvmlGpuInstanceCreateComputeInstance";
    tmig_txn t;
    tmig_gi *g = NULL;
    nvmlReturn_t rc = tmig_begin_gi(call, gi, ci, &t, &g);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
    unsigned int slices = tmig_ci_profile_slices(profileId), used = 0;
    for (int i = 0; i < g->nci; i++)
        used += tmig_ci_profile_slices((unsigned int)g->ci[i].profile);
    if (slices == 0 || slices > (unsigned int)g->profile->compute_slices)
        rc = tgpu_fail(NVML_ERROR_INVALID_ARGUMENT, "%s: %s has no compute "
                       "instance profile id %u", call, g->profile->name,
                       profileId);
    else if (used + slices > (unsigned int)g->profile->compute_slices)
        rc = tgpu_fail(NVML_ERROR_INSUFFICIENT_RESOURCES, "%s: GPU instance "
                       "%d has %u of %d compute slices in use", call, g->id,
                       used, g->profile->compute_slices);
    else {
        int id = 0;
        while (tmig_find_ci(g, id))
            id++;
        g->ci[g->nci++] = (tmig_ci){id, (int)profileId};
        *ci = &tmig_cis[t.gpu][g->id][id];
    }
    rc = tmig_end(&t, rc, 1);
    return tmig_log(rc, "%s %s profileId=%u", call, t.who, profileId);
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gi,
                                                   unsigned int id,
                                                   nvmlComputeInstance_t *ci) {
    static const char call[] = "nvmlGpuInstanceGetComputeInstanceById";
    tmig_txn t;
    tmig_gi *g = NULL;
    nvmlReturn_t rc = tmig_begin_gi(call, gi, ci, &t, &g);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s id=%u", call, t.who, id);
    if (id >= TMIG_IDS || !tmig_find_ci(g, (int)id))
        rc = tgpu_fail(NVML_ERROR_NOT_FOUND, "%s: GPU instance %d has no "
                       "compute instance %u", call, g->id, id);
    else
        *ci = &tmig_cis[t.gpu][g->id][id];
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s id=%u", call, t.who, id);
}

/* Live processes charged to compute instance ci of GPU instance gi on
 * gpu, or -1 (errno set) when the folder cannot be read. */
static int tmig_procs_in(int gpu, int gi, int ci) {
    static tgpu_alloc allocs[TGPU_MAX_ALLOCS];
    tgpu_usage u;
    int n = tgpu_scan(&tnv_cfg, gpu, allocs, TGPU_MAX_ALLOCS, &u), in = 0;
    for (int i = 0; i < n; i++)
        in += allocs[i].mig_gi == gi && allocs[i].mig_ci == ci;
    return n < 0 ? -1 : in;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci) {
    static const char call[] = "nvmlComputeInstanceDestroy";
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc = tmig_begin_ci(call, ci, tmig_cis,
                                    sizeof tmig_cis[0][0][0], call, &t, &g,
                                    &c);
    if (rc == NVML_SUCCESS) {
        int n = tmig_procs_in(t.gpu, g->id, c->id);
        if (n != 0)
            rc = n < 0 ? tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_"
                                   "DIR=%s: %s", tnv_cfg.dir, strerror(errno))
                       : tgpu_fail(NVML_ERROR_IN_USE, "%s: compute instance "
                                   "%d/%d still runs %d processes", call,
                                   g->id, c->id, n);
        else
            *c = g->ci[--g->nci];
        rc = tmig_end(&t, rc, 1);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                            unsigned int *count) {
    static const char call[] = "nvmlDeviceGetMaxMigDeviceCount";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, count, 0, &t);
    if (rc == NVML_SUCCESS) {
        /* one MIG device per compute slice, none while MIG is off */
        *count = t.s.mode == NVML_DEVICE_MIG_ENABLE ? MIG_COMPUTE_SLICES : 0;
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                 unsigned int index,
                                                 nvmlDevice_t *migDevice) {
    static const char call[] = "nvmlDeviceGetMigDeviceHandleByIndex";
    tmig_txn t;
    nvmlReturn_t rc = tmig_begin_dev(call, device, migDevice, 1, &t);
    if (rc != NVML_SUCCESS)
        return tmig_log(rc, "%s %s index=%u", call, t.who, index);
    /* MIG devices in GPU-instance id order, then compute-instance id. */
    unsigned int k = 0;
    *migDevice = NULL;
    for (int gi = 1; gi < TMIG_IDS && !*migDevice; gi++) {
        tmig_gi *g = tmig_find_gi(&t.s, gi);
        for (int ci = 0; g && ci < TMIG_IDS && !*migDevice; ci++)
            if (tmig_find_ci(g, ci) && k++ == index)
                *migDevice = &tmig_devs[t.gpu][gi][ci];
    }
    if (!*migDevice)
        rc = tgpu_fail(NVML_ERROR_NOT_FOUND, "%s: GPU %d has no MIG device "
                       "%u", call, t.gpu, index);
    rc = tmig_end(&t, rc, 0);
    return tmig_log(rc, "%s %s index=%u", call, t.who, index);
}

/* The GPU- or compute-instance id behind a MIG device handle. */
static nvmlReturn_t tmig_mig_id(const char *call, nvmlDevice_t d,
                                unsigned int *id, int want_ci) {
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc;
    tmig_who_dev(d, t.who, sizeof t.who); /* begin_mig may not be called */
    if (tnv_refs > 0 && !tmig_owns(d))
        rc = tgpu_fail(NVML_ERROR_NOT_SUPPORTED, "%s: not a MIG device",
                       call);
    else if ((rc = tmig_begin_mig(call, d, id, &t, &g, &c)) == NVML_SUCCESS) {
        *id = (unsigned int)(want_ci ? c->id : g->id);
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device,
                                        unsigned int *id) {
    return tmig_mig_id("nvmlDeviceGetGpuInstanceId", device, id, 0);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                            unsigned int *id) {
    return tmig_mig_id("nvmlDeviceGetComputeInstanceId", device, id, 1);
}

/* The device queries of testnvml.c on a MIG device: each checks the
 * device still exists, answers from its GPU instance, and logs. */
nvmlReturn_t tmig_uuid(nvmlDevice_t d, char *buf, unsigned int length) {
    static const char call[] = "nvmlDeviceGetUUID";
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc = tmig_begin_mig(call, d, buf, &t, &g, &c);
    if (rc == NVML_SUCCESS) {
        snprintf(text, sizeof text, TGPU_MIG_UUID_PREFIX "%d-%d-%d", t.gpu,
                 g->id, c->id);
        rc = tmig_end(&t, tnv_string(call, text, buf, length), 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t tmig_name(nvmlDevice_t d, char *buf, unsigned int length) {
    static const char call[] = "nvmlDeviceGetName";
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE + 32];
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc = tmig_begin_mig(call, d, buf, &t, &g, &c);
    if (rc == NVML_SUCCESS) {
        snprintf(text, sizeof text, "%s MIG %s", tnv_model, g->profile->name);
        rc = tmig_end(&t, tnv_string(call, text, buf, length), 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

nvmlReturn_t tmig_memory(nvmlDevice_t d, nvmlMemory_t *memory) {
    static const char call[] = "nvmlDeviceGetMemoryInfo";
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc = tmig_begin_mig(call, d, memory, &t, &g, &c);
    if (rc == NVML_SUCCESS) {
        static tgpu_alloc allocs[TGPU_MAX_ALLOCS];
        tgpu_usage u;
        int n = tgpu_scan(&tnv_cfg, t.gpu, allocs, TGPU_MAX_ALLOCS, &u);
        if (n < 0)
            rc = tgpu_fail(NVML_ERROR_GPU_IS_LOST, "AEGIS_TEST_GPU_DIR=%s: "
                           "%s", tnv_cfg.dir, strerror(errno));
        unsigned long long used = 0;
        for (int i = 0; i < n; i++)
            if (allocs[i].mig_gi == g->id)
                used += (unsigned long long)allocs[i].mib << 20;
        unsigned long long total = (unsigned long long)g->profile->mem_mib
                                   << 20;
        if (used > total)
            used = total;
        *memory = (nvmlMemory_t){total, total - used, used};
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}

int tmig_enabled(int gpu) {
    const mig_model *m = mig_model_find(tnv_model);
    tmig_gpu s;
    return m && tmig_read(m, gpu, &s) == 0 && s.mode == NVML_DEVICE_MIG_ENABLE;
}

nvmlReturn_t tmig_device_ids(const char *call, nvmlDevice_t d, int *gpu,
                             int *gi, int *ci) {
    tmig_txn t;
    tmig_gi *g = NULL;
    tmig_ci *c = NULL;
    nvmlReturn_t rc = tmig_begin_mig(call, d, d, &t, &g, &c);
    if (rc == NVML_SUCCESS) {
        *gpu = t.gpu;
        *gi = g->id;
        *ci = c->id;
        rc = tmig_end(&t, rc, 0);
    }
    return tmig_log(rc, "%s %s", call, t.who);
}
