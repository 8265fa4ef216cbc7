/* pl_tlog.h -- a pipeline's trigger log: what its supervisor decided
 * about each trigger, appended and synced before it acts, so that after a
 * crash (of the supervisor or of aegisd) no trigger is trained twice.
 *
 * It lives in the pipeline's folder, <state>/pipelines/<name>/ (pl_dir):
 *   pipeline.yaml    the file as it was started (the supervisor reads it)
 *   triggers.log     this log
 *   trainsets/N.tset trigger N's training set (trainset.h)
 *   models/N.model   the model trigger N's training wrote
 *
 * One record a line, in the order they happened:
 *   start T          the pipeline was started at Unix time T (first line)
 *   fire N END       trigger N fired after the samples with keys < END;
 *                    its training set is written, its job not submitted
 *   skip N END       trigger N was coalesced into a later one
 *   job N ID P       its training was submitted as aegisd's job ID,
 *                    starting from trigger P's model (-1: none)
 *   end N STATE      that job ended (done, failed, cancelled, timeout),
 *                    or aegisd refused it (refused: never retried)
 *   drop N           its model was removed (model_storage.keep_last)
 * A last line without its newline is a write a crash cut: it is cut off
 * at the next open, as if never written (its action never happened:
 * each record is synced before what it records is done).
 */
#ifndef AEGIS_PL_TLOG_H
#define AEGIS_PL_TLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the log says of one trigger. */
typedef struct pl_trig {
    bool fired;         /* a fire (or skip) record */
    bool skipped;       /* coalesced: never trained */
    uint64_t end;       /* first key after it */
    int64_t job;        /* its training job; 0: not submitted */
    int64_t parent;     /* the trigger whose model it started from; -1:
                           none */
    char state[16];     /* how that job ended; "" while it runs */
    bool dropped;       /* its model was removed */
} pl_trig;

typedef struct pl_tlog {
    int fd;             /* -1 when read only */
    char path[4200];
    double started;     /* the start record's time */
    pl_trig *trigs;     /* ntrigs of them, by trigger number */
    size_t ntrigs, cap;
} pl_tlog;

/* The folder of pipeline name under state (pl_state_dir), into buf:
 * buf, or NULL when it does not fit. */
char *pl_dir(const char *state, const char *name, char *buf, size_t size);
/* Makes path and its parents (mode 0700, the owner's alone). 0, or -1
 * with err. */
int pl_mkdirs(const char *path, char *err, size_t errlen);

/* Opens (creating it with a start record when absent and writable) the
 * log at path. 0, or -1 with err naming the file and line. */
int pl_tlog_open(const char *path, bool writable, pl_tlog *log, char *err,
                 size_t errlen);
void pl_tlog_close(pl_tlog *log);

/* Appends a record and syncs it: 0, or -1 with err. */
int pl_tlog_fire(pl_tlog *log, uint32_t n, uint64_t end, bool skipped,
                 char *err, size_t errlen);
int pl_tlog_job(pl_tlog *log, uint32_t n, int64_t job, int64_t parent,
                char *err, size_t errlen);
int pl_tlog_end(pl_tlog *log, uint32_t n, const char *state, char *err,
                size_t errlen);
int pl_tlog_drop(pl_tlog *log, uint32_t n, char *err, size_t errlen);

#endif
