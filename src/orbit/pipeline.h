/* pipeline.h -- runs a pipeline definition on one batch: each module in a
 * sandboxed child, its output batch the next one's input. The first
 * failure loses the batch (the rest of the pipeline is skipped) and is
 * reported as DIPP's published number; the caller goes on with the next
 * batch. */
#ifndef DIPP_PIPELINE_H
#define DIPP_PIPELINE_H

#include "batch.h"
#include "pdef.h"
#include "runner.h"

typedef struct pipe_report {
    int code;           /* errors.h */
    uint32_t number;    /* code*1000 + pipeline*100 + module; 0 when ok */
    unsigned module;    /* 1-based place of the failed module */
    char name[DIPP_PARAM_NAME_MAX];
    char detail[256];
    uint32_t ms[PDEF_MAX_STEPS];     /* each module's call, wall time */
    uint32_t run_us[PDEF_MAX_STEPS]; /* each module's run alone, in its worker */
    int cpu[PDEF_MAX_STEPS];         /* the CPU each call started on, or PLAT_CPU_ANY */
} pipe_report;

/* Where step k of d writes, src being its input: pool's kept output of
 * that step, or for the last step a fresh batch made in *fresh, which the
 * caller closes. NULL when no shared memory is left. */
dbatch *pipeline_step_output(step_pool *pool, const pdef *d, unsigned k,
                             const dbatch *src, dbatch *fresh);

/* Runs d on in. On success (0) *out is the last module's output, to be
 * closed by the caller; on failure returns rep->number. */
uint32_t pipeline_run(runner *r, const pdef *d, const dbatch *in, dbatch *out,
                      pipe_report *rep);

#endif
