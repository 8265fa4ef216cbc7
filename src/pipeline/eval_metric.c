/* eval_metric.c -- the metrics an evaluation reports (eval.h): an entry
 * of evaluation.datasets[].metrics read with Modyn's keys, and Accuracy
 * (top-n), F1Score and RocAuc computed from a predictions file's rows and
 * the samples' true labels.
 *
 * Where eval.h leaves room:
 *  - ties in top-n accuracy: classes are ranked by score, equal scores by
 *    class (the lower first), and a label counts if its rank is below n.
 *    For n = 1 that is pl_pred_class, so Accuracy, micro F1 and a labels
 *    file agree; and a model that scores every class the same does not
 *    get every label "in its top n" (as counting only strictly higher
 *    scores would give it);
 *  - F1 macro is the mean over all num_classes classes, as Modyn's: a
 *    class that is neither a true nor a predicted label (its F1 is 0/0)
 *    counts 0, as does a class with no true positive;
 *  - RocAuc averages, with equal weight, the classes that have both
 *    positive and negative samples; NAN when none has;
 *  - no samples: NAN, whatever the predictions hold (an empty file has no
 *    width to check against);
 *  - num_classes and topn are at most PL_PRED_MAX_WIDTH (the counts are
 *    allocated per class); evaluation_transformer_function: null is
 *    taken as absent.
 */
#include "eval.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "pl_config.h"

/* ---- the metric's entry ---- */

/* In the order of pl_metric_kind and pl_f1_average. */
static const char *const kind_names[] = {"Accuracy", "F1Score", "RocAuc", NULL};
static const char *const average_names[] = {"macro", "micro", "weighted",
                                            "binary", NULL};

/* Each kind's keys, as Modyn's metric configurations have them. */
static const char *const accuracy_keys[] = {
    "name", "evaluation_transformer_function", "topn", NULL};
static const char *const f1_keys[] = {
    "name", "evaluation_transformer_function", "num_classes", "average",
    "pos_label", NULL};
static const char *const rocauc_keys[] = {
    "name", "evaluation_transformer_function", NULL};
static const char *const *const kind_keys[] = {accuracy_keys, f1_keys,
                                               rocauc_keys};

static int parse_accuracy(const json_t *obj, const char *path, pl_metric *m,
                          char *err, size_t errlen)
{
    int64_t topn;
    if (plcfg_int(obj, path, "topn", 1, 1, PL_PRED_MAX_WIDTH, &topn, err,
                  errlen) < 0)
        return -1;
    m->topn = (int)topn;
    if (m->topn == 1)
        snprintf(m->name, sizeof m->name, "Accuracy");
    else
        snprintf(m->name, sizeof m->name, "Top-%d-Accuracy", m->topn);
    return 0;
}

/* average binary is one class's F1 of two: pos_label's. */
static int check_binary(const char *path, const pl_metric *m, char *err,
                        size_t errlen)
{
    if (m->num_classes != 2)
        return plcfg_fail(err, errlen, path, "num_classes",
                          "must be 2 for average binary");
    if (m->pos_label < 0 || m->pos_label > 1)
        return plcfg_fail(err, errlen, path, "pos_label",
                          "must be 0 or 1 for average binary");
    return 0;
}

static int parse_f1(const json_t *obj, const char *path, pl_metric *m,
                    char *err, size_t errlen)
{
    int64_t k, pos;
    bool present;
    int average;
    if (plcfg_opt_int(obj, path, "num_classes", 2, PL_PRED_MAX_WIDTH, &k,
                      &present, err, errlen) < 0 ||
        plcfg_enum(obj, path, "average", average_names, PL_F1_MACRO,
                   &average, err, errlen) < 0 ||
        plcfg_int(obj, path, "pos_label", 1, INT32_MIN, INT32_MAX, &pos,
                  err, errlen) < 0)
        return -1;
    if (!present)
        return plcfg_fail(err, errlen, path, "num_classes",
                          "required for F1Score (an integer >= 2)");
    m->num_classes = (int)k;
    m->average = (pl_f1_average)average;
    m->pos_label = (int)pos;
    if (m->average == PL_F1_BINARY && check_binary(path, m, err, errlen) < 0)
        return -1;
    snprintf(m->name, sizeof m->name, "F1-%s", average_names[average]);
    return 0;
}

/* The kind named, with the kind's keys only. */
static int parse_kind(const json_t *obj, const char *path, pl_metric *m,
                      char *err, size_t errlen)
{
    int kind;
    if (!json_is_object(obj))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping");
    if (plcfg_enum(obj, path, "name", kind_names, -1, &kind, err, errlen) < 0)
        return -1;
    if (kind < 0)
        return plcfg_fail(err, errlen, path, "name",
                          "required: Accuracy, F1Score or RocAuc");
    m->kind = (pl_metric_kind)kind;
    return plcfg_check_keys(obj, path, kind_keys[kind], err, errlen);
}

int pl_metric_parse(const json_t *obj, const char *path, pl_metric *m,
                    char *err, size_t errlen)
{
    *m = (pl_metric){.topn = 1, .average = PL_F1_MACRO, .pos_label = 1};
    if (parse_kind(obj, path, m, err, errlen) < 0)
        return -1;
    const json_t *tf = json_object_get(obj, "evaluation_transformer_function");
    if (tf && !json_is_null(tf))
        return plcfg_fail(err, errlen, path, "evaluation_transformer_function",
                          "not supported: transform the model's outputs in "
                          "the evaluation command, which writes the "
                          "predictions");
    switch (m->kind) {
    case PL_METRIC_ACCURACY:
        return parse_accuracy(obj, path, m, err, errlen);
    case PL_METRIC_F1:
        return parse_f1(obj, path, m, err, errlen);
    case PL_METRIC_ROCAUC:
        snprintf(m->name, sizeof m->name, "RocAuc");
        return 0;
    }
    return plcfg_fail(err, errlen, path, "name", "unknown metric");
}

/* ---- computing ---- */

/* What a metric is computed over, and where its error goes. */
typedef struct eval_in {
    const pl_metric *m;
    const pl_pred *p;
    const size_t *rows;
    const int64_t *truth;
    size_t n;
    char *err;
    size_t errlen;
} eval_in;

static int fail(const eval_in *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "NAME: what", so the caller's context names the dataset and model. */
static int fail(const eval_in *in, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(in->err, in->errlen, "%s: %s", in->m->name, msg);
    return -1;
}

static uint64_t key_of(const eval_in *in, size_t i)
{
    return in->p->keys[in->rows[i]];
}

static int check_rows(const eval_in *in)
{
    for (size_t i = 0; i < in->n; i++)
        if (in->rows[i] >= in->p->count)
            return fail(in, "sample %zu: row %zu, but the predictions have "
                        "%zu", i, in->rows[i], in->p->count);
    return 0;
}

/* Every true label in [0, limit): what names the limit. */
static int check_truth(const eval_in *in, int64_t limit, const char *what)
{
    for (size_t i = 0; i < in->n; i++)
        if (in->truth[i] < 0 || in->truth[i] >= limit)
            return fail(in, "true label %" PRId64 " of key %" PRIu64 " is "
                        "not in 0..%" PRId64 " (%s %" PRId64 ")",
                        in->truth[i], key_of(in, i), limit - 1, what, limit);
    return 0;
}

static int need_scores(const eval_in *in)
{
    if (in->p->width >= 2)
        return 0;
    return fail(in, "needs a score a class; the predictions hold labels only");
}

static const float *scores_of(const eval_in *in, size_t i)
{
    return in->p->scores + in->rows[i] * in->p->width;
}

/* ---- Accuracy ---- */

/* Whether class t is among the topn highest of w scores s: fewer than
 * topn classes come before it, by a higher score or an equal one and a
 * lower class. */
static bool in_top_n(const float *s, uint32_t w, int64_t t, int topn)
{
    int before = 0;
    for (uint32_t c = 0; c < w && before < topn; c++)
        before += s[c] > s[t] || (s[c] == s[t] && c < t);
    return before < topn;
}

static int accuracy(const eval_in *in, double *value)
{
    const pl_pred *p = in->p;
    if (in->m->topn > 1 && need_scores(in) < 0)
        return -1;
    if (p->width && check_truth(in, p->width, "score width") < 0)
        return -1;
    size_t hits = 0;
    for (size_t i = 0; i < in->n; i++)
        hits += p->width ? in_top_n(scores_of(in, i), p->width, in->truth[i],
                                    in->m->topn)
                         : p->labels[in->rows[i]] == in->truth[i];
    *value = (double)hits / (double)in->n;
    return 0;
}

/* ---- F1Score ---- */

typedef struct f1_counts {
    uint64_t tp, fp, fn;
} f1_counts;

static double f1_of(const f1_counts *c)
{
    if (c->tp == 0)
        return 0.0;
    return 2.0 * (double)c->tp / (2.0 * (double)c->tp + (double)c->fp +
                                  (double)c->fn);
}

/* Each class's counts from the predicted class against the true one. */
static int count_f1(const eval_in *in, f1_counts *c)
{
    int k = in->m->num_classes;
    for (size_t i = 0; i < in->n; i++) {
        int64_t pred = pl_pred_class(in->p, in->rows[i]), t = in->truth[i];
        if (pred < 0 || pred >= k)
            return fail(in, "predicted label %" PRId64 " of key %" PRIu64
                        " is not in 0..%d (num_classes %d)", pred,
                        key_of(in, i), k - 1, k);
        if (pred == t) {
            c[t].tp++;
        } else {
            c[pred].fp++;
            c[t].fn++;
        }
    }
    return 0;
}

static double f1_macro(const f1_counts *c, int k)
{
    double sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += f1_of(&c[i]);
    return sum / k;
}

static double f1_micro(const f1_counts *c, int k)
{
    f1_counts all = {0, 0, 0};
    for (int i = 0; i < k; i++) {
        all.tp += c[i].tp;
        all.fp += c[i].fp;
        all.fn += c[i].fn;
    }
    return f1_of(&all);
}

/* Each class's F1 weighted by its true samples (tp + fn). */
static double f1_weighted(const f1_counts *c, int k, size_t n)
{
    double sum = 0.0;
    for (int i = 0; i < k; i++)
        sum += (double)(c[i].tp + c[i].fn) * f1_of(&c[i]);
    return sum / (double)n;
}

static double f1_average(const pl_metric *m, const f1_counts *c, size_t n)
{
    switch (m->average) {
    case PL_F1_MACRO: return f1_macro(c, m->num_classes);
    case PL_F1_MICRO: return f1_micro(c, m->num_classes);
    case PL_F1_WEIGHTED: return f1_weighted(c, m->num_classes, n);
    case PL_F1_BINARY: return f1_of(&c[m->pos_label]);
    }
    return NAN;
}

/* The metric's own fields, for a pl_metric not made by pl_metric_parse. */
static int check_f1(const eval_in *in)
{
    const pl_metric *m = in->m;
    if (m->num_classes < 2 || m->num_classes > PL_PRED_MAX_WIDTH)
        return fail(in, "num_classes %d is not in 2..%d", m->num_classes,
                    PL_PRED_MAX_WIDTH);
    if (m->average == PL_F1_BINARY &&
        (m->pos_label < 0 || m->pos_label >= m->num_classes))
        return fail(in, "pos_label %d is not a class", m->pos_label);
    if (in->p->width && in->p->width < (uint32_t)m->num_classes)
        return fail(in, "num_classes %d, but the predictions score %" PRIu32
                    " classes", m->num_classes, in->p->width);
    return 0;
}

static int f1(const eval_in *in, double *value)
{
    if (check_f1(in) < 0 ||
        check_truth(in, in->m->num_classes, "num_classes") < 0)
        return -1;
    f1_counts *c = calloc((size_t)in->m->num_classes, sizeof *c);
    if (!c)
        return fail(in, "out of memory");
    int rc = count_f1(in, c);
    if (rc == 0)
        *value = f1_average(in->m, c, in->n);
    free(c);
    return rc;
}

/* ---- RocAuc ---- */

typedef struct scored {
    float score;
    bool positive;
} scored;

static int cmp_scored(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    return (x->score > y->score) - (x->score < y->score);
}

/* The Mann-Whitney U of scores sorted ascending: the (positive, negative)
 * pairs the positive's score wins, a tie counting half. The same as the
 * positives' rank sum with equal scores sharing their average rank, less
 * npos (npos + 1) / 2, without the rank sum's large numbers. */
static double mann_whitney_u(const scored *b, size_t n)
{
    double u = 0.0;
    size_t neg_below = 0;
    for (size_t i = 0, j; i < n; i = j) {
        size_t pos = 0;
        for (j = i; j < n && b[j].score == b[i].score; j++)
            pos += b[j].positive;
        size_t neg = j - i - pos;
        u += (double)pos * ((double)neg_below + 0.5 * (double)neg);
        neg_below += neg;
    }
    return u;
}

/* Whether every row of scores is a probability distribution: none
 * negative, summing to 1 (within float rounding). */
static bool all_probabilities(const eval_in *in)
{
    for (size_t i = 0; i < in->n; i++) {
        const float *s = scores_of(in, i);
        double sum = 0.0;
        for (uint32_t c = 0; c < in->p->width; c++) {
            if (!(s[c] >= 0.0f))
                return false;
            sum += s[c];
        }
        if (fabs(sum - 1.0) > 1e-3)
            return false;
    }
    return true;
}

/* Each sample's scores in an order of its probabilities, n rows of
 * width: as given where every row is a probability distribution, else
 * (logits) their log-softmax, s - log(sum(exp(s))), worked in double.
 * Logits rank the classes of one sample, not one class across samples (a
 * constant added to a row changes nothing), which is what an AUC
 * compares; and the log keeps apart what a probability would round to 1
 * (two logits 18 and 25 apart). */
static void as_probabilities(const eval_in *in, float *out)
{
    bool given = all_probabilities(in);
    uint32_t w = in->p->width;
    for (size_t i = 0; i < in->n; i++) {
        const float *s = scores_of(in, i);
        float *o = out + i * w;
        double top = s[0], sum = 0.0;
        for (uint32_t c = 0; c < w; c++) {
            o[c] = s[c];
            top = s[c] > top ? s[c] : top;
        }
        if (given)
            continue;
        for (uint32_t c = 0; c < w; c++)
            sum += exp((double)s[c] - top);
        for (uint32_t c = 0; c < w; c++)
            o[c] = (float)((double)s[c] - top - log(sum));
    }
}

/* Class c's one-vs-rest AUC: c's probability (probs, n rows of width)
 * over the samples of class c against all the others. */
static double class_auc(const eval_in *in, const float *probs, uint32_t c,
                        size_t npos, scored *buf)
{
    for (size_t i = 0; i < in->n; i++)
        buf[i] = (scored){probs[i * in->p->width + c], in->truth[i] == c};
    qsort(buf, in->n, sizeof *buf, cmp_scored);
    return mann_whitney_u(buf, in->n) /
           ((double)npos * (double)(in->n - npos));
}

/* The mean AUC over the classes with positive and negative samples. */
static double mean_auc(const eval_in *in, const float *probs,
                       const size_t *npos, scored *buf)
{
    double sum = 0.0;
    size_t classes = 0;
    for (uint32_t c = 0; c < in->p->width; c++) {
        if (npos[c] == 0 || npos[c] == in->n)
            continue;
        sum += class_auc(in, probs, c, npos[c], buf);
        classes++;
    }
    return classes ? sum / (double)classes : NAN;
}

static int rocauc(const eval_in *in, double *value)
{
    if (need_scores(in) < 0 ||
        check_truth(in, in->p->width, "score width") < 0)
        return -1;
    size_t *npos = calloc(in->p->width, sizeof *npos);
    scored *buf = calloc(in->n, sizeof *buf);
    float *probs = calloc(in->n * in->p->width, sizeof *probs);
    int rc = npos && buf && probs ? 0 : fail(in, "out of memory");
    if (rc == 0) {
        for (size_t i = 0; i < in->n; i++)
            npos[in->truth[i]]++;
        as_probabilities(in, probs);
        *value = mean_auc(in, probs, npos, buf);
    }
    free(npos);
    free(buf);
    free(probs);
    return rc;
}

int pl_metric_compute(const pl_metric *m, const pl_pred *p,
                      const size_t *rows, const int64_t *truth, size_t n,
                      double *value, char *err, size_t errlen)
{
    eval_in in = {m, p, rows, truth, n, err, errlen};
    *value = NAN;
    if (n == 0)
        return 0;
    if (check_rows(&in) < 0)
        return -1;
    switch (m->kind) {
    case PL_METRIC_ACCURACY: return accuracy(&in, value);
    case PL_METRIC_F1: return f1(&in, value);
    case PL_METRIC_ROCAUC: return rocauc(&in, value);
    }
    return fail(&in, "unknown metric kind %d", (int)m->kind);
}
