/* pipeline_eval.c -- a pipeline's evaluations read back
 * (pipeline_view.h): `aegis pipeline show NAME --eval` prints each
 * model's results as its supervisor kept them (evals/N.E.json,
 * src/pipeline/sup_eval.c), and pv_eval_load gives them to `compare`.
 */
#include "pipeline_view.h"

#include "cli.h"
#include "client.h"
#include "text_safe.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pe_doc_cmp(const void *a, const void *b) {
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t mx = json_integer_value(json_object_get(x, "model"));
    json_int_t my = json_integer_value(json_object_get(y, "model"));
    if (mx != my) return mx < my ? -1 : 1;
    /* after_training before after_pipeline */
    return strcmp(json_string_value(json_object_get(y, "execution_time")),
                  json_string_value(json_object_get(x, "execution_time")));
}

/* Whether a file name is a kept evaluation, N.train.json or N.end.json. */
static bool pe_is_kept(const char *name) {
    size_t len = strlen(name);
    return len > 5 && strcmp(name + len - 5, ".json") == 0 &&
           (strstr(name, ".train.json") || strstr(name, ".end.json"));
}

/* Whether every result of doc is an object naming its handler. */
static bool pe_results_ok(json_t *doc) {
    json_t *results = json_object_get(doc, "results"), *res;
    size_t i;
    if (!json_is_array(results)) return false;
    json_array_foreach(results, i, res)
        if (!json_is_string(json_object_get(res, "handler"))) return false;
    return true;
}

/* Whether doc is a kept evaluation as the supervisor writes it, so far as
 * the readers here use it: a file edited or cut by hand is skipped with
 * a word, not read through a missing field. */
static bool pe_is_evaluation(json_t *doc) {
    const char *state = json_string_value(json_object_get(doc, "state"));
    return json_is_object(doc) &&
           json_is_integer(json_object_get(doc, "model")) &&
           json_is_string(json_object_get(doc, "execution_time")) && state &&
           (strcmp(state, "done") != 0 || pe_results_ok(doc));
}

/* A kept evaluation is a file in the pipeline's folder, which its user
 * (or whoever wrote it) may fill with any text: each text of it printed
 * is shown as text_safe() shows it, in buf (PE_TEXT bytes: the longest
 * error the supervisor writes, sup_eval.c's why[4600], shown whole). */
#define PE_TEXT 4608
static const char *pe_safe(const char *text, char *buf) {
    text_safe(buf, PE_TEXT, text);
    return buf;
}

/* doc's text field key shown safe, or "-" where it has none (a failed
 * evaluation's job or error). */
static const char *pe_text(json_t *doc, const char *key, char *buf) {
    const char *text = json_string_value(json_object_get(doc, key));
    return text ? pe_safe(text, buf) : "-";
}

json_t *pv_eval_load(const char *dir) {
    char path[4400];
    snprintf(path, sizeof(path), "%s/evals", dir);
    json_t *docs = json_array();
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!pe_is_kept(e->d_name)) continue;
        json_error_t jerr;
        snprintf(path, sizeof(path), "%s/evals/%s", dir, e->d_name);
        json_t *doc = json_load_file(path, 0, &jerr);
        if (pe_is_evaluation(doc)) {
            json_array_append_new(docs, doc);
            continue;
        }
        char file[sizeof(path)], why[PE_TEXT]; /* jerr may quote it */
        text_safe(file, sizeof(file), path);
        fprintf(stderr, "aegis pipeline: %s: %s (skipped)\n", file,
                doc ? "not an evaluation" : pe_safe(jerr.text, why));
        json_decref(doc);
    }
    if (d) closedir(d);
    size_t n = json_array_size(docs);
    json_t **sorted = malloc((n ? n : 1) * sizeof(*sorted));
    for (size_t i = 0; sorted && i < n; i++)
        sorted[i] = json_incref(json_array_get(docs, i));
    if (sorted) qsort(sorted, n, sizeof(*sorted), pe_doc_cmp);
    json_array_clear(docs);
    for (size_t i = 0; sorted && i < n; i++)
        json_array_append_new(docs, sorted[i]);
    free(sorted);
    return docs;
}

/* A bound as text: its timestamp, or -inf / inf for an open one. */
static void pe_bound(json_t *v, const char *open, char *buf, size_t size) {
    if (json_is_integer(v))
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        snprintf(buf, size, "%s", open);
}

/* One result line: model, when, handler, window, samples, metrics. */
static void pe_print_result(json_t *doc, json_t *res) {
    char from[32], to[32], when[PE_TEXT], handler[PE_TEXT], name[PE_TEXT];
    pe_bound(json_object_get(res, "start"), "-inf", from, sizeof(from));
    pe_bound(json_object_get(res, "end"), "inf", to, sizeof(to));
    printf("%-6" JSON_INTEGER_FORMAT " %-15s %-14s %-11s %-11s %-8"
           JSON_INTEGER_FORMAT,
           json_integer_value(json_object_get(doc, "model")),
           pe_text(doc, "execution_time", when), pe_text(res, "handler", handler),
           from, to, json_integer_value(json_object_get(res, "samples")));
    const char *metric;
    json_t *v;
    json_object_foreach(json_object_get(res, "metrics"), metric, v) {
        if (json_is_number(v))
            printf(" %s=%.4f", pe_safe(metric, name), json_number_value(v));
        else
            printf(" %s=-", pe_safe(metric, name));
    }
    putchar('\n');
}

static void pe_print_doc(json_t *doc) {
    json_t *res;
    size_t i;
    char when[PE_TEXT], job[PE_TEXT], error[PE_TEXT];
    if (strcmp(json_string_value(json_object_get(doc, "state")), "done")) {
        printf("%-6" JSON_INTEGER_FORMAT " %-15s failed (%s): %s\n",
               json_integer_value(json_object_get(doc, "model")),
               pe_text(doc, "execution_time", when), pe_text(doc, "job", job),
               pe_text(doc, "error", error));
        return;
    }
    json_array_foreach(json_object_get(doc, "results"), i, res)
        pe_print_result(doc, res);
}

int pv_eval(const char *name, bool json) {
    char dir[4200];
    if (!pv_dir(name, dir, sizeof(dir))) return CLI_FAIL;
    int has = pv_exists(name);
    if (has <= 0) {
        if (has == 0)
            fprintf(stderr, "aegis pipeline show: you have no pipeline %s\n",
                    name);
        return has < 0 ? CLI_FAIL : CLI_USAGE;
    }
    json_t *docs = pv_eval_load(dir), *doc;
    size_t i;
    if (!json && json_array_size(docs) == 0)
        printf("pipeline %s: no evaluations kept (none yet, or the file has "
               "no evaluation section)\n", name);
    else if (!json)
        printf("%-6s %-15s %-14s %-11s %-11s %-8s %s\n", "MODEL", "WHEN",
               "HANDLER", "START", "END", "SAMPLES", "METRICS");
    json_array_foreach(docs, i, doc) {
        if (json) client_print_json(doc);
        else pe_print_doc(doc);
    }
    json_decref(docs);
    return CLI_OK;
}
