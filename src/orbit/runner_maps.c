/* runner_maps.c -- a worker's mappings (runner_maps.h), keyed by the shared
 * memory object's identity (device, inode: a kept mapping holds its object
 * alive, so the identity cannot pass to another while it is kept) and by
 * writability, since a module must never get a writable view of its
 * input. */
#include "runner_maps.h"

#include <sys/stat.h>

#include "platform.h"

typedef struct map_entry {
    dev_t dev;
    ino_t ino;
    int writable;
    uint64_t used; /* when last asked for; 0: a free entry */
    dbatch b;
} map_entry;

static map_entry kept[MAPS_KEPT];
static dbatch once[2]; /* input and output, mapped for one call */
static int once_count;
static uint64_t asks;

static map_entry *find(const struct stat *st, int writable) {
    for (int k = 0; k < MAPS_KEPT; k++)
        if (kept[k].used && kept[k].dev == st->st_dev && kept[k].ino == st->st_ino &&
            kept[k].writable == writable &&
            kept[k].b.capacity == (uint64_t)st->st_size)
            return &kept[k];
    return NULL;
}

/* A free entry, or the least recently asked for, unmapped. */
static map_entry *free_entry(void) {
    map_entry *oldest = &kept[0];
    for (int k = 0; k < MAPS_KEPT; k++) {
        if (!kept[k].used)
            return &kept[k];
        if (kept[k].used < oldest->used)
            oldest = &kept[k];
    }
    batch_close(&oldest->b);
    oldest->used = 0;
    return oldest;
}

/* Maps fd into b; b does not keep fd (the worker closes it). */
static int open_into(dbatch *b, int fd, int writable) {
    if (batch_open(b, fd, writable))
        return -1;
    b->fd = -1;
    /* a module reads its input whole: one call, not a fault a page */
    if (!writable)
        plat_shm_prefault(b->hdr, b->hdr->used < b->capacity ? b->hdr->used : b->capacity);
    return 0;
}

dbatch *maps_get(int fd, int writable, int keep) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return NULL;
    map_entry *e = keep ? find(&st, writable) : NULL;
    if (e) {
        e->used = ++asks;
        return &e->b;
    }
    if (!keep) {
        if (once_count == 2 || open_into(&once[once_count], fd, writable))
            return NULL;
        return &once[once_count++];
    }
    e = free_entry();
    if (open_into(&e->b, fd, writable))
        return NULL;
    e->dev = st.st_dev, e->ino = st.st_ino, e->writable = writable;
    e->used = ++asks;
    return &e->b;
}

void maps_end_call(void) {
    for (int k = 0; k < once_count; k++)
        batch_close(&once[k]);
    once_count = 0;
}
