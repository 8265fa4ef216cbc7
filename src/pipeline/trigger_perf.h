/* trigger_perf.h -- the performance trigger's state, shared by its
 * running (trigger_perf.c) and the reading of its section
 * (trigger_perf_config.c). */
#ifndef AEGIS_PL_TRIGGER_PERF_H
#define AEGIS_PL_TRIGGER_PERF_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "perf.h"
#include "trigger_impl.h"

/* The most decision criteria, and post-training scores kept. */
#define PERF_MAX_CRITERIA 16
#define PERF_MAX_WINDOW 64

typedef struct trig_perf {
    pl_trigger base;
    /* configuration */
    int64_t interval;           /* samples between detection points */
    pl_metric metrics[PL_EVAL_MAX_METRICS];
    size_t nmetrics;
    perf_criterion *criteria;
    size_t ncriteria;
    int64_t warmup_intervals;
    pl_trigger *warmup;
    pl_perf_fn evaluate;
    void *evaluate_ctx;
    /* state */
    perf_tracker tracker;
    uint64_t *batch;            /* keys since the last detection point */
    size_t nbatch;
    uint64_t *fired_on;         /* the batch a fire came in, to measure
                                   the new model on; NULL: none pending */
    size_t nfired_on;
    bool fired_ever;
    int64_t detections;
} trig_perf;

/* Reads a PerformanceTrigger section at PATH into p (zeroed but for its
 * base). 0, or -1 with err naming the key. */
int perf_parse(trig_perf *p, const json_t *section, const char *path,
               char *err, size_t errlen);

#endif
