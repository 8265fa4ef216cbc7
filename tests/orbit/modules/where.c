/* where.c -- test module: tells on how many CPUs each step of a pipeline
 * could run. Its output is one grey row of one byte a step, each step's
 * appended to the row it was given (a frame starts one): how many CPUs its
 * worker could use as it ran (255: unknown). Where the step started, the
 * runner reports (run_report.cpu): the module runs after its worker may
 * have been moved. where_too.c is the same module by another name, for
 * pipelines that alternate two. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>

#include "dipp_module.h"

#ifndef WHERE_NAME
#define WHERE_NAME "where"
#endif

static uint8_t as_byte(int n) {
    return n >= 0 && n < 255 ? (uint8_t)n : 255;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)p;
    const dipp_image *row = in->count == 1 && in->images[0].format == DIPP_FMT_GRAY8 &&
                                    in->images[0].height == 1
                                ? &in->images[0]
                                : NULL;
    uint64_t n = row ? row->size : 0;
    dipp_image *longer = out->add(out, (uint32_t)n + 1, 1, DIPP_FMT_GRAY8, n + 1);
    if (!longer)
        return DIPP_ERR_NOSPACE;
    if (n)
        memcpy(longer->data, row->data, n);
    cpu_set_t mine;
    longer->data[n] =
        as_byte(sched_getaffinity(0, sizeof mine, &mine) == 0 ? CPU_COUNT(&mine) : -1);
    return DIPP_OK;
}

DIPP_MODULE_NO_PARAMS(WHERE_NAME, "1.0.0", run);
