/* eval_pred.c -- the predictions file an evaluation command writes
 * (eval.h): read whole, its format told by its first bytes, every row
 * checked, then the rows sorted by key so that a sample's prediction is
 * found by binary search.
 *
 * The file is written by a command aegis does not control, so nothing in
 * it is trusted: every count is checked against the file's size before it
 * sizes an allocation, and memory stays a small multiple of the file.
 *
 * Where eval.h leaves room:
 *  - errors name a CSV line counting from 1 ("PATH:3: ...") and a binary
 *    row counting from 0 ("PATH: row 2: ..."), an index as a reader of
 *    the file with numpy would use it;
 *  - CSV: spaces and tabs around a field are trimmed; a '\r' before each
 *    '\n' (CRLF) and a last line without '\n' are taken; an empty line
 *    is refused (a row left out by mistake); the format is told by the
 *    first byte, so a file must start with a key's digit or "key";
 *  - binary: the reserved header field must be 0, so that a later use of
 *    it is not misread as this version.
 */
#include "eval.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The binary header: magic, count, width, reserved. */
#define PRED_HEAD 24

/* Where rows come from, for errors: the file, and for CSV the line of
 * row 0 (0 for binary, whose errors name rows). Every CSV line after a
 * header is a row, so row r is on line line0 + r. */
typedef struct pred_src {
    const char *path;
    size_t line0;
} pred_src;

static int vfail(char *err, size_t errlen, const char *path, const char *at,
                 const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

static int vfail(char *err, size_t errlen, const char *path, const char *at,
                 const char *fmt, va_list ap)
{
    char msg[320];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(err, errlen, "%s%s: %s", path, at, msg);
    return -1;
}

/* "PATH: what", about the file as a whole. */
static int fail_file(char *err, size_t errlen, const char *path,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_file(char *err, size_t errlen, const char *path,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(err, errlen, path, "", fmt, ap);
    va_end(ap);
    return -1;
}

/* "PATH:LINE: what" (CSV) or "PATH: row N: what" (binary). */
static int fail_row(const pred_src *s, size_t row, char *err, size_t errlen,
                    const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail_row(const pred_src *s, size_t row, char *err, size_t errlen,
                    const char *fmt, ...)
{
    char at[48];
    if (s->line0)
        snprintf(at, sizeof at, ":%zu", s->line0 + row);
    else
        snprintf(at, sizeof at, ": row %zu", row);
    va_list ap;
    va_start(ap, fmt);
    vfail(err, errlen, s->path, at, fmt, ap);
    va_end(ap);
    return -1;
}

/* n elements of size bytes, NULL on overflow or no memory; never
 * malloc(0), so NULL always means failure. */
static void *alloc_array(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    return malloc(bytes ? bytes : 1);
}

/* Room for n rows of p's width (keys, and labels or scores). */
static int alloc_rows(pl_pred *p, size_t n)
{
    p->keys = alloc_array(n, sizeof *p->keys);
    if (p->width)
        p->scores = alloc_array(n, p->width * sizeof *p->scores);
    else
        p->labels = alloc_array(n, sizeof *p->labels);
    return p->keys && (p->scores || p->labels) ? 0 : -1;
}

/* ---- the file's bytes ---- */

static int read_all(int fd, char *data, size_t size)
{
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* The whole file and one byte more, where the CSV reader may end its
 * last field with a NUL. */
static int slurp(const char *path, char **data, size_t *size, char *err,
                 size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return fail_file(err, errlen, path, "%s", strerror(saved));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail_file(err, errlen, path, "not a regular file");
    }
    *size = (size_t)st.st_size;
    *data = alloc_array(*size + 1, 1);
    if (!*data) {
        close(fd);
        return fail_file(err, errlen, path, "out of memory for %zu bytes",
                         *size);
    }
    int rc = read_all(fd, *data, *size);
    close(fd);
    if (rc == 0)
        return 0;
    free(*data);
    return fail_file(err, errlen, path, "read failed (file shrank while "
                     "read?)");
}

/* ---- binary ---- */

static uint32_t get_le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

static uint64_t get_le64(const unsigned char *b)
{
    return (uint64_t)get_le32(b) | (uint64_t)get_le32(b + 4) << 32;
}

static float get_f32(const unsigned char *b)
{
    uint32_t u = get_le32(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static size_t bin_row_size(uint32_t width)
{
    return 8 + (width ? 4 * (size_t)width : 8);
}

/* The header, checked against the file's size: count rows of the width
 * must fill the rest of the file exactly. */
static int bin_header(const pred_src *s, const unsigned char *d, size_t size,
                      pl_pred *p, char *err, size_t errlen)
{
    if (size < PRED_HEAD)
        return fail_file(err, errlen, s->path, "%zu bytes, shorter than the "
                         "%d-byte header", size, PRED_HEAD);
    uint64_t count = get_le64(d + 8);
    uint32_t width = get_le32(d + 16), reserved = get_le32(d + 20);
    if (reserved != 0)
        return fail_file(err, errlen, s->path, "reserved header field is "
                         "%" PRIu32 ", not 0", reserved);
    if (width == 1 || width > PL_PRED_MAX_WIDTH)
        return fail_file(err, errlen, s->path, "width %" PRIu32 ": must be 0 "
                         "(labels) or 2 to %d (scores)", width, PL_PRED_MAX_WIDTH);
    size_t row = bin_row_size(width), body = size - PRED_HEAD;
    if (body % row != 0 || body / row != count)
        return fail_file(err, errlen, s->path, "header says %" PRIu64 " rows "
                         "of %zu bytes but %zu bytes follow it (truncated or "
                         "extended)", count, row, body);
    p->width = width;
    return 0;
}

static int check_label(const pred_src *s, size_t row, int64_t label,
                       char *err, size_t errlen)
{
    if (label >= 0)
        return 0;
    return fail_row(s, row, err, errlen, "label %" PRId64 " is negative", label);
}

static int check_score(const pred_src *s, size_t row, size_t c, float v,
                       char *err, size_t errlen)
{
    if (isfinite(v))
        return 0;
    return fail_row(s, row, err, errlen, "score of class %zu is %g, not "
                    "finite", c, (double)v);
}

static int bin_row(const pred_src *s, pl_pred *p, const unsigned char *b,
                   char *err, size_t errlen)
{
    size_t r = p->count, w = p->width;
    p->keys[r] = get_le64(b);
    if (w == 0) {
        p->labels[r] = (int64_t)get_le64(b + 8);
        return check_label(s, r, p->labels[r], err, errlen);
    }
    for (size_t c = 0; c < w; c++) {
        p->scores[r * w + c] = get_f32(b + 8 + 4 * c);
        if (check_score(s, r, c, p->scores[r * w + c], err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int bin_load(const pred_src *s, pl_pred *p, const unsigned char *d,
                    size_t size, char *err, size_t errlen)
{
    if (bin_header(s, d, size, p, err, errlen) < 0)
        return -1;
    size_t row = bin_row_size(p->width), n = (size - PRED_HEAD) / row;
    if (alloc_rows(p, n) < 0)
        return fail_file(err, errlen, s->path, "out of memory for %zu rows", n);
    for (; p->count < n; p->count++)
        if (bin_row(s, p, d + PRED_HEAD + p->count * row, err, errlen) < 0)
            return -1;
    return 0;
}

/* ---- CSV ---- */

typedef struct csv_reader {
    pred_src *src;
    char *end;              /* the file's end */
    size_t nf;              /* fields a row: the first row's */
    size_t cap;             /* rows p has room for */
} csv_reader;

static size_t count_fields(const char *line, const char *end)
{
    size_t n = 1;
    for (const char *c = line; (c = memchr(c, ',', (size_t)(end - c))); c++)
        n++;
    return n;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The field at *cur (up to the next ',' or end), trimmed and ended with a
 * NUL in place; *len its length, *cur moved past its ','. */
static char *next_field(char **cur, char *end, size_t *len)
{
    char *b = *cur, *e = memchr(b, ',', (size_t)(end - b));
    if (!e)
        e = end;
    *cur = e < end ? e + 1 : end;
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    *e = '\0';
    *len = (size_t)(e - b);
    return b;
}

/* The full field as a number: strto* stop at the first byte that is not
 * part of one, so the end must be the field's end (which also refuses an
 * empty field and a NUL byte inside one). */
static bool parse_key(const char *f, size_t len, uint64_t *out)
{
    char *e;
    if (!isdigit((unsigned char)f[0]))
        return false;  /* strtoull would take "-1" as 2^64 - 1 */
    errno = 0;
    unsigned long long v = strtoull(f, &e, 10);
    *out = v;
    return errno == 0 && e == f + len;
}

static bool parse_label(const char *f, size_t len, int64_t *out)
{
    char *e;
    errno = 0;
    long long v = strtoll(f, &e, 10);
    *out = v;
    return len > 0 && errno == 0 && e == f + len;
}

static bool parse_score(const char *f, size_t len, float *out)
{
    char *e;
    *out = strtof(f, &e);  /* out of range: inf, refused as not finite */
    return len > 0 && e == f + len;
}

static int csv_label(csv_reader *r, pl_pred *p, char *cur, char *le,
                     char *err, size_t errlen)
{
    size_t len;
    char *f = next_field(&cur, le, &len);
    if (!parse_label(f, len, &p->labels[p->count]))
        return fail_row(r->src, p->count, err, errlen, "label '%.40s' is not "
                        "an integer", f);
    return check_label(r->src, p->count, p->labels[p->count], err, errlen);
}

static int csv_scores(csv_reader *r, pl_pred *p, char *cur, char *le,
                      char *err, size_t errlen)
{
    float *row = p->scores + p->count * p->width;
    for (size_t c = 0; c < p->width; c++) {
        size_t len;
        char *f = next_field(&cur, le, &len);
        if (!parse_score(f, len, &row[c]))
            return fail_row(r->src, p->count, err, errlen, "score '%.40s' of "
                            "class %zu is not a number", f, c);
        if (check_score(r->src, p->count, c, row[c], err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* The first row sets the width. Every row from here on has nf fields of
 * a byte or more, nf - 1 commas and a newline (but the last), so the
 * rest of the file holds at most (rest + 1) / (2 nf) rows: the room
 * allocated, within twice the file's size. */
static int csv_first_row(csv_reader *r, pl_pred *p, const char *line,
                         size_t nf, char *err, size_t errlen)
{
    if (nf < 2)
        return fail_row(r->src, 0, err, errlen, "one field: a row is "
                        "KEY,LABEL or KEY,S0,...,S(W-1)");
    if (nf - 1 > PL_PRED_MAX_WIDTH)
        return fail_row(r->src, 0, err, errlen, "%zu scores, more than the "
                        "%d a row may hold", nf - 1, PL_PRED_MAX_WIDTH);
    r->nf = nf;
    p->width = nf == 2 ? 0 : (uint32_t)(nf - 1);
    r->cap = ((size_t)(r->end - line) + 1) / (2 * nf);
    if (alloc_rows(p, r->cap) < 0)
        return fail_file(err, errlen, r->src->path, "out of memory for %zu "
                         "rows", r->cap);
    return 0;
}

/* One row, the line [line, le) without its line end. */
static int csv_row(csv_reader *r, pl_pred *p, char *line, char *le,
                   char *err, size_t errlen)
{
    size_t nf = count_fields(line, le), len;
    if (line == le)
        return fail_row(r->src, p->count, err, errlen, "empty line");
    if (p->count == 0 && csv_first_row(r, p, line, nf, err, errlen) < 0)
        return -1;
    if (nf != r->nf)
        return fail_row(r->src, p->count, err, errlen, "%zu fields, but the "
                        "first row has %zu", nf, r->nf);
    if (p->count == r->cap)  /* cannot happen, by csv_first_row's bound */
        return fail_row(r->src, p->count, err, errlen, "more rows than fit");
    char *cur = line, *f = next_field(&cur, le, &len);
    if (!parse_key(f, len, &p->keys[p->count]))
        return fail_row(r->src, p->count, err, errlen, "key '%.40s' is not "
                        "an unsigned 64-bit integer", f);
    int rc = p->width ? csv_scores(r, p, cur, le, err, errlen)
                      : csv_label(r, p, cur, le, err, errlen);
    p->count += rc == 0;
    return rc;
}

/* Whether the line of len bytes at line is a header: its first field is
 * "key". */
static bool is_header(const char *line, size_t len)
{
    const char *comma = memchr(line, ',', len);
    size_t n = comma ? (size_t)(comma - line) : len;
    while (n > 0 && is_blank(line[n - 1]))
        n--;
    return n == 3 && memcmp(line, "key", 3) == 0;
}

/* The length of the line at pos without its "\n" or "\r\n"; *next the
 * start of the following line. */
static size_t line_len(char *pos, size_t rest, char **next)
{
    char *nl = memchr(pos, '\n', rest);
    size_t len = nl ? (size_t)(nl - pos) : rest;
    *next = nl ? nl + 1 : pos + rest;
    return len > 0 && pos[len - 1] == '\r' ? len - 1 : len;
}

static int csv_load(pred_src *s, pl_pred *p, char *data, size_t size,
                    char *err, size_t errlen)
{
    csv_reader r = {.src = s, .end = data + size};
    char *pos = data, *next;
    s->line0 = 1;
    if (is_header(pos, line_len(pos, size, &next))) {
        s->line0 = 2;
        pos = next;
    }
    for (; pos < r.end; pos = next) {
        size_t len = line_len(pos, (size_t)(r.end - pos), &next);
        if (csv_row(&r, p, pos, pos + len, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* ---- sorting ---- */

typedef struct key_row {
    uint64_t key;
    size_t row;             /* in the file */
} key_row;

static int cmp_key_row(const void *a, const void *b)
{
    const key_row *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

/* A key twice, named at its later row with the earlier one. */
static int find_dup(const pred_src *s, const key_row *kr, size_t n,
                    char *err, size_t errlen)
{
    for (size_t i = 1; i < n; i++) {
        if (kr[i].key != kr[i - 1].key)
            continue;
        if (s->line0)
            return fail_row(s, kr[i].row, err, errlen, "key %" PRIu64 " also "
                            "on line %zu", kr[i].key, s->line0 + kr[i - 1].row);
        return fail_row(s, kr[i].row, err, errlen, "key %" PRIu64 " also in "
                        "row %zu", kr[i].key, kr[i - 1].row);
    }
    return 0;
}

/* p's rows in the order of kr, into new arrays. */
static int permute(pl_pred *p, const key_row *kr)
{
    pl_pred q = {.count = p->count, .width = p->width};
    size_t w = p->width;
    if (alloc_rows(&q, q.count) < 0) {
        pl_pred_free(&q);
        return -1;
    }
    for (size_t i = 0; i < q.count; i++) {
        q.keys[i] = kr[i].key;
        if (w)
            memcpy(q.scores + i * w, p->scores + kr[i].row * w,
                   w * sizeof *q.scores);
        else
            q.labels[i] = p->labels[kr[i].row];
    }
    pl_pred_free(p);
    *p = q;
    return 0;
}

static int sort_rows(const pred_src *s, pl_pred *p, char *err, size_t errlen)
{
    if (p->count < 2)
        return 0;
    key_row *kr = alloc_array(p->count, sizeof *kr);
    if (!kr)
        return fail_file(err, errlen, s->path, "out of memory sorting %zu "
                         "rows", p->count);
    for (size_t i = 0; i < p->count; i++)
        kr[i] = (key_row){p->keys[i], i};
    qsort(kr, p->count, sizeof *kr, cmp_key_row);
    int rc = find_dup(s, kr, p->count, err, errlen);
    if (rc == 0 && permute(p, kr) < 0)
        rc = fail_file(err, errlen, s->path, "out of memory sorting %zu rows",
                       p->count);
    free(kr);
    return rc;
}

/* ---- the interface ---- */

/* The format by the first bytes: the magic, or a CSV row's key or
 * header. */
static int read_rows(pred_src *s, pl_pred *p, char *data, size_t size,
                     char *err, size_t errlen)
{
    size_t m = sizeof PL_PRED_MAGIC - 1;
    if (size == 0)
        return 0;
    if (size >= m && memcmp(data, PL_PRED_MAGIC, m) == 0)
        return bin_load(s, p, (const unsigned char *)data, size, err, errlen);
    if (isdigit((unsigned char)data[0]) ||
        (size >= 3 && memcmp(data, "key", 3) == 0))
        return csv_load(s, p, data, size, err, errlen);
    return fail_file(err, errlen, s->path, "not a predictions file: starts "
                     "with neither the magic %s nor a CSV key or \"key\" "
                     "header", PL_PRED_MAGIC);
}

int pl_pred_load(const char *path, pl_pred *p, char *err, size_t errlen)
{
    pred_src s = {.path = path};
    char *data = NULL;
    size_t size = 0;
    *p = (pl_pred){0};
    if (slurp(path, &data, &size, err, errlen) < 0)
        return -1;
    int rc = read_rows(&s, p, data, size, err, errlen);
    free(data);
    if (rc == 0)
        rc = sort_rows(&s, p, err, errlen);
    if (rc < 0)
        pl_pred_free(p);
    return rc;
}

void pl_pred_free(pl_pred *p)
{
    free(p->keys);
    free(p->labels);
    free(p->scores);
    *p = (pl_pred){0};
}

ptrdiff_t pl_pred_find(const pl_pred *p, uint64_t key)
{
    size_t lo = 0, hi = p->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->count && p->keys[lo] == key ? (ptrdiff_t)lo : -1;
}

int64_t pl_pred_class(const pl_pred *p, size_t r)
{
    if (p->width == 0)
        return p->labels[r];
    const float *s = p->scores + r * p->width;
    uint32_t best = 0;
    for (uint32_t c = 1; c < p->width; c++)
        if (s[c] > s[best])
            best = c;
    return best;
}
