/* runner_child.h -- the request the runner sends to the fork server, the
 * result a module's child sends back, and the function the child runs. */
#ifndef DIPP_RUNNER_CHILD_H
#define DIPP_RUNNER_CHILD_H

#include <stddef.h>

#include "batch.h"
#include "dipp_module.h"
#include "platform.h"

typedef struct run_req {
    char path[1024];
    dipp_params params;
    uint8_t keep_mapped[2]; /* the input, the output: kept by their owner */
} run_req;

typedef struct run_result {
    int32_t code;
    uint32_t run_us; /* the module's run alone, timed in its worker: the
                        module could alter it (it shares the worker's
                        memory), so it serves measurement, never a decision */
    char detail[240];
} run_result;

/* The parameters module m runs with: its declared defaults, overridden by
 * given (converted to the declared types). 0, or DIPP_E_PARAM with why. */
int runner_resolve(const dipp_module_info *m, const dipp_params *given,
                   dipp_params *out, char *err, size_t errlen);

/* plat_child_fn of the fork server: fds are the input and output batch;
 * the result is a run_result. */
size_t runner_child(const void *req, size_t req_len, const int *fds, int nfds,
                    const plat_limits *lim, void *result, int *keep);

#endif
