/* runner.h -- runs one module on one batch in a sandboxed child of the
 * fork server, and turns how the child ended into a DIPP error code. */
#ifndef DIPP_RUNNER_H
#define DIPP_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "dipp_module.h"
#include "platform.h"
#include "step_pool.h"

/* Where module name's file is, when something other than module_dir
 * holds it (the update store's active version): 0 with path set, or -1
 * to look in module_dir. */
typedef int (*runner_locate_fn)(void *ctx, const char *name, char *path,
                                size_t cap);

typedef struct runner {
    plat_forksrv srv;
    plat_limits lim;
    char module_dir[512];
    runner_locate_fn locate; /* optional */
    void *locate_ctx;
    step_pool pool; /* pipelines' step outputs (pipeline.c) */
    int cpu;        /* where calls start: the current batch's CPU, or PLAT_CPU_ANY */
} runner;

typedef struct run_report {
    int code;         /* errors.h; 0 when the module succeeded */
    uint32_t ms;      /* the call's wall time */
    uint32_t run_us;  /* the module's run alone, timed in its worker */
    uint32_t calls;   /* calls its worker has served (1: a new worker) */
    int cpu;          /* the CPU the call started on, or PLAT_CPU_ANY */
    char detail[256]; /* why, in words, when code != 0 */
} run_report;

/* Starts the fork server. Call it early: the server is a copy of the
 * caller as it is now. Modules are module_dir/NAME.so. 0 or -errno. */
int runner_start(runner *r, const char *module_dir, plat_limits lim);
/* Runs module name with parameters p on in; its images go to out (an
 * empty batch). Returns rep->code. */
int runner_run(runner *r, const char *name, const dipp_params *p,
               const dbatch *in, dbatch *out, run_report *rep);
/* Runs the module file at path (a candidate's test-run). */
int runner_run_path(runner *r, const char *path, const dipp_params *p,
                    const dbatch *in, dbatch *out, run_report *rep);
void runner_stop(runner *r);

/* Whether name is a valid module name: [a-z0-9_], 1 to 23 characters. */
int runner_name_ok(const char *name);

#endif
