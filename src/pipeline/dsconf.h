/* dsconf.h -- what `aegis dataset add` was told about a dataset (its
 * dataset.json): the folder it watches, the format of its files and how a
 * sample's label and timestamp are found in them. The watcher, the reader
 * (dataset.c) and the command all read it through here.
 */
#ifndef AEGIS_PL_DSCONF_H
#define AEGIS_PL_DSCONF_H

#include <stddef.h>
#include <stdint.h>

/* How samples lie in a dataset's files (docs/pipelines.md, Datasets). */
typedef enum pl_format {
    PL_FORMAT_FILE,   /* one sample per file, its label in NAME.label */
    PL_FORMAT_BINARY, /* fixed-size records: label, then float32 features */
    PL_FORMAT_CSV,    /* one sample per line, a label column */
} pl_format;

#define PL_NAME_MAX 64
#define PL_COLUMN_MAX 64

typedef struct pl_dsconf {
    char name[PL_NAME_MAX];
    char dir[4096];              /* absolute */
    pl_format format;
    uint32_t record_size;        /* binary: bytes per record */
    uint32_t label_size;         /* binary: 1, 2, 4 or 8 (little-endian) */
    int64_t classes;             /* labels in [0, classes); 0: any */
    uint64_t max_bytes;          /* size limit of the samples; 0: none */
    char sep;                    /* csv: field separator */
    int header;                  /* csv: the first line names the columns */
    char label_column[PL_COLUMN_MAX]; /* csv: name, or index from 0 */
    char ts_column[PL_COLUMN_MAX];    /* csv: name or index; "": mtime */
    char pattern[PL_COLUMN_MAX]; /* names of the data files (fnmatch) */
} pl_dsconf;

/* A CSV column given by index is below this. */
#define PL_COLUMN_INDEX_MAX 100000

const char *pl_format_name(pl_format f);
/* The data files' names a format takes without --pattern: *.bin, *.csv,
 * and every name for one sample per file (NAME.label beside NAME). */
const char *pl_format_default_pattern(pl_format f);
/* 0 and *out, or -1 for an unknown name. */
int pl_format_parse(const char *name, pl_format *out);

/* Checks a configuration's fields together ("record_size: ..."). 0, or -1
 * with err. */
int pl_dsconf_check(const pl_dsconf *c, char *err, size_t errlen);

/* Reads and writes <dsdir>/dataset.json. 0, or -1 with err naming the
 * file and field. The write goes through a temporary file and a rename. */
int pl_dsconf_load(const char *dsdir, pl_dsconf *c, char *err, size_t errlen);
int pl_dsconf_save(const char *dsdir, const pl_dsconf *c, char *err,
                   size_t errlen);

/* <state>/datasets/<name> into buf; -1 when it does not fit or the name
 * is not a plain name ([A-Za-z0-9._-], not starting with a dot). */
int pl_dataset_dir(const char *state, const char *name, char *buf,
                   size_t size);

#endif
