/* dsconf.c -- a dataset's dataset.json (dsconf.h). */
#include "dsconf.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "text_safe.h"

static const char *const format_names[] = {
    [PL_FORMAT_FILE] = "file",
    [PL_FORMAT_BINARY] = "binary",
    [PL_FORMAT_CSV] = "csv",
};

const char *pl_format_name(pl_format f) { return format_names[f]; }

const char *pl_format_default_pattern(pl_format f) {
    return f == PL_FORMAT_BINARY ? "*.bin" : f == PL_FORMAT_CSV ? "*.csv" : "*";
}

int pl_format_parse(const char *name, pl_format *out) {
    for (size_t i = 0; i < sizeof(format_names) / sizeof(*format_names); i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (pl_format)i;
            return 0;
        }
    return -1;
}

/* Whether a CSV column setting (key) can name a column: an index from 0
 * below PL_COLUMN_INDEX_MAX, or a name where there is a header; why not
 * into err. */
static int column_check(const pl_dsconf *c, const char *key, const char *col,
                        char *err, size_t errlen) {
    char *end;
    errno = 0;
    long long index = strtoll(col, &end, 10);
    bool number = end != col && *end == '\0';
    if (number && (errno || index < 0 || index >= PL_COLUMN_INDEX_MAX)) {
        snprintf(err, errlen, "%s: %s is not a column index (0 to %d)", key,
                 col, PL_COLUMN_INDEX_MAX - 1);
        return -1;
    }
    if (!number && !c->header) {
        snprintf(err, errlen, "%s: '%s' is a column name, and the files "
                 "have no header to name columns (--header)", key, col);
        return -1;
    }
    return 0;
}

/* The label and timestamp columns of a CSV dataset: each can name a
 * column, and not the same one. */
static int csv_columns_check(const pl_dsconf *c, char *err, size_t errlen) {
    if (column_check(c, "label_column", c->label_column, err, errlen) < 0)
        return -1;
    if (!c->ts_column[0])
        return 0;
    if (column_check(c, "ts_column", c->ts_column, err, errlen) < 0)
        return -1;
    if (strcmp(c->ts_column, c->label_column) == 0) {
        snprintf(err, errlen, "ts_column: '%s' is the label's column too",
                 c->ts_column);
        return -1;
    }
    return 0;
}

/* Whether the text of field key is UTF-8, as dataset.json (JSON text)
 * can hold it: a folder or pattern of other bytes made the write fail
 * after the dataset's folder was made. Says why not in err, the text
 * shown safe (text_safe.h). */
static int utf8_check(const char *key, const char *text, char *err,
                      size_t errlen) {
    if (text_is_utf8(text)) return 0;
    char shown[4200];
    text_safe(shown, sizeof(shown), text);
    snprintf(err, errlen, "%s: '%s' is not UTF-8 text (dataset.json, JSON, "
             "holds only that; rename it)", key, shown);
    return -1;
}

/* The text fields dataset.json holds, each UTF-8 (utf8_check()). */
static int text_check(const pl_dsconf *c, char *err, size_t errlen) {
    const struct {
        const char *key, *text;
    } fields[] = {{"dir", c->dir}, {"pattern", c->pattern},
                  {"label_column", c->label_column},
                  {"ts_column", c->ts_column}};
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        if (utf8_check(fields[i].key, fields[i].text, err, errlen) < 0)
            return -1;
    return 0;
}

int pl_dsconf_check(const pl_dsconf *c, char *err, size_t errlen) {
    if (text_check(c, err, errlen) < 0)
        return -1;
    if (c->dir[0] != '/') {
        snprintf(err, errlen, "dir: '%s' is not an absolute path", c->dir);
        return -1;
    }
    if (c->format == PL_FORMAT_CSV)
        return csv_columns_check(c, err, errlen);
    if (c->format != PL_FORMAT_BINARY)
        return 0;
    if (c->label_size != 1 && c->label_size != 2 && c->label_size != 4 &&
        c->label_size != 8) {
        snprintf(err, errlen, "label_size: %u is not 1, 2, 4 or 8",
                 c->label_size);
        return -1;
    }
    if (c->record_size <= c->label_size ||
        (c->record_size - c->label_size) % 4 != 0) {
        snprintf(err, errlen,
                 "record_size: %u is not label_size (%u) plus a whole number "
                 "of float32 features", c->record_size, c->label_size);
        return -1;
    }
    return 0;
}

int pl_dataset_dir(const char *state, const char *name, char *buf,
                   size_t size) {
    size_t len = strlen(name);
    if (len == 0 || len >= PL_NAME_MAX || name[0] == '.' ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") != len)
        return -1;
    int n = snprintf(buf, size, "%s/datasets/%s", state, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int copy_string(json_t *doc, const char *key, char *dst, size_t size,
                       const char *path, char *err, size_t errlen) {
    json_t *v = json_object_get(doc, key);
    if (!v) {
        dst[0] = '\0';
        return 0;
    }
    if (!json_is_string(v) || json_string_length(v) >= size) {
        snprintf(err, errlen, "%s: %s: not a string of at most %zu bytes",
                 path, key, size - 1);
        return -1;
    }
    memcpy(dst, json_string_value(v), json_string_length(v) + 1);
    return 0;
}

/* The whole number doc[key] in [0, max] into *out, 0 when absent; -1
 * naming the key when it is anything else (a string "10" or a number past
 * max was read as another: 0 classes is any label). */
static int get_count(json_t *doc, const char *key, int64_t max, int64_t *out,
                     const char *path, char *err, size_t errlen) {
    json_t *v = json_object_get(doc, key);
    *out = v ? (int64_t)json_integer_value(v) : 0;
    if (!v || (json_is_integer(v) && *out >= 0 && *out <= max))
        return 0;
    snprintf(err, errlen, "%s: %s: not a whole number from 0 to %lld", path,
             key, (long long)max);
    return -1;
}

static int read_fields(json_t *doc, pl_dsconf *c, const char *path, char *err,
                       size_t errlen) {
    char format[16], sep[2];
    if (copy_string(doc, "name", c->name, sizeof(c->name), path, err, errlen) ||
        copy_string(doc, "dir", c->dir, sizeof(c->dir), path, err, errlen) ||
        copy_string(doc, "format", format, sizeof(format), path, err, errlen) ||
        copy_string(doc, "sep", sep, sizeof(sep), path, err, errlen) ||
        copy_string(doc, "label_column", c->label_column,
                    sizeof(c->label_column), path, err, errlen) ||
        copy_string(doc, "ts_column", c->ts_column, sizeof(c->ts_column), path,
                    err, errlen) ||
        copy_string(doc, "pattern", c->pattern, sizeof(c->pattern), path, err,
                    errlen))
        return -1;
    if (pl_format_parse(format, &c->format) < 0) {
        snprintf(err, errlen, "%s: format: unknown format '%s'", path, format);
        return -1;
    }
    c->sep = sep[0] ? sep[0] : ',';
    if (!c->pattern[0])
        snprintf(c->pattern, sizeof(c->pattern), "%s",
                 pl_format_default_pattern(c->format));
    int64_t record_size, label_size, max_bytes;
    json_t *header = json_object_get(doc, "header");
    if (get_count(doc, "record_size", UINT32_MAX, &record_size, path, err,
                  errlen) ||
        get_count(doc, "label_size", UINT32_MAX, &label_size, path, err,
                  errlen) ||
        get_count(doc, "classes", INT64_MAX, &c->classes, path, err,
                  errlen) ||
        get_count(doc, "max_bytes", INT64_MAX, &max_bytes, path, err, errlen))
        return -1;
    if (header && !json_is_boolean(header)) {
        snprintf(err, errlen, "%s: header: not true or false", path);
        return -1;
    }
    c->record_size = (uint32_t)record_size;
    c->label_size = (uint32_t)label_size;
    c->max_bytes = (uint64_t)max_bytes;
    c->header = json_is_true(header);
    return 0;
}

int pl_dsconf_load(const char *dsdir, pl_dsconf *c, char *err, size_t errlen) {
    char path[4200];
    json_error_t jerr;
    snprintf(path, sizeof(path), "%s/dataset.json", dsdir);
    if (access(path, F_OK) < 0) {
        snprintf(err, errlen, "no dataset at %s (%s: %s)", dsdir, path,
                 strerror(errno));
        return -1;
    }
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) {
        snprintf(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
        return -1;
    }
    memset(c, 0, sizeof(*c));
    int rc = read_fields(doc, c, path, err, errlen);
    json_decref(doc);
    if (rc == 0 && pl_dsconf_check(c, err, errlen) < 0) {
        char why[512];
        snprintf(why, sizeof(why), "%s", err);
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return rc;
}

static json_t *to_json(const pl_dsconf *c) {
    char sep[2] = {c->sep, '\0'};
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:s, s:b, s:s, s:s, "
                     "s:s}",
                     "name", c->name, "dir", c->dir, "format",
                     pl_format_name(c->format), "record_size",
                     (int)c->record_size, "label_size", (int)c->label_size,
                     "classes", (json_int_t)c->classes, "max_bytes",
                     (json_int_t)c->max_bytes, "sep", sep, "header", c->header,
                     "label_column", c->label_column, "ts_column",
                     c->ts_column, "pattern", c->pattern);
}

int pl_dsconf_save(const char *dsdir, const pl_dsconf *c, char *err,
                   size_t errlen) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/dataset.json", dsdir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    json_t *doc = to_json(c);
    errno = 0;
    int rc = doc ? json_dump_file(doc, tmp, JSON_INDENT(2)) : -1;
    json_decref(doc);
    if (rc < 0 || rename(tmp, path) < 0) {
        snprintf(err, errlen, "writing %s: %s", path,
                 errno ? strerror(errno) : "not JSON text");
        unlink(tmp); /* a failed write leaves no part of itself */
        return -1;
    }
    return 0;
}
