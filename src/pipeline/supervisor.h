/* supervisor.h -- a pipeline's supervisor (aegis-pipeline): the owner's
 * process, started and restarted by aegisd (daemon/pipelines.c), that
 * feeds its dataset's samples to its trigger and trains each trigger as
 * an aegis job (docs/pipelines.md, "How a pipeline runs").
 *
 *   sup_feed.c   the dataset's new samples to the trigger; fires queued
 *   sup_train.c  a fire's training set, job, wait and model
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
#include "pl_file.h"
#include "pl_tlog.h"
#include "select.h"
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
/* Whether pipeline.maximum_triggers fires are all settled. */
bool sup_done(const sup *s);

#endif
