/* pdef_yaml.c -- reads a pipeline definition from YAML (libyaml's document
 * API, which keeps each node's line and column for the error messages):
 *
 *   pipeline: 1            # its slot, 1..6
 *   modules:
 *     - name: debayer
 *     - name: downsample
 *       params: {factor: 4}
 *     - name: encode_jpeg
 *       config: 3          # parameters from module-configuration slot 3
 *
 * An unquoted scalar parameter is read as YAML 1.2's core schema reads it
 * (pdef_scalar.c); a quoted one is a string. */
#include "pdef.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "pdef_scalar.h"
#include "utf8.h"
#include "runner.h"

typedef struct ctx {
    yaml_document_t *doc;
    const char *path;
    char *err;
    size_t errlen;
    unsigned want; /* 0, or the pipeline the definition is read for */
} ctx;

static int fail(const ctx *c, const yaml_node_t *n, const char *field,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(const ctx *c, const yaml_node_t *n, const char *field,
                const char *fmt, ...) {
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%lu:%lu: %s: %s", c->path,
             (unsigned long)n->start_mark.line + 1,
             (unsigned long)n->start_mark.column + 1, field, why);
    return -1;
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

static yaml_node_t *node(const ctx *c, int id) {
    return yaml_document_get_node(c->doc, id);
}

static int parse_value(const ctx *c, const yaml_node_t *n, const char *field,
                       dipp_param *v) {
    const char *s = scalar(n);
    if (!s)
        return fail(c, n, field, "a parameter is a number or a string");
    int quoted = n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                 n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    char why[200];
    v->i = 0, v->f = 0;
    v->type = DIPP_PARAM_STR;
    if (!quoted && pdef_scalar(s, v, why, sizeof why))
        return fail(c, n, field, "%s", why);
    if (v->type != DIPP_PARAM_STR)
        return 0;
    if (!*s)
        return fail(c, n, field, "an empty value (a number or a string)");
    if (strlen(s) >= DIPP_PARAM_STR_MAX)
        return fail(c, n, field, "longer than %u characters", DIPP_PARAM_STR_MAX - 1);
    snprintf(v->s, sizeof v->s, "%s", s);
    return 0;
}

/* A slot number from 1 to max. */
static int parse_number(const ctx *c, const yaml_node_t *n, const char *field,
                        unsigned max, uint32_t *out) {
    const char *s = scalar(n);
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < 1 || v > (long)max)
        return fail(c, n, field, "a slot number from 1 to %u", max);
    *out = (uint32_t)v;
    return 0;
}

/* Calls fn for each key: value of mapping n (else fails with what it
 * should be), sub being "field.key" for the messages. */
typedef int (*pair_fn)(const ctx *c, const char *key, const yaml_node_t *k,
                       const yaml_node_t *v, const char *sub, void *arg);

/* Whether key appears as a key of the pairs before kv. */
static int given_before(const ctx *c, const yaml_node_t *n,
                        const yaml_node_pair_t *kv, const char *key) {
    for (const yaml_node_pair_t *p = n->data.mapping.pairs.start; p < kv; p++) {
        const char *earlier = scalar(node(c, p->key));
        if (earlier && strcmp(earlier, key) == 0)
            return 1;
    }
    return 0;
}

static int each_pair(const ctx *c, const yaml_node_t *n, const char *field,
                     const char *what, pair_fn fn, void *arg) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, field, "expected %s", what);
    for (yaml_node_pair_t *kv = n->data.mapping.pairs.start;
         kv < n->data.mapping.pairs.top; kv++) {
        const yaml_node_t *k = node(c, kv->key), *v = node(c, kv->value);
        const char *key = scalar(k);
        char sub[96];
        snprintf(sub, sizeof sub, "%s%s%s", field, *field ? "." : "", key ? key : "?");
        if (key && given_before(c, n, kv, key))
            return fail(c, k, sub, "given twice");
        if (fn(c, key, k, v, sub, arg))
            return -1;
    }
    return 0;
}

/* The first scalar holding a NUL byte, which C strings would cut short
 * without a word; NULL when none does. */
static const yaml_node_t *scalar_with_nul(const yaml_document_t *doc) {
    for (const yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++)
        if (n->type == YAML_SCALAR_NODE &&
            memchr(n->data.scalar.value, '\0', n->data.scalar.length))
            return n;
    return NULL;
}

static int param_pair(const ctx *c, const char *name, const yaml_node_t *k,
                      const yaml_node_t *v, const char *sub, void *arg) {
    dipp_params *p = arg;
    if (!name || !*name || strlen(name) >= DIPP_PARAM_NAME_MAX)
        return fail(c, k, sub, "a parameter name has 1 to %u characters",
                    DIPP_PARAM_NAME_MAX - 1);
    if (p->count == DIPP_PARAMS_MAX)
        return fail(c, k, sub, "more than %u parameters", DIPP_PARAMS_MAX);
    dipp_param *dst = &p->item[p->count++];
    snprintf(dst->name, sizeof dst->name, "%s", name);
    return parse_value(c, v, sub, dst);
}

static int step_pair(const ctx *c, const char *key, const yaml_node_t *k,
                     const yaml_node_t *v, const char *sub, void *arg) {
    pdef_step *s = arg;
    const char *name;
    if (key && strcmp(key, "params") == 0)
        return each_pair(c, v, sub, "a mapping of name: value", param_pair, &s->params);
    if (key && strcmp(key, "config") == 0)
        return parse_number(c, v, sub, PDEF_CONFIGS, &s->config);
    if (!key || strcmp(key, "name") != 0)
        return fail(c, k, sub, "unknown field (name, params, config)");
    if (!(name = scalar(v)) || !runner_name_ok(name))
        return fail(c, v, sub, "a module name is [a-z0-9_], 1 to 23 characters");
    snprintf(s->name, sizeof s->name, "%s", name);
    return 0;
}

static int parse_step(const ctx *c, const yaml_node_t *n, const char *field,
                      pdef_step *s) {
    if (each_pair(c, n, field, "a mapping with name and params", step_pair, s))
        return -1;
    return s->name[0] ? 0 : fail(c, n, field, "no module name");
}

static int parse_modules(const ctx *c, const yaml_node_t *n, pdef *d) {
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n, "modules", "expected a list of modules");
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top; it++) {
        char field[32];
        snprintf(field, sizeof field, "modules[%u]", (unsigned)d->count);
        if (d->count == PDEF_MAX_STEPS)
            return fail(c, node(c, *it), field, "more than %d modules", PDEF_MAX_STEPS);
        if (parse_step(c, node(c, *it), field, &d->step[d->count++]))
            return -1;
    }
    return d->count ? 0 : fail(c, n, "modules", "a pipeline has at least one module");
}

/* Whether mapping n has key: given before its end. */
static int has_key(const ctx *c, const yaml_node_t *n, const char *key) {
    return n && n->type == YAML_MAPPING_NODE &&
           given_before(c, n, n->data.mapping.pairs.top, key);
}

/* The first item of sequence n, or NULL. */
static const yaml_node_t *first_item(const ctx *c, const yaml_node_t *n) {
    return n->data.sequence.items.start < n->data.sequence.items.top
               ? node(c, *n->data.sequence.items.start)
               : NULL;
}

/* A whole file that is a list. The flight DIPP's ground tool (csp_ippc)
 * reads two such files: a pipeline as a list of order, param_id and name
 * (the pipeline's number is its command's argument), and a module's
 * configuration as a list of key, type and value (the module is not
 * named). Both are told how to write them here, since a payload team
 * moving from the flight DIPP will try them first. */
static int refuse_list(const ctx *c, const yaml_node_t *root) {
    const yaml_node_t *item = first_item(c, root);
    if (has_key(c, item, "param_id") || has_key(c, item, "order"))
        return fail(c, root, "document",
                    "a list of order, param_id and name: the flight DIPP's pipeline "
                    "file (csp_ippc's 'ippc pipeline'); here write 'pipeline: N' and "
                    "'modules:', one '- name: NAME' a step in the order they run, a "
                    "param_id P as 'config: P' (docs/orbit.md, \"From the flight "
                    "DIPP's YAML\")");
    if (has_key(c, item, "key") || has_key(c, item, "type"))
        return fail(c, root, "document",
                    "a list of key, type and value: the flight DIPP's module "
                    "configuration (csp_ippc's 'ippc module'); here a configuration "
                    "slot holds one module, 'modules: [{name: MODULE, params: {KEY: "
                    "VALUE}}]', stored with --config N (docs/orbit.md, \"From the "
                    "flight DIPP's YAML\")");
    return fail(c, root, "document", "a list; a definition is a mapping (pipeline, modules)");
}

static int parse_id(const ctx *c, const yaml_node_t *n, pdef *d) {
    /* pipeline: as a list of stages, each with implementations to choose
     * by effort level, is the form of discosat's classification pipeline
     * repository; "a slot number" alone would not say what went wrong. */
    if (n->type == YAML_SEQUENCE_NODE && has_key(c, first_item(c, n), "implementations"))
        return fail(c, n, "pipeline",
                    "a list of stages with implementations (param_id, effort_level), "
                    "as in discosat's dipp-image-classification-pipeline; here "
                    "'pipeline:' is the slot number, 1 to %d, and 'modules:' lists one "
                    "module a step (docs/orbit.md, \"From the flight DIPP's YAML\")",
                    PDEF_PIPELINES);
    if (parse_number(c, n, "pipeline", PDEF_PIPELINES, &d->id))
        return -1;
    if (c->want && d->id != c->want)
        return fail(c, n, "pipeline",
                    "names pipeline %u, but the write is for pipeline %u (make them "
                    "the same, or leave pipeline: out of the file)",
                    (unsigned)d->id, c->want);
    return 0;
}

static int root_pair(const ctx *c, const char *key, const yaml_node_t *k,
                     const yaml_node_t *v, const char *sub, void *arg) {
    if (key && !strcmp(key, "pipeline"))
        return parse_id(c, v, arg);
    if (key && !strcmp(key, "modules"))
        return parse_modules(c, v, arg);
    return fail(c, k, sub, "unknown field (pipeline, modules)");
}

static int parse_root(const ctx *c, const yaml_node_t *root, pdef *d) {
    if (!root) {
        snprintf(c->err, c->errlen, "%s: empty (pipeline, modules)", c->path);
        return -1;
    }
    if (root->type == YAML_SEQUENCE_NODE)
        return refuse_list(c, root);
    if (root->type != YAML_MAPPING_NODE)
        return fail(c, root, "document", "expected a mapping (pipeline, modules)");
    if (each_pair(c, root, "", "a mapping (pipeline, modules)", root_pair, d))
        return -1;
    return d->count ? 0 : fail(c, root, "modules", "missing");
}

/* libyaml's reason for not reading the text, with where, into err. */
static void syntax_error(const char *path, const yaml_parser_t *parser,
                         char *err, size_t errlen) {
    snprintf(err, errlen, "%s:%lu:%lu: YAML: %s", path,
             (unsigned long)parser->problem_mark.line + 1,
             (unsigned long)parser->problem_mark.column + 1,
             parser->problem ? parser->problem : "unreadable");
}

/* Whether the YAML stream ends after its first document; a second one,
 * which would be ignored, is refused (c->err), as a syntax error in it. */
static int stream_ends(const ctx *c, yaml_parser_t *parser) {
    yaml_document_t next;
    if (!yaml_parser_load(parser, &next)) {
        syntax_error(c->path, parser, c->err, c->errlen);
        return 0;
    }
    const yaml_node_t *top = yaml_document_get_root_node(&next);
    if (top)
        fail(c, top, "document", "a second YAML document (a definition is one)");
    yaml_document_delete(&next);
    return top == NULL;
}

int pdef_from_yaml(const char *path, const char *text, size_t len, pdef *d,
                   char *err, size_t errlen) {
    return pdef_from_yaml_for(path, text, len, 0, d, err, errlen);
}

int pdef_from_yaml_for(const char *path, const char *text, size_t len,
                       unsigned want, pdef *d, char *err, size_t errlen) {
    yaml_parser_t parser;
    yaml_document_t doc;
    memset(d, 0, sizeof *d);
    d->id = want ? want : 1;
    if (len > PDEF_YAML_MAX) {
        snprintf(err, errlen, "%s: %zu bytes, more than a definition's %d",
                 path, len, PDEF_YAML_MAX);
        return -1;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        syntax_error(path, &parser, err, errlen);
        yaml_parser_delete(&parser);
        return -1;
    }
    ctx c = {&doc, path, err, errlen, want};
    const yaml_node_t *nul = scalar_with_nul(&doc);
    int rc = nul ? fail(&c, nul, "value", "holds a NUL byte")
                 : parse_root(&c, yaml_document_get_root_node(&doc), d);
    if (rc == 0 && !stream_ends(&c, &parser))
        rc = -1;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

/* Whether YAML takes code point cp as it is inside a double-quoted
 * scalar: a printable character (YAML 1.1's set, libyaml's) that is no
 * line break (a break would be folded into a space) nor a byte-order
 * mark. */
static bool verbatim(uint32_t cp) {
    return cp != '"' && cp != '\\' && cp >= 0x20 && cp != 0x7F &&
           (cp < 0x80 || cp >= 0xA0) && cp != 0x2028 && cp != 0x2029 &&
           cp != 0xFEFF && cp != 0xFFFE && cp != 0xFFFF;
}

/* s double-quoted, every character YAML would not read back as it is
 * escaped (a quote, a backslash, controls, breaks): any text a
 * definition holds then reads back as it was, and none reaches a
 * terminal raw. Both readers take only UTF-8; a stray byte, which
 * neither lets in, would print as \xNN. */
static void print_quoted(const char *s, FILE *f) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t len; n > 0; p += len, n -= len) {
        uint32_t cp = 0;
        len = utf8_char(p, n, &cp);
        if (len && verbatim(cp))
            fwrite(p, 1, len, f);
        else if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (int)cp);
        else if (len == 0)
            fprintf(f, "\\x%02x", (unsigned)*p), len = 1;
        else
            fprintf(f, cp < 0x100 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
    }
    fputc('"', f);
}

/* 17 significant digits read back as the same double; ".0" is added where
 * they have no point or exponent, or the reader would take an integer
 * (1e15 as 1000000000000000). A non-finite value, which no definition
 * holds (the reader and the decoder refuse it), prints as inf or nan. */
static void print_float(double v, FILE *f) {
    char text[32];
    snprintf(text, sizeof text, "%.17g", v);
    fprintf(f, "%s%s", text, text[strspn(text, "-0123456789")] ? "" : ".0");
}

static void print_value(const dipp_param *v, FILE *f) {
    if (v->type == DIPP_PARAM_INT)
        fprintf(f, "%lld", (long long)v->i);
    else if (v->type == DIPP_PARAM_FLOAT)
        print_float(v->f, f);
    else
        print_quoted(v->s, f);
}

void pdef_print_yaml(const pdef *d, FILE *f) {
    fprintf(f, "pipeline: %u\nmodules:\n", (unsigned)d->id);
    for (uint32_t k = 0; k < d->count; k++) {
        const pdef_step *s = &d->step[k];
        /* a module name needs no quotes: [a-z0-9_] (runner_name_ok) */
        fprintf(f, "  - name: %s\n", s->name);
        if (s->config)
            fprintf(f, "    config: %u\n", (unsigned)s->config);
        if (!s->params.count)
            continue;
        fprintf(f, "    params:\n");
        for (uint32_t j = 0; j < s->params.count; j++) {
            fputs("      ", f);
            print_quoted(s->params.item[j].name, f);
            fputs(": ", f);
            print_value(&s->params.item[j], f);
            fputc('\n', f);
        }
    }
}
