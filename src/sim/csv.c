/* csv.c -- whole-file, in-place CSV splitting (see csv.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, madvise */
#include "csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Regular files this big are mapped, not read: reading copied a
 * million-job trace (46 MB) into fresh pages, a third of the time it took
 * to load, where a mapping shares the kernel's cached pages and copies
 * only those csv_next() writes to. Below it, the system calls of a
 * mapping cost about what they save. */
#define CSV_MAP_BYTES (1 << 20)

/* Maps the size bytes of the regular file fd copy-on-write, followed by
 * zeros to the end of a page, at least one: the NUL after the file.
 * Returns NULL when the system will not, with the length to unmap in
 * *mapped otherwise. The file must not shrink while mapped: its missing
 * pages would fault (SIGBUS), as with any mapped file. */
static char *map_file(int fd, size_t size, size_t *mapped) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (size + page) / page * page;
    /* Zeroed pages for the file's to lie over: its last page ends in
     * zeros when partial, and the page after it is there when not. */
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return NULL;
    if (mmap(buf, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
             0) == MAP_FAILED) {
        munmap(buf, len);
        return NULL;
    }
#ifdef MADV_POPULATE_READ
    /* All pages at once, not a fault at a time (Linux 5.14; else EINVAL,
     * and the faults happen as before). */
    (void)madvise(buf, size, MADV_POPULATE_READ);
#endif
    *mapped = len;
    return buf;
}

static void free_buf(char *buf, size_t mapped) {
    if (mapped) munmap(buf, mapped);
    else free(buf);
}

/* The most a CSV file read as a stream (a pipe) may hold: a bigger trace
 * is read from a regular file, which is mapped instead. */
#define CSV_STREAM_MAX ((size_t)1 << 30)

/* Reads fp to its end (or a fault: ferror) into a buffer with room for a
 * final NUL; cap is a first guess at its size. Stops early at a NUL byte
 * (csv_open() then says the file is binary: /dev/zero never ends) and
 * past CSV_STREAM_MAX (*too_big). Returns NULL when out of memory. */
static char *read_stream(FILE *fp, size_t cap, size_t *size, bool *too_big) {
    size_t len = 0;
    char *buf = malloc(cap);
    *too_big = false;
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, fp);
        bool nul = memchr(buf + len, '\0', got) != NULL;
        len += got;
        if (len < cap - 1 || nul) break;
        if (cap > CSV_STREAM_MAX) {
            *too_big = true;
            break;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) { free(buf); buf = NULL; break; }
        buf = bigger;
        cap *= 2;
    }
    *size = len;
    return buf;
}

/* The whole file with a NUL after it, mapped (*mapped its length) or read
 * (*mapped 0). Returns NULL with "PATH: why" in err. */
static char *load_file(const char *path, size_t *size, size_t *mapped,
                       char *err, size_t errlen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    /* A regular file's size is known: room for all of it in one read. A
     * pipe says nothing: a start to grow from. */
    bool stated = fstat(fileno(fp), &st) == 0;
    if (stated && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: a directory, not a CSV file", path);
        fclose(fp);
        return NULL;
    }
    bool known = stated && S_ISREG(st.st_mode) && st.st_size > 0;
    char *buf = NULL;
    *mapped = 0;
    if (known && st.st_size >= CSV_MAP_BYTES)
        buf = map_file(fileno(fp), (size_t)st.st_size, mapped);
    bool too_big = false;
    if (buf) *size = (size_t)st.st_size;
    else buf = read_stream(fp, known ? (size_t)st.st_size + 2 : 1 << 16, size,
                           &too_big);
    int failed = ferror(fp), why = errno;
    fclose(fp);
    if (!buf || failed || too_big) {
        snprintf(err, errlen, "%s: %s%s", path,
                 too_big ? "over 1 GiB read as a stream (give a regular file)"
                 : buf   ? "cannot read: "
                         : "cannot read (out of memory)",
                 buf && !too_big ? strerror(why) : "");
        if (buf) free_buf(buf, *mapped);
        return NULL;
    }
    buf[*size] = '\0';
    return buf;
}

/* Half of a buffer searched for a NUL byte in a second thread. */
typedef struct nul_search {
    const char *from;
    size_t len;
    const char *found;          /* the first NUL, or NULL */
} nul_search;

static void *search_nul(void *arg) {
    nul_search *s = arg;
    s->found = memchr(s->from, '\0', s->len);
    return NULL;
}

/* The first NUL byte in buf's size bytes, or NULL. A big file's second
 * half is searched in another thread at once: the search of a whole
 * million-job trace took 5 ms before anything else could start. */
static const char *find_nul(const char *buf, size_t size) {
    size_t half = size >= CSV_MAP_BYTES ? size / 2 : size;
    nul_search second = {buf + half, size - half, NULL};
    pthread_t thread;
    bool threaded = half < size &&
                    pthread_create(&thread, NULL, search_nul, &second) == 0;
    const char *nul = memchr(buf, '\0', threaded ? half : size);
    if (threaded) {
        pthread_join(thread, NULL);
        if (!nul) nul = second.found;
    }
    return nul;
}

/* Returns the line number holding byte p of buf, for messages. */
static int line_of(const char *buf, const char *p) {
    int line = 1;
    for (const char *q = buf; q < p; q++) line += *q == '\n';
    return line;
}

/* Advances over comment and blank lines; returns the next content line
 * terminated in place (its '\n' and any '\r' replaced by NUL), or NULL. */
static char *next_line(csv_file *f) {
    while (f->pos < f->end) {
        char *start = f->pos;
        char *nl = memchr(start, '\n', (size_t)(f->end - start));
        char *stop = nl ? nl : f->end;
        f->pos = nl ? nl + 1 : f->end;
        f->line++;
        if (stop > start && stop[-1] == '\r') stop--;
        *stop = '\0';
        if (stop > start && start[0] != '#') return start;
    }
    return NULL;
}

/* A carriage return left in a line once next_line() took off the one
 * before its '\n' ends no line: a file whose lines end in CR alone
 * (classic Mac OS) is one line, whose header then named a column after
 * the next line's text ("missing column", "no jobs after the header").
 * Returns -1 with the message for the line read last, what naming it
 * ("the header line", "the line"). */
static int bare_cr(const csv_file *f, const char *line, const char *what,
                   char *err, size_t errlen) {
    if (!strchr(line, '\r')) return 0;
    snprintf(err, errlen, "%s:%d: a carriage return inside %s: lines ended "
             "by CR alone (classic Mac OS) are not read; end them with LF "
             "or CRLF", f->path, f->line, what);
    return -1;
}

/* What split() returns for a faulty line. */
enum { SPLIT_TOO_MANY = -1, SPLIT_BAD_QUOTE = -2 };

/* Unquotes in place the field at line, which opens with '"', as a
 * spreadsheet writes one (RFC 4180: "" is a quote, commas are text);
 * returns the byte after its closing quote, or NULL when the line ends
 * first: a field across lines is not read (the line is the unit that
 * messages and the parallel reader count). */
static char *unquote(char *line) {
    char *out = line, *in = line + 1;
    for (;;) {
        if (*in == '\0') return NULL;
        if (*in == '"') {
            if (in[1] != '"') break;
            in++; /* "" is one quote */
        }
        *out++ = *in++;
    }
    *out = '\0';
    return in + 1;
}

/* Splits line at commas into fields; returns the count, SPLIT_TOO_MANY
 * when there are more than max, or SPLIT_BAD_QUOTE when a quoted field
 * does not close, or has text after its closing quote. */
static int split(char *line, char **fields, int max) {
    int n = 0;
    for (;;) {
        if (n == max) return SPLIT_TOO_MANY;
        fields[n++] = line;
        if (*line == '"') {
            line = unquote(line);
            if (!line || (*line != ',' && *line != '\0'))
                return SPLIT_BAD_QUOTE;
        }
        char *comma = strchr(line, ',');
        if (!comma) return n;
        *comma = '\0';
        line = comma + 1;
    }
}

/* The message for a line split() refused. */
static void split_error(const csv_file *f, int n, int max, char *err,
                        size_t errlen) {
    if (n == SPLIT_BAD_QUOTE)
        snprintf(err, errlen, "%s:%d: a quoted field does not end with a "
                 "closing quote before the next comma or the line's end",
                 f->path, f->line);
    else
        snprintf(err, errlen, "%s:%d: more than %d columns", f->path,
                 f->line, max);
}

/* The first named column of f's header named twice, or NULL: the
 * readers take a column by its first name, so the second copy would be
 * ignored without a word. */
static const char *repeated_column(const csv_file *f) {
    for (int i = 0; i < f->ncols; i++)
        for (int k = 0; f->cols[i][0] && k < i; k++)
            if (strcmp(f->cols[i], f->cols[k]) == 0) return f->cols[i];
    return NULL;
}

csv_file *csv_open(const char *path, char *err, size_t errlen) {
    size_t size, mapped;
    char *buf = load_file(path, &size, &mapped, err, errlen);
    if (!buf) return NULL;
    csv_file *f = calloc(1, sizeof(*f));
    const char *nul = find_nul(buf, size);
    if (!f || nul) {
        if (nul)
            snprintf(err, errlen, "%s:%d: binary file (NUL byte), not CSV",
                     path, line_of(buf, nul));
        else snprintf(err, errlen, "%s: out of memory", path);
        free_buf(buf, mapped);
        free(f);
        return NULL;
    }
    f->path = path;
    f->mapped = mapped;
    f->buf = f->pos = buf;
    f->end = buf + size;
    /* a spreadsheet's "CSV UTF-8" starts with a byte order mark */
    if (size >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) f->pos += 3;
    char *header = next_line(f);
    if (!header) {
        snprintf(err, errlen, "%s: empty file (no header line)", path);
        csv_close(f);
        return NULL;
    }
    if (bare_cr(f, header, "the header line", err, errlen) < 0) {
        csv_close(f);
        return NULL;
    }
    f->ncols = split(header, f->cols, CSV_MAX_FIELDS);
    const char *twice = f->ncols < 0 ? NULL : repeated_column(f);
    if (f->ncols < 0 || twice) {
        if (twice)
            snprintf(err, errlen, "%s:%d: column '%s' appears twice in the "
                     "header", path, f->line, twice);
        else
            split_error(f, f->ncols, CSV_MAX_FIELDS, err, errlen);
        csv_close(f);
        return NULL;
    }
    return f;
}

void csv_close(csv_file *f) {
    if (!f) return;
    free_buf(f->buf, f->mapped);
    free(f);
}

void csv_split(csv_file *f, csv_file *tail) {
    char *mid = f->pos + (f->end - f->pos) / 2;
    char *nl = memchr(mid, '\n', (size_t)(f->end - mid));
    char *cut = nl ? nl + 1 : f->end;
    *tail = *f;
    tail->pos = cut;
    tail->line = 0;
    f->end = cut;
}

double csv_line_bytes(const csv_file *f) {
    const char *p = f->pos;
    int lines = 0;
    for (const char *nl; lines < 64 && p < f->end &&
                         (nl = memchr(p, '\n', (size_t)(f->end - p)));
         p = nl + 1)
        lines++;
    return lines ? (double)(p - f->pos) / lines : 1;
}

int csv_col(const csv_file *f, const char *name) {
    for (int i = 0; i < f->ncols; i++)
        if (strcmp(f->cols[i], name) == 0) return i;
    return -1;
}

int csv_next(csv_file *f, char *err, size_t errlen) {
    char *line = next_line(f);
    if (!line) return 0;
    if (bare_cr(f, line, "the line", err, errlen) < 0) return -1;
    int n = split(line, f->row, f->ncols);
    if (n == SPLIT_BAD_QUOTE)
        split_error(f, n, f->ncols, err, errlen);
    else if (n != f->ncols)
        snprintf(err, errlen, "%s:%d: %s fields, the header has %d", f->path,
                 f->line, n < 0 ? "too many" : "too few", f->ncols);
    return n == f->ncols ? 1 : -1;
    return 1;
}

/* One byte of each lane of a 64-bit word, for reading 8 bytes at once. */
#define LANES 0x0101010101010101u

/* The 8 bytes at p as a word whose lowest byte is p[0] (on any machine),
 * as the lane tricks below expect. */
static uint64_t load_lanes(const char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

const char *csv_plain_end(const char *p, const char *end) {
    /* A row's fields are tens of bytes: 8 bytes a step beats strchr's call
     * and setup per field. (w - '-' per lane) & ~w flags the high bit of
     * each byte below '-'; a borrow may flag bytes after the first such
     * byte, never before it, so the lowest flag is exact. */
    for (; end - p >= 8; p += 8) {
        uint64_t w = load_lanes(p);
        uint64_t below = (w - LANES * '-') & ~w & LANES * 0x80;
        if (below) return p + (__builtin_ctzll(below) >> 3);
    }
    while (p < end && (unsigned char)*p >= '-') p++;
    return p;
}

/* Appends the digits at p to *value; returns the byte after them. */
static const char *add_digits(const char *p, uint64_t *value) {
    uint64_t v = *value;
    /* 64-bit from the load on: no sign extension a digit. */
    for (uint64_t d; (d = (uint64_t)(unsigned char)*p - '0') <= 9; p++)
        v = v * 10 + d;
    *value = v;
    return p;
}

const char *csv_digits(const char *p, uint64_t *value) {
    *value = 0;
    return add_digits(p, value);
}

/* Clinger's fast path: "[-]digits[.digits]" with at most 15 digits is an
 * integer below 2^53 divided by an exact power of ten, so one division
 * gives the same, correctly rounded, double as strtod, several times
 * faster. */
const char *csv_plain_number(const char *text, double *out) {
    static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                   1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                   1e15};
    const char *whole = text + (text[0] == '-');
    uint64_t mantissa = 0;
    const char *p = add_digits(whole, &mantissa);
    size_t digits = (size_t)(p - whole), decimals = 0;
    if (*p == '.') {
        const char *fraction = p + 1;
        p = add_digits(fraction, &mantissa);
        decimals = (size_t)(p - fraction);
    }
    if (digits + decimals == 0 || digits + decimals > 15) return NULL;
    /* Below 10^15, so a signed conversion: one instruction, not the
     * unsigned one's several. */
    double v = (double)(int64_t)mantissa / pow10[decimals];
    /* + 0.0 makes "-0" 0, as csv_double() reads it */
    *out = (text[0] == '-' ? -v : v) + 0.0;
    return p;
}

void csv_skip_row(csv_file *f, const char *next) {
    f->pos += next - f->pos;
    f->line++;
}

void csv_quote(const char *text, char *out, size_t outlen) {
    size_t len = strlen(text), cut = 40;
    if (len <= cut) {
        snprintf(out, outlen, "'%s'", text);
        return;
    }
    /* back to a character's first byte: half a UTF-8 character would
     * make the message itself text no reader takes */
    while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80) cut--;
    snprintf(out, outlen, "'%.*s'... (%zu bytes)", (int)cut, text, len);
}

/* The message for text, decimal digits that strtod() took whole but
 * found out of range (ERANGE): a number, only one a double cannot hold,
 * which "not a number" sent the user hunting for a typo in. */
static void out_of_range(const csv_file *f, int col, const char *text,
                         double v, char *err, size_t errlen) {
    char shown[80];
    csv_quote(text, shown, sizeof(shown));
    if (fabs(v) >= 1) /* overflow gives +-HUGE_VAL */
        snprintf(err, errlen, "%s:%d: field '%s': %s is too large a number "
                 "(over %.2g)", f->path, f->line, f->cols[col], shown,
                 DBL_MAX);
    else
        snprintf(err, errlen, "%s:%d: field '%s': %s is too close to 0 "
                 "(under %.2g)", f->path, f->line, f->cols[col], shown,
                 DBL_MIN);
}

int csv_double(const csv_file *f, int col, double *out, char *err,
               size_t errlen) {
    const char *text = f->row[col];
    if (text[0] == '\0') return 1;
    double v;
    const char *plain = csv_plain_number(text, &v);
    if (plain && *plain == '\0') {
        *out = v + 0.0; /* -0 is 0 */
        return 0;
    }
    char *stop;
    errno = 0;
    v = strtod(text, &stop);
    /* decimal notation only: strtod also takes hex (0x10), spaces before
     * the number, inf and nan */
    bool decimal = text[strspn(text, "0123456789.eE+-")] == '\0' &&
                   *stop == '\0';
    if (decimal && errno == ERANGE) {
        out_of_range(f, col, text, v, err, errlen);
        return -1;
    }
    if (!decimal || !isfinite(v)) {
        char shown[80];
        csv_quote(text, shown, sizeof(shown));
        snprintf(err, errlen, "%s:%d: field '%s': %s is not a number",
                 f->path, f->line, f->cols[col], shown);
        return -1;
    }
    *out = v + 0.0;
    return 0;
}

int csv_bounded(const csv_file *f, int col, double lo, double hi,
                double *out, char *err, size_t errlen) {
    if (col < 0) return 0;
    double v = *out;
    int rc = csv_double(f, col, &v, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0 && (v < lo || v > hi)) {
        /* the field as written, and the bounds whole: %g's six digits
         * said "1 is outside [0, 1]" of 1.0000001 */
        snprintf(err, errlen, "%s:%d: field '%s': %.40s is outside "
                 "[%.15g, %.15g]", f->path, f->line, f->cols[col],
                 f->row[col], lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int csv_count(const csv_file *f, int col, int lo, int hi, int *out,
              char *err, size_t errlen) {
    double v = *out;
    if (csv_bounded(f, col, lo, hi, &v, err, errlen) < 0) return -1;
    if (v != (int)v) {
        snprintf(err, errlen, "%s:%d: field '%s': %.40s is not whole",
                 f->path, f->line, f->cols[col], f->row[col]);
        return -1;
    }
    *out = (int)v;
    return 0;
}
