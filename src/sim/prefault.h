/* prefault.h -- maps the pages of a big array in a second thread.
 *
 * A million-job replay fills the result's job records (about 50 MB), sized
 * up front, as the servers are replayed. The first write to each page
 * stops the writer for a page fault (page faults were a tenth of the run).
 * A prefault asks the kernel, from a second thread, to map those pages
 * while the first does other work -- the dispatch -- (madvise
 * MADV_POPULATE_WRITE, Linux 5.14). The kernel maps pages without touching
 * their contents, so the thread shares no data with the writer and needs
 * no locking. Where the call or the thread is not to be had, nothing
 * happens and the writer takes its faults as before. An array its writer
 * fills alone can instead ask for huge pages, a fault every 2 MiB
 * (prefault_huge).
 */
#ifndef AEGIS_PREFAULT_H
#define AEGIS_PREFAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct prefault {
    void *start;                /* the array being mapped */
    size_t bytes;
    pthread_t thread;
    bool running;
} prefault;

/* Starts mapping the pages of [start, start + bytes) in a second thread. */
void prefault_start(prefault *pf, void *start, size_t bytes);
/* Waits for the thread, if any; call before freeing the array. */
void prefault_finish(prefault *pf);

/* Maps the pages of [start, start + bytes) now, in one call: an array its
 * writer is about to fill, too small for huge pages, takes no fault per
 * page (each a trap, dearer still in a virtual machine). */
void prefault_now(void *start, size_t bytes);

/* The huge page size of x86-64 and most arm64 kernels. */
#define PREFAULT_HUGE_BYTES (2u << 20)

/* Asks for huge pages for the whole ones inside [start, start + bytes),
 * an array about to be written: it then takes a page fault every 2 MiB,
 * not every 4 KiB (transparent huge pages, which Linux in its usual
 * "madvise" mode gives only where asked). Where they are not to be had,
 * nothing changes. */
void prefault_huge(void *start, size_t bytes);

/* malloc(bytes), for an array about to be written, on huge pages from its
 * start to its end (prefault_huge()) when it spans one: malloc's own big
 * blocks start just past a page boundary, so only the whole huge pages
 * inside were huge, half of a 4 MB array's. NULL when out of memory;
 * freed with free(). */
void *prefault_huge_alloc(size_t bytes);

#endif
