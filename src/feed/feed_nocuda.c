/* feed_nocuda.c -- feed_cuda.h for a build without the CUDA headers: every
 * GPU tensor is refused with the reason, and nothing else changes. */
#include "feed_cuda.h"
#include "feed_shm.h"

int feed_cuda_load(const char *feed, feed_err *err) {
    feed_seterr(err, FEED_ECUDA,
                "feed %s: built without CUDA (cuda.h was not found at "
                "configure time, or AEGIS_FEED_CUDA=OFF): GPU tensors are "
                "not supported",
                feed);
    return FEED_ECUDA;
}

int feed_cuda_bus_id(const char *feed, int device,
                     char bus[FEED_CUDA_BUS_MAX], feed_err *err) {
    return feed_cuda_load(feed, err);
}

int feed_cuda_alloc(const char *feed, int device, size_t bytes,
                    uint64_t *dptr, unsigned char ipc[FEED_CUDA_IPC_BYTES],
                    feed_err *err) {
    return feed_cuda_load(feed, err);
}

void feed_cuda_free(int device, uint64_t dptr) {}

int feed_cuda_copy(const char *feed, int device, uint64_t dst, uint64_t src,
                   size_t bytes, feed_err *err) {
    return feed_cuda_load(feed, err);
}

int feed_cuda_open(const char *feed, const char *bus,
                   const unsigned char ipc[FEED_CUDA_IPC_BYTES], int *device,
                   uint64_t *dptr, feed_err *err) {
    return feed_cuda_load(feed, err);
}

void feed_cuda_close(int device, uint64_t dptr) {}
