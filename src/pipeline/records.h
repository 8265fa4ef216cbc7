/* records.h -- finding the samples in a dataset file's bytes: fixed-size
 * binary records (binrec.c) and CSV rows (csvrec.c). The watcher feeds a
 * mapped file from its progress on; the reader asks for features.
 *
 * binary: each record is label_size bytes of label (a little-endian
 *   signed integer), then (record_size - label_size) / 4 float32
 *   features, little-endian. A file's timestamp is its mtime.
 * csv: one sample per line ('\n', a '\r' before it ignored), fields split
 *   at the separator with no quoting; the label column holds a whole
 *   number, the timestamp column (when named) whole seconds since the
 *   epoch; with a header, a row has as many fields as it. The sample's
 *   bytes are the line without its end.
 */
#ifndef AEGIS_PL_RECORDS_H
#define AEGIS_PL_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "dsconf.h"
#include "keylog.h"

/* What one pass found: at most cap samples, and the bad records. */
typedef struct pl_found {
    pl_sample *samples;
    pl_bad_entry *bads;
    uint32_t count, nbad, cap; /* bads has room for cap too */
    uint64_t done;             /* the file's progress after the pass */
} pl_found;

/* Where a CSV file's label and timestamp are (-1: none), the fields a row
 * must have (the header's; 0 without one), and where its rows start. */
typedef struct pl_csv_cols {
    int label, ts, fields;
    uint64_t first_row;
} pl_csv_cols;

/* Resolves the configured columns against the file's header line (when
 * the dataset has one) in base[0, size), after a UTF-8 byte order mark
 * if the file starts with one (rows then start past it). 1 when the
 * header line is not whole yet, 0, or -1 with err naming the column:
 * missing, or named twice by the header. */
int pl_csv_columns(const pl_dsconf *c, const unsigned char *base,
                   uint64_t size, pl_csv_cols *cols, char *err,
                   size_t errlen);

/* Finds samples in base[from, size): whole records or lines only, unless
 * final (the file is complete: its last line may lack '\n', a partial
 * record at its end is bad). Samples get ts (binary: the mtime), file
 * and no key yet. */
void pl_binary_find(const pl_dsconf *c, const unsigned char *base,
                    uint64_t from, uint64_t size, int final, int64_t mtime,
                    uint32_t file, pl_found *out);
void pl_csv_find(const pl_dsconf *c, const pl_csv_cols *cols,
                 const unsigned char *base, uint64_t from, uint64_t size,
                 int final, int64_t mtime, uint32_t file, pl_found *out);

/* A record's features (records.h's layouts): at most max into out, their
 * number to *dim. */
void pl_binary_features(const pl_dsconf *c, const unsigned char *rec,
                        float *out, size_t max, size_t *dim);
void pl_csv_features(const pl_dsconf *c, const pl_csv_cols *cols,
                     const unsigned char *row, size_t len, float *out,
                     size_t max, size_t *dim);

/* Whether label is in the dataset's range ([0, classes), or any). */
int pl_label_ok(const pl_dsconf *c, int64_t label);

#endif
