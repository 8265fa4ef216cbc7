/* supervisor.h -- a pipeline's supervisor (aegis-pipeline): the owner's
 * process, started and restarted by aegisd (daemon/pipelines.c), that
 * feeds its dataset's samples to its trigger and trains each trigger as
 * an aegis job (docs/pipelines.md, "How a pipeline runs").
 *
 *   sup_feed.c   the dataset's new samples to the trigger; fires queued
 *   sup_train.c  a fire's training set, job, wait and model
 *   sup_trained.c  a trained model's facts kept beside it
 *   sup_embed.c  a drift trigger's windows embedded with the newest model
 *   sup_eval.c   each model evaluated, its results kept
 *   sup_perf.c   a performance trigger's checks of the newest model
 *   sup_cost.c   the trainings' costs, for cost triggers
 *   sup_rho.c    RHO-LOSS's irreducible-loss models, on a holdout
 *   sup_job.c    the jobs of all of these in aegisd
 *   sup_main.c   the command: run, check, replay
 *
 * Crash safety: the trigger log (pl_tlog.h) says what was decided, each
 * record synced before the act. A restarted supervisor feeds the trigger
 * the dataset from key 0 again (triggers are deterministic: trigger.h),
 * and for each fire does only what its log lacks: a fire logged with a
 * job is waited for, one logged without is looked for among aegisd's
 * jobs by its name (it may have been submitted before the crash), one
 * not logged is trained.
 */
#ifndef AEGIS_PL_SUPERVISOR_H
#define AEGIS_PL_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "eval.h"
#include "pl_file.h"
#include "pl_tlog.h"
#include "select.h"
#include "submit.h"
#include "trigger.h"
#include "watch.h"

typedef struct sup {
    pl_file cfg;
    char state[4096];       /* the owner's state folder (pl_state_dir) */
    char dir[4200];         /* the pipeline's folder (pl_dir) */
    const char *socket;     /* aegisd's (client_socket) */
    pl_tlog log;
    pl_dataset *ds;
    pl_trigger *trigger;
    pl_selector *selector;
    /* replay: only samples with from <= ts < to, in timestamp order */
    bool replay;
    int64_t from, to;
    pl_sample *order;       /* replay: the samples in the order fed,
                               keyed by their place (the selection takes
                               dense keys: select.h) */
    uint64_t *order_keys;   /*   and their keys in the dataset */
    uint64_t norder;
    uint64_t fed;           /* samples fed to the trigger so far */
    size_t dim;             /* features a sample has (its dataset's first) */
    bool dim_known;
    uint64_t unlike_rows;   /* samples with another count (sup_features) */
    uint64_t *bounds;       /* bounds[n]: first sample after fire n */
    uint32_t nfires, capfires;
    uint32_t next;          /* the first fire not yet settled */
    uint32_t noted;         /* fires before it whose sets the selector
                               knows as used (sup_note_set) */
    pl_watch *watcher;      /* the dataset's watcher, run here; NULL when
                               another process watches it (or a replay) */
    int watcher_fd;         /*   its inotify on the data folder */
    int watch_fd;           /* otherwise inotify on the dataset's state
                               folder (its key log grows); -1: none yet */
    int64_t takeover_look;  /* when it last looked whether that other
                               watcher is gone (sup_watch.c) */
    uint32_t nembeds;       /* embeddings asked for since this process
                               began feeding (sup_embed.c) */
    uint32_t nchecks;       /* performance checks asked for, the same
                               (sup_perf.c) */
    bool asks_models;       /* the trigger asks for the newest model's
                               embeddings or scores, or for the trainings'
                               costs (fed one by one) */
    double *cost_samples;   /* the trainings' set sizes and run times, */
    double *cost_seconds;   /*   for cost triggers (sup_cost.c) */
    size_t ncosts;
    uint32_t costs_upto;    /* triggers looked at for them */
    pl_eval_config eval;    /* the evaluation section's handlers and
                               dataset (nhandlers 0: none) */
    char refused[1024];     /* why aegisd refused the last job refused
                               (sup_submit_job), to say with it */
} sup;

/* sup_watch.c */
/* Runs the dataset's watcher in the supervisor when no other process
 * does (`aegis dataset watch` holds its lock): registers what is there.
 * A watcher elsewhere is not an error. 0, or -1 with err. */
int sup_watch_open(sup *s, char *err, size_t errlen);
/* Waits up to timeout_ms for data: the watcher's events registered, or
 * a scan when none came (its safety net); without a watcher here, for the
 * key log's growth. */
void sup_wait_data(sup *s, int timeout_ms);

/* sup_feed.c */
/* Feeds the samples registered since the last call to the trigger, its
 * fires added to bounds. 0, or -1 with err. */
int sup_feed(sup *s, char *err, size_t errlen);
/* The samples as the trigger was fed them, and how many. */
const pl_sample *sup_samples(const sup *s, uint64_t *count);

/* sup_train.c */
/* Settles the fires from s->next on, in order: each trained (its job
 * submitted and waited for), or logged as coalesced into a later one.
 * 0, or -1 with err (the log or aegisd failed: the supervisor exits and
 * aegisd restarts it). */
int sup_settle(sup *s, char *err, size_t errlen);
/* Trigger n's training set, read (the caller frees *items). 0, or -1. */
int sup_read_set(const sup *s, uint32_t n, pl_trainset_item **items,
                 size_t *count);
/* Whether pipeline.maximum_triggers fires are all settled. */
bool sup_done(const sup *s);
/* Trigger n's file in the pipeline's folder, DIR/SUB/N.EXT: its training
 * set ("trainsets", "tset"), its model ("models", "model"), an
 * embedding's files ("embeddings"). */
void sup_file(const sup *s, const char *sub, const char *ext, uint32_t n,
              char *buf, size_t size);
/* The newest model of the fires so far (kept, or dropped by
 * model_storage.keep_last since): its trigger and its path, or -1 when
 * there is none. */
int64_t sup_newest_model(const sup *s, char *path, size_t size);

/* sup_embed.c */
/* The pipeline's pl_embed_fn (trigger.h), ctx a sup: settles the fires
 * so far, then has the embedding command embed keys with the newest
 * model, or answers again what it answered before a restart. */
int sup_embed(void *ctx, const uint64_t *keys, size_t n, float **out,
              size_t *dim, char *err, size_t errlen);

/* sup_rho.c */
/* What a trigger's training gets from RHO-LOSS's auxiliary pipeline. */
typedef struct sup_rho {
    char trainset[4400];    /* the set it trains on; "": the trigger's */
    char il[4400];          /* its samples' irreducible losses; "": none */
    bool failed;            /* the IL model failed: no downsampling */
} sup_rho;
/* Trains trigger n's IL model(s) on a holdout when its downsampling is
 * RHOLoss with an il_training_config command, or finds them trained
 * before a restart. 0 (out says what the training gets), or -1 with err
 * (aegisd or the pipeline's folder failed). */
int sup_rho_prepare(sup *s, uint32_t n, sup_rho *out, char *err,
                    size_t errlen);

/* sup_keep.c */
/* Writes doc to path whole: a temporary, synced, renamed over path. 0,
 * or -1 with err naming the file. */
int sup_keep_json(const char *path, const json_t *doc, char *err,
                  size_t errlen);

/* sup_trained.c */
/* Keeps trained trigger n's facts in models/N.json (once: a restart
 * finds it there): trained_until, samples, job, seconds. 0, or -1 with
 * err. */
int sup_note_trained(sup *s, uint32_t n, char *err, size_t errlen);

/* sup_eval.c */
/* Evaluates trigger model's model as the evaluation section's handlers
 * of that execution time say (at_end: after_pipeline, else
 * after_training), and keeps the results; nothing when there are none,
 * or they are kept already, or the model was removed. A job that fails
 * or writes bad predictions is said in the log and kept as failed: not
 * an error. 0, or -1 with err (aegisd or the pipeline's folder failed). */
int sup_evaluate(sup *s, uint32_t model, bool at_end, char *err,
                 size_t errlen);

/* An evaluation job's inputs and output: the samples it predicts (keys,
 * ascending), the model, its files, and the evaluation dataset. */
typedef struct sup_eval_job {
    const uint64_t *keys;
    size_t nkeys;
    uint32_t model;
    const char *tset, *pred, *model_path, *dataset;
    long batch_size;        /* 0: not given */
} sup_eval_job;
/* Writes j's keys to its tset and sets the environment an evaluation
 * command finds (docs/pipelines.md, "The evaluation command"). 0, or -1
 * with err. */
int sup_eval_inputs(sup *s, const sup_eval_job *j, char *err, size_t errlen);
/* j's predictions file, loaded and checked to hold a prediction for each
 * key asked for and no other. 0 with *p, or -1 with why (naming the
 * file). */
int sup_eval_load(const sup_eval_job *j, pl_pred *p, char *why,
                  size_t whylen);

/* sup_perf.c */
/* The pipeline's pl_perf_fn (trigger.h), ctx a sup: settles the fires so
 * far, then has the evaluation command predict the asked samples with the
 * newest model and scores them, or answers again what it answered before
 * a restart. */
int sup_perf(void *ctx, const pl_perf_ask *ask, struct perf_obs *out,
             char *err, size_t errlen);

/* sup_cost.c */
/* The pipeline's pl_cost_fn (trigger.h), ctx a sup: settles the fires so
 * far, then answers each trained one's set size and run time. */
int sup_costs(void *ctx, const double **samples, const double **seconds,
              size_t *n, char *err, size_t errlen);

/* sup_job.c */
/* sup_submit_job's answer when aegisd refused the job (it asks for more
 * than the server has, or of what the user may have): not a fault to
 * restart for. */
#define SUP_REFUSED (-2)
/* The owner's job NAME submitted since the pipeline started (one
 * submitted before a crash cut the log short). 0: none, -1: aegisd could
 * not say. */
int64_t sup_find_job(sup *s, const char *name);
/* Submits command as a job of def (name, gpus, memory) with the
 * supervisor's environment: its id, SUP_REFUSED (aegisd's reason in
 * s->refused, not said: the caller says it with what was refused), or -1
 * (aegisd could not be reached or failed: said on stderr). */
int64_t sup_submit_job(sup *s, const json_t *command,
                       const submit_defaults *def);
/* Waits for job id's end (aegisd's wait answers then): its state into
 * state. An aegisd that goes away meanwhile (a restart: the job goes on)
 * is asked again once it is back, for a while. 0, or -1 when aegisd
 * could not say. */
int sup_wait_job(sup *s, int64_t id, char *state, size_t size);
/* The seconds job id's attempts ran, as aegisd recorded them; < 0 when
 * aegisd could not say. */
double sup_job_seconds(sup *s, int64_t id);
/* Unsets every variable a supervisor's job kinds are given, so that one
 * kind's never reach another's job through the supervisor's environment
 * (which a submit carries), then sets what every kind gets: the folder of
 * dataset (AEGIS_DATASET) and the pipeline's name (AEGIS_PIPELINE). */
void sup_job_env(const sup *s, const char *dataset);
/* setenv of a whole number. */
void sup_setenv_u(const char *key, unsigned long long v);
/* Writes a new job's inputs and sets its environment: 0, or -1 with err. */
typedef int (*sup_prepare_fn)(sup *s, void *ctx, char *err, size_t errlen);
/* Runs the job name of section sec (an embedding's, an evaluation's): the
 * one of that name submitted since the pipeline started (a crash came
 * before its answer was kept), else a new one, after prepare. Its end
 * state into state ("refused": aegisd would not take it). 0, or -1 with
 * err (aegisd failed, or prepare did). */
int sup_run_job(sup *s, const char *name, const pl_job_section *sec,
                sup_prepare_fn prepare, void *ctx, char *state, size_t size,
                char *err, size_t errlen);

#endif
