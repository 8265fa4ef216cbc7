/* csv.h -- a small, fast reader of comma-separated files by column name.
 *
 * The whole file is read (or mapped, when big) into one buffer and split
 * in place: fields are pointers into that buffer, so a row costs no
 * allocation. A field may be quoted as spreadsheets write them, a quote
 * in it doubled and commas in it text, but within its line; a UTF-8 byte
 * order mark before the header is skipped. Lines starting with '#' and
 * blank lines are skipped; the first other line is the header.
 *
 * Ownership: csv_open() allocates a csv_file the caller frees with
 * csv_close(); field pointers stay valid until then.
 */
#ifndef AEGIS_CSV_H
#define AEGIS_CSV_H

#include <stddef.h>
#include <stdint.h>

/* The most columns a file may have. The widest aegis input (the shared
 * workloads.csv) has 33. */
#define CSV_MAX_FIELDS 128

typedef struct csv_file {
    const char *path;           /* as given to csv_open(), for messages */
    char *buf;                  /* the file's bytes plus a final NUL */
    size_t mapped;              /* length of buf's mapping; 0: malloc'd */
    char *pos;                  /* start of the next unread line */
    char *end;                  /* buf + size */
    int line;                   /* line number of the row last returned */
    int ncols;                  /* header columns */
    char *cols[CSV_MAX_FIELDS]; /* header names */
    char *row[CSV_MAX_FIELDS];  /* fields of the row last returned */
} csv_file;

/* Reads and checks the file (readable, not empty, no NUL byte, has a
 * header). Returns NULL with "PATH: why" in err. */
csv_file *csv_open(const char *path, char *err, size_t errlen);
void csv_close(csv_file *f);

/* Hands the second half of f's unread rows to *tail, so that two threads
 * can read one file: f stops at the line start nearest past the middle of
 * what it has left, and tail reads from there on. tail's line numbers
 * count from there (its first line is 1): add f->line once f is read to
 * its end, for the file's. tail is a view into f's buffer, valid while f
 * is; it is never passed to csv_close(). */
void csv_split(csv_file *f, csv_file *tail);

/* The mean length in bytes of f's next lines, up to 64 of them (1 when
 * none are left): over the bytes left, an estimate of the rows left, to
 * size arrays by. */
double csv_line_bytes(const csv_file *f);

/* Index of the named header column, or -1. */
int csv_col(const csv_file *f, const char *name);

/* Splits the next data row into f->row. Returns 1 for a row, 0 at the end
 * of the file, -1 (with "PATH:LINE: why" in err) when its field count
 * differs from the header's. */
int csv_next(csv_file *f, char *err, size_t errlen);

/* Reading rows where they lie, for a reader that needs a few fields of a
 * million rows (trace.c), where splitting every field of every row was
 * much of the cost. Such a reader parses the bytes from f->pos, which
 * nothing has written to yet, calls csv_skip_row() past each row it takes
 * and hands any other (a comment, a blank line, a fault) to csv_next(),
 * which takes it as it always does. The bytes a csv_file reads end with a
 * '\n' or with the NUL after the file, so a loop over the bytes of a field
 * (digits, say) stops before f->end without testing for it. */

/* The end of the plain text at p: the first byte before end that is a
 * control character, a space or one of !"#$%&'()*+, -- so a ',' or a line
 * end -- or end itself. A fast reader takes a field that stops at anything
 * but a ',' or a line end as not plain. */
const char *csv_plain_end(const char *p, const char *end);

/* Reads the decimal digits at p into *value (modulo 2^64: a caller that
 * takes more than 19 digits has its own bound); returns the byte after
 * them. */
const char *csv_digits(const char *p, uint64_t *value);

/* Parses "[-]digits[.digits]" with at most 15 digits at text into *out,
 * exactly as csv_double() does; returns the byte it stopped at, which the
 * caller checks ends the field, or NULL for text not of that form (more
 * digits, no digit). */
const char *csv_plain_number(const char *text, double *out);

/* Moves f past a row read in place: next is the start of the line after
 * it. */
void csv_skip_row(csv_file *f, const char *next);

/* Writes text into out quoted for a message: 'text', or past 40 bytes
 * its first 40 (fewer where the 40th ends inside a UTF-8 character) and
 * how many bytes it has, so a cut number is not taken for a shorter
 * one. */
void csv_quote(const char *text, char *out, size_t outlen);

/* Parses the field of column col of the current row as a finite number.
 * An empty field gives 1 and leaves *out alone (unknown); a number gives 0;
 * anything else gives -1 with "PATH:LINE: field 'NAME': ..." in err. */
int csv_double(const csv_file *f, int col, double *out, char *err,
               size_t errlen);

/* Reads optional column col (-1: absent) of the current row into *out,
 * left alone when the column is absent or the field empty, and checks it
 * lies in [lo, hi]. Returns 0, or -1 with "PATH:LINE: field 'NAME': ..."
 * in err. */
int csv_bounded(const csv_file *f, int col, double lo, double hi,
                double *out, char *err, size_t errlen);

/* The same for a whole number in [lo, hi]. */
int csv_count(const csv_file *f, int col, int lo, int hi, int *out,
              char *err, size_t errlen);

#endif
