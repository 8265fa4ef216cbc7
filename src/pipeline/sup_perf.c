/* sup_perf.c -- a performance trigger's checks (trigger.h, pl_perf_fn):
 * the newest model scored on the asked windows of samples, in one aegis
 * job running the evaluation section's command, named PIPELINE:pK:
 *
 *   checks/K.tset  the samples to predict (all windows', each once)
 *   checks/K.pred  what the command writes (eval.h)
 *   checks/K.json  the answer kept: per window the samples, those
 *                  misclassified and each metric; or why there is none
 *
 * Why answers are kept: as for embeddings (sup_embed.c), a restarted
 * supervisor feeds its trigger the stream again and asks the same checks
 * in the same order; the K-th gets the answer kept for K, so the trigger
 * fires where it fired before and no check runs twice. A check that
 * failed is kept as failed: its detection point does not fire again.
 */
#include "supervisor.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "perf.h"
#include "text_safe.h"

/* One check: its files, model, and samples (dataset keys). */
typedef struct pf_check {
    uint32_t k;
    char name[128], tset[4400], pred[4400], kept[4400], model_path[4400];
    int64_t model;
    const pl_perf_ask *ask;
    uint64_t **keys;            /* per window, the dataset's keys */
    uint64_t *all;              /* every window's, sorted, each once */
    size_t nall;
    uint32_t crc;               /* of the windows' keys and sizes */
} pf_check;

static int pf_u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The windows' keys as the dataset's (a replay feeds places), their
 * union, and the CRC that identifies the ask. 0, or -1 out of memory. */
static int pf_keys(const sup *s, pf_check *c) {
    size_t total = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    c->keys = calloc(c->ask->nwindows, sizeof(*c->keys));
    for (size_t w = 0; c->keys && w < c->ask->nwindows; w++)
        total += c->ask->n[w];
    c->all = malloc((total ? total : 1) * sizeof(*c->all));
    if (!c->keys || !c->all) return -1;
    for (size_t w = 0; w < c->ask->nwindows; w++) {
        size_t n = c->ask->n[w];
        if (!(c->keys[w] = malloc((n ? n : 1) * sizeof(uint64_t)))) return -1;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = c->ask->keys[w][i];
            c->keys[w][i] = s->replay ? s->order_keys[k] : k;
            c->all[c->nall++] = c->keys[w][i];
        }
        crc = crc32(crc, (const Bytef *)&n, sizeof(n));
        crc = crc32(crc, (const Bytef *)c->keys[w], (uInt)(n * 8));
    }
    c->crc = (uint32_t)crc;
    qsort(c->all, c->nall, sizeof(*c->all), pf_u64_cmp);
    size_t u = 0;
    for (size_t i = 0; i < c->nall; i++)
        if (u == 0 || c->all[u - 1] != c->all[i]) c->all[u++] = c->all[i];
    c->nall = u;
    return 0;
}

/* The answer kept for c: 0 with out (1 when it is a failure kept), 2
 * when none is kept, -1 with err when the one kept is for another ask. */
static int pf_load(const pf_check *c, perf_obs *out, char *err,
                   size_t errlen) {
    json_error_t jerr;
    json_t *doc = json_load_file(c->kept, 0, &jerr), *w;
    if (!doc && access(c->kept, F_OK) != 0) return 2;
    bool same = doc &&
        json_integer_value(json_object_get(doc, "model")) == c->model &&
        json_integer_value(json_object_get(doc, "keys_crc")) == c->crc;
    size_t i;
    json_array_foreach(json_object_get(doc, "windows"), i, w) {
        if (!same || i >= c->ask->nwindows) break;
        out[i].samples = (size_t)json_integer_value(json_object_get(w, "samples"));
        out[i].misclassified = (size_t)json_integer_value(
            json_object_get(w, "misclassified"));
        for (size_t m = 0; m < c->ask->nmetrics; m++) {
            json_t *v = json_array_get(json_object_get(w, "values"), m);
            out[i].values[m] = json_is_number(v) ? json_number_value(v) : NAN;
        }
    }
    int rc = json_object_get(doc, "error") ? 1 : 0;
    json_decref(doc);
    if (same) return rc;
    snprintf(err, errlen, "%s: kept for other samples or another model than "
             "this run asks (the dataset or the trigger changed?); remove "
             "the pipeline's checks folder to check again", c->kept);
    return -1;
}

/* doc, with what identifies the ask, into c's kept file. */
static int pf_keep(const pf_check *c, json_t *doc, char *err, size_t errlen) {
    json_object_set_new(doc, "model", json_integer(c->model));
    json_object_set_new(doc, "keys_crc", json_integer(c->crc));
    return sup_keep_json(c->kept, doc, err, errlen);
}

/* Window w's scores from the predictions: its samples' true labels from
 * the dataset. 0, or -1 with why. */
static int pf_score(const sup *s, const pf_check *c, size_t w,
                    const pl_pred *p, perf_obs *o, char *why, size_t whylen) {
    size_t n = c->ask->n[w];
    const pl_sample *all = pl_dataset_samples(s->ds);
    size_t *rows = malloc((n ? n : 1) * sizeof(*rows));
    int64_t *truth = malloc((n ? n : 1) * sizeof(*truth));
    int rc = rows && truth ? 0 : -1;
    *o = (perf_obs){.samples = n};
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rows[i] = (size_t)pl_pred_find(p, c->keys[w][i]);
        truth[i] = all[c->keys[w][i]].label;
        o->misclassified += pl_pred_class(p, rows[i]) != truth[i];
    }
    for (size_t m = 0; rc == 0 && m < c->ask->nmetrics; m++)
        rc = pl_metric_compute(&c->ask->metrics[m], p, rows, truth, n,
                               &o->values[m], why, whylen);
    if (!rows || !truth) snprintf(why, whylen, "out of memory");
    free(rows);
    free(truth);
    return rc;
}

/* The kept form of the windows' scores. */
static json_t *pf_doc(const pf_check *c, const perf_obs *out) {
    json_t *windows = json_array();
    for (size_t w = 0; w < c->ask->nwindows; w++) {
        json_t *values = json_array();
        for (size_t m = 0; m < c->ask->nmetrics; m++)
            json_array_append_new(values, isnan(out[w].values[m])
                                              ? json_null()
                                              : json_real(out[w].values[m]));
        json_array_append_new(windows, json_pack(
            "{s:I, s:I, s:o}", "samples", (json_int_t)out[w].samples,
            "misclassified", (json_int_t)out[w].misclassified, "values",
            values));
    }
    return json_pack("{s:o}", "windows", windows);
}

/* Every window scored from the job's predictions. 0, or -1 with why. */
static int pf_results(const sup *s, const pf_check *c, perf_obs *out,
                      char *why, size_t whylen) {
    sup_eval_job j = {c->all, c->nall, (uint32_t)c->model, c->tset, c->pred,
                      c->model_path, s->cfg.dataset, 0};
    pl_pred p;
    char msg[1024];
    if (sup_eval_load(&j, &p, why, whylen) != 0) return -1;
    int rc = 0;
    for (size_t w = 0; rc == 0 && w < c->ask->nwindows; w++)
        if ((rc = pf_score(s, c, w, &p, &out[w], msg, sizeof(msg))) != 0)
            snprintf(why, whylen, "%s: %s", c->pred, msg);
    pl_pred_free(&p);
    return rc;
}

static int pf_prepare(sup *s, void *ctx, char *err, size_t errlen) {
    const pf_check *c = ctx;
    sup_eval_job j = {c->all, c->nall, (uint32_t)c->model, c->tset, c->pred,
                      c->model_path, s->cfg.dataset, 0};
    return sup_eval_inputs(s, &j, err, errlen);
}

static double pf_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Runs c's job, scores it and keeps the answer (or why there is none):
 * 0 (1: no answer, the check does not fire), or -1 with err. */
static int pf_run(sup *s, pf_check *c, perf_obs *out, char *err,
                  size_t errlen) {
    char state[16], raw[2048] = "", why[2048];
    double began = pf_now();
    if (sup_run_job(s, c->name, &s->cfg.evaluation, pf_prepare, c, state,
                    sizeof(state), err, errlen) != 0)
        return -1;
    int failed = strcmp(state, "done") != 0
                     ? snprintf(raw, sizeof(raw), "its job ended %s", state)
                     : pf_results(s, c, out, raw, sizeof(raw)) != 0;
    /* raw may quote the predictions file's bytes: '?' for each one that
     * starts no UTF-8 character, which JSON cannot hold (the answer was
     * not kept, and the supervisor stopped) */
    text_as_utf8(why, sizeof(why), raw);
    json_t *doc = failed ? json_pack("{s:s}", "error", why) : pf_doc(c, out);
    int rc = pf_keep(c, doc, err, errlen);
    json_decref(doc);
    if (failed)
        printf("performance check %u: %s; it does not fire\n", c->k, why);
    else
        printf("performance check %u: model of trigger %" PRId64 ", %zu "
               "samples, accuracy %.4f; cost %.2f s (one job)\n", c->k,
               c->model, out[c->ask->nwindows - 1].samples,
               1 - (double)out[c->ask->nwindows - 1].misclassified /
                       (double)(out[c->ask->nwindows - 1].samples
                                    ? out[c->ask->nwindows - 1].samples : 1),
               pf_now() - began);
    if (rc == 0 && !failed) unlink(c->pred);
    unlink(c->tset);
    return rc < 0 ? -1 : failed ? 1 : 0;
}

static void pf_free(pf_check *c) {
    for (size_t w = 0; c->keys && w < c->ask->nwindows; w++) free(c->keys[w]);
    free(c->keys);
    free(c->all);
}

int sup_perf(void *ctx, const pl_perf_ask *ask, perf_obs *out, char *err,
             size_t errlen) {
    sup *s = ctx;
    pf_check c = {.k = s->nchecks++, .ask = ask};
    /* No fire can follow maximum_triggers: nothing to decide. */
    if (s->cfg.max_triggers > 0 && s->nfires >= s->cfg.max_triggers) return 1;
    while (s->next < s->nfires)
        if (sup_settle(s, err, errlen) != 0) return -1;
    c.model = sup_newest_model(s, c.model_path, sizeof(c.model_path));
    if (c.model < 0) return 1;
    snprintf(c.name, sizeof(c.name), "%s:p%u", strrchr(s->dir, '/') + 1, c.k);
    sup_file(s, "checks", "tset", c.k, c.tset, sizeof(c.tset));
    sup_file(s, "checks", "pred", c.k, c.pred, sizeof(c.pred));
    sup_file(s, "checks", "json", c.k, c.kept, sizeof(c.kept));
    int rc = pf_keys(s, &c);
    if (rc != 0) snprintf(err, errlen, "performance check %u: out of memory",
                          c.k);
    if (rc == 0 && (rc = pf_load(&c, out, err, errlen)) == 2)
        rc = pf_run(s, &c, out, err, errlen);
    pf_free(&c);
    return rc;
}
