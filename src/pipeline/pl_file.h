/* pl_file.h -- a pipeline file (docs/pipelines.md, "The pipeline
 * file") read and checked: Modyn's sections and key names where the
 * meaning is the same, aegis's own for what Modyn has not (the training
 * command and its resources). Every error names FILE:LINE and the key.
 *
 * The trigger and selection_strategy sections are checked by their own
 * constructors (trigger.h, select.h) when the supervisor builds them;
 * pl_yaml_locate() puts the line on their messages.
 */
#ifndef AEGIS_PL_FILE_H
#define AEGIS_PL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "pl_yaml.h"

/* A pipeline's name: letters, digits, '.', '_' and '-', as a feed's (it
 * names a folder, and aegisd keeps it, a replay's with ".replay"
 * after it: PROTO_MAX_PIPELINE). */
#define PL_NAME_MAX 40

/* A section that names a command aegis runs as a job with a model
 * (aegis's own keys): the embedding section's, whose command a drift
 * trigger's windows are embedded by (sup_embed.c), and the evaluation
 * section's, whose command writes a model's predictions (sup_eval.c). */
typedef struct pl_job_section {
    json_t *command;            /* SECTION.command as argv; NULL: the file
                                   has no such section */
    long gpus;                  /* SECTION.gpus (1) */
    double mem_mib;             /* SECTION.mem; < 0 none */
    json_t *section;            /* the section (borrowed from doc): the
                                   evaluation's handlers and datasets are
                                   read by eval.h */
} pl_job_section;

typedef struct pl_file {
    pl_yaml doc;                /* the file (owns what the pointers below
                                   point into) */
    const char *name;           /* pipeline.name */
    const char *dataset;        /* data.dataset_id */
    long max_triggers;          /* pipeline.maximum_triggers; 0: no limit */
    json_t *trigger;            /* the trigger section, an object */
    json_t *selection;          /* selection_strategy, an object */
    json_t *command;            /* training.command as argv (a string runs
                                   under /bin/sh -c) */
    long epochs;                /* training.epochs_per_trigger (1) */
    long batch_size;            /* training.batch_size (0: not given) */
    bool use_previous_model;    /* training.use_previous_model (false) */
    bool coalesce;              /* training.coalesce_triggers (false) */
    uint64_t seed;              /* training.seed (0) */
    long gpus;                  /* training.gpus (1) */
    double mem_mib;             /* training.mem or .model's estimate; < 0
                                   none */
    long mps_threads_pct;       /* training.mps_threads_pct (0: none) */
    long keep_models;           /* model_storage.keep_last (0: all) */
    pl_job_section embedding;   /* drift on a model's embeddings */
    pl_job_section evaluation;  /* the models judged */
} pl_file;

/* Reads and checks the file at path. 0, or -1 with "FILE:LINE: KEY: what
 * is wrong" in err. Modyn keys aegis does not support are named on stderr
 * (warn: non-zero) and ignored; keys neither knows are errors. */
int pl_file_load(const char *path, bool warn, pl_file *cfg, char *err,
                   size_t errlen);
void pl_file_free(pl_file *cfg);

/* Whether name is a pipeline (or dataset) name: 1..PL_NAME_MAX of
 * letters, digits, '.', '_' and '-', not starting with '.'. */
bool pl_name_ok(const char *name);

/* ---- checks reaching into the trigger and selection sections
 * (pl_modyn.c), run by pl_file_load ---- */

/* The longest key path these checks name. */
#define PL_PATH_MAX 256

/* Drops the Modyn keys of trigger and selection that change nothing aegis
 * does (a drift metric's device, selection_strategy.processor_type),
 * naming each with its line on stderr when warn. */
void pl_modyn_drop(const pl_yaml *y, json_t *trigger, json_t *selection,
                   bool warn);

/* Says on stderr (when warn), with its line, each evaluation handler of
 * execution_time manual: the pipeline never runs it, as Modyn's does not. */
void pl_modyn_manual(const pl_yaml *y, json_t *evaluation, bool warn);

/* -1 with "FILE:LINE: PATH: ..." in err when the file has a YAML merge
 * key (<<) anywhere; 0 otherwise. */
int pl_modyn_merge_keys(const pl_yaml *y, char *err, size_t errlen);

/* Modyn's rule for one batch-then-sample downsampling config: the batch
 * kept, max(ratio * batch_size / ratio_max, 1), must divide batch_size.
 * 0, or -1 with err naming the ratio's line. */
int pl_modyn_bts_ratio(const pl_yaml *y, json_t *selection, long batch_size,
                       char *err, size_t errlen);

#endif
