/* sample.h -- one registered sample of a growing dataset, as every part of
 * the pipeline wing sees it: the watcher registers it (dataset.c), triggers
 * and selection read it (trigger.h, select.h), the supervisor hands it on.
 *
 * Invariant: a dataset's samples are numbered densely in registration
 * order; the n-th sample registered has key n, so a key is also an index.
 */
#ifndef AEGIS_PL_SAMPLE_H
#define AEGIS_PL_SAMPLE_H

#include <stdint.h>

typedef struct pl_sample {
    uint64_t key;     /* dense, from 0, in registration order */
    int64_t ts;       /* timestamp, seconds since the epoch (file mtime or
                         the dataset's timestamp field) */
    int64_t label;
    uint32_t file;    /* index in the dataset's file table */
    uint32_t len;     /* bytes of the sample in that file */
    uint64_t offset;  /* where the sample starts in that file */
} pl_sample;

#endif
