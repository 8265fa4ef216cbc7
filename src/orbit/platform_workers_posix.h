/* platform_workers_posix.h -- the fork server's workers (internal to the
 * POSIX fork server): one process per key, forked by the server, serving
 * that key's calls until it fails. */
#ifndef DIPP_PLATFORM_WORKERS_POSIX_H
#define DIPP_PLATFORM_WORKERS_POSIX_H

#include <stdint.h>

#include "platform.h"

/* What the server sends a worker with each call's request bytes. */
typedef struct work_hdr {
    plat_limits lim;
    uint32_t req_len;
    int32_t cpu; /* the CPU the call starts on, or PLAT_CPU_ANY */
} work_hdr;

/* What the server answers its caller: the outcome, then the result. */
typedef struct answer {
    plat_outcome out;
    uint8_t result[PLAT_MAX_RESULT];
} answer;

/* Runs one call in key's worker (forking one when there is none), within
 * h->lim.timeout_ms, and fills a. */
void workers_call(plat_child_fn fn, const char *key, const work_hdr *h,
                  const uint8_t *req, const int *fds, int nfds, answer *a);
/* Ends every worker (the server is stopping). */
void workers_end_all(void);

#endif
