/* spec.c -- YAML job specs for `aegis submit`, in two formats.
 *
 * aegis's own: one job as a mapping (command, name, feed, feed_producer,
 * gpus, mem, mem_mib, model, after, mps_threads_pct, time, nice, notify,
 * cpus, host_mem),
 * or several under `jobs:`. A job names another of the same file in
 * `after:` by its name; the names are resolved once the whole file is read, to the
 * index of that job in the request, which aegisd turns into its id. A
 * number in `after:` is an existing job, as on the command line.
 *
 * AEGIS's (its repository's evaluation specs): `version: 1` with the
 * sections job (command, conda_env), resources (num_gpus,
 * gpu_memory_requirement_mib), estimates and profile. The estimates and
 * the profile travel with the job as its meta object, as they are; other
 * sections are not aegis's business and are ignored with a warning, so a
 * spec written for AEGIS is taken as it is.
 *
 * In both, a null value (null, ~, nothing) is as if the key were absent.
 * Every fault names FILE:LINE and the key; nothing is rounded or dropped.
 */
#include "submit.h"

#include "cli.h"
#include "core.h"
#include "proto.h"
#include "spec_read.h"
#include "text_safe.h"
#include "timelimit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Nesting and node budget of the estimates and profile objects: aliases
 * may repeat a node many times, and a spec must not make aegis build a
 * huge request from a small file. */
#define SPEC_MAX_DEPTH 32
#define SPEC_MAX_META_NODES 10000

/* The nodes the reader may reach in the whole spec, counting those under
 * an alias each time it is used: 30 KB of aliases made a request of 36
 * million words (over 2 GiB); at this budget a refusal costs about 100 MB.
 * A spec aegisd would take hardly comes near it: its request holds at most
 * 4 MiB (PROTO_MAX_REQUEST), in which nearly every node takes a few bytes
 * (a word "a", four), and its most jobs, 100,000 (PROTO_MAX_JOBS), may
 * have ten nodes each. */
#define SPEC_MAX_NODES 1000000

/* The bytes of scalar text the reader may take in the whole spec, an
 * alias's each time it is used: nodes alone let 208 KB of aliases of one
 * long word make a request of 400 MB. A request holds nearly all the text
 * it is built of, and aegisd refuses one over PROTO_MAX_REQUEST, so a few
 * times that leaves room for text that stays out of the request (names in
 * after:, a conda environment) and still refuses before much is built;
 * no spec without aliases comes near it: this is SPEC_MAX_BYTES. */
#define SPEC_MAX_TEXT (4 * (size_t)PROTO_MAX_REQUEST)

typedef struct spec {
    const char *path;
    yaml_document_t doc;
    long nodes_left;            /* of SPEC_MAX_NODES */
    size_t text_left;           /* of SPEC_MAX_TEXT */
    request_words *typed;       /* how the jobs were written, or NULL */
} spec;

/* Says in s->typed that a job of the format whose keys are words starts
 * at node n, and gives the fields of given (taken). */
static void spec_typed(spec *s, const request_word *words, yaml_node_t *n,
                       json_t *given) {
    if (s->typed) {
        s->typed->words = words;
        json_array_append_new(s->typed->lines,
                              json_integer((json_int_t)n->start_mark.line + 1));
        json_array_append(s->typed->given, given);
    }
    json_decref(given);
}

/* Notes in given that the key typed, as words name it, gave its field. */
static void spec_given(json_t *given, const request_word *words,
                       const char *typed) {
    for (; words->field; words++)
        if (!strcmp(words->typed, typed))
            json_object_set_new(given, words->field, json_true());
}

static yaml_node_t *spec_node(spec *s, int id) {
    return yaml_document_get_node(&s->doc, id);
}

static const char *spec_scalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                            : NULL;
}

/* YAML's null: an unquoted null, Null, NULL, ~ or nothing at all. */
static bool spec_null(yaml_node_t *n) {
    const char *v = spec_scalar(n);
    if (!v || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    return !v[0] || !strcmp(v, "~") || !strcmp(v, "null") ||
           !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int spec_error(const spec *s, yaml_node_t *n, const char *msg,
                      const char *key) {
    fprintf(stderr, "aegis submit: %s:%d: %s%s%s\n", s->path,
            (int)n->start_mark.line + 1, key ? key : "", key ? ": " : "", msg);
    return -1;
}

/* How many items list holds. */
static long spec_items(yaml_node_t *list) {
    return list->data.sequence.items.top - list->data.sequence.items.start;
}

/* Charges the nodes in collection n (a list's items, a mapping's keys
 * and values) to the spec's budget as the reader enters it, before it
 * builds anything of them: 0, or -1 after saying the budget ran out. */
static int spec_enter(spec *s, yaml_node_t *n, const char *key) {
    if (n->type == YAML_SEQUENCE_NODE)
        s->nodes_left -= spec_items(n);
    else if (n->type == YAML_MAPPING_NODE)
        s->nodes_left -= 2 * (n->data.mapping.pairs.top -
                              n->data.mapping.pairs.start);
    if (s->nodes_left >= 0) return 0;
    char msg[160];
    snprintf(msg, sizeof(msg), "the spec expands to more than %d nodes (an "
             "alias's nodes count each time it is used)", SPEC_MAX_NODES);
    return spec_error(s, n, msg, key);
}

/* Whether list n holds at most max items, one of aegisd's limits: 0, or
 * -1 after saying it holds more of what. */
static int spec_at_most(const spec *s, yaml_node_t *n, const char *key,
                        int max, const char *what) {
    if (spec_items(n) <= max) return 0;
    char msg[96];
    snprintf(msg, sizeof(msg), "more than %d %s (aegisd's limit)", max, what);
    return spec_error(s, n, msg, key);
}

/* Charges the text of v, when it is a scalar, to the spec's budget as
 * the reader takes it, before anything is built of it: 0, or -1 after
 * saying the budget ran out. */
static int spec_charge(spec *s, yaml_node_t *v, const char *key) {
    if (v->type != YAML_SCALAR_NODE) return 0;
    if (v->data.scalar.length <= s->text_left) {
        s->text_left -= v->data.scalar.length;
        return 0;
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "the spec's text expands to more than %zu "
             "bytes (an alias's text counts each time it is used)",
             SPEC_MAX_TEXT);
    return spec_error(s, v, msg, key);
}

/* The text of scalar v into *out, charged; -1 with a message naming key
 * when v is not a scalar or holds a NUL byte (YAML's "\0"), which would
 * cut it short. libyaml has checked the rest: a scalar is UTF-8. */
static int spec_text(spec *s, yaml_node_t *v, const char *key,
                     const char *what, const char **out) {
    *out = spec_scalar(v);
    if (!*out) return spec_error(s, v, what, key);
    if (spec_charge(s, v, key)) return -1;
    if (strlen(*out) != v->data.scalar.length)
        return spec_error(s, v, "holds a NUL byte", key);
    return 0;
}

static json_t *spec_scalar_json(yaml_node_t *n);

/* A boolean: a plain true or false (YAML's spellings of them). */
static int spec_bool(spec *s, yaml_node_t *v, const char *key,
                     bool *out) {
    if (spec_charge(s, v, key)) return -1;
    json_t *j = spec_scalar(v) ? spec_scalar_json(v) : NULL;
    bool ok = json_is_boolean(j);
    *out = json_is_true(j);
    json_decref(j);
    return ok ? 0 : spec_error(s, v, "expected true or false", key);
}

/* A number in [lo, hi], whole when `whole`, written as the command line's
 * options take it: a plain decimal scalar (cli_is_decimal()), digits only
 * when whole. A quoted one is text, as it is in a profile; hex, inf, nan
 * and 1e3 for a whole number are refused as --nice 1e3 is, never rounded
 * or dropped. */
static int spec_number(spec *s, yaml_node_t *v, const char *key,
                       double lo, double hi, bool whole, double *out) {
    if (spec_charge(s, v, key)) return -1;
    const char *text = spec_scalar(v);
    if (text && v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        char msg[160];
        snprintf(msg, sizeof(msg), "'%.40s' is quoted, which makes it text: "
                 "write the number without quotes", text);
        return spec_error(s, v, msg, key);
    }
    bool decimal = text && cli_is_decimal(text, !whole);
    double d = decimal ? strtod(text, NULL) : 0;
    if (!decimal || !(d >= lo && d <= hi) || (whole && d != floor(d))) {
        char msg[160], low[32], high[32];
        cli_number_text(lo, low, sizeof(low));
        cli_number_text(hi, high, sizeof(high));
        if (text)
            snprintf(msg, sizeof(msg), "'%.40s' is not a %s in [%s, %s]",
                     text, whole ? "whole number" : "number", low, high);
        else /* a list or a mapping: there is no text to quote */
            snprintf(msg, sizeof(msg), "expected a %s in [%s, %s], not a %s",
                     whole ? "whole number" : "number", low, high,
                     v->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
        return spec_error(s, v, msg, key);
    }
    *out = d;
    return 0;
}

/* An amount of memory, as --gpu-mem takes it. */
static int spec_mem(spec *s, yaml_node_t *v, const char *key, double *out) {
    static const char what[] = "expected " SUBMIT_MEM_FORMS;
    const char *text;
    if (spec_text(s, v, key, what, &text)) return -1;
    if (submit_parse_mem(text, out)) return spec_error(s, v, what, key);
    return 0;
}

/* A spec's model: file, relative to the spec's folder unless absolute;
 * -1 after saying why, though not where (the caller names the line). */
static int spec_model(const spec *s, const char *file, double *mem) {
    const char *slash = strrchr(s->path, '/');
    if (file[0] == '/' || !slash) return submit_model_mem(file, mem);
    int dir = (int)(slash - s->path);
    size_t len = (size_t)dir + strlen(file) + 2;
    char *joined = malloc(len);
    if (!joined) {
        perror("aegis submit");
        return -1;
    }
    snprintf(joined, len, "%.*s/%s", dir, s->path, file);
    int rc = submit_model_mem(joined, mem);
    free(joined);
    return rc;
}

/* The command of a spec: a string for /bin/sh -c, or a list of words;
 * NULL once the fault is told. */
static json_t *spec_command(spec *s, yaml_node_t *v, const char *key) {
    static const char what[] = "expected a string or a list of words";
    const char *w;
    if (v->type == YAML_SCALAR_NODE) {
        if (spec_text(s, v, key, what, &w)) return NULL;
        if (!submit_blank(w)) return submit_shell(w);
        spec_error(s, v, "an empty command", key); /* nothing to run */
        return NULL;
    }
    if (v->type != YAML_SEQUENCE_NODE) {
        spec_error(s, v, what, key);
        return NULL;
    }
    if (spec_items(v) == 0) {
        spec_error(s, v, "an empty command (a list of no words)", key);
        return NULL;
    }
    if (spec_at_most(s, v, key, PROTO_MAX_ARGS, "words") ||
        spec_enter(s, v, key))
        return NULL;
    json_t *cmd = json_array();
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++) {
        if (spec_text(s, spec_node(s, *it), key, what, &w) != 0) {
            json_decref(cmd);
            return NULL;
        }
        if (json_array_size(cmd) == 0 && !w[0]) { /* as aegisd would */
            spec_error(s, spec_node(s, *it), "the first word, the program, "
                       "is empty", key);
            json_decref(cmd);
            return NULL;
        }
        json_array_append_new(cmd, json_string(w));
    }
    return cmd;
}

/* One scalar of `after:` into deps, its names marked with their line. */
static int spec_after_item(spec *s, yaml_node_t *v, json_t *deps) {
    static const char what[] = "expected a job id, a job's name, or "
                               "afterok:/afterany:/afternotok: followed by them";
    const char *text;
    char err[256];
    size_t before = json_array_size(deps);
    if (spec_text(s, v, "after", what, &text)) return -1;
    if (submit_parse_after(text, true, deps, err, sizeof(err)))
        return spec_error(s, v, err, "after");
    for (size_t i = before; i < json_array_size(deps); i++) {
        json_t *dep = json_array_get(deps, i);
        if (json_object_get(dep, "name"))
            json_object_set_new(dep, "line",
                                json_integer((json_int_t)v->start_mark.line + 1));
    }
    return 0;
}

/* `after:` as one item or a list of them; *deps is the new list. */
static int spec_after(spec *s, yaml_node_t *v, json_t **deps) {
    json_decref(*deps);
    *deps = json_array();
    if (v->type != YAML_SEQUENCE_NODE) return spec_after_item(s, v, *deps);
    if (spec_enter(s, v, "after")) return -1;
    for (yaml_node_item_t *it = v->data.sequence.items.start;
         it < v->data.sequence.items.top; it++)
        if (spec_after_item(s, spec_node(s, *it), *deps)) return -1;
    return 0;
}

/* ---- aegis's own format --------------------------------------------------- */

/* Whether a job's memory is given once: mem and mem_mib both (key, after
 * first) would silently take the later. 0, or -1 after naming both. */
static int spec_mem_once(spec *s, yaml_node_t *first, yaml_node_t *key) {
    if (!first) return 0;
    char msg[160];
    snprintf(msg, sizeof(msg), "%s is given too (line %d): give one of mem "
             "and mem_mib", spec_scalar(first), (int)first->start_mark.line + 1);
    return spec_error(s, key, msg, spec_scalar(key));
}

static int spec_job(spec *s, yaml_node_t *map, const submit_defaults *def,
                    json_t *jobs) {
    if (map->type != YAML_MAPPING_NODE)
        return spec_error(s, map, "expected a job (a mapping)", NULL);
    if (spec_enter(s, map, NULL)) return -1;
    submit_defaults d = *def;
    json_t *cmd = NULL, *after = NULL;
    double num, model_mem = -1;
    yaml_node_t *mem_key = NULL; /* mem or mem_mib, the first given */
    json_t *given = json_object(); /* the fields this entry gives */
    int rc = 0;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         rc == 0 && p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = spec_node(s, p->key), *v = spec_node(s, p->value);
        const char *k = spec_scalar(kn);
        if (!k) {
            rc = spec_error(s, kn, "expected a key", NULL);
            continue;
        }
        if (spec_null(v)) continue;
        /* mem_mib and model give mem's field */
        spec_given(given, request_words_spec_keys,
                   !strcmp(k, "mem_mib") || !strcmp(k, "model") ? "mem" : k);
        if (!strcmp(k, "command")) {
            json_decref(cmd);
            if (!(cmd = spec_command(s, v, k))) rc = -1;
        } else if (!strcmp(k, "name")) {
            rc = spec_text(s, v, k, "expected a string", &d.name);
        } else if (!strcmp(k, "feed")) {
            rc = spec_text(s, v, k, "expected a string", &d.feed);
            if (rc == 0 && !d.feed[0]) /* aegisd takes "" as no feed */
                rc = spec_error(s, v, "the name is empty", k);
        } else if (!strcmp(k, "feed_producer")) {
            rc = spec_bool(s, v, k, &d.feed_producer);
        } else if (!strcmp(k, "gpus")) {
            rc = spec_number(s, v, k, 1, 64, true, &num);
            d.gpus = (long)num;
        } else if (!strcmp(k, "mem_mib") || !strcmp(k, "mem")) {
            rc = spec_mem_once(s, mem_key, kn);
            mem_key = kn;
            if (rc == 0 && !strcmp(k, "mem"))
                rc = spec_mem(s, v, k, &d.mem);
            else if (rc == 0)
                rc = spec_number(s, v, k, PROTO_MIN_MEM_MIB,
                                 PROTO_MAX_MEM_MIB, false, &d.mem);
        } else if (!strcmp(k, "model")) {
            const char *file;
            rc = spec_text(s, v, k, "expected a file name", &file);
            if (rc == 0 && spec_model(s, file, &model_mem))
                rc = spec_error(s, v, "no estimate of this model (why: "
                                "above)", k);
        } else if (!strcmp(k, "after")) {
            rc = spec_after(s, v, &after);
        } else if (!strcmp(k, "mps_threads_pct")) {
            rc = spec_number(s, v, k, 1, 100, true, &num);
            d.mps_threads = (long)num;
        } else if (!strcmp(k, "time")) {
            static const char what[] = "expected a time limit: MINUTES, "
                "MM:SS, HH:MM:SS, D-HH:MM:SS, or 90s, 30m, 2h, 1d";
            const char *text;
            rc = spec_text(s, v, k, what, &text);
            if (rc == 0 && timelimit_parse(text, &d.time_limit))
                rc = spec_error(s, v, what, k);
        } else if (!strcmp(k, "nice")) {
            rc = spec_number(s, v, k, 0, CORE_NICE_MAX, true, &num);
            d.nice = (long)num;
        } else if (!strcmp(k, "notify")) {
            rc = spec_text(s, v, k, "expected a shell command", &d.notify);
        } else if (!strcmp(k, "cpus")) {
            rc = spec_number(s, v, k, 1, PROTO_MAX_CPUS, true, &num);
            d.cpus = (long)num;
        } else if (!strcmp(k, "host_mem")) {
            rc = spec_mem(s, v, k, &d.host_mem);
        } else {
            rc = spec_error(s, kn, "unknown key (command, name, feed, "
                            "feed_producer, gpus, mem, mem_mib, model, after, "
                            "mps_threads_pct, time, nice, notify, cpus, "
                            "host_mem)", k);
        }
    }
    if (rc == 0 && !cmd) rc = spec_error(s, map, "command: missing", NULL);
    if (rc == 0 && d.feed_producer && !d.feed)
        rc = spec_error(s, map, "feed_producer: true needs a feed", NULL);
    if (rc) {
        json_decref(cmd);
        json_decref(after);
        json_decref(given);
        return -1;
    }
    if (model_mem >= 0 && !mem_key) d.mem = model_mem;
    if (after) d.after = after;
    json_array_append_new(jobs, submit_job(cmd, &d));
    spec_typed(s, request_words_spec_keys, map, given);
    json_decref(after);
    return 0;
}

/* The jobs' names: each name's [first position, count] (one pass: a
 * search of the jobs for every name took minutes for 100,000). NULL when
 * out of memory. */
static json_t *spec_name_index(json_t *jobs) {
    json_t *index = json_object(), *job;
    size_t i;
    json_array_foreach(jobs, i, job) {
        const char *n = json_string_value(json_object_get(job, "name"));
        if (!n || !index) continue;
        json_t *seen = json_object_get(index, n);
        if (seen)
            json_array_set_new(seen, 1, json_integer(
                json_integer_value(json_array_get(seen, 1)) + 1));
        else
            json_object_set_new(index, n, json_pack("[I, I]",
                                                    (json_int_t)i, 1));
    }
    return index;
}

/* The position of job `self`'s dependency named in dep among the jobs
 * (names: spec_name_index()), which must be an earlier job; -1 after
 * saying why not. */
static int spec_named(const spec *s, json_t *names, size_t self,
                      json_t *dep) {
    const char *name = json_string_value(json_object_get(dep, "name"));
    int line = (int)json_integer_value(json_object_get(dep, "line"));
    json_t *seen = json_object_get(names, name);
    size_t at = (size_t)json_integer_value(json_array_get(seen, 0));
    json_int_t found = json_integer_value(json_array_get(seen, 1));
    char msg[300] = "";
    if (found == 0)
        snprintf(msg, sizeof(msg), "no job named '%s' in this file", name);
    else if (found > 1)
        snprintf(msg, sizeof(msg), "%lld jobs are named '%s'",
                 (long long)found, name);
    else if (at == self)
        snprintf(msg, sizeof(msg), "'%s' is this job", name);
    else if (at > self)
        snprintf(msg, sizeof(msg), "'%s' comes later in the file: list it "
                 "before the jobs that wait for it", name);
    if (msg[0]) {
        fprintf(stderr, "aegis submit: %s:%d: after: %s\n", s->path, line, msg);
        return -1;
    }
    return (int)at;
}

/* Turns the names in the jobs' `after:` into indices of the request. */
static int spec_resolve_names(const spec *s, json_t *jobs) {
    size_t i, k;
    json_t *job, *dep, *names = spec_name_index(jobs);
    if (!names) {
        fprintf(stderr, "aegis submit: %s: out of memory\n", s->path);
        return -1;
    }
    int rc = 0;
    json_array_foreach(jobs, i, job) {
        json_array_foreach(json_object_get(job, "after"), k, dep) {
            if (!json_object_get(dep, "name")) continue;
            int at = spec_named(s, names, i, dep);
            if (at < 0) {
                rc = -1;
                break;
            }
            json_object_del(dep, "name");
            json_object_del(dep, "line");
            json_object_set_new(dep, "index", json_integer(at));
        }
        if (rc) break;
    }
    json_decref(names);
    return rc;
}

/* ---- AEGIS's format --------------------------------------------------------- */

/* A plain scalar as JSON: null, a boolean, a whole or real number, else
 * text; a quoted one is always text. */
static json_t *spec_scalar_json(yaml_node_t *n) {
    const char *v = spec_scalar(n);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_string(v);
    if (spec_null(n)) return json_null();
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return json_true();
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return json_false();
    char *end;
    long long whole = strtoll(v, &end, 10);
    if (end != v && !*end) return json_integer(whole);
    double real = strtod(v, &end);
    if (end != v && !*end && isfinite(real) && !strpbrk(v, "xXnN"))
        return json_real(real);
    return json_string(v);
}

/* A node of the estimates or profile as JSON; at the top (depth 0) of a
 * mapping, null values are left out. NULL after saying why. */
static json_t *spec_json(spec *s, yaml_node_t *n, const char *key, int depth,
                         int *budget) {
    const char *text;
    if (depth > SPEC_MAX_DEPTH || --*budget < 0) {
        spec_error(s, n, "nested too deep, or too large", key);
        return NULL;
    }
    if (n->type == YAML_SCALAR_NODE)
        return spec_text(s, n, key, "expected a value", &text)
                   ? NULL : spec_scalar_json(n);
    if (spec_enter(s, n, key)) return NULL;
    json_t *out = n->type == YAML_SEQUENCE_NODE ? json_array() : json_object();
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            json_t *v = spec_json(s, spec_node(s, *it), key, depth + 1, budget);
            if (!v) goto fail;
            json_array_append_new(out, v);
        }
        return out;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = spec_node(s, p->key), *vn = spec_node(s, p->value);
        if (spec_text(s, kn, key, "expected a key", &text)) goto fail;
        if (depth == 0 && spec_null(vn)) continue;
        json_t *v = spec_json(s, vn, key, depth + 1, budget);
        if (!v) goto fail;
        json_object_set_new(out, text, v);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* What an AEGIS spec's job and resources sections say. */
typedef struct spec_aegis_job {
    json_t *cmd;
    yaml_node_t *conda_node;    /* job.conda_env, or NULL */
    const char *conda_env;
    submit_defaults d;
    json_t *meta;
    json_t *given;              /* the fields the file gives (spec_typed) */
} spec_aegis_job;

/* Each key of a section, known ones handed to fn, others warned of. */
static int spec_section(spec *s, yaml_node_t *map, const char *section,
                        spec_aegis_job *job,
                        int (*fn)(spec *, const char *, yaml_node_t *,
                                  spec_aegis_job *, char *)) {
    if (spec_null(map)) return 0;
    if (map->type != YAML_MAPPING_NODE)
        return spec_error(s, map, "expected a mapping", section);
    if (spec_enter(s, map, section)) return -1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = spec_node(s, p->key), *v = spec_node(s, p->value);
        const char *k = spec_scalar(kn);
        char dotted[128];
        snprintf(dotted, sizeof(dotted), "%s.%.64s", section, k ? k : "?");
        if (!k) return spec_error(s, kn, "expected a key", section);
        if (spec_null(v)) continue;
        int rc = fn(s, k, v, job, dotted);
        if (rc < 0) return -1;
        if (rc == 0) spec_given(job->given, request_words_aegis_spec_keys, dotted);
        if (rc > 0)
            fprintf(stderr, "aegis submit: %s:%d: %s: ignored (not a key "
                    "aegis knows in %s)\n", s->path,
                    (int)kn->start_mark.line + 1, dotted, section);
    }
    return 0;
}

/* job: command and conda_env; 1 for a key aegis does not know. */
static int spec_aegis_job_key(spec *s, const char *k, yaml_node_t *v,
                              spec_aegis_job *job, char *dotted) {
    if (!strcmp(k, "command")) {
        json_decref(job->cmd);
        job->cmd = spec_command(s, v, dotted);
        return job->cmd ? 0 : -1;
    }
    if (!strcmp(k, "conda_env")) {
        job->conda_node = v;
        return spec_text(s, v, dotted, "expected the name of a conda "
                         "environment", &job->conda_env);
    }
    return 1;
}

/* resources: num_gpus and gpu_memory_requirement_mib. */
static int spec_aegis_resource(spec *s, const char *k, yaml_node_t *v,
                               spec_aegis_job *job, char *dotted) {
    double num;
    if (!strcmp(k, "num_gpus")) {
        if (spec_number(s, v, dotted, 1, 64, true, &num)) return -1;
        job->d.gpus = (long)num;
        return 0;
    }
    if (!strcmp(k, "gpu_memory_requirement_mib"))
        return spec_number(s, v, dotted, PROTO_MIN_MEM_MIB, PROTO_MAX_MEM_MIB,
                           false, &job->d.mem);
    return 1;
}

/* The conda on PATH now (malloc'd), a word of the job's command: NULL
 * after saying why not (none on PATH; a path JSON cannot carry, where the
 * job was left with no command). */
static char *spec_conda_path(const spec *s, const spec_aegis_job *job) {
    char msg[4600];
    char *conda = submit_find_program("conda");
    if (!conda)
        snprintf(msg, sizeof(msg), "'%.64s' needs conda, which is not on "
                 "PATH: activate conda's shell setup, or drop the key to run "
                 "the command as it is", job->conda_env);
    else if (submit_path_ok("conda's path", conda, "put a conda whose path "
                            "is UTF-8 first on PATH", msg, sizeof(msg)))
        return conda;
    free(conda);
    spec_error(s, job->conda_node, msg, "job.conda_env");
    return NULL;
}

/* The command run in the conda environment: `conda run -n ENV
 * --no-capture-output CMD...` with the conda found on PATH now, so the
 * job needs no activated shell. */
static int spec_conda(spec *s, spec_aegis_job *job) {
    char *conda = spec_conda_path(s, job);
    if (!conda) return -1;
    json_t *cmd = json_pack("[s, s, s, s, s]", conda, "run", "-n",
                            job->conda_env, "--no-capture-output");
    free(conda);
    /* the command was held to aegisd's limit without these words */
    size_t words = json_array_size(cmd) + json_array_size(job->cmd);
    if (words > PROTO_MAX_ARGS) {
        json_decref(cmd);
        char msg[96];
        snprintf(msg, sizeof(msg), "the command in conda is %zu words, more "
                 "than %d (aegisd's limit)", words, PROTO_MAX_ARGS);
        return spec_error(s, job->conda_node, msg, "job.conda_env");
    }
    json_array_extend(cmd, job->cmd);
    json_decref(job->cmd);
    job->cmd = cmd;
    return 0;
}

/* The job's name when no --name is given: the spec's file stem, as AEGIS
 * names its workloads. A file's name may hold any byte: the stem is the
 * name as text_safe() shows it, each byte that is not UTF-8 (a job was
 * left unnamed, as JSON could not hold it) and each character aegisd
 * refuses in a name (the submit was refused for it) as '?'. */
static json_t *spec_stem(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strcspn(base, ".");
    char stem[PROTO_MAX_NAME + 1], safe[PROTO_MAX_NAME + 1];
    if (len == 0 || len > PROTO_MAX_NAME) return NULL;
    memcpy(stem, base, len);
    stem[len] = '\0';
    text_safe(safe, sizeof(safe), stem);
    return json_string(safe);
}

static int spec_aegis(spec *s, yaml_node_t *root, const submit_defaults *def,
                      json_t *jobs) {
    spec_aegis_job job = {.d = *def, .meta = json_object(),
                          .given = json_object()};
    int budget = SPEC_MAX_META_NODES;
    int rc = spec_enter(s, root, NULL);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         rc == 0 && p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = spec_node(s, p->key), *v = spec_node(s, p->value);
        const char *k = spec_scalar(kn);
        if (!k) rc = spec_error(s, kn, "expected a key", NULL);
        else if (!strcmp(k, "version")) {
            const char *text = spec_scalar(v);
            if (!text || strcmp(text, "1") != 0)
                rc = spec_error(s, v, "aegis reads version 1 of AEGIS's "
                                "spec format only", k);
        }
        else if (!strcmp(k, "job"))
            rc = spec_section(s, v, k, &job, spec_aegis_job_key);
        else if (!strcmp(k, "resources"))
            rc = spec_section(s, v, k, &job, spec_aegis_resource);
        else if (!strcmp(k, "estimates") || !strcmp(k, "profile")) {
            if (spec_null(v)) continue;
            if (v->type != YAML_MAPPING_NODE) {
                rc = spec_error(s, v, "expected a mapping", k);
                continue;
            }
            json_t *obj = spec_json(s, v, k, 0, &budget);
            if (!obj) rc = -1;
            else if (json_object_size(obj) == 0) json_decref(obj);
            else json_object_set_new(job.meta, k, obj);
        } else
            fprintf(stderr, "aegis submit: %s:%d: %s: section ignored (aegis "
                    "does not use it)\n", s->path,
                    (int)kn->start_mark.line + 1, k);
    }
    if (rc == 0 && !job.cmd)
        rc = spec_error(s, root, "missing", "job.command");
    if (rc == 0 && job.conda_env) rc = spec_conda(s, &job);
    if (rc != 0) {
        json_decref(job.cmd);
        json_decref(job.meta);
        json_decref(job.given);
        return -1;
    }
    json_t *out = submit_job(job.cmd, &job.d);
    json_t *stem = def->name ? NULL : spec_stem(s->path);
    if (stem) json_object_set_new(out, "name", stem);
    if (json_object_size(job.meta) > 0)
        json_object_set(out, "meta", job.meta);
    json_decref(job.meta);
    json_array_append_new(jobs, out);
    spec_typed(s, request_words_aegis_spec_keys, root, job.given);
    return 0;
}

/* ---- the file --------------------------------------------------------------- */

/* The value of key in a mapping, or NULL. */
static yaml_node_t *spec_get(spec *s, yaml_node_t *map, const char *key) {
    if (!map || map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
         p < map->data.mapping.pairs.top; p++) {
        const char *k = spec_scalar(spec_node(s, p->key));
        if (k && !strcmp(k, key)) return spec_node(s, p->value);
    }
    return NULL;
}

/* Whether jobs: is the spec's only key: one beside it (command, gpus)
 * belongs to no job, and was ignored without a word. 0, or -1 after
 * naming the first. */
static int spec_jobs_alone(spec *s, yaml_node_t *root) {
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = spec_node(s, p->key);
        const char *k = spec_scalar(kn);
        if (k && !strcmp(k, "jobs")) continue;
        return spec_error(s, kn, "beside jobs:, a key applies to no job: "
                          "give it in each job (or as an option: aegis "
                          "submit FILE --gpus 2)", k);
    }
    return 0;
}

/* The jobs of a loaded spec, in whichever format it is. */
static int spec_read(spec *s, yaml_node_t *root, const submit_defaults *def,
                     json_t *jobs) {
    yaml_node_t *list = spec_get(s, root, "jobs");
    yaml_node_t *job = spec_get(s, root, "job");
    if (spec_get(s, root, "version") || (job && job->type == YAML_MAPPING_NODE))
        return spec_aegis(s, root, def, jobs);
    if (!list) return spec_job(s, root, def, jobs);
    if (spec_jobs_alone(s, root)) return -1;
    if (list->type != YAML_SEQUENCE_NODE)
        return spec_error(s, list, "expected a list of jobs", "jobs");
    if (spec_items(list) == 0)
        return spec_error(s, list, "an empty list: no job to submit", "jobs");
    if (spec_at_most(s, list, "jobs", PROTO_MAX_JOBS, "jobs") ||
        spec_enter(s, list, "jobs"))
        return -1;
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++)
        if (spec_job(s, spec_node(s, *it), def, jobs)) return -1;
    return 0;
}

/* Whether each mapping of the spec gives each key once (a key given
 * twice would silently take the later value): 0, or -1 after naming the
 * second one. */
static int spec_keys_once(spec *s) {
    for (yaml_node_t *n = s->doc.nodes.start; n < s->doc.nodes.top; n++) {
        if (n->type != YAML_MAPPING_NODE) continue;
        json_t *seen = json_object();
        int rc = seen ? 0 : -1;
        for (yaml_node_pair_t *kv = n->data.mapping.pairs.start;
             rc == 0 && kv < n->data.mapping.pairs.top; kv++) {
            yaml_node_t *k = spec_node(s, kv->key);
            const char *key = spec_scalar(k);
            if (!key) continue;
            if (json_object_get(seen, key))
                rc = spec_error(s, k, "given twice", key);
            else
                json_object_set_new(seen, key, json_true());
        }
        json_decref(seen);
        if (rc) return -1;
    }
    return 0;
}

/* Says why libyaml could not read the spec on; -1. */
static int spec_yaml_problem(const char *path, const yaml_parser_t *parser) {
    fprintf(stderr, "aegis submit: %s:%d: %s\n", path,
            (int)parser->problem_mark.line + 1, parser->problem);
    return -1;
}

/* Whether the stream ends after the spec's document: a second one would
 * be ignored. 0, or -1 after saying where it starts. */
static int spec_one_document(const char *path, yaml_parser_t *parser) {
    yaml_document_t next;
    if (!yaml_parser_load(parser, &next))
        return spec_yaml_problem(path, parser);
    yaml_node_t *root = yaml_document_get_root_node(&next);
    if (root)
        fprintf(stderr, "aegis submit: %s:%d: a second YAML document (a spec "
                "holds one)\n", path, (int)root->start_mark.line + 1);
    yaml_document_delete(&next);
    return root ? -1 : 0;
}

int submit_spec(const char *path, const submit_defaults *def, json_t *jobs,
                request_words *typed) {
    unsigned char *text;
    size_t len;
    if (spec_read_file(path, &text, &len) != 0) return -1;
    spec s = {.path = path, .typed = typed, .nodes_left = SPEC_MAX_NODES,
              .text_left = SPEC_MAX_TEXT};
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, text, len);
    int rc = -1;
    if (!yaml_parser_load(&parser, &s.doc)) {
        spec_yaml_problem(path, &parser);
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&s.doc);
        if (!root)
            fprintf(stderr, "aegis submit: %s: empty spec\n", path);
        else if (spec_keys_once(&s) == 0 &&
                 spec_one_document(path, &parser) == 0 &&
                 spec_read(&s, root, def, jobs) == 0)
            rc = spec_resolve_names(&s, jobs);
        yaml_document_delete(&s.doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    return rc;
}
