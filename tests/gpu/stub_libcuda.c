/* stub_libcuda.c -- a stand-in CUDA driver with just the calls
 * aegis-gpuburn makes (src/testgpu/cudrv.h), so its logic -- options,
 * duty cycle, out-of-memory error, clean exit -- is tested without a GPU:
 * test_gpuburn.sh runs it with AEGIS_CUDA_LIBRARY pointing here.
 *
 * Devices hold no memory: an allocation is counted against the device's
 * size and returns a made-up address. A kernel "runs" at the next
 * cuCtxSynchronize, which sleeps for the spin time it was launched with.
 * Every allocation, launch and free is one line of $AEGIS_STUBCUDA_LOG, so
 * a test reads what the job asked of the driver. Like a driver, it refuses
 * calls without a current context and kernels not in a loaded module; and
 * a process that exits with memory, a module or a context still held exits
 * 99 instead, so a leak fails the test.
 *
 * environment: AEGIS_STUBCUDA_DEVICES (default 1; 0: cuInit fails with
 * CUDA_ERROR_NO_DEVICE), AEGIS_STUBCUDA_MIB (each device's memory,
 * default 16384), AEGIS_STUBCUDA_LOG (default: no log).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cudrv.h"

#define STUB_EXPORT __attribute__((visibility("default")))
#define STUB_MAX_DEVICES 8
#define STUB_MAX_BUFS 64
#define STUB_SMS 4                  /* multiprocessors of every device */
#define STUB_ERROR_INVALID_VALUE 1u

/* A context handle is the address of its device's entry. */
struct CUctx_st {
    int retained;                   /* primary context references */
    double mib, used_mib;
    unsigned long long pending_ns;  /* launched, not yet synchronized */
};

/* A module is a copy of the PTX it was loaded from, on one device. */
struct CUmod_st {
    int device;
    char *ptx;
};

/* A function handle is its module (the stub's PTX has one entry each). */
struct CUfunc_st {
    struct CUmod_st mod;
};

typedef struct stub_buf {
    cudrv_ptr addr;                 /* 0: free slot */
    int device;
    double mib;
} stub_buf;

static struct {
    int ndevs;                      /* -1: cuInit not called */
    struct CUctx_st devs[STUB_MAX_DEVICES];
    int current;                    /* device of the current context, or -1 */
    stub_buf bufs[STUB_MAX_BUFS];
    cudrv_ptr next_addr;
    int modules;                    /* loaded, not unloaded */
} stub = {.ndevs = -1, .current = -1, .next_addr = 0x10000000};

/* Appends one line to $AEGIS_STUBCUDA_LOG, if set. */
__attribute__((format(printf, 1, 2))) static void stub_log(const char *fmt,
                                                           ...) {
    const char *path = getenv("AEGIS_STUBCUDA_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

/* An environment variable as a number, or `dflt`. */
static double stub_env(const char *name, double dflt) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : dflt;
}

STUB_EXPORT cudrv_result cuGetErrorName(cudrv_result rc, const char **s) {
    switch (rc) {
    case CUDRV_SUCCESS: *s = "CUDA_SUCCESS"; break;
    case STUB_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDRV_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case CUDRV_ERROR_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case CUDRV_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDRV_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case CUDRV_ERROR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
    case CUDRV_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDRV_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    default: *s = NULL; return STUB_ERROR_INVALID_VALUE;
    }
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuGetErrorString(cudrv_result rc, const char **s) {
    const char *name = NULL;
    if (cuGetErrorName(rc, &name) != CUDRV_SUCCESS)
        return STUB_ERROR_INVALID_VALUE;
    *s = rc == CUDRV_ERROR_OUT_OF_MEMORY ? "out of memory"
                                         : "stand-in driver error";
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuInit(unsigned int flags) {
    int n = (int)stub_env("AEGIS_STUBCUDA_DEVICES", 1);
    if (flags != 0)
        return STUB_ERROR_INVALID_VALUE;
    if (n <= 0)
        return CUDRV_ERROR_NO_DEVICE;
    stub.ndevs = n < STUB_MAX_DEVICES ? n : STUB_MAX_DEVICES;
    for (int k = 0; k < stub.ndevs; k++)
        stub.devs[k].mib = stub_env("AEGIS_STUBCUDA_MIB", 16384);
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuDeviceGetCount(int *count) {
    if (stub.ndevs < 0)
        return CUDRV_ERROR_NOT_INITIALIZED;
    *count = stub.ndevs;
    return CUDRV_SUCCESS;
}

/* CUDRV_SUCCESS when `dev` names a device of an initialised driver. */
static cudrv_result stub_check_device(cudrv_device dev) {
    if (stub.ndevs < 0)
        return CUDRV_ERROR_NOT_INITIALIZED;
    return dev >= 0 && dev < stub.ndevs ? CUDRV_SUCCESS
                                        : CUDRV_ERROR_INVALID_DEVICE;
}

STUB_EXPORT cudrv_result cuDeviceGet(cudrv_device *dev, int ordinal) {
    *dev = ordinal;
    return stub_check_device(ordinal);
}

STUB_EXPORT cudrv_result cuDeviceGetName(char *name, int len,
                                         cudrv_device dev) {
    snprintf(name, (size_t)len, "aegis stand-in GPU %d", dev);
    return stub_check_device(dev);
}

STUB_EXPORT cudrv_result cuDeviceGetAttribute(int *value, unsigned int attr,
                                              cudrv_device dev) {
    if (attr != CUDRV_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        return STUB_ERROR_INVALID_VALUE;
    *value = STUB_SMS;
    return stub_check_device(dev);
}

STUB_EXPORT cudrv_result cuDevicePrimaryCtxRetain(cudrv_context *ctx,
                                                  cudrv_device dev) {
    cudrv_result rc = stub_check_device(dev);
    if (rc == CUDRV_SUCCESS) {
        stub.devs[dev].retained++;
        *ctx = &stub.devs[dev];
    }
    return rc;
}

STUB_EXPORT cudrv_result cuDevicePrimaryCtxRelease_v2(cudrv_device dev) {
    cudrv_result rc = stub_check_device(dev);
    if (rc == CUDRV_SUCCESS && stub.devs[dev].retained == 0)
        rc = CUDRV_ERROR_INVALID_CONTEXT;
    if (rc == CUDRV_SUCCESS && --stub.devs[dev].retained == 0 &&
        stub.current == dev)
        stub.current = -1;
    return rc;
}

STUB_EXPORT cudrv_result cuCtxSetCurrent(cudrv_context ctx) {
    int dev = ctx ? (int)(ctx - stub.devs) : -1;
    if (ctx && (dev < 0 || dev >= stub.ndevs || ctx->retained == 0))
        return CUDRV_ERROR_INVALID_CONTEXT;
    stub.current = dev;
    return CUDRV_SUCCESS;
}

/* The current context, or NULL. */
static struct CUctx_st *stub_ctx(void) {
    return stub.current >= 0 ? &stub.devs[stub.current] : NULL;
}

STUB_EXPORT cudrv_result cuCtxSynchronize(void) {
    struct CUctx_st *ctx = stub_ctx();
    if (!ctx)
        return CUDRV_ERROR_INVALID_CONTEXT;
    struct timespec ts = {(time_t)(ctx->pending_ns / 1000000000ull),
                          (long)(ctx->pending_ns % 1000000000ull)};
    ctx->pending_ns = 0;
    while (nanosleep(&ts, &ts) != 0) /* the kernels "run" */
        ;
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuModuleLoadData(cudrv_module *mod,
                                          const void *image) {
    const char *ptx = image;
    if (!stub_ctx())
        return CUDRV_ERROR_INVALID_CONTEXT;
    if (!ptx || !strstr(ptx, ".version") || !strstr(ptx, ".entry "))
        return CUDRV_ERROR_INVALID_IMAGE; /* not PTX text */
    struct CUfunc_st *fn = calloc(1, sizeof *fn);
    char *copy = strdup(ptx);
    if (!fn || !copy) {
        free(fn);
        free(copy);
        return CUDRV_ERROR_OUT_OF_MEMORY;
    }
    fn->mod.device = stub.current;
    fn->mod.ptx = copy;
    stub.modules++;
    *mod = &fn->mod;
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuModuleUnload(cudrv_module mod) {
    if (!mod)
        return STUB_ERROR_INVALID_VALUE;
    free(mod->ptx);
    free((struct CUfunc_st *)mod); /* mod is the first member */
    stub.modules--;
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuModuleGetFunction(cudrv_function *fn,
                                             cudrv_module mod,
                                             const char *name) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (!mod || !strstr(mod->ptx, entry))
        return CUDRV_ERROR_NOT_FOUND;
    *fn = (struct CUfunc_st *)mod;
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuLaunchKernel(cudrv_function fn, unsigned gx,
                                        unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz,
                                        unsigned shared, cudrv_stream stream,
                                        void **params, void **extra) {
    struct CUctx_st *ctx = stub_ctx();
    if (!ctx)
        return CUDRV_ERROR_INVALID_CONTEXT;
    if (!fn || fn->mod.device != stub.current || !params || extra ||
        gx * gy * gz == 0 || bx * by * bz == 0)
        return STUB_ERROR_INVALID_VALUE;
    unsigned long long ns;
    memcpy(&ns, params[0], sizeof ns); /* the spin kernel's one u64 */
    ctx->pending_ns += ns;
    stub_log("launch device=%d grid=%ux%ux%u block=%ux%ux%u spin_ns=%llu",
             stub.current, gx, gy, gz, bx, by, bz, ns);
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuMemAlloc_v2(cudrv_ptr *p, size_t bytes) {
    struct CUctx_st *ctx = stub_ctx();
    if (!ctx)
        return CUDRV_ERROR_INVALID_CONTEXT;
    double mib = (double)bytes / 1048576.0;
    stub_buf *slot = NULL;
    for (int i = 0; i < STUB_MAX_BUFS && !slot; i++)
        if (!stub.bufs[i].addr)
            slot = &stub.bufs[i];
    cudrv_result rc = CUDRV_SUCCESS;
    if (bytes == 0)
        rc = STUB_ERROR_INVALID_VALUE;
    else if (!slot || ctx->used_mib + mib > ctx->mib)
        rc = CUDRV_ERROR_OUT_OF_MEMORY;
    stub_log("alloc device=%d mib=%.0f -> %u", stub.current, mib, rc);
    if (rc != CUDRV_SUCCESS)
        return rc;
    *slot = (stub_buf){stub.next_addr, stub.current, mib};
    stub.next_addr += (bytes + 0xfffff) & ~(cudrv_ptr)0xfffff;
    ctx->used_mib += mib;
    *p = slot->addr;
    return CUDRV_SUCCESS;
}

STUB_EXPORT cudrv_result cuMemFree_v2(cudrv_ptr p) {
    for (int i = 0; i < STUB_MAX_BUFS; i++) {
        stub_buf *b = &stub.bufs[i];
        if (p && b->addr == p) {
            stub.devs[b->device].used_mib -= b->mib;
            stub_log("free device=%d mib=%.0f", b->device, b->mib);
            b->addr = 0;
            return CUDRV_SUCCESS;
        }
    }
    return STUB_ERROR_INVALID_VALUE;
}

STUB_EXPORT cudrv_result cuMemGetInfo_v2(size_t *freeb, size_t *total) {
    struct CUctx_st *ctx = stub_ctx();
    if (!ctx)
        return CUDRV_ERROR_INVALID_CONTEXT;
    *total = (size_t)(ctx->mib * 1048576.0);
    *freeb = (size_t)((ctx->mib - ctx->used_mib) * 1048576.0);
    return CUDRV_SUCCESS;
}

/* What a process left held at exit: anything fails it (exit 99). */
__attribute__((destructor)) static void stub_check_leaks(void) {
    int bufs = 0, ctxs = 0;
    for (int i = 0; i < STUB_MAX_BUFS; i++)
        bufs += stub.bufs[i].addr != 0;
    for (int k = 0; k < STUB_MAX_DEVICES; k++)
        ctxs += stub.devs[k].retained;
    if (bufs + ctxs + stub.modules == 0)
        return;
    fprintf(stderr, "stub libcuda: pid %d exits holding %d allocations, %d "
            "modules, %d context references\n", (int)getpid(), bufs,
            stub.modules, ctxs);
    _exit(99);
}
