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
    trig_warmup warm;           /* warmup_intervals, warmup_policy */
    pl_perf_fn evaluate;
    void *evaluate_ctx;
    /* AvoidableMisclassificationCostTrigger: the cost criterion */
    bool cost;
    perf_criterion avoidable;   /* expected_accuracy, allow_reduction */
    double conversion;          /* ..._latency_per_training_second */
    int64_t cost_window;        /* cost_tracking_window_size */
    pl_cost_fn trainings;
    void *cost_ctx;
    double regret_now;          /* avoidable misclassifications waiting */
    double regret_area;         /*   their area over sample time */
    double waiting;             /* samples not trained on */
    int64_t prev_end, last_ts;  /* the last interval's end (a sample's
                                   time), the newest sample's */
    uint64_t nfed;              /* samples fed */
    /* state */
    perf_tracker tracker;
    uint64_t *batch;            /* keys since the last detection point */
    size_t nbatch;
    uint64_t *fired_on;         /* the batch a fire came in, to measure
                                   the new model on; NULL: none pending */
    size_t nfired_on;
    int64_t detections;
} trig_perf;

/* Reads a PerformanceTrigger (or, with p->cost, an
 * AvoidableMisclassificationCostTrigger) section at PATH into p (zeroed
 * but for its base and cost). 0, or -1 with err naming the key. */
int perf_parse(trig_perf *p, const json_t *section, const char *path,
               char *err, size_t errlen);

#endif
