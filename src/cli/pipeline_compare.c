/* pipeline_compare.c -- `aegis pipeline compare A B ...`: pipelines of the
 * same stream set side by side, as Modyn compares them: each one's
 * composite model (each evaluation window judged by the model that served
 * it, src/pipeline/eval.h) against what its trainings cost -- how many,
 * on how many samples, the GPU-hours and energy aegisd measured.
 * `--svg FILE` draws the composite model's metric over time with each
 * pipeline's trainings marked.
 */
#include "pipeline_view.h"

#include "cli.h"
#include "client.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_compare.h"
#include "pl_tlog.h"

/* GPUs of an attempt's "0,1". */
static int pc_ngpus(const char *list) {
    int n = list && *list ? 1 : 0;
    for (; list && *list; list++) n += *list == ',';
    return n;
}

/* Training job id's GPU-hours and energy, added to r (NAN when aegisd
 * does not know the job). */
static void pc_add_cost(const char *socket, json_int_t id, pc_row *r) {
    int rc;
    json_t *ans = client_call("pipeline compare", socket,
                              json_pack("{s:s, s:I}", "op", "show", "id", id),
                              &rc), *a;
    json_t *job = json_object_get(ans, "job");
    size_t i;
    if (!job) r->gpu_hours = r->energy_j = NAN;
    r->energy_j += json_number_value(json_object_get(job, "energy_j"));
    json_array_foreach(json_object_get(job, "attempt_list"), i, a) {
        double from = json_number_value(json_object_get(a, "started"));
        double to = json_number_value(json_object_get(a, "ended"));
        int gpus = pc_ngpus(json_string_value(json_object_get(a, "gpus")));
        if (to > from) r->gpu_hours += gpus * (to - from) / 3600;
    }
    json_decref(ans);
}

/* Trained trigger n's facts (models/N.json, kept by its supervisor)
 * added to r: its model, when its data ended, its samples, its cost. */
static void pc_add_training(const char *socket, const char *dir, uint32_t n,
                            int64_t job, pc_row *r) {
    char path[4400];
    json_error_t jerr;
    snprintf(path, sizeof(path), "%s/models/%u.json", dir, n);
    json_t *doc = json_load_file(path, 0, &jerr);
    json_t *until = json_object_get(doc, "trained_until");
    r->trainings++;
    r->samples += json_integer_value(json_object_get(doc, "samples"));
    pc_add_cost(socket, job, r);
    if (json_is_integer(until)) {
        r->models[r->nmodels] = n;
        r->ends[r->nmodels++] = json_integer_value(until);
    } else {
        fprintf(stderr, "aegis pipeline compare: %s: %s (model %u left out "
                "of the composite)\n", path, doc ? "no trained_until"
                : jerr.text, n);
    }
    json_decref(doc);
}

/* The trained triggers, from the trigger log and what their supervisor
 * kept of each. false after saying why (no such pipeline). */
static bool pc_trainings(const char *socket, const char *dir, pc_row *r) {
    char path[4400], err[512];
    pl_tlog log;
    snprintf(path, sizeof(path), "%s/triggers.log", dir);
    if (pl_tlog_open(path, false, &log, err, sizeof(err)) != 0) {
        fprintf(stderr, "aegis pipeline compare: %s: no such pipeline (%s)\n",
                r->name, err);
        return false;
    }
    size_t cap = log.ntrigs ? log.ntrigs : 1;
    r->models = malloc(cap * sizeof(*r->models));
    r->ends = malloc(cap * sizeof(*r->ends));
    for (size_t n = 0; r->models && r->ends && n < log.ntrigs; n++)
        if (strcmp(log.trigs[n].state, "done") == 0)
            pc_add_training(socket, dir, (uint32_t)n, log.trigs[n].job, r);
    pl_tlog_close(&log);
    if (!r->models || !r->ends)
        fprintf(stderr, "aegis pipeline compare: out of memory\n");
    return r->models && r->ends;
}

/* A bound of a result: its timestamp, or the open end's sentinel. */
static int64_t pc_bound(json_t *v, int64_t open) {
    return json_is_integer(v) ? json_integer_value(v) : open;
}

size_t pc_results(const pc_row *r, const char *handler,
                         const char *metric, pl_eval_result **out) {
    size_t cap = 0, n = 0, i, j;
    json_t *doc, *res;
    json_array_foreach(r->docs, i, doc)
        cap += json_array_size(json_object_get(doc, "results"));
    *out = malloc((cap ? cap : 1) * sizeof(**out));
    json_array_foreach(r->docs, i, doc) {
        json_array_foreach(json_object_get(doc, "results"), j, res) {
            const char *h = json_string_value(json_object_get(res, "handler"));
            json_t *v = json_object_get(json_object_get(res, "metrics"),
                                        metric);
            if (!*out || !h || strcmp(h, handler) != 0) continue;
            (*out)[n++] = (pl_eval_result){
                (uint32_t)json_integer_value(json_object_get(doc, "model")),
                pc_bound(json_object_get(res, "start"), INT64_MIN),
                pc_bound(json_object_get(res, "end"), INT64_MAX),
                json_integer_value(json_object_get(res, "first_ts")),
                json_integer_value(json_object_get(res, "last_ts")),
                json_is_number(v) ? json_number_value(v) : NAN};
        }
    }
    return n;
}

static json_t *pc_number(double v) {
    return isnan(v) ? json_null() : json_real(v);
}

/* The composite of every handler and metric r's results name:
 * {HANDLER: {METRIC: {active, trained, windows}}}. */
static json_t *pc_composites(const pc_row *r) {
    json_t *all = json_object(), *doc, *res;
    size_t i, j;
    json_array_foreach(r->docs, i, doc)
    json_array_foreach(json_object_get(doc, "results"), j, res) {
        const char *h = json_string_value(json_object_get(res, "handler")), *m;
        json_t *v;
        if (!h) continue;
        if (!json_object_get(all, h)) json_object_set_new(all, h, json_object());
        json_object_foreach(json_object_get(res, "metrics"), m, v) {
            json_t *per = json_object_get(all, h);
            if (json_object_get(per, m)) continue;
            pl_eval_result *rs;
            size_t n = pc_results(r, h, m, &rs);
            pl_composite c = pl_composite_score(rs, n, r->models, r->ends,
                                                r->nmodels);
            free(rs);
            json_object_set_new(per, m, json_pack(
                "{s:o, s:o, s:I}", "active", pc_number(c.active), "trained",
                pc_number(c.trained), "windows", (json_int_t)c.windows));
        }
    }
    return all;
}

/* r as JSON, its name (a folder, maybe made by hand) as
 * client_json_text() gives it. */
static json_t *pc_row_json(const pc_row *r) {
    return json_pack("{s:o, s:I, s:I, s:o, s:o, s:o}", "pipeline",
                     client_json_text(r->name),
                     "trainings", r->trainings, "samples_trained", r->samples,
                     "gpu_hours", pc_number(r->gpu_hours), "energy_j",
                     pc_number(r->energy_j), "composite", pc_composites(r));
}

/* The first handler and metric any of the rows' results name, for the
 * table's default. */
static void pc_default_view(const pc_row *rows, int n, const char **handler,
                            const char **metric) {
    for (int k = 0; k < n && !(*handler && *metric); k++) {
        json_t *doc, *res;
        size_t i, j;
        json_array_foreach(rows[k].docs, i, doc)
        json_array_foreach(json_object_get(doc, "results"), j, res) {
            if (!*handler)
                *handler = json_string_value(json_object_get(res, "handler"));
            void *it = json_object_iter(json_object_get(res, "metrics"));
            if (!*metric && it) *metric = json_object_iter_key(it);
        }
    }
}

static void pc_print_table(const pc_row *rows, int n, const char *handler,
                           const char *metric) {
    printf("composite model: %s, handler %s (active: the model serving "
           "each window; trained: the one in training then)\n",
           metric, handler);
    printf("%-22s %9s %9s %8s %10s %8s %8s %7s\n", "PIPELINE", "TRAININGS",
           "SAMPLES", "GPU-H", "ENERGY-KJ", "ACTIVE", "TRAINED", "WINDOWS");
    for (int k = 0; k < n; k++) {
        const pc_row *r = &rows[k];
        pl_eval_result *rs;
        size_t nr = pc_results(r, handler, metric, &rs);
        pl_composite c = pl_composite_score(rs, nr, r->models, r->ends,
                                            r->nmodels);
        free(rs);
        printf("%-22s %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT
               " %8.4f %10.2f %8.4f %8.4f %7zu\n", r->name, r->trainings,
               r->samples, r->gpu_hours, r->energy_j / 1000, c.active,
               c.trained, c.windows);
    }
}

static void pc_free(pc_row *r) {
    json_decref(r->docs);
    free(r->models);
    free(r->ends);
}

/* Reads pipeline name's figures into r. false after saying why. */
static bool pc_load(const char *socket, const char *name, pc_row *r) {
    char dir[4200];
    *r = (pc_row){.name = name};
    if (!pv_dir(name, dir, sizeof(dir)) || !pc_trainings(socket, dir, r))
        return false;
    r->docs = pv_eval_load(dir);
    return true;
}

int pv_compare(const pv_compare_opts *o, char **names, int n) {
    pc_row *rows = calloc((size_t)n, sizeof(*rows));
    int loaded = 0, rc = CLI_OK;
    while (rows && loaded < n && pc_load(o->socket, names[loaded],
                                         &rows[loaded]))
        loaded++;
    if (!rows || loaded < n) rc = CLI_USAGE;
    const char *handler = o->handler, *metric = o->metric;
    if (rc == CLI_OK) pc_default_view(rows, n, &handler, &metric);
    if (rc == CLI_OK && (!handler || !metric)) {
        fprintf(stderr, "aegis pipeline compare: no evaluation results kept "
                "(do the pipelines have an evaluation section?)\n");
        rc = CLI_USAGE;
    }
    for (int k = 0; rc == CLI_OK && o->json && k < n; k++) {
        json_t *j = pc_row_json(&rows[k]);
        client_print_json(j);
        json_decref(j);
    }
    if (rc == CLI_OK && !o->json) pc_print_table(rows, n, handler, metric);
    if (rc == CLI_OK && o->svg)
        rc = pc_svg(o->svg, rows, n, handler, metric);
    for (int k = 0; k < loaded + (rows && loaded < n); k++) pc_free(&rows[k]);
    free(rows);
    return rc;
}
