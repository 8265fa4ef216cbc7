/* batch.h -- a batch of images in one shared memory object: a fixed
 * header (the images' shapes and where their bytes are) followed by the
 * bytes. The runner creates one per module output; the module's child maps
 * its input read-only and its output writable, so images pass from module
 * to module without a copy, and a module can never change its input. */
#ifndef DIPP_BATCH_H
#define DIPP_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "dipp_module.h"

typedef struct shm_image {
    uint32_t width, height, format, x, y;
    int32_t value;
    uint64_t offset, size;
} shm_image;

typedef struct shm_batch {
    uint32_t magic, count;
    uint64_t capacity, used;
    shm_image img[DIPP_BATCH_MAX];
} shm_batch;

typedef struct dbatch {
    int fd;
    int reader_fd; /* read-only, for the module that reads it; -1 when not made here */
    int writable;
    int kept; /* its owner uses it again and again: workers may keep it mapped */
    uint64_t capacity;
    shm_batch *hdr; /* the mapping; the bytes follow */
    dipp_image view[DIPP_BATCH_MAX];
    dipp_batch api; /* what a module gets */
} dbatch;

/* A new empty batch with room for capacity bytes of images. 0 or -errno. */
int batch_create(dbatch *b, uint64_t capacity);
/* Maps a batch another process made (fd is kept). 0 or -errno. */
int batch_open(dbatch *b, int fd, int writable);
/* Checks the header and fills b->api with the images. 0, or -EINVAL with
 * the reason in err. */
int batch_load(dbatch *b, char *err, size_t errlen);
/* After a module ran on b->api: writes what it set (x, y, value, a smaller
 * size) back to the header. 0, or -EINVAL with the reason in err. */
int batch_commit(dbatch *b, char *err, size_t errlen);
/* Empties a batch this process created, for its next use. */
void batch_reset(dbatch *b);
/* Bytes of images the batch has room for. */
uint64_t batch_room(const dbatch *b);
/* Bytes of images in the batch. */
uint64_t batch_used(const dbatch *b);
void batch_close(dbatch *b);

#endif
