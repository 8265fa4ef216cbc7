/* batch.c -- batches in shared memory (batch.h): create, map, check a
 * header written by another process, and the output's add(). */
#include "batch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "platform.h"

#define BATCH_MAGIC 0x44495042u /* "DIPB" */
#define ALIGN 64u
#define DATA_START ((sizeof(shm_batch) + ALIGN - 1) / ALIGN * ALIGN)

static uint64_t align_up(uint64_t v) {
    return (v + ALIGN - 1) / ALIGN * ALIGN;
}

static dipp_image *batch_add(dipp_batch *self, uint32_t width, uint32_t height,
                             uint32_t format, uint64_t size) {
    dbatch *b = self->runner;
    shm_batch *h = b->hdr;
    uint32_t bpp = dipp_format_bpp(format);
    if (bpp && size < (uint64_t)width * height * bpp)
        return NULL;
    uint64_t at = align_up(h->used);
    if (h->count >= DIPP_BATCH_MAX || at > b->capacity || size > b->capacity - at)
        return NULL;
    h->img[h->count] = (shm_image){width, height, format, 0, 0, 0, at, size};
    h->used = at + size;
    dipp_image *v = &b->view[h->count++];
    *v = (dipp_image){width, height, format, 0, 0, 0, size, (uint8_t *)h + at};
    self->count = h->count;
    return v;
}

static int map(dbatch *b, int fd, uint64_t size, int writable) {
    memset(b, 0, sizeof *b);
    b->hdr = plat_shm_map(fd, size, writable);
    if (!b->hdr)
        return -ENOMEM;
    b->fd = fd, b->reader_fd = -1, b->writable = writable, b->capacity = size;
    b->api = (dipp_batch){0, b->view, writable ? batch_add : NULL, b};
    return 0;
}

void batch_reset(dbatch *b) {
    b->hdr->magic = BATCH_MAGIC;
    b->hdr->capacity = b->capacity;
    b->hdr->used = DATA_START;
    b->hdr->count = 0;
    b->api.count = 0;
}

int batch_create(dbatch *b, uint64_t capacity) {
    uint64_t size = DATA_START + capacity;
    int fd = plat_shm_create("dipp-batch", size);
    if (fd < 0)
        return fd;
    int rc = map(b, fd, size, 1);
    if (!rc && (b->reader_fd = plat_shm_reader(fd)) < 0) {
        rc = b->reader_fd;
        plat_shm_unmap(b->hdr, size);
    }
    if (rc) {
        plat_close(fd);
        return rc;
    }
    batch_reset(b);
    return 0;
}

int batch_open(dbatch *b, int fd, int writable) {
    uint64_t size = plat_shm_size(fd);
    if (size < DATA_START)
        return -EINVAL;
    return map(b, fd, size, writable);
}

static int check_image(const dbatch *b, const shm_image *m, char *err,
                       size_t errlen) {
    uint32_t bpp = dipp_format_bpp(m->format);
    if (m->format < DIPP_FMT_BAYER_RGGB8 || m->format > DIPP_FMT_PNG)
        snprintf(err, errlen, "format %" PRIu32 " unknown", m->format);
    else if (m->offset < DATA_START || m->offset > b->capacity ||
             m->size > b->capacity - m->offset)
        snprintf(err, errlen, "bytes outside the batch");
    else if (bpp && m->size < (uint64_t)m->width * m->height * bpp)
        snprintf(err, errlen, "%" PRIu64 " bytes for %" PRIu32 "x%" PRIu32,
                 m->size, m->width, m->height);
    else
        return 0;
    return -EINVAL;
}

int batch_load(dbatch *b, char *err, size_t errlen) {
    shm_batch *h = b->hdr;
    if (h->magic != BATCH_MAGIC || h->count > DIPP_BATCH_MAX) {
        snprintf(err, errlen, "not a batch (magic or count)");
        return -EINVAL;
    }
    for (uint32_t k = 0; k < h->count; k++) {
        const shm_image *m = &h->img[k];
        char why[96];
        if (check_image(b, m, why, sizeof why)) {
            snprintf(err, errlen, "image %" PRIu32 ": %s", k, why);
            return -EINVAL;
        }
        b->view[k] = (dipp_image){m->width, m->height, m->format, m->x, m->y,
                                  m->value, m->size, (uint8_t *)h + m->offset};
    }
    b->api.count = h->count;
    return 0;
}

int batch_commit(dbatch *b, char *err, size_t errlen) {
    shm_batch *h = b->hdr;
    if (b->api.count != h->count) {
        snprintf(err, errlen, "image count changed behind add()");
        return -EINVAL;
    }
    for (uint32_t k = 0; k < h->count; k++) {
        const dipp_image *v = &b->view[k];
        if (v->size > h->img[k].size) {
            snprintf(err, errlen, "image %" PRIu32 " grew past its reservation", k);
            return -EINVAL;
        }
        h->img[k].size = v->size;
        h->img[k].x = v->x, h->img[k].y = v->y, h->img[k].value = v->value;
    }
    return 0;
}

uint64_t batch_room(const dbatch *b) {
    return b->capacity - DATA_START;
}

uint64_t batch_used(const dbatch *b) {
    return b->hdr->used - DATA_START;
}

void batch_close(dbatch *b) {
    plat_shm_unmap(b->hdr, b->capacity);
    plat_close(b->fd);
    plat_close(b->reader_fd);
    b->hdr = NULL, b->fd = -1, b->reader_fd = -1;
}
