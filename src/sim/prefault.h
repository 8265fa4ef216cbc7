/* prefault.h -- maps the pages of big arrays in a second thread.
 *
 * A million-job replay fills big arrays sized up front: the trace file's
 * buffer as it is read, the result's job records (about 50 MB) as the
 * servers are replayed. The first write to each
 * page stops the writer for a page fault (page faults were a tenth of the
 * run). A prefault asks the kernel, from a second thread, to map those
 * pages while the first does other work -- the read, the dispatch --
 * (madvise MADV_POPULATE_WRITE, Linux 5.14). The kernel maps pages without
 * touching their contents, so the thread shares no data with the writer
 * and needs no locking. Where the call or the thread is not to be had,
 * nothing happens and the writer takes its faults as before.
 */
#ifndef AEGIS_PREFAULT_H
#define AEGIS_PREFAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define PREFAULT_MAX_REGIONS 4

typedef struct prefault {
    struct {
        void *start;
        size_t bytes;
    } regions[PREFAULT_MAX_REGIONS];
    int nregions;
    pthread_t thread;
    bool running;
} prefault;

/* Adds a region to map, in order; past PREFAULT_MAX_REGIONS it is left
 * out. Call before prefault_start(). */
void prefault_add(prefault *pf, void *start, size_t bytes);
/* Starts mapping the regions in a second thread. */
void prefault_start(prefault *pf);
/* Waits for the thread, if any; call before freeing the regions. */
void prefault_finish(prefault *pf);

#endif
