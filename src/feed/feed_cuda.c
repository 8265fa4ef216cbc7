/* feed_cuda.c -- the CUDA driver, loaded with dlopen, and the device
 * buffers and IPC mappings of GPU batches.
 *
 * Why the driver API (libcuda.so.1) and not the runtime (libcudart): the
 * driver library ships with the driver, so it exists wherever a GPU does
 * and always matches it, and its versioned entry points (cuMemAlloc_v2...)
 * are a stable ABI. A libcudart found at run time may be newer than the
 * driver (cudaErrorInsufficientDriver) or be a second copy next to torch's.
 * Working in each device's primary context keeps us in the context torch's
 * runtime uses, so its pointers and ours are interchangeable.
 *
 * The loaded library is process-wide state, like the driver itself: loaded
 * once (pthread_once), never unloaded. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "feed_cuda.h"
#include "feed_shm.h"

_Static_assert(sizeof(CUipcMemHandle) == FEED_CUDA_IPC_BYTES,
               "FEED_CUDA_IPC_BYTES must match CU_IPC_HANDLE_SIZE");

#define FEED_CUDA_DEFAULT_LIBRARY "libcuda.so.1"
#define FEED_CUDA_MAX_DEVICES 64 /* primary contexts we cache: any server */

/* The entry points we use, by their exported (versioned) names: cuda.h
 * renames cuMemAlloc to cuMemAlloc_v2 and so on only at compile time. */
typedef struct {
    CUresult (*init)(unsigned int);
    CUresult (*error_name)(CUresult, const char **);
    CUresult (*error_string)(CUresult, const char **);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_count)(int *);
    CUresult (*bus_id)(char *, int, CUdevice);
    CUresult (*device_by_bus_id)(CUdevice *, const char *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*ctx_sync)(void);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*ipc_get)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close)(CUdeviceptr);
} cuda_fns;

static const struct {
    const char *name;
    size_t slot;
} cuda_syms[] = {
    {"cuInit", offsetof(cuda_fns, init)},
    {"cuGetErrorName", offsetof(cuda_fns, error_name)},
    {"cuGetErrorString", offsetof(cuda_fns, error_string)},
    {"cuDeviceGet", offsetof(cuda_fns, device_get)},
    {"cuDeviceGetCount", offsetof(cuda_fns, device_count)},
    {"cuDeviceGetPCIBusId", offsetof(cuda_fns, bus_id)},
    {"cuDeviceGetByPCIBusId", offsetof(cuda_fns, device_by_bus_id)},
    {"cuDevicePrimaryCtxRetain", offsetof(cuda_fns, primary_retain)},
    {"cuCtxPushCurrent_v2", offsetof(cuda_fns, ctx_push)},
    {"cuCtxPopCurrent_v2", offsetof(cuda_fns, ctx_pop)},
    {"cuCtxSynchronize", offsetof(cuda_fns, ctx_sync)},
    {"cuMemAlloc_v2", offsetof(cuda_fns, mem_alloc)},
    {"cuMemFree_v2", offsetof(cuda_fns, mem_free)},
    {"cuMemcpy", offsetof(cuda_fns, memcpy)},
    {"cuIpcGetMemHandle", offsetof(cuda_fns, ipc_get)},
    {"cuIpcOpenMemHandle_v2", offsetof(cuda_fns, ipc_open)},
    {"cuIpcCloseMemHandle", offsetof(cuda_fns, ipc_close)},
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;    /* guards ctx */
    int loaded;              /* fn is usable and cuInit succeeded */
    char why[200];           /* why not, when !loaded */
    char path[128];          /* the library, for messages */
    cuda_fns fn;
    CUcontext ctx[FEED_CUDA_MAX_DEVICES]; /* retained primary contexts */
} cuda = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

/* "CUDA_ERROR_X (what it means)" for rc. */
static void cuda_describe(CUresult rc, char *buf, size_t len) {
    const char *name = NULL, *what = NULL;
    if (cuda.fn.error_name) cuda.fn.error_name(rc, &name);
    if (cuda.fn.error_string) cuda.fn.error_string(rc, &what);
    snprintf(buf, len, "%s (%s)", name ? name : "CUDA error",
             what ? what : "no description");
}

static void cuda_load_once(void) {
    const char *path = getenv("AEGIS_CUDA_LIBRARY");
    if (!path || !*path) path = FEED_CUDA_DEFAULT_LIBRARY;
    snprintf(cuda.path, sizeof cuda.path, "%s", path);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(cuda.why, sizeof cuda.why, "%s: dlopen: %s (no NVIDIA "
                 "driver here?)", path, why ? why : "failed");
        return;
    }
    for (size_t i = 0; i < sizeof cuda_syms / sizeof cuda_syms[0]; i++) {
        void *addr = dlsym(lib, cuda_syms[i].name);
        if (!addr) {
            snprintf(cuda.why, sizeof cuda.why, "%s: dlsym %s: not found "
                     "(not a CUDA driver, or older than CUDA 11)", path,
                     cuda_syms[i].name);
            return; /* lib stays loaded: harmless, and dlclose is not */
        }
        /* POSIX guarantees data and function pointers convert via dlsym. */
        memcpy((char *)&cuda.fn + cuda_syms[i].slot, &addr, sizeof addr);
    }
    CUresult rc = cuda.fn.init(0);
    if (rc != CUDA_SUCCESS) {
        char what[128];
        cuda_describe(rc, what, sizeof what);
        snprintf(cuda.why, sizeof cuda.why, "%s: cuInit: %s", path, what);
        return;
    }
    cuda.loaded = 1;
}

int feed_cuda_load(const char *feed, feed_err *err) {
    pthread_once(&cuda.once, cuda_load_once);
    if (cuda.loaded) return FEED_OK;
    feed_seterr(err, FEED_ECUDA, "feed %s: CUDA driver unusable: %s", feed,
                cuda.why);
    return FEED_ECUDA;
}

/* Fill err for a failed call; returns FEED_ECUDA. */
static int cuda_fail(const char *feed, const char *call, int device,
                     CUresult rc, feed_err *err) {
    char what[128];
    cuda_describe(rc, what, sizeof what);
    feed_seterr(err, FEED_ECUDA, "feed %s: %s on cuda:%d: %s", feed, call,
                device, what);
    return FEED_ECUDA;
}

/* Make device's primary context current on this thread (push: the
 * caller's own current context comes back in cuda_leave). */
static int cuda_enter(const char *feed, int device, feed_err *err) {
    int rc = feed_cuda_load(feed, err);
    if (rc != FEED_OK) return rc;
    if (device < 0 || device >= FEED_CUDA_MAX_DEVICES) {
        feed_seterr(err, FEED_EINVAL, "feed %s: no CUDA device %d", feed,
                    device);
        return FEED_EINVAL;
    }
    CUresult cr = CUDA_SUCCESS;
    pthread_mutex_lock(&cuda.lock);
    if (!cuda.ctx[device]) {
        CUdevice dev;
        cr = cuda.fn.device_get(&dev, device);
        /* Retained for the process's life, as the runtime does: releasing
         * it could tear down the context torch is using. */
        if (cr == CUDA_SUCCESS) cr = cuda.fn.primary_retain(&cuda.ctx[device], dev);
    }
    CUcontext ctx = cuda.ctx[device];
    pthread_mutex_unlock(&cuda.lock);
    if (cr != CUDA_SUCCESS)
        return cuda_fail(feed, "cuDevicePrimaryCtxRetain", device, cr, err);
    cr = cuda.fn.ctx_push(ctx);
    return cr == CUDA_SUCCESS
               ? FEED_OK
               : cuda_fail(feed, "cuCtxPushCurrent", device, cr, err);
}

static void cuda_leave(void) {
    CUcontext ctx;
    cuda.fn.ctx_pop(&ctx);
}

int feed_cuda_bus_id(const char *feed, int device,
                     char bus[FEED_CUDA_BUS_MAX], feed_err *err) {
    int rc = cuda_enter(feed, device, err);
    if (rc != FEED_OK) return rc;
    CUdevice dev;
    CUresult cr = cuda.fn.device_get(&dev, device);
    if (cr == CUDA_SUCCESS) cr = cuda.fn.bus_id(bus, FEED_CUDA_BUS_MAX, dev);
    cuda_leave();
    return cr == CUDA_SUCCESS
               ? FEED_OK
               : cuda_fail(feed, "cuDeviceGetPCIBusId", device, cr, err);
}

int feed_cuda_alloc(const char *feed, int device, size_t bytes,
                    uint64_t *dptr, unsigned char ipc[FEED_CUDA_IPC_BYTES],
                    feed_err *err) {
    int rc = cuda_enter(feed, device, err);
    if (rc != FEED_OK) return rc;
    CUdeviceptr p = 0;
    CUipcMemHandle h;
    char call[64]; /* the size is what a reader of out-of-memory needs */
    snprintf(call, sizeof call, "cuMemAlloc(%zu bytes)", bytes);
    CUresult cr = cuda.fn.mem_alloc(&p, bytes);
    if (cr == CUDA_SUCCESS) {
        snprintf(call, sizeof call, "cuIpcGetMemHandle");
        cr = cuda.fn.ipc_get(&h, p);
        if (cr != CUDA_SUCCESS) cuda.fn.mem_free(p);
    }
    cuda_leave();
    if (cr != CUDA_SUCCESS) return cuda_fail(feed, call, device, cr, err);
    *dptr = (uint64_t)p;
    memcpy(ipc, &h, FEED_CUDA_IPC_BYTES);
    return FEED_OK;
}

void feed_cuda_free(int device, uint64_t dptr) {
    if (cuda_enter("-", device, NULL) != FEED_OK) return;
    cuda.fn.mem_free((CUdeviceptr)dptr);
    cuda_leave();
}

int feed_cuda_copy(const char *feed, int device, uint64_t dst, uint64_t src,
                   size_t bytes, feed_err *err) {
    int rc = cuda_enter(feed, device, err);
    if (rc != FEED_OK) return rc;
    const char *call = "cuMemcpy";
    CUresult cr = cuda.fn.memcpy((CUdeviceptr)dst, (CUdeviceptr)src, bytes);
    /* A device-to-device cuMemcpy may return before it is done. */
    if (cr == CUDA_SUCCESS) {
        call = "cuCtxSynchronize";
        cr = cuda.fn.ctx_sync();
    }
    cuda_leave();
    return cr == CUDA_SUCCESS ? FEED_OK
                              : cuda_fail(feed, call, device, cr, err);
}

/* The ordinal of device handle dev. cuDeviceGetByPCIBusId returns a
 * CUdevice handle, which the API does not promise equals the ordinal
 * cuDeviceGet takes: ask each ordinal for its handle. */
static CUresult cuda_ordinal_of(CUdevice dev, int *ordinal) {
    int n = 0;
    CUresult cr = cuda.fn.device_count(&n);
    for (int k = 0; cr == CUDA_SUCCESS && k < n; k++) {
        CUdevice d;
        cr = cuda.fn.device_get(&d, k);
        if (cr == CUDA_SUCCESS && d == dev) {
            *ordinal = k;
            return CUDA_SUCCESS;
        }
    }
    return cr == CUDA_SUCCESS ? CUDA_ERROR_INVALID_DEVICE : cr;
}

int feed_cuda_open(const char *feed, const char *bus,
                   const unsigned char ipc[FEED_CUDA_IPC_BYTES], int *device,
                   uint64_t *dptr, feed_err *err) {
    int rc = feed_cuda_load(feed, err);
    if (rc != FEED_OK) return rc;
    CUdevice dev;
    int ordinal = -1;
    CUresult cr = cuda.fn.device_by_bus_id(&dev, bus);
    if (cr == CUDA_SUCCESS) cr = cuda_ordinal_of(dev, &ordinal);
    if (cr != CUDA_SUCCESS) {
        char what[128];
        cuda_describe(cr, what, sizeof what);
        feed_seterr(err, FEED_ECUDA, "feed %s: cuDeviceGetByPCIBusId %s: %s "
                    "(is the producer's GPU hidden by CUDA_VISIBLE_DEVICES?)",
                    feed, bus, what);
        return FEED_ECUDA;
    }
    rc = cuda_enter(feed, ordinal, err);
    if (rc != FEED_OK) return rc;
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    memcpy(&h, ipc, FEED_CUDA_IPC_BYTES);
    cr = cuda.fn.ipc_open(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    cuda_leave();
    if (cr != CUDA_SUCCESS)
        return cuda_fail(feed, "cuIpcOpenMemHandle", ordinal, cr, err);
    *device = ordinal;
    *dptr = (uint64_t)p;
    return FEED_OK;
}

void feed_cuda_close(int device, uint64_t dptr) {
    if (cuda_enter("-", device, NULL) != FEED_OK) return;
    cuda.fn.ipc_close((CUdeviceptr)dptr);
    cuda_leave();
}
