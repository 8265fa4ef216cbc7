/* eval.h -- judging a pipeline's models (docs/pipelines.md,
 * "Evaluation"): the predictions an evaluation command writes, the
 * metrics aegis computes from them, and the intervals a model is
 * evaluated on. Pure: the supervisor (sup_eval.c) runs the jobs and
 * keeps the results; nothing here talks to aegisd.
 *
 *   eval_pred.c      the predictions file, binary or CSV, read and checked
 *   eval_metric.c    Accuracy (top-n), F1Score, RocAuc over predictions
 *   eval_interval.c  the evaluation strategies' intervals
 *
 * Why aegis computes the metrics: an evaluation command of any framework
 * then only has to write predictions, and every pipeline's numbers are
 * computed the same way, so they can be compared.
 */
#ifndef AEGIS_PL_EVAL_H
#define AEGIS_PL_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- predictions (eval_pred.c) -------------------------------------
 *
 * What an evaluation command writes: per sample its key and either the
 * predicted label or one score per class (any monotone score: logits,
 * probabilities). Two formats, told apart by the first 8 bytes:
 *
 * Binary, little-endian:
 *   header  char magic[8] = "AEGPRED1"; uint64 count; uint32 width;
 *           uint32 reserved (0)
 *   rows    count x { uint64 key; int64 label }          (width 0)
 *           count x { uint64 key; float32 score[width] } (width >= 2)
 * CSV: one row a line, "KEY,LABEL" or "KEY,S0,S1,...,S(W-1)" (W >= 2),
 *   every row as wide as the first; a first line whose first field is
 *   "key" is a header and skipped.
 */
#define PL_PRED_MAGIC "AEGPRED1"
/* The most classes (scores a row) a file may hold: bounds what a broken
 * command can make the supervisor read. */
#define PL_PRED_MAX_WIDTH 65536

typedef struct pl_pred {
    size_t count;
    uint32_t width;         /* 0: labels; >= 2: scores per row */
    uint64_t *keys;         /* count keys, ascending (sorted on load) */
    int64_t *labels;        /* width 0: count labels, in keys' order */
    float *scores;          /* width >= 2: count x width, in keys' order */
} pl_pred;

/* Reads and checks the file at path: its format, every row's width, no
 * key twice, every score finite, every label >= 0. 0, or -1 with err
 * naming the file and the line (CSV) or row (binary) and what is wrong.
 * A file of no rows is not an error. */
int pl_pred_load(const char *path, pl_pred *p, char *err, size_t errlen);
void pl_pred_free(pl_pred *p);
/* The row of key in p, or -1 when p has none. */
ptrdiff_t pl_pred_find(const pl_pred *p, uint64_t key);
/* The predicted class of row r: its label, or its highest score's class
 * (the lowest class of equal highest scores). */
int64_t pl_pred_class(const pl_pred *p, size_t r);

/* ---- metrics (eval_metric.c) ----------------------------------------- */

typedef enum pl_metric_kind {
    PL_METRIC_ACCURACY,     /* Accuracy{topn}: share of rows whose label
                               is among the topn highest scores */
    PL_METRIC_F1,           /* F1Score{num_classes, average, pos_label} */
    PL_METRIC_ROCAUC        /* RocAuc: one-vs-rest, macro over classes */
} pl_metric_kind;

typedef enum pl_f1_average {
    PL_F1_MACRO,            /* mean over classes that occur (true or
                               predicted) */
    PL_F1_MICRO,            /* from the summed counts: accuracy, for one
                               label a row */
    PL_F1_WEIGHTED,         /* per-class F1 weighted by true support */
    PL_F1_BINARY            /* pos_label's F1 (num_classes 2) */
} pl_f1_average;

typedef struct pl_metric {
    pl_metric_kind kind;
    int topn;               /* Accuracy (1) */
    int num_classes;        /* F1Score (required) */
    pl_f1_average average;  /* F1Score (macro) */
    int pos_label;          /* F1Score binary (1) */
    char name[40];          /* how results name it: "Accuracy",
                               "Top-3-Accuracy", "F1-macro", "RocAuc" */
} pl_metric;

/* One entry of evaluation.datasets[].metrics, Modyn's keys (name, topn,
 * num_classes, average, pos_label; evaluation_transformer_function is
 * refused: transform in the command). path names the entry in errors
 * (pl_config.h). 0, or -1 with err. */
int pl_metric_parse(const json_t *obj, const char *path, pl_metric *m,
                    char *err, size_t errlen);

/* Metric m over n samples: truth[i] the true label of the sample whose
 * prediction is p's row rows[i]. 0 with *value (NAN when it is not
 * defined there: no samples; RocAuc where no class has both positive and
 * negative samples), or -1 with err when p cannot give it (top-n > 1 or
 * RocAuc from labels alone; scores narrower than a label or num_classes;
 * a label of p or truth outside num_classes). */
int pl_metric_compute(const pl_metric *m, const pl_pred *p,
                      const size_t *rows, const int64_t *truth, size_t n,
                      double *value, char *err, size_t errlen);

/* ---- intervals (eval_interval.c) ------------------------------------- */

/* An evaluation interval of sample time, [start, end): a sample with
 * start <= ts < end is in it. INT64_MIN and INT64_MAX stand for the
 * dataset's start and end. */
typedef struct pl_interval {
    int64_t start, end;
} pl_interval;

/* The most intervals one strategy may make: bounds a typo such as
 * `eval_every: 1s` over years. */
#define PL_EVAL_MAX_INTERVALS 100000

typedef enum pl_eval_kind {
    PL_EVAL_SLICING,            /* [from, from+every), ... up to end_at */
    PL_EVAL_PERIODIC,           /* a window `interval` around each point
                                   start, start+every, ... <= end */
    PL_EVAL_BETWEEN_TRIGGERS,   /* from one trigger's last sample to the
                                   next's */
    PL_EVAL_STATIC              /* the intervals given */
} pl_eval_kind;

/* One bound of a periodic window, "[-2d;+1d]": an offset from the point,
 * or the dataset's start or end (inf). */
typedef struct pl_eval_bound {
    bool inf;
    int64_t offset;             /* seconds, signed */
    bool inclusive;
} pl_eval_bound;

typedef struct pl_eval_strategy {
    pl_eval_kind kind;
    int64_t every, start, end;  /* slicing, periodic */
    pl_eval_bound left, right;  /* periodic */
    pl_interval *fixed;         /* static */
    size_t nfixed;
} pl_eval_strategy;

/* A handler's `strategy` section, Modyn's keys (type and the type's
 * keys). 0, or -1 with err naming path's key. */
int pl_eval_strategy_parse(const json_t *obj, const char *path,
                           pl_eval_strategy *st, char *err, size_t errlen);
void pl_eval_strategy_free(pl_eval_strategy *st);
/* The strategy's intervals, given the timestamps of the triggers' last
 * samples (ascending; between-triggers needs them, the others not), into
 * *out (malloc'd) and *n. 0, or -1 when out of memory. */
int pl_eval_intervals(const pl_eval_strategy *st, const int64_t *ends,
                      size_t nends, pl_interval **out, size_t *n);

/* ---- the evaluation section (eval_config.c) -------------------------- */

#define PL_EVAL_MAX_METRICS 16
#define PL_EVAL_MAX_HANDLERS 16

/* A handler's `models`: which models an interval is evaluated with. */
typedef enum pl_eval_models {
    PL_EVAL_MATRIX,             /* every model on every interval */
    PL_EVAL_MOST_RECENT,        /* the models that served it: the active
                                   one and the one in training then */
    PL_EVAL_ACTIVE,             /* Modyn's active: the newest model whose
                                   data ended before the interval */
} pl_eval_models;

typedef struct pl_eval_handler {
    char name[64];              /* name ("handler N") */
    bool after_pipeline;        /* execution_time: after_pipeline, else
                                   after_training */
    bool manual;                /* execution_time: manual: never run (Modyn
                                   runs it only from a separate entry
                                   point, which aegis has not) */
    pl_eval_models models;
    pl_eval_strategy strategy;
} pl_eval_handler;

/* Whether model i of the trained ones (ends: each one's last sample's
 * timestamp, in trigger order) is evaluated on an interval starting at
 * start under models. all_known: after the pipeline, when the models
 * after i are known (before, i is the newest). */
bool pl_eval_serves(pl_eval_models models, const int64_t *ends,
                    size_t nends, size_t i, bool all_known, int64_t start);

typedef struct pl_eval_config {
    const char *dataset;        /* datasets[0].dataset_id (lives as long
                                   as the section) */
    long batch_size;            /* datasets[0].batch_size (0: not given) */
    pl_metric metrics[PL_EVAL_MAX_METRICS];
    size_t nmetrics;
    pl_eval_handler handlers[PL_EVAL_MAX_HANDLERS];
    size_t nhandlers;
} pl_eval_config;

/* The evaluation section (the YAML as JSON), less aegis's own keys
 * command, gpus and mem, which pl_file.c reads. 0, or -1 with err
 * naming the key's path ("evaluation.handlers[0].strategy.every: ..."). */
int pl_eval_config_parse(const json_t *section, pl_eval_config *c,
                         char *err, size_t errlen);
void pl_eval_config_free(pl_eval_config *c);

/* ---- composite models (eval_composite.c) ----------------------------
 *
 * Modyn's fair comparison of pipelines: for each evaluation window, the
 * model that served it. The *active* model of a window starting at a is
 * the newest model whose data ended before a (trained_until < a); the
 * *trained* one is the model after it (the one being trained while the
 * window's data arrived). A pipeline's score is the mean of the served
 * models' metric over the windows, weighted by each window's length of
 * time (an open bound: its samples' first or last timestamp). */

/* One model's metric on one window. */
typedef struct pl_eval_result {
    uint32_t model;
    int64_t start, end;         /* the window (INT64_MIN, INT64_MAX: open) */
    int64_t first_ts, last_ts;  /* its samples' (for open bounds) */
    double value;               /* NAN: none */
} pl_eval_result;

typedef struct pl_composite {
    double active, trained;     /* the weighted means; NAN: no window had
                                   a value */
    size_t windows;             /* windows with an active model's value */
} pl_composite;

/* The composite scores of results r[0..n), given the trained models
 * (their triggers, and their last samples' timestamps, by trigger). Only
 * windows of the same strategy should be passed together. */
pl_composite pl_composite_score(const pl_eval_result *r, size_t n,
                                const uint32_t *models, const int64_t *ends,
                                size_t nmodels);
/* The served model's result of each window of r[0..n) that has one, in
 * window order, into out (room for n): the active model's, or the one in
 * training (trained). Their count. */
size_t pl_composite_windows(const pl_eval_result *r, size_t n,
                            const uint32_t *models, const int64_t *ends,
                            size_t nmodels, bool trained,
                            pl_eval_result *out);
/* The model that served a window starting at start: the active one
 * (trained false) or the one in training (true). -1: none. */
int64_t pl_composite_model(const uint32_t *models, const int64_t *ends,
                           size_t nmodels, int64_t start, bool trained);

#endif
