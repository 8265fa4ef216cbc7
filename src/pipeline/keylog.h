/* keylog.h -- a dataset's key log (keys.log): the append-only binary
 * record of every registered sample, and of every bad record skipped.
 *
 * Layout, little-endian:
 *   header  char magic[8] = "AEGKEYS1"; uint32 version (1);
 *           uint32 sample_size (40)
 *   blocks  each: pl_block_head, then its samples, then nbad x
 *           pl_bad_entry. The samples are count x pl_sample (sample.h, key
 *           first_key + i), or, in a run block (flags PL_BLOCK_RUN: records
 *           of one size one after another with one timestamp, as a binary
 *           file's are), a pl_run_head and count x int32 labels, padded
 *           with zeros to a multiple of 8 bytes: 4 bytes a sample instead
 *           of 40, which readers expand.
 * A block holds what one pass over one file found, and the file's
 * progress after it (done): appended with one write, checksummed (CRC-32
 * of the head with crc = 0, then the payload), so a torn or corrupt tail
 * is recognised and cut at the watcher's next start, and the watcher
 * resumes each file exactly at its last block's done: no sample is
 * registered twice, none lost. Keys are dense: a block's first_key is the
 * count of samples before it, which the readers check.
 */
#ifndef AEGIS_PL_KEYLOG_H
#define AEGIS_PL_KEYLOG_H

#include <stddef.h>
#include <stdint.h>

#include "sample.h"

#define PL_KEYLOG_MAGIC "AEGKEYS1"
#define PL_BLOCK_MAGIC 0x314b4241u /* "ABK1" */
#define PL_KEYLOG_HEADER 16

_Static_assert(sizeof(pl_sample) == 40, "pl_sample is the on-disk record");

typedef struct pl_block_head {
    uint32_t magic;
    uint32_t count;     /* samples */
    uint32_t nbad;      /* bad records */
    uint32_t file;      /* index in files.log */
    uint64_t first_key;
    uint64_t done;      /* bytes of the file consumed after this block
                           (one-sample-per-file: 1 once registered) */
    uint32_t crc;
    uint32_t flags;     /* PL_BLOCK_RUN */
} pl_block_head;

#define PL_BLOCK_RUN 1u

/* A run block's samples: sample i at first_offset + i * record_size. */
typedef struct pl_run_head {
    uint64_t first_offset;
    int64_t ts;
    uint32_t record_size;
    uint32_t reserved;
} pl_run_head;

_Static_assert(sizeof(pl_run_head) == 24, "run head layout");

_Static_assert(sizeof(pl_block_head) == 40, "block head layout");

/* Why a record was skipped (shown by `aegis dataset show`). */
typedef enum pl_bad_reason {
    PL_BAD_TRUNCATED = 1, /* a partial record at the end of a closed file */
    PL_BAD_FIELDS,        /* a CSV row with too few (or, with a header,
                             too many) fields */
    PL_BAD_LABEL,         /* a label that is no number, or out of range */
    PL_BAD_TIMESTAMP,     /* a timestamp field that is no whole number */
    PL_BAD_LABEL_FILE,    /* one-sample-per-file: an unreadable NAME.label */
    PL_BAD_TOO_LONG,      /* a sample longer than 4 GiB */
    PL_BAD_EMPTY_FIELD,   /* a CSV row with an empty field: its features
                             would be fewer than its neighbours' */
    PL_BAD_EMPTY,         /* one-sample-per-file: an empty file */
} pl_bad_reason;

typedef struct pl_bad_entry {
    uint64_t offset; /* where the bad record starts in its file */
    uint32_t reason;
    uint32_t reserved;
} pl_bad_entry;

const char *pl_bad_reason_text(uint32_t reason);

/* Called for each whole, valid block in order, with its samples (a run
 * block's expanded). Nonzero stops the read before the block. */
typedef int (*pl_block_visit)(void *ctx, const pl_block_head *h,
                              const pl_sample *samples,
                              const pl_bad_entry *bads);

/* Reads the valid blocks of the mapped log BASE[0, size) from *pos
 * (PL_KEYLOG_HEADER at first), expecting the key *next_key next; stops at
 * the end or at the first torn or corrupt block, leaving *pos and
 * *next_key after the last good one. 0; 1 when visit stopped it; or -1
 * with err when memory runs out, when the header is wrong, when the log
 * is shorter than *pos, when whole blocks follow the bad one (damage in
 * the middle, which no crash makes: not to be cut) or when a valid block
 * holds a sample of another file or key than its own. */
int pl_keylog_scan(const unsigned char *base, uint64_t size, uint64_t *pos,
                   uint64_t *next_key, pl_block_visit visit, void *ctx,
                   char *err, size_t errlen);

/* Checks or writes the header of the log open as fd. 0, or -1 with err. */
int pl_keylog_header(int fd, const char *path, char *err, size_t errlen);

/* Appends one block (samples' keys already set), as a run block when the
 * samples make one. 0, or -1 with err. */
int pl_keylog_append(int fd, const char *path, uint32_t file,
                     uint64_t first_key, uint64_t done,
                     const pl_sample *samples, uint32_t count,
                     const pl_bad_entry *bads, uint32_t nbad, char *err,
                     size_t errlen);

#endif
