/* prefault.c -- mapping array pages in a second thread (prefault.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "prefault.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void prefault_add(prefault *pf, void *start, size_t bytes) {
    if (pf->nregions == PREFAULT_MAX_REGIONS) return;
    pf->regions[pf->nregions].start = start;
    pf->regions[pf->nregions].bytes = bytes;
    pf->nregions++;
}

/* Maps the whole pages inside [start, start + bytes) (madvise takes whole
 * pages; the loop faults in the two partial ones). */
static void map_pages(void *start, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)start + page - 1) / page * page;
    uintptr_t to = ((uintptr_t)start + bytes) / page * page;
    /* A kernel without it says EINVAL: the faults happen as before. */
    if (to > from) (void)madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
    (void)start;
    (void)bytes;
#endif
}

static void *map_regions(void *arg) {
    const prefault *pf = arg;
    for (int i = 0; i < pf->nregions; i++)
        map_pages(pf->regions[i].start, pf->regions[i].bytes);
    return NULL;
}

void prefault_start(prefault *pf) {
    pf->running = pthread_create(&pf->thread, NULL, map_regions, pf) == 0;
}

void prefault_finish(prefault *pf) {
    if (pf->running) pthread_join(pf->thread, NULL);
    pf->running = false;
}
