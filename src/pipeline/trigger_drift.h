/* trigger_drift.h -- the data drift trigger's state, shared by its
 * running (trigger_drift.c) and the reading of its section
 * (trigger_drift_config.c). */
#ifndef AEGIS_PL_TRIGGER_DRIFT_H
#define AEGIS_PL_TRIGGER_DRIFT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "drift.h"
#include "trigger_impl.h"

typedef struct trig_drift {
    pl_trigger base;
    /* configuration */
    int64_t interval;          /* samples between detection points */
    bool by_time;              /* TimeWindowingStrategy, else amounts */
    int64_t ref_size, cur_size;/* rows, or seconds when by_time */
    bool overlap;              /* current window may reach before a trigger */
    int64_t sample_size;       /* rows per window compared; 0: all */
    drift_metric *metrics;
    size_t nmetrics;
    int64_t at_least;          /* votes needed; 0: a majority */
    trig_warmup warm;          /* warmup_intervals, warmup_policy */
    pl_embed_fn embed;         /* measures on a model's embeddings of the
                                  windows' samples; NULL: on features */
    void *embed_ctx;
    /* state */
    size_t dim;                /* features per sample, from the first one
                                  (0 with embed: keys only) */
    drift_window recent;       /* enough rows for either window */
    float *ref;                /* the reference window's rows (features) */
    uint64_t *ref_keys;        /*   or its samples' keys (embed) */
    size_t nref;
    double ref_sigma;          /* kernel bandwidth from the reference
                                  (features) */
    int64_t since_detect;      /* samples since the last detection point */
    int64_t since_trigger;     /* samples since the last fire */
    int64_t detections;        /* detection points passed */
} trig_drift;

/* Reads a DataDriftTrigger section at PATH into d (zeroed but for its
 * base). 0, or -1 with err naming the key. */
int drift_parse(trig_drift *d, const json_t *section, const char *path,
                char *err, size_t errlen);
/* Whether a metric's criterion of d is dynamic: it calibrates on past
 * distances (Modyn's needs_calibration). */
bool drift_any_dynamic(const trig_drift *d);

#endif
