/* watch_int.h -- the watcher's state, shared by its files: watch.c (the
 * log, progress, blocks), watch_file.c (one file, by format) and
 * watch_run.c (scans and the inotify loop). Not for other callers. */
#ifndef AEGIS_PL_WATCH_INT_H
#define AEGIS_PL_WATCH_INT_H

#include "dsconf.h"
#include "filetab.h"
#include "keylog.h"
#include "records.h"
#include "watch.h"

struct pl_watch {
    pl_dsconf conf;
    char dsdir[4200], keys_path[4300], files_path[4300];
    int keys_fd, files_fd, dir_fd, ino; /* ino: inotify, once started */
    pl_filetab files;
    uint64_t *done;     /* each file's progress, by index */
    uint8_t *shrunk;    /* by index: found shorter than its progress (said
                           once) */
    uint32_t done_cap;  /* entries of both */
    uint64_t samples, nbad, bytes;
    pl_found found;     /* one pass's buffers */
    unsigned char *chunk; /* binary files are read through it */
    size_t chunk_cap;
    int full;           /* the size limit was reached */
    FILE *warn;
    char **passed;      /* names passed over as not the owner's files */
    size_t npassed;     /*   (said once each: pl_watch_pass_over) */
    uid_t other_uid;    /* the last other user a file was passed over */
    char other_name[64]; /*   for, and their name ("" before any) */
};

/* Whether NAME is a data file of the dataset (its pattern, no dot file,
 * no .tmp). */
int pl_watch_wanted(const pl_watch *w, const char *name);
/* NAME's index in the file table, added when new; -1 with err. */
int64_t pl_watch_index(pl_watch *w, const char *name, char *err,
                       size_t errlen);
/* Appends w->found as file's block (keys assigned, size limit applied),
 * and takes its progress. 0, or -1 with err. */
int pl_watch_commit(pl_watch *w, uint32_t file, const char *name, char *err,
                    size_t errlen);
void pl_watch_warn(pl_watch *w, const char *name, const char *what);
/* NAME is not taken (a link, another user's file): says why, the first
 * time only, for a folder scan finds it again every few seconds. */
void pl_watch_pass_over(pl_watch *w, const char *name, const char *what);
/* Whether registered file `index` (name), now size bytes, is or was
 * shorter than what was registered of it: said once, and then nothing
 * more of it is taken while this watcher runs. */
int pl_watch_shrunk(pl_watch *w, int64_t index, const char *name,
                    uint64_t size);

#endif
