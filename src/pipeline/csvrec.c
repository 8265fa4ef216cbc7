/* csvrec.c -- CSV rows (records.h): the label and timestamp columns, the
 * rows as samples, a row's numeric fields as features. */
#include "records.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIELD_MAX 64 /* longest label, timestamp or feature field parsed */

/* The field [start, end) of a line, one at a time. */
typedef struct field_iter {
    const unsigned char *p, *end;
    char sep;
    int done;
} field_iter;

static int next_field(field_iter *it, const unsigned char **start,
                      size_t *len) {
    if (it->done)
        return 0;
    const unsigned char *sep = memchr(it->p, it->sep, (size_t)(it->end - it->p));
    const unsigned char *stop = sep ? sep : it->end;
    *start = it->p;
    *len = (size_t)(stop - it->p);
    it->p = sep ? sep + 1 : it->end;
    it->done = !sep;
    return 1;
}

static int parse_int(const unsigned char *p, size_t len, int64_t *out) {
    char buf[FIELD_MAX];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* A column given as a number (its index from 0) or, with a header, a
 * name in it. -1 when there is no such column; the name's second column
 * into *again where the header names two (which one is meant cannot be
 * told), else -1. */
static int find_column(const pl_dsconf *c, const char *want,
                       const unsigned char *line, size_t len, int *again) {
    int64_t index;
    *again = -1;
    if (parse_int((const unsigned char *)want, strlen(want), &index) == 0)
        return index >= 0 && index < PL_COLUMN_INDEX_MAX ? (int)index : -1;
    if (!c->header)
        return -1;
    field_iter it = {line, line + len, c->sep, 0};
    const unsigned char *f;
    size_t flen;
    int found = -1;
    for (int i = 0; *again < 0 && next_field(&it, &f, &flen); i++)
        if (flen == strlen(want) && memcmp(f, want, flen) == 0)
            *(found < 0 ? &found : again) = i;
    return found;
}

/* The bytes of a UTF-8 byte order mark at the start of a file (some tools
 * write one, Excel's "CSV UTF-8" among them): 3, or 0. It is no part of
 * the first field: a header's first name, a row's label. */
static uint64_t bom_len(const unsigned char *base, uint64_t size) {
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    return size >= sizeof(bom) && memcmp(base, bom, sizeof(bom)) == 0
               ? sizeof(bom) : 0;
}

/* Column `want` (--label-column or --ts-column) into *col: 0, or -1 with
 * err naming it, when the file has no such column or its header names two
 * of them. */
static int resolve_column(const pl_dsconf *c, const char *want,
                          const unsigned char *line, size_t len, int *col,
                          char *err, size_t errlen) {
    int again;
    *col = find_column(c, want, line, len, &again);
    if (*col >= 0 && again < 0)
        return 0;
    if (*col < 0)
        snprintf(err, errlen, "no column '%s'%s", want,
                 c->header ? " in the header" : "");
    else
        snprintf(err, errlen, "the header names column '%s' twice (columns "
                 "%d and %d): which is meant cannot be told", want, *col,
                 again);
    return -1;
}

static int count_fields(const pl_dsconf *c, const unsigned char *line,
                        size_t len) {
    field_iter it = {line, line + len, c->sep, 0};
    const unsigned char *f;
    size_t flen;
    int n = 0;
    while (next_field(&it, &f, &flen))
        n++;
    return n;
}

static size_t line_len(const unsigned char *p, size_t len) {
    return len && p[len - 1] == '\r' ? len - 1 : len;
}

int pl_csv_columns(const pl_dsconf *c, const unsigned char *base,
                   uint64_t size, pl_csv_cols *cols, char *err,
                   size_t errlen) {
    uint64_t skip = bom_len(base, size);
    base += skip;
    size -= skip;
    const unsigned char *nl = c->header ? memchr(base, '\n', size) : NULL;
    if (c->header && !nl)
        return 1;
    size_t hlen = nl ? line_len(base, (size_t)(nl - base)) : 0;
    cols->first_row = skip + (nl ? (uint64_t)(nl - base) + 1 : 0);
    cols->ts = -1;
    cols->fields = c->header ? count_fields(c, base, hlen) : 0;
    if (resolve_column(c, c->label_column, base, hlen, &cols->label, err,
                       errlen) < 0 ||
        (c->ts_column[0] && resolve_column(c, c->ts_column, base, hlen,
                                           &cols->ts, err, errlen) < 0))
        return -1;
    return 0;
}

/* One row into a sample, or a bad record. */
static void take_row(const pl_dsconf *c, const pl_csv_cols *cols,
                     const unsigned char *base, uint64_t at, size_t len,
                     int64_t mtime, uint32_t file, pl_found *out) {
    field_iter it = {base + at, base + at + len, c->sep, 0};
    const unsigned char *f, *label_f = NULL, *ts_f = NULL;
    size_t flen, label_len = 0, ts_len = 0;
    int i, empty = 0;
    for (i = 0; next_field(&it, &f, &flen); i++) {
        if (i == cols->label)
            label_f = f, label_len = flen;
        if (i == cols->ts)
            ts_f = f, ts_len = flen;
        empty |= flen == 0;
    }
    int64_t label, ts = mtime;
    pl_bad_reason why = 0;
    if (!label_f || (cols->ts >= 0 && !ts_f) ||
        (cols->fields && i != cols->fields))
        why = PL_BAD_FIELDS;
    else if (empty)
        why = PL_BAD_EMPTY_FIELD;
    else if (parse_int(label_f, label_len, &label) < 0 || !pl_label_ok(c, label))
        why = PL_BAD_LABEL;
    else if (ts_f && parse_int(ts_f, ts_len, &ts) < 0)
        why = PL_BAD_TIMESTAMP;
    if (why)
        out->bads[out->nbad++] = (pl_bad_entry){.offset = at, .reason = why};
    else
        out->samples[out->count++] = (pl_sample){
            .ts = ts, .label = label, .file = file, .len = (uint32_t)len,
            .offset = at};
}

void pl_csv_find(const pl_dsconf *c, const pl_csv_cols *cols,
                 const unsigned char *base, uint64_t from, uint64_t size,
                 int final, int64_t mtime, uint32_t file, pl_found *out) {
    uint64_t at = from < cols->first_row ? cols->first_row : from;
    while (out->count + out->nbad < out->cap && at < size) {
        const unsigned char *nl = memchr(base + at, '\n', size - at);
        if (!nl && !final)
            break;
        uint64_t end = nl ? (uint64_t)(nl - base) : size;
        size_t len = line_len(base + at, end - at);
        if (len > UINT32_MAX)
            out->bads[out->nbad++] =
                (pl_bad_entry){.offset = at, .reason = PL_BAD_TOO_LONG};
        else if (len > 0)
            take_row(c, cols, base, at, len, mtime, file, out);
        at = nl ? end + 1 : size;
    }
    out->done = at;
}

void pl_csv_features(const pl_dsconf *c, const pl_csv_cols *cols,
                     const unsigned char *row, size_t len, float *out,
                     size_t max, size_t *dim) {
    field_iter it = {row, row + len, c->sep, 0};
    const unsigned char *f;
    size_t flen, n = 0;
    for (int i = 0; n < max && next_field(&it, &f, &flen); i++) {
        char buf[FIELD_MAX];
        if (i == cols->label || i == cols->ts || flen == 0 ||
            flen >= sizeof(buf))
            continue;
        memcpy(buf, f, flen);
        buf[flen] = '\0';
        char *end;
        float v = strtof(buf, &end);
        /* decimal numbers only, finite (strtof also takes hex, spaces
         * before, inf and nan): aegis_pipeline.py's _CsvFeatures agrees */
        if (*end == '\0' && buf[strspn(buf, "0123456789.eE+-")] == '\0' &&
            isfinite(v))
            out[n++] = v;
    }
    *dim = n;
}
