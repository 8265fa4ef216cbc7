/* feed_cuda.h -- the few CUDA driver calls the feed makes for GPU batches.
 *
 * The driver (libcuda.so.1, or $AEGIS_CUDA_LIBRARY) is loaded with dlopen
 * the first time a GPU tensor is published or read, so the feed builds and
 * runs where no GPU or driver exists; every call then reports FEED_ECUDA
 * with the reason. Built without the CUDA headers (feed_nocuda.c), every
 * call reports that instead.
 *
 * Device pointers travel as uint64_t (CUdeviceptr) so this header needs no
 * CUDA header. Each call runs in the device's primary context, the one the
 * CUDA runtime (and so torch) uses, so pointers mix freely with torch's. */
#ifndef AEGIS_FEED_CUDA_H
#define AEGIS_FEED_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "feed.h"

#define FEED_CUDA_IPC_BYTES 64 /* CU_IPC_HANDLE_SIZE, checked in feed_cuda.c */
#define FEED_CUDA_BUS_MAX 16   /* a PCI bus id "0000:00:00.0" and its NUL */

/* Load the driver once per process. FEED_OK or FEED_ECUDA. */
int feed_cuda_load(const char *feed, feed_err *err);
/* The PCI bus id of `device`: unlike the ordinal, it names the same GPU in
 * processes that see different CUDA_VISIBLE_DEVICES. */
int feed_cuda_bus_id(const char *feed, int device,
                     char bus[FEED_CUDA_BUS_MAX], feed_err *err);
/* Allocate `bytes` on `device` and export an IPC handle for them; free
 * with feed_cuda_free (never while another process has it open: CUDA
 * leaves that undefined). */
int feed_cuda_alloc(const char *feed, int device, size_t bytes,
                    uint64_t *dptr, unsigned char ipc[FEED_CUDA_IPC_BYTES],
                    feed_err *err);
void feed_cuda_free(int device, uint64_t dptr);
/* Copy between any two of host and device memory (unified addressing
 * tells which), then wait until the copy is complete. */
int feed_cuda_copy(const char *feed, int device, uint64_t dst, uint64_t src,
                   size_t bytes, feed_err *err);
/* Map another process's buffer on the local GPU with PCI bus id `bus`:
 * *device gets its local ordinal. Each open is undone by one
 * feed_cuda_close, or the mapping (and the exporter's memory) leaks. */
int feed_cuda_open(const char *feed, const char *bus,
                   const unsigned char ipc[FEED_CUDA_IPC_BYTES], int *device,
                   uint64_t *dptr, feed_err *err);
void feed_cuda_close(int device, uint64_t dptr);

#endif
