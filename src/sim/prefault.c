/* prefault.c -- mapping an array's pages in a second thread (prefault.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "prefault.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Gives madvise the whole units (pages, huge pages) inside [start, start
 * + bytes): it takes whole pages. A kernel without the advice says
 * EINVAL, and the faults happen as before. */
static void advise_inside(void *start, size_t bytes, uintptr_t unit,
                          int advice) {
    uintptr_t from = ((uintptr_t)start + unit - 1) / unit * unit;
    uintptr_t to = ((uintptr_t)start + bytes) / unit * unit;
    if (to > from) (void)madvise((void *)from, to - from, advice);
}

/* Maps the whole pages inside [start, start + bytes); the writer faults
 * in the two partial ones. */
static void map_pages(void *start, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    advise_inside(start, bytes, (uintptr_t)sysconf(_SC_PAGESIZE),
                  MADV_POPULATE_WRITE);
#else
    (void)start;
    (void)bytes;
#endif
}

void prefault_huge(void *start, size_t bytes) {
#ifdef MADV_HUGEPAGE
    advise_inside(start, bytes, PREFAULT_HUGE_BYTES, MADV_HUGEPAGE);
#else
    (void)start;
    (void)bytes;
#endif
}

void *prefault_huge_alloc(size_t bytes) {
    if (bytes < PREFAULT_HUGE_BYTES) return malloc(bytes);
    size_t units = (bytes + PREFAULT_HUGE_BYTES - 1) / PREFAULT_HUGE_BYTES;
    void *start = aligned_alloc(PREFAULT_HUGE_BYTES, units * PREFAULT_HUGE_BYTES);
    if (start) prefault_huge(start, units * PREFAULT_HUGE_BYTES);
    return start;
}

void prefault_now(void *start, size_t bytes) { map_pages(start, bytes); }

static void *map_array(void *arg) {
    const prefault *pf = arg;
    map_pages(pf->start, pf->bytes);
    return NULL;
}

void prefault_start(prefault *pf, void *start, size_t bytes) {
    pf->start = start;
    pf->bytes = bytes;
    pf->running = pthread_create(&pf->thread, NULL, map_array, pf) == 0;
}

void prefault_finish(prefault *pf) {
    if (pf->running) pthread_join(pf->thread, NULL);
    pf->running = false;
}
