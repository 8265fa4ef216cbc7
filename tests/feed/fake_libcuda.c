/* fake_libcuda.c -- a stand-in for libcuda.so.1 with just the calls the
 * feed makes, so the whole GPU path runs (and is checked) on machines
 * without a GPU: test_feed_gpu runs against it with AEGIS_CUDA_LIBRARY.
 *
 * "Device memory" is a POSIX shared-memory segment per allocation, so an
 * IPC handle is simply its name and cuIpcOpenMemHandle maps it in another
 * process; every address is a host address, so cuMemcpy is memcpy. It
 * enforces the two rules the feed exists to keep: freeing a buffer that a
 * process still maps aborts, and a process that exits with an open mapping
 * or an unfreed allocation exits 99 (the IPC leak of TensorSocket).
 *
 * It has one device, ordinal 0, whose CUdevice handle is FAKE_DEVICE: the
 * API hands out handles (cuDeviceGet, cuDeviceGetByPCIBusId) and takes
 * them (cuDeviceGetPCIBusId, cuDevicePrimaryCtxRetain) but never promises
 * a handle equals its ordinal, so a caller that mixes the two fails here
 * as it might on a real driver. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>

/* Placed before the bytes handed out. */
typedef struct {
    _Atomic int maps; /* cuIpcOpenMemHandle minus cuIpcCloseMemHandle */
    size_t size;      /* of the whole segment */
    char name[48];
} fake_buf;

#define FAKE_HDR 64 /* keeps the data 64-byte aligned, as cuMemAlloc's is */
_Static_assert(sizeof(fake_buf) <= FAKE_HDR, "header fits");

static int allocs, frees, opens, closes, serial;

/* The one device's handle: anything but its ordinal, 0. */
#define FAKE_DEVICE ((CUdevice)0x5a)

static fake_buf *hdr_of(CUdeviceptr p) {
    return (fake_buf *)(uintptr_t)(p - FAKE_HDR);
}

static fake_buf *map_name(const char *name, int oflag) {
    int fd = shm_open(name, oflag, 0600);
    if (fd < 0) return NULL;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0)
        p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

CUresult cuInit(unsigned int flags) { return CUDA_SUCCESS; }

CUresult cuGetErrorName(CUresult rc, const char **s) {
    *s = rc == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult rc, const char **s) {
    *s = "fake driver";
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
    *n = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = FAKE_DEVICE;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) {
    if (d != FAKE_DEVICE) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(bus, (size_t)len, "0000:00:00.0");
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *bus) {
    if (strcmp(bus, "0000:00:00.0") != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = FAKE_DEVICE;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d) {
    static int one_context;
    if (d != FAKE_DEVICE) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)&one_context;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent_v2(CUcontext *ctx) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    char name[48];
    snprintf(name, sizeof name, "/aegis-fakecuda-%d-%d", (int)getpid(),
             serial++);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    int ok = ftruncate(fd, (off_t)(bytes + FAKE_HDR)) == 0;
    close(fd);
    fake_buf *b = ok ? map_name(name, O_RDWR) : NULL;
    if (!b) {
        shm_unlink(name);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    b->size = bytes + FAKE_HDR;
    snprintf(b->name, sizeof b->name, "%s", name);
    allocs++;
    *p = (CUdeviceptr)(uintptr_t)b + FAKE_HDR;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    fake_buf *b = hdr_of(p);
    if (atomic_load(&b->maps) != 0) {
        fprintf(stderr, "fake libcuda: cuMemFree of %s while %d processes "
                "map it\n", b->name, atomic_load(&b->maps));
        abort();
    }
    shm_unlink(b->name);
    munmap(b, b->size);
    frees++;
    return CUDA_SUCCESS;
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    memset(h, 0, sizeof *h);
    snprintf(h->reserved, sizeof h->reserved, "%s", hdr_of(p)->name);
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h,
                               unsigned int flags) {
    fake_buf *b = map_name(h.reserved, O_RDWR);
    if (!b) return CUDA_ERROR_INVALID_HANDLE;
    atomic_fetch_add(&b->maps, 1);
    opens++;
    *p = (CUdeviceptr)(uintptr_t)b + FAKE_HDR;
    return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
    fake_buf *b = hdr_of(p);
    atomic_fetch_sub(&b->maps, 1);
    munmap(b, b->size);
    closes++;
    return CUDA_SUCCESS;
}

__attribute__((destructor)) static void check_leaks(void) {
    if (opens == closes && allocs == frees) return;
    fprintf(stderr, "fake libcuda: pid %d leaked: %d opens, %d closes, "
            "%d allocs, %d frees\n", (int)getpid(), opens, closes, allocs,
            frees);
    _exit(99);
}
