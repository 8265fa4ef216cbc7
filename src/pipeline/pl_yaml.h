/* pl_yaml.h -- a pipeline file (YAML) as JSON, with the line of each key,
 * so that every error about the file names its file, line and key.
 *
 * Keys are named by their path: sections and keys joined by '.', list
 * items by [i] ("trigger.subtriggers[0].id"), as the trigger and
 * selection constructors name them in their messages (trigger.h,
 * select.h).
 */
#ifndef AEGIS_PL_YAML_H
#define AEGIS_PL_YAML_H

#include <stddef.h>

#include <jansson.h>

/* The largest pipeline file, and how deep and big its tree may be: an
 * alias repeats a node, and a small file must not build a huge tree.
 * Nodes alone do not bound it, as an alias of one long scalar is one node
 * (a file of 308 KB loaded to 575 MB), so the bytes of scalar text taken,
 * values and keys, are counted too, an alias's each time it is used: a
 * file without aliases takes at most its own size; the rest is room for
 * anchors of shared settings. */
#define PL_YAML_MAX_BYTES (1u << 20)
#define PL_YAML_MAX_DEPTH 32
#define PL_YAML_MAX_NODES 100000
#define PL_YAML_MAX_TEXT (4u << 20)

typedef struct pl_yaml {
    char path[4096];
    json_t *root;       /* the document, a mapping */
    json_t *lines;      /* key path -> its line (1-based) */
} pl_yaml;

/* Loads the file at path. 0, or -1 with "FILE:LINE: what is wrong" in
 * err (out is then empty). A null value (null, ~, nothing) is JSON null;
 * a plain scalar that reads as an integer, a finite number or
 * true/false is one, anything else (and every quoted scalar) a string. */
int pl_yaml_load(const char *path, pl_yaml *out, char *err, size_t errlen);
void pl_yaml_free(pl_yaml *y);

/* The line of key path, or of the nearest key it is under; 0: none. */
int pl_yaml_line(const pl_yaml *y, const char *key);

/* "FILE:LINE: KEY: message" into err, LINE being key's. */
void pl_yaml_error(const pl_yaml *y, const char *key, char *err,
                   size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A constructor's "KEY.PATH: what is wrong" message as
 * "FILE:LINE: KEY.PATH: what is wrong" into err (the line of the longest
 * part of KEY.PATH the file has; its first line when none). */
void pl_yaml_locate(const pl_yaml *y, const char *msg, char *err,
                    size_t errlen);

#endif
