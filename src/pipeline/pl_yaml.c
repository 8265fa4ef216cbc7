/* pl_yaml.c -- a pipeline file as JSON with its keys' lines (pl_yaml.h),
 * built from libyaml's document tree.
 */
#include "pl_yaml.h"

#include "yaml_nesting.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

typedef struct pl_build {
    yaml_document_t *doc;
    json_t *lines;
    const char *path;
    size_t nodes;
    size_t text;        /* bytes of scalars taken, of PL_YAML_MAX_TEXT */
    char *err;
    size_t errlen;
} pl_build;

static json_t *pl_node(pl_build *b, yaml_node_t *node, const char *key,
                       int depth);

static bool pl_is_null(const char *v) {
    return !*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* A plain scalar's JSON value: null, a boolean, an integer, a finite
 * number, else the text ("1d" stays a string). */
static json_t *pl_plain(const char *v) {
    if (pl_is_null(v)) return json_null();
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return json_true();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return json_false();
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (*end == '\0' && errno == 0) return json_integer(i);
    double d = strtod(v, &end);
    if (*end == '\0' && isfinite(d) && !strpbrk(v, "xXpP"))
        return json_real(d);
    return json_string(v);
}

/* Whether scalar node, the value at key or (is_key) a key of the
 * mapping at key, holds no NUL byte (b->err says where it does). A
 * double-quoted "\0" makes one; the text is read as a C string, so the
 * rest would be dropped without a word: a command "python3 \0 train.py"
 * would run `python3 `. */
static bool pl_no_nul(pl_build *b, yaml_node_t *node, const char *key,
                      bool is_key) {
    if (!memchr(node->data.scalar.value, '\0', node->data.scalar.length))
        return true;
    snprintf(b->err, b->errlen, "%s:%zu: %s: %s a NUL byte (\\0), which no "
             "command, name or value may hold", b->path,
             node->start_mark.line + 1, key[0] ? key : "(top)",
             is_key ? "a key holds" : "holds");
    return false;
}

static json_t *pl_scalar(pl_build *b, yaml_node_t *node) {
    const char *v = (const char *)node->data.scalar.value;
    json_t *out = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE
                      ? pl_plain(v)
                      : json_string(v);
    if (!out)
        snprintf(b->err, b->errlen, "%s:%zu: not UTF-8 text", b->path,
                 node->start_mark.line + 1);
    return out;
}

/* Charges the text of scalar node, a value or a key of the mapping at
 * key, to the file's budget as it is taken, an alias's each time it is
 * used: false, with why in b->err, once the budget is spent. */
static bool pl_charge(pl_build *b, yaml_node_t *node, const char *key) {
    b->text += node->data.scalar.length;
    if (b->text <= PL_YAML_MAX_TEXT) return true;
    snprintf(b->err, b->errlen, "%s:%zu: %s: more than %u bytes of text "
             "(an alias's text counts each time it is used)", b->path,
             node->start_mark.line + 1, key[0] ? key : "(top)",
             PL_YAML_MAX_TEXT);
    return false;
}

static json_t *pl_sequence(pl_build *b, yaml_node_t *node, const char *key,
                           int depth) {
    json_t *arr = json_array();
    size_t i = 0;
    for (yaml_node_item_t *it = node->data.sequence.items.start;
         arr && it < node->data.sequence.items.top; it++, i++) {
        char sub[1024];
        snprintf(sub, sizeof(sub), "%s[%zu]", key, i);
        yaml_node_t *item = yaml_document_get_node(b->doc, *it);
        json_object_set_new(b->lines, sub,
                            json_integer((json_int_t)item->start_mark.line + 1));
        json_t *v = pl_node(b, item, sub, depth + 1);
        if (!v || json_array_append_new(arr, v) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* One key of a mapping: a scalar, not given before. */
static const char *pl_key(pl_build *b, yaml_node_t *k, json_t *obj,
                          const char *key) {
    if (k->type != YAML_SCALAR_NODE) {
        snprintf(b->err, b->errlen, "%s:%zu: %s: a key must be a plain "
                 "word", b->path, k->start_mark.line + 1, key[0] ? key : "(top)");
        return NULL;
    }
    if (!pl_charge(b, k, key) || !pl_no_nul(b, k, key, true)) return NULL;
    const char *name = (const char *)k->data.scalar.value;
    if (json_object_get(obj, name)) {
        snprintf(b->err, b->errlen, "%s:%zu: %s%s%s: given twice", b->path,
                 k->start_mark.line + 1, key, key[0] ? "." : "", name);
        return NULL;
    }
    return name;
}

static json_t *pl_mapping(pl_build *b, yaml_node_t *node, const char *key,
                          int depth) {
    json_t *obj = json_object();
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
         obj && p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(b->doc, p->key);
        const char *name = pl_key(b, k, obj, key);
        char sub[1024];
        if (name) snprintf(sub, sizeof(sub), "%s%s%s", key, key[0] ? "." : "",
                           name);
        json_t *v = name ? pl_node(b, yaml_document_get_node(b->doc, p->value),
                                   sub, depth + 1)
                         : NULL;
        if (!v || json_object_set_new(obj, name, v) != 0) {
            json_decref(obj);
            return NULL;
        }
        json_object_set_new(b->lines, sub,
                            json_integer((json_int_t)k->start_mark.line + 1));
    }
    return obj;
}

static json_t *pl_node(pl_build *b, yaml_node_t *node, const char *key,
                       int depth) {
    if (depth > PL_YAML_MAX_DEPTH || ++b->nodes > PL_YAML_MAX_NODES) {
        snprintf(b->err, b->errlen, "%s:%zu: %s: nested deeper than %d or "
                 "more than %d values", b->path, node->start_mark.line + 1,
                 key[0] ? key : "(top)", PL_YAML_MAX_DEPTH, PL_YAML_MAX_NODES);
        return NULL;
    }
    switch (node->type) {
    case YAML_SCALAR_NODE:
        return pl_charge(b, node, key) && pl_no_nul(b, node, key, false)
                   ? pl_scalar(b, node) : NULL;
    case YAML_SEQUENCE_NODE: return pl_sequence(b, node, key, depth);
    case YAML_MAPPING_NODE: return pl_mapping(b, node, key, depth);
    default: break;
    }
    snprintf(b->err, b->errlen, "%s:%zu: %s: empty node", b->path,
             node->start_mark.line + 1, key);
    return NULL;
}

/* The file, whole, within PL_YAML_MAX_BYTES; NULL with why. */
static char *pl_read(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > (off_t)PL_YAML_MAX_BYTES) {
        if (f && S_ISREG(st.st_mode))
            snprintf(err, errlen, "%s: larger than %u bytes", path,
                     PL_YAML_MAX_BYTES);
        else
            snprintf(err, errlen, "%s: %s", path,
                     f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    *len = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    if (buf) buf[*len] = '\0';
    else snprintf(err, errlen, "%s: out of memory", path);
    fclose(f);
    return buf;
}

/* Whether the stream ends after the document the parser loaded: a
 * second one would be ignored, so it is refused (b->err), as is a syntax
 * error in it. */
static bool pl_stream_ends(pl_build *b, yaml_parser_t *parser) {
    yaml_document_t next;
    if (!yaml_parser_load(parser, &next)) {
        snprintf(b->err, b->errlen, "%s:%zu: %s", b->path,
                 parser->problem_mark.line + 1,
                 parser->problem ? parser->problem : "not YAML");
        return false;
    }
    yaml_node_t *top = yaml_document_get_root_node(&next);
    if (top)
        snprintf(b->err, b->errlen, "%s:%zu: a second YAML document: a "
                 "pipeline file holds one", b->path, top->start_mark.line + 1);
    yaml_document_delete(&next);
    return top == NULL;
}

/* The document of text as JSON (b->err on failure). */
static json_t *pl_parse(pl_build *b, const char *text, size_t len) {
    /* before the load, which would take minutes on a deep enough file;
     * the top mapping is pl_node()'s depth 0, so collections may nest one
     * deeper than PL_YAML_MAX_DEPTH */
    if (yaml_nesting_check(b->path, (const unsigned char *)text, len,
                           PL_YAML_MAX_DEPTH + 1, b->err, b->errlen) != 0)
        return NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(b->err, b->errlen, "%s:%zu: %s", b->path,
                 parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "not YAML");
        yaml_parser_delete(&parser);
        return NULL;
    }
    b->doc = &doc;
    yaml_node_t *top = yaml_document_get_root_node(&doc);
    json_t *root = top ? pl_node(b, top, "", 0) : NULL;
    if (!top) snprintf(b->err, b->errlen, "%s:1: the file is empty", b->path);
    if (root && !json_is_object(root)) {
        snprintf(b->err, b->errlen, "%s:1: expected a mapping of sections "
                 "(pipeline, data, trigger, ...)", b->path);
        json_decref(root);
        root = NULL;
    }
    yaml_document_delete(&doc);
    if (root && !pl_stream_ends(b, &parser)) {
        json_decref(root);
        root = NULL;
    }
    yaml_parser_delete(&parser);
    return root;
}

int pl_yaml_load(const char *path, pl_yaml *out, char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    size_t len;
    char *text = pl_read(path, &len, err, errlen);
    if (!text) return -1;
    pl_build b = {.lines = json_object(), .path = path, .err = err,
                  .errlen = errlen};
    json_t *root = pl_parse(&b, text, len);
    free(text);
    if (!root) {
        json_decref(b.lines);
        return -1;
    }
    snprintf(out->path, sizeof(out->path), "%s", path);
    out->root = root;
    out->lines = b.lines;
    return 0;
}

void pl_yaml_free(pl_yaml *y) {
    json_decref(y->root);
    json_decref(y->lines);
    y->root = y->lines = NULL;
}

int pl_yaml_line(const pl_yaml *y, const char *key) {
    char path[1024];
    snprintf(path, sizeof(path), "%s", key);
    for (;;) {
        json_t *line = json_object_get(y->lines, path);
        if (line) return (int)json_integer_value(line);
        char *cut = strrchr(path, '.'), *item = strrchr(path, '[');
        if (item && (!cut || item > cut)) cut = item;
        if (!cut) return 0;
        *cut = '\0';
    }
}

void pl_yaml_error(const pl_yaml *y, const char *key, char *err,
                   size_t errlen, const char *fmt, ...) {
    int line = pl_yaml_line(y, key);
    int n = snprintf(err, errlen, "%s:%d: %s: ", y->path, line ? line : 1, key);
    if (n < 0 || (size_t)n >= errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

void pl_yaml_locate(const pl_yaml *y, const char *msg, char *err,
                    size_t errlen) {
    const char *colon = strstr(msg, ": ");
    char key[1024] = "";
    if (colon && (size_t)(colon - msg) < sizeof(key) &&
        !memchr(msg, ' ', (size_t)(colon - msg)))
        snprintf(key, sizeof(key), "%.*s", (int)(colon - msg), msg);
    int line = key[0] ? pl_yaml_line(y, key) : 0;
    snprintf(err, errlen, "%s:%d: %s", y->path, line ? line : 1, msg);
}
