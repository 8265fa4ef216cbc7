/* pdef_yaml.c -- reads a pipeline definition from YAML (libyaml's document
 * API, which keeps each node's line and column for the error messages):
 *
 *   pipeline: 1            # its slot, 1..6
 *   modules:
 *     - name: debayer
 *     - name: downsample
 *       params: {factor: 4}
 *
 * A scalar parameter is an integer if it reads as one, else a number if it
 * reads as one, else a string. */
#include "pdef.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "runner.h"

typedef struct ctx {
    yaml_document_t *doc;
    const char *path;
    char *err;
    size_t errlen;
} ctx;

static int fail(const ctx *c, const yaml_node_t *n, const char *field,
                const char *fmt, ...) {
    char why[160];
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
    char *end;
    errno = 0;
    int quoted = n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                 n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    if (quoted)
        goto text;
    v->i = strtoll(s, &end, 10);
    if (*s && !*end && !errno) {
        v->type = DIPP_PARAM_INT;
        return 0;
    }
    v->i = 0;
    v->f = strtod(s, &end);
    if (*s && !*end && !errno) {
        v->type = DIPP_PARAM_FLOAT;
        return 0;
    }
text:
    v->i = 0, v->f = 0;
    if (strlen(s) >= DIPP_PARAM_STR_MAX)
        return fail(c, n, field, "longer than %u characters", DIPP_PARAM_STR_MAX - 1);
    v->type = DIPP_PARAM_STR;
    snprintf(v->s, sizeof v->s, "%s", s);
    return 0;
}

static int parse_params(const ctx *c, const yaml_node_t *n, const char *field,
                        dipp_params *p) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a mapping of name: value");
    for (yaml_node_pair_t *kv = n->data.mapping.pairs.start;
         kv < n->data.mapping.pairs.top; kv++) {
        yaml_node_t *k = node(c, kv->key), *v = node(c, kv->value);
        const char *name = scalar(k);
        char sub[96];
        snprintf(sub, sizeof sub, "%s.%s", field, name ? name : "?");
        if (!name || !*name || strlen(name) >= DIPP_PARAM_NAME_MAX)
            return fail(c, k, sub, "a parameter name has 1 to %u characters",
                        DIPP_PARAM_NAME_MAX - 1);
        if (p->count == DIPP_PARAMS_MAX)
            return fail(c, k, sub, "more than %u parameters", DIPP_PARAMS_MAX);
        dipp_param *dst = &p->item[p->count++];
        snprintf(dst->name, sizeof dst->name, "%s", name);
        if (parse_value(c, v, sub, dst))
            return -1;
    }
    return 0;
}

static int parse_step(const ctx *c, const yaml_node_t *n, const char *field,
                      pdef_step *s) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, field, "expected a mapping with name and params");
    const char *name = NULL;
    for (yaml_node_pair_t *kv = n->data.mapping.pairs.start;
         kv < n->data.mapping.pairs.top; kv++) {
        yaml_node_t *k = node(c, kv->key), *v = node(c, kv->value);
        const char *key = scalar(k);
        char sub[96];
        snprintf(sub, sizeof sub, "%s.%s", field, key ? key : "?");
        if (key && strcmp(key, "name") == 0) {
            if (!(name = scalar(v)) || !runner_name_ok(name))
                return fail(c, v, sub, "a module name is [a-z0-9_], 1 to 23 characters");
            snprintf(s->name, sizeof s->name, "%s", name);
        } else if (key && strcmp(key, "params") == 0) {
            if (parse_params(c, v, sub, &s->params))
                return -1;
        } else {
            return fail(c, k, sub, "unknown field (name, params)");
        }
    }
    return name ? 0 : fail(c, n, field, "no module name");
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

static int parse_id(const ctx *c, const yaml_node_t *n, pdef *d) {
    const char *s = scalar(n);
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < 1 || v > PDEF_PIPELINES)
        return fail(c, n, "pipeline", "a pipeline number from 1 to %d", PDEF_PIPELINES);
    d->id = (uint32_t)v;
    return 0;
}

static int parse_root(const ctx *c, const yaml_node_t *root, pdef *d) {
    if (!root || root->type != YAML_MAPPING_NODE) {
        snprintf(c->err, c->errlen, "%s: not a YAML mapping (pipeline, modules)", c->path);
        return -1;
    }
    int have_modules = 0;
    for (yaml_node_pair_t *kv = root->data.mapping.pairs.start;
         kv < root->data.mapping.pairs.top; kv++) {
        yaml_node_t *k = node(c, kv->key), *v = node(c, kv->value);
        const char *key = scalar(k);
        int rc = key && !strcmp(key, "pipeline") ? parse_id(c, v, d)
                 : key && !strcmp(key, "modules") ? (have_modules = 1, parse_modules(c, v, d))
                 : fail(c, k, key ? key : "?", "unknown field (pipeline, modules)");
        if (rc)
            return -1;
    }
    if (!have_modules)
        return fail(c, root, "modules", "missing");
    return 0;
}

int pdef_from_yaml(const char *path, const char *text, size_t len, pdef *d,
                   char *err, size_t errlen) {
    yaml_parser_t parser;
    yaml_document_t doc;
    memset(d, 0, sizeof *d);
    d->id = 1;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%lu:%lu: YAML: %s", path,
                 (unsigned long)parser.problem_mark.line + 1,
                 (unsigned long)parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "unreadable");
        yaml_parser_delete(&parser);
        return -1;
    }
    ctx c = {&doc, path, err, errlen};
    int rc = parse_root(&c, yaml_document_get_root_node(&doc), d);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

static void print_value(const dipp_param *v, FILE *f) {
    if (v->type == DIPP_PARAM_INT)
        fprintf(f, "%lld", (long long)v->i);
    else if (v->type == DIPP_PARAM_FLOAT)
        fprintf(f, v->f == (double)(long long)v->f &&
                       v->f < 1e15 && v->f > -1e15 ? "%.1f" : "%.17g", v->f);
    else
        fprintf(f, "\"%s\"", v->s);
}

void pdef_print_yaml(const pdef *d, FILE *f) {
    fprintf(f, "pipeline: %u\nmodules:\n", (unsigned)d->id);
    for (uint32_t k = 0; k < d->count; k++) {
        const pdef_step *s = &d->step[k];
        fprintf(f, "  - name: %s\n", s->name);
        if (!s->params.count)
            continue;
        fprintf(f, "    params:\n");
        for (uint32_t j = 0; j < s->params.count; j++) {
            fprintf(f, "      %s: ", s->params.item[j].name);
            print_value(&s->params.item[j], f);
            fputc('\n', f);
        }
    }
}
