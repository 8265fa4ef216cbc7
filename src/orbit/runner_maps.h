/* runner_maps.h -- a worker's mappings of the batches it is sent. A batch
 * its owner keeps from call to call (a pipeline's step output, a camera
 * buffer) stays mapped in the worker, so the worker builds its page
 * tables once, not once a batch; any other is mapped for one call. */
#ifndef DIPP_RUNNER_MAPS_H
#define DIPP_RUNNER_MAPS_H

#include "batch.h"

/* Kept mappings a worker holds at most; the least recently used goes. */
#define MAPS_KEPT 8

/* The batch of fd, mapped writable or read-only: a kept mapping of the
 * same object when there is one (keep), else a new one (kept after the
 * call when keep). The worker closes fd; the mapping does not need it.
 * NULL when it cannot be mapped. */
dbatch *maps_get(int fd, int writable, int keep);
/* Unmaps what was mapped for this call only. */
void maps_end_call(void);

#endif
