/* sup_eval.c -- a pipeline's models evaluated (the file's `evaluation`
 * section; eval.h): after each training, and again once the pipeline
 * ends, one aegis job a model, covering all of that model's intervals:
 *
 *   evals/N.E.tset  the samples to predict: those of the model's
 *                   intervals, each once (a training set's format)
 *   evals/N.E.pred  what the evaluation command writes (eval.h)
 *   evals/N.E.json  the results kept: each interval's sample count and
 *                   metrics, or why there are none
 *
 * E is "train" (after_training handlers) or "end" (after_pipeline). The
 * job is named PIPELINE:vN or PIPELINE:wN.
 *
 * Why one job a model: loading a model and a framework costs more than
 * predicting a window. Overlapping windows then cost one prediction a
 * sample, and aegis cuts the metrics per window from the predictions.
 *
 * Crash safety: N.E.json is written last, synced and renamed into place.
 * A restarted supervisor skips what has one; a job it finds by name
 * (submitted before the crash) is waited for, not run again, and judged
 * on the samples it was given (N.E.tset), which it keeps until then.
 */
#include "supervisor.h"
#include "text_safe.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval.h"
#include "trainset.h"

/* A sample's place in time order. */
typedef struct ev_pos {
    int64_t ts;
    uint64_t index;             /* in the evaluation dataset */
} ev_pos;

/* One interval a model is evaluated on: its handler's, and its samples'
 * places in time order, [lo, hi). */
typedef struct ev_item {
    size_t handler;
    pl_interval iv;
    size_t lo, hi;
} ev_item;

/* One model's evaluation. */
typedef struct ev_run {
    uint32_t model;
    bool at_end;                /* after_pipeline handlers, else
                                   after_training */
    char name[128], tset[4400], pred[4400], kept[4400], model_path[4400];
    const pl_eval_config *cfg;  /* the file's (sup.eval) */
    pl_dataset *ds;             /* the evaluation dataset */
    bool own_ds;                /*   opened here, not the pipeline's */
    const pl_sample *samples;
    ev_pos *by_ts;
    uint64_t nsamples;
    int64_t *ends;              /* each trained model's last sample's ts, */
    uint32_t *end_model;        /*   its trigger, in trigger order */
    size_t nends;
    ev_item *items;
    size_t nitems;
    uint64_t *keys;             /* the samples to predict, ascending */
    size_t nkeys;
} ev_run;

static int ev_pos_cmp(const void *a, const void *b) {
    const ev_pos *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int ev_key_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The evaluation dataset, its samples in time order. */
static int ev_open_dataset(sup *s, ev_run *r, char *err, size_t errlen) {
    /* The pipeline's own dataset is not refreshed here: its feed may be
     * under way (a drift trigger's embedding settles fires), holding
     * pointers into its samples. It has what the feed has seen. */
    r->own_ds = strcmp(r->cfg->dataset, s->cfg.dataset) != 0;
    if (!r->own_ds) r->ds = s->ds;
    else if (pl_dataset_open(s->state, r->cfg->dataset, &r->ds, err, errlen) ||
             pl_dataset_refresh(r->ds, err, errlen))
        return -1;
    r->samples = pl_dataset_samples(r->ds);
    r->nsamples = pl_dataset_count(r->ds);
    r->by_ts = malloc((r->nsamples ? r->nsamples : 1) * sizeof(*r->by_ts));
    if (!r->by_ts) {
        snprintf(err, errlen, "evaluation of model %u: out of memory",
                 r->model);
        return -1;
    }
    for (uint64_t i = 0; i < r->nsamples; i++)
        r->by_ts[i] = (ev_pos){r->samples[i].ts, i};
    qsort(r->by_ts, r->nsamples, sizeof(*r->by_ts), ev_pos_cmp);
    return 0;
}

/* The trained models so far and the timestamp of each one's last sample:
 * a model serves from just after it (Modyn's "active" model). */
static int ev_trained(const sup *s, ev_run *r) {
    uint64_t count;
    const pl_sample *fed = sup_samples(s, &count);
    r->ends = malloc((s->nfires ? s->nfires : 1) * sizeof(*r->ends));
    r->end_model = malloc((s->nfires ? s->nfires : 1) * sizeof(*r->end_model));
    if (!r->ends || !r->end_model) return -1;
    for (uint32_t k = 0; k < s->nfires && k < s->log.ntrigs; k++) {
        const pl_trig *t = &s->log.trigs[k];
        if (strcmp(t->state, "done") != 0 || s->bounds[k] == 0 ||
            s->bounds[k] > count)
            continue;
        r->ends[r->nends] = fed[s->bounds[k] - 1].ts;
        r->end_model[r->nends++] = k;
    }
    return 0;
}

/* The first place in time order at or after ts. */
static size_t ev_place(const ev_run *r, int64_t ts) {
    size_t lo = 0, hi = r->nsamples;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->by_ts[mid].ts < ts) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Whether handler hd evaluates this model on an interval starting at
 * start (eval.h: pl_eval_serves). Before the pipeline ends, models after
 * this one are not known yet. */
static bool ev_served(const ev_run *r, const pl_eval_handler *hd,
                      int64_t start) {
    size_t i = 0;
    while (i < r->nends && r->end_model[i] != r->model) i++;
    return pl_eval_serves(hd->models, r->ends, r->nends, i, r->at_end,
                          start);
}

/* Handler h's intervals for this model, added to r->items. */
static int ev_add_handler(ev_run *r, size_t h) {
    const pl_eval_handler *hd = &r->cfg->handlers[h];
    pl_interval *iv;
    size_t n;
    if (pl_eval_intervals(&hd->strategy, r->ends, r->nends, &iv, &n) != 0)
        return -1;
    ev_item *grown = realloc(r->items, (r->nitems + n + 1) * sizeof(*grown));
    if (!grown) {
        free(iv);
        return -1;
    }
    r->items = grown;
    for (size_t i = 0; i < n; i++) {
        if (!ev_served(r, hd, iv[i].start)) continue;
        r->items[r->nitems++] = (ev_item){h, iv[i], ev_place(r, iv[i].start),
                                          ev_place(r, iv[i].end)};
    }
    free(iv);
    return 0;
}

/* The samples of all items, each once, as dataset keys in order. */
static int ev_collect_keys(ev_run *r) {
    unsigned char *in = calloc(r->nsamples ? r->nsamples : 1, 1);
    r->keys = malloc((r->nsamples ? r->nsamples : 1) * sizeof(*r->keys));
    if (!in || !r->keys) {
        free(in);
        return -1;
    }
    for (size_t i = 0; i < r->nitems; i++)
        for (size_t p = r->items[i].lo; p < r->items[i].hi; p++)
            in[p] = 1;
    for (uint64_t p = 0; p < r->nsamples; p++)
        if (in[p]) r->keys[r->nkeys++] = r->samples[r->by_ts[p].index].key;
    free(in);
    qsort(r->keys, r->nkeys, sizeof(*r->keys), ev_key_cmp);
    return 0;
}

int sup_eval_inputs(sup *s, const sup_eval_job *j, char *err,
                    size_t errlen) {
    pl_trainset_item *items = calloc(j->nkeys ? j->nkeys : 1, sizeof(*items));
    if (!items) {
        snprintf(err, errlen, "%s: out of memory", j->tset);
        return -1;
    }
    for (size_t i = 0; i < j->nkeys; i++)
        items[i] = (pl_trainset_item){.key = j->keys[i], .weight = 1};
    int rc = pl_trainset_write(j->tset, items, j->nkeys, 0, j->model, err,
                               errlen);
    free(items);
    if (rc != 0) return -1;
    unlink(j->pred);
    sup_job_env(s, j->dataset);
    setenv("AEGIS_EVAL_KEYS", j->tset, 1);
    setenv("AEGIS_EVAL_OUT", j->pred, 1);
    setenv("AEGIS_MODEL", j->model_path, 1);
    sup_setenv_u("AEGIS_TRIGGER", j->model);
    if (j->batch_size > 0)
        sup_setenv_u("AEGIS_BATCH_SIZE", (unsigned long long)j->batch_size);
    return 0;
}

/* r's job as sup_eval_inputs takes it. */
static sup_eval_job ev_job(const ev_run *r) {
    return (sup_eval_job){r->keys, r->nkeys, r->model, r->tset, r->pred,
                          r->model_path, r->cfg->dataset, r->cfg->batch_size};
}

/* The job's keys file, and what it finds in its environment
 * (docs/pipelines.md, "The evaluation command"). */
static int ev_prepare(sup *s, void *ctx, char *err, size_t errlen) {
    sup_eval_job j = ev_job(ctx);
    return sup_eval_inputs(s, &j, err, errlen);
}

/* A bound as JSON: null for the dataset's start or end. */
static json_t *ev_bound(int64_t ts) {
    return ts == INT64_MIN || ts == INT64_MAX ? json_null()
                                              : json_integer(ts);
}

/* Item i's metrics from the predictions: an object, or NULL with why. */
static json_t *ev_item_metrics(const ev_run *r, const ev_item *it,
                               const pl_pred *p, char *why, size_t whylen) {
    size_t n = it->hi - it->lo;
    size_t *rows = malloc((n ? n : 1) * sizeof(*rows));
    int64_t *truth = malloc((n ? n : 1) * sizeof(*truth));
    json_t *m = json_object();
    for (size_t i = 0; rows && truth && i < n; i++) {
        const pl_sample *smp = &r->samples[r->by_ts[it->lo + i].index];
        rows[i] = (size_t)pl_pred_find(p, smp->key); /* all found: checked */
        truth[i] = smp->label;
    }
    for (size_t k = 0; m && rows && truth && k < r->cfg->nmetrics; k++) {
        double v;
        if (pl_metric_compute(&r->cfg->metrics[k], p, rows, truth, n, &v, why,
                              whylen) != 0) {
            json_decref(m);
            m = NULL;
            break;
        }
        json_object_set_new(m, r->cfg->metrics[k].name,
                            isnan(v) ? json_null() : json_real(v));
    }
    if (!rows || !truth) snprintf(why, whylen, "out of memory");
    free(rows);
    free(truth);
    return rows && truth ? m : (json_decref(m), NULL);
}

int sup_eval_load(const sup_eval_job *j, pl_pred *p, char *why,
                  size_t whylen) {
    size_t missing = 0;
    uint64_t first = 0;
    if (pl_pred_load(j->pred, p, why, whylen) != 0) return -1;
    for (size_t i = 0; i < j->nkeys; i++)
        if (pl_pred_find(p, j->keys[i]) < 0 && missing++ == 0)
            first = j->keys[i];
    if (missing)
        snprintf(why, whylen, "%s: no prediction for %zu of the %zu samples "
                 "asked for (the first: key %" PRIu64 ")", j->pred, missing,
                 j->nkeys, first);
    else if (p->count != j->nkeys)
        snprintf(why, whylen, "%s: %zu predictions of samples not asked for",
                 j->pred, p->count - j->nkeys);
    if (!missing && p->count == j->nkeys) return 0;
    pl_pred_free(p);
    return -1;
}

/* The results of every item from the predictions file: an array, or
 * NULL with why. */
static json_t *ev_results(const ev_run *r, char *why, size_t whylen) {
    pl_pred p;
    char msg[1024];
    sup_eval_job j = ev_job(r);
    if (sup_eval_load(&j, &p, why, whylen) != 0) return NULL;
    json_t *all = json_array();
    for (size_t i = 0; all && i < r->nitems; i++) {
        const ev_item *it = &r->items[i];
        json_t *m = ev_item_metrics(r, it, &p, msg, sizeof(msg));
        if (!m) {
            snprintf(why, whylen, "%s: %s", r->pred, msg);
            json_decref(all);
            all = NULL;
            break;
        }
        bool some = it->hi > it->lo;
        json_array_append_new(all, json_pack(
            "{s:s, s:o, s:o, s:I, s:o, s:o, s:o}", "handler",
            r->cfg->handlers[it->handler].name, "start", ev_bound(it->iv.start),
            "end", ev_bound(it->iv.end), "samples", (json_int_t)(it->hi - it->lo),
            "first_ts", some ? json_integer(r->by_ts[it->lo].ts) : json_null(),
            "last_ts", some ? json_integer(r->by_ts[it->hi - 1].ts)
                            : json_null(),
            "metrics", m));
    }
    pl_pred_free(&p);
    return all;
}

/* The trigger's last sample's ts (null when not trained). */
static json_t *ev_trained_until(const ev_run *r) {
    for (size_t i = 0; i < r->nends; i++)
        if (r->end_model[i] == r->model) return json_integer(r->ends[i]);
    return json_null();
}

/* Keeps r's results (NULL: none, and why). why may quote the predictions
 * file, the evaluation command's bytes (or cut a character of them): each
 * byte of it that starts no UTF-8 character is '?', as jansson takes no
 * such string (the failure was not kept, and the supervisor stopped). */
static int ev_keep_results(const ev_run *r, json_t *results,
                           const char *why_raw, char *err, size_t errlen) {
    char why[2048];
    text_as_utf8(why, sizeof(why), why_raw);
    json_t *doc = json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o}",
        "model", (json_int_t)r->model, "execution_time",
        r->at_end ? "after_pipeline" : "after_training", "job", r->name,
        "state", results ? "done" : "failed", "trained_until",
        ev_trained_until(r), "results", results ? results : json_array(),
        "error", results ? json_null() : json_string(why));
    int rc = sup_keep_json(r->kept, doc, err, errlen);
    json_decref(doc);
    if (results)
        printf("evaluation of model %u: %zu intervals, %zu samples; %s\n",
               r->model, r->nitems, r->nkeys, r->kept);
    else
        printf("evaluation of model %u (%s): %s; no results\n", r->model,
               r->name, why);
    return rc;
}

/* Runs the job and keeps what came of it: the results, or why none. */
static int ev_run_job(sup *s, ev_run *r, char *err, size_t errlen) {
    char state[16], why[2048] = "";
    if (sup_run_job(s, r->name, &s->cfg.evaluation, ev_prepare, r, state,
                    sizeof(state), err, errlen) != 0)
        return -1;
    json_t *results = NULL;
    if (strcmp(state, "done") != 0)
        snprintf(why, sizeof(why), "its job ended %s", state);
    else
        results = ev_results(r, why, sizeof(why));
    int rc = ev_keep_results(r, results, why, err, errlen);
    if (results) unlink(r->pred);
    unlink(r->tset);
    return rc;
}

/* Keeps in r->by_ts only the samples whose keys are among keys[0..n)
 * (ascending). */
static void ev_keep_only(ev_run *r, const uint64_t *keys, size_t n) {
    uint64_t kept = 0;
    for (uint64_t p = 0; p < r->nsamples; p++) {
        uint64_t key = r->samples[r->by_ts[p].index].key;
        if (bsearch(&key, keys, n, sizeof(*keys), ev_key_cmp))
            r->by_ts[kept++] = r->by_ts[p];
    }
    r->nsamples = kept;
}

/* A job of r's name submitted before a restart predicts the samples of
 * the plan it was given, kept in r->tset, not those of a plan made now:
 * the dataset may have grown since, and its intervals' samples with it.
 * So the plan is cut back to the kept samples (each interval's samples
 * then are those it had). A tset that cannot be read is said, and the
 * plan made now stands: the job's predictions are checked against it. */
static void ev_plan_as_given(sup *s, ev_run *r) {
    if (access(r->tset, F_OK) != 0 || sup_find_job(s, r->name) <= 0) return;
    pl_trainset_item *items;
    size_t n;
    uint64_t seed;
    uint32_t trigger;
    char why[1024];
    if (pl_trainset_read(r->tset, &items, &n, &seed, &trigger, why,
                         sizeof(why)) != 0) {
        printf("evaluation of model %u (%s): the samples its job was given "
               "are unknown: %s\n", r->model, r->name, why);
        return;
    }
    uint64_t *keys = malloc((n ? n : 1) * sizeof(*keys));
    if (keys) {
        for (size_t i = 0; i < n; i++) keys[i] = items[i].key;
        qsort(keys, n, sizeof(*keys), ev_key_cmp);
        ev_keep_only(r, keys, n);
    }
    free(keys);
    free(items);
}

/* What r needs before its job: its files, dataset, intervals, keys. */
static int ev_plan(sup *s, ev_run *r, char *err, size_t errlen) {
    const char *e = r->at_end ? "end" : "train";
    char ext[16];
    snprintf(ext, sizeof(ext), "%s.tset", e);
    sup_file(s, "evals", ext, r->model, r->tset, sizeof(r->tset));
    snprintf(ext, sizeof(ext), "%s.pred", e);
    sup_file(s, "evals", ext, r->model, r->pred, sizeof(r->pred));
    snprintf(ext, sizeof(ext), "%s.json", e);
    sup_file(s, "evals", ext, r->model, r->kept, sizeof(r->kept));
    sup_file(s, "models", "model", r->model, r->model_path,
             sizeof(r->model_path));
    snprintf(r->name, sizeof(r->name), "%s:%c%u", strrchr(s->dir, '/') + 1,
             r->at_end ? 'w' : 'v', r->model);
    r->cfg = &s->eval;
    if (ev_open_dataset(s, r, err, errlen) != 0) return -1;
    ev_plan_as_given(s, r);
    int oom = ev_trained(s, r);
    for (size_t h = 0; !oom && h < r->cfg->nhandlers; h++)
        if (r->cfg->handlers[h].after_pipeline == r->at_end &&
            !r->cfg->handlers[h].manual)
            oom = ev_add_handler(r, h);
    if (oom || ev_collect_keys(r) != 0) {
        snprintf(err, errlen, "evaluation of model %u: out of memory",
                 r->model);
        return -1;
    }
    return 0;
}

static void ev_free(ev_run *r) {
    if (r->own_ds && r->ds) pl_dataset_close(r->ds);
    free(r->by_ts);
    free(r->ends);
    free(r->end_model);
    free(r->items);
    free(r->keys);
}

/* Whether the file has handlers of that execution time. */
static bool ev_wanted(const sup *s, bool at_end) {
    for (size_t h = 0; h < s->eval.nhandlers; h++)
        if (s->eval.handlers[h].after_pipeline == at_end &&
            !s->eval.handlers[h].manual)
            return true;
    return false;
}

int sup_evaluate(sup *s, uint32_t model, bool at_end, char *err,
                 size_t errlen) {
    ev_run r = {.model = model, .at_end = at_end};
    if (!ev_wanted(s, at_end)) return 0;
    char kept[4400];
    sup_file(s, "evals", at_end ? "end.json" : "train.json", model, kept,
             sizeof(kept));
    if (access(kept, F_OK) == 0) return 0;
    int rc = ev_plan(s, &r, err, errlen);
    if (rc == 0 && access(r.model_path, R_OK) != 0) {
        /* kept as failed all the same: compare needs its trained_until */
        char why[4600];
        snprintf(why, sizeof(why), "%s: %s (model_storage.keep_last?)",
                 r.model_path, strerror(errno));
        rc = ev_keep_results(&r, NULL, why, err, errlen);
    } else if (rc == 0) {
        rc = ev_run_job(s, &r, err, errlen);
    }
    ev_free(&r);
    return rc ? -1 : 0;
}
