/* test_eval_metric.c -- the metrics against values worked out by hand
 * (each case's working is beside it), their NAN cases, the predictions
 * they cannot be computed from, and every wrong key of a metric's entry
 * refused with the entry's path and the key. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "eval.h"

#define EPS 1e-9

/* Rows 0..n-1 of p, in order. */
static const size_t rows[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
static const uint64_t keys[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};

static pl_pred labels_pred(const int64_t *labels, size_t n)
{
    return (pl_pred){.count = n, .keys = (uint64_t *)keys,
                     .labels = (int64_t *)labels};
}

static pl_pred scores_pred(const float *scores, size_t n, uint32_t width)
{
    return (pl_pred){.count = n, .width = width, .keys = (uint64_t *)keys,
                     .scores = (float *)scores};
}

static pl_metric metric(const char *json)
{
    json_error_t jerr;
    json_t *obj = json_loads(json, 0, &jerr);
    assert_non_null(obj);
    pl_metric m;
    char err[256] = "";
    int rc = pl_metric_parse(obj, "evaluation.datasets[0].metrics[0]", &m,
                             err, sizeof err);
    json_decref(obj);
    if (rc != 0)
        print_error("unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
    return m;
}

static double compute(const char *json, const pl_pred *p,
                      const int64_t *truth, size_t n)
{
    pl_metric m = metric(json);
    double v = -1.0;
    char err[256] = "";
    int rc = pl_metric_compute(&m, p, rows, truth, n, &v, err, sizeof err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
    return v;
}

/* The computation must fail with an error holding part. */
static void compute_fails(const char *json, const pl_pred *p,
                          const int64_t *truth, size_t n, const char *part)
{
    pl_metric m = metric(json);
    double v;
    char err[256] = "";
    assert_int_equal(pl_metric_compute(&m, p, rows, truth, n, &v, err,
                                       sizeof err), -1);
    if (!strstr(err, part))
        fail_msg("'%s' lacks '%s'", err, part);
}

/* ---- F1Score ---- */

/* truth 0 0 0 0 1 1 2, predicted 0 0 0 1 0 0 2, num_classes 4.
 *
 *   confusion     pred 0  1  2  3
 *       truth 0        3  1  0  0
 *       truth 1        2  0  0  0
 *       truth 2        0  0  1  0
 *
 *   class 0: tp 3, fp 2, fn 1: F1 = 6 / (6 + 2 + 1) = 2/3
 *   class 1: tp 0, fp 1, fn 2: F1 = 0
 *   class 2: tp 1, fp 0, fn 0: F1 = 1
 *   class 3: never true nor predicted: F1 0, as Modyn counts it
 *   macro    = (2/3 + 0 + 1 + 0) / 4 = 5/12
 *   micro    = 2*4 / (2*4 + 3 + 3) = 8/14 = 4/7 (the accuracy)
 *   weighted = (4 * 2/3 + 2 * 0 + 1 * 1) / 7 = (11/3) / 7 = 11/21
 */
static const int64_t f1_truth[] = {0, 0, 0, 0, 1, 1, 2};
static const int64_t f1_pred[] = {0, 0, 0, 1, 0, 0, 2};

static void f1_averages(void **state)
{
    pl_pred p = labels_pred(f1_pred, 7);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 4}",
                               &p, f1_truth, 7), 5.0 / 12, EPS);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 4, "
                               "\"average\": \"micro\"}", &p, f1_truth, 7),
                       4.0 / 7, EPS);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 4, "
                               "\"average\": \"weighted\"}", &p, f1_truth, 7),
                       11.0 / 21, EPS);
    assert_float_equal(compute("{\"name\": \"Accuracy\"}", &p, f1_truth, 7),
                       4.0 / 7, EPS);
}

/* truth 1 1 0 0 1, predicted 1 0 0 1 1.
 *   pos_label 1: tp 2 (rows 0, 4), fp 1 (row 3), fn 1 (row 1):
 *                F1 = 4 / (4 + 1 + 1) = 2/3
 *   pos_label 0: tp 1 (row 2), fp 1 (row 1), fn 1 (row 3):
 *                F1 = 2 / (2 + 1 + 1) = 1/2 */
static void f1_binary(void **state)
{
    static const int64_t truth[] = {1, 1, 0, 0, 1}, pred[] = {1, 0, 0, 1, 1};
    pl_pred p = labels_pred(pred, 5);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 2, "
                               "\"average\": \"binary\"}", &p, truth, 5),
                       2.0 / 3, EPS);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 2, "
                               "\"average\": \"binary\", \"pos_label\": 0}",
                               &p, truth, 5), 0.5, EPS);
}

/* From scores, the predicted class is the highest score's, the lower
 * class of a tie: rows predict 1, 0 (tie 0/1), 2. truth 1, 1, 2:
 *   class 0: tp 0, fp 1, fn 0: F1 0;  class 1: tp 1, fp 0, fn 1: 2/3;
 *   class 2: tp 1: F1 1.  macro = (0 + 2/3 + 1) / 3 = 5/9 */
static void f1_from_scores(void **state)
{
    static const float s[] = {0.1f, 0.8f, 0.1f,
                              0.4f, 0.4f, 0.2f,
                              0.0f, 0.1f, 0.9f};
    static const int64_t truth[] = {1, 1, 2};
    pl_pred p = scores_pred(s, 3, 3);
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 3}",
                               &p, truth, 3), 5.0 / 9, EPS);
}

/* ---- Accuracy ---- */

/* Scores of three classes; ties go to the lower class:
 *   row 0: 0.2 0.5 0.3, truth 2: order 1, 2, 0: rank 1
 *   row 1: 0.4 0.4 0.2, truth 1: order 0, 1, 2 (tie): rank 1
 *   row 2: 0.4 0.4 0.2, truth 0: rank 0
 *   row 3: 0.1 0.1 0.1, truth 2: order 0, 1, 2: rank 2
 *   top-1 = 1/4 (row 2), top-2 = 3/4 (rows 0, 1, 2), top-3 = 1 */
static const float acc_scores[] = {0.2f, 0.5f, 0.3f,
                                   0.4f, 0.4f, 0.2f,
                                   0.4f, 0.4f, 0.2f,
                                   0.1f, 0.1f, 0.1f};
static const int64_t acc_truth[] = {2, 1, 0, 2};

static void accuracy_top_n(void **state)
{
    pl_pred p = scores_pred(acc_scores, 4, 3);
    assert_float_equal(compute("{\"name\": \"Accuracy\"}", &p, acc_truth, 4),
                       0.25, EPS);
    assert_float_equal(compute("{\"name\": \"Accuracy\", \"topn\": 2}", &p,
                               acc_truth, 4), 0.75, EPS);
    assert_float_equal(compute("{\"name\": \"Accuracy\", \"topn\": 3}", &p,
                               acc_truth, 4), 1.0, EPS);
    assert_float_equal(compute("{\"name\": \"Accuracy\", \"topn\": 5}", &p,
                               acc_truth, 4), 1.0, EPS);
    /* micro F1 is top-1 accuracy, ties and all */
    assert_float_equal(compute("{\"name\": \"F1Score\", \"num_classes\": 3, "
                               "\"average\": \"micro\"}", &p, acc_truth, 4),
                       0.25, EPS);
}

/* labels 1 2 3 against truth 1 0 3: 2 of 3 right */
static void accuracy_labels(void **state)
{
    static const int64_t pred[] = {1, 2, 3}, truth[] = {1, 0, 3};
    pl_pred p = labels_pred(pred, 3);
    assert_float_equal(compute("{\"name\": \"Accuracy\"}", &p, truth, 3),
                       2.0 / 3, EPS);
    /* a sample subset: rows 1 and 2 only */
    pl_metric m = metric("{\"name\": \"Accuracy\"}");
    double v;
    char err[256];
    size_t some[] = {2, 1};
    int64_t t[] = {3, 2};
    assert_int_equal(pl_metric_compute(&m, &p, some, t, 2, &v, err,
                                       sizeof err), 0);
    assert_float_equal(v, 1.0, EPS);
}

/* ---- RocAuc ---- */

/* Two classes, truth 1 1 0 0; class 1's scores 0.5 0.5 | 0.5 0.1.
 *   (positive, negative) pairs: (0.5, 0.5) tie 1/2, (0.5, 0.1) win 1,
 *   twice: U = 3 of 4 pairs: AUC 0.75.
 *   By ranks: ascending 0.1 (r1), 0.5 0.5 0.5 (r 3 each): positives'
 *   rank sum 6, U = 6 - 2*3/2 = 3.
 *   Class 0 (scores 1 - s1: positives 0.5 0.9, negatives 0.5 0.5):
 *   0.5 ties both (1), 0.9 wins both (2): U 3, AUC 0.75. Mean 0.75. */
static void rocauc_tie(void **state)
{
    static const float s[] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.9f, 0.1f};
    static const int64_t truth[] = {1, 1, 0, 0};
    pl_pred p = scores_pred(s, 4, 2);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &p, truth, 4), 0.75,
                       EPS);
}

/* Three classes, truth 0 0 1 1: class 2 has no positive and is left out.
 *   (probabilities: each row sums to 1, so taken as given)
 *   class 0, scores 0.9 0.5 | 0.5 0.1: 0.9 wins 2, 0.5 ties 0.5 (1/2) and
 *     wins 0.1: U 3.5 of 4: 0.875
 *   class 1, scores 0.6 0.2 | 0.3 0.6 (positives are rows 2, 3): 0.6 wins
 *     0.3, ties 0.6 (1/2); 0.2 loses both: U 1.5 of 4: 0.375
 *   mean (0.875 + 0.375) / 2 = 0.625 */
static void rocauc_skips_class(void **state)
{
    /* the scores above halved, class 2 the rest of each row's 1 */
    static const float s[] = {0.45f, 0.15f, 0.40f,
                              0.25f, 0.30f, 0.45f,
                              0.25f, 0.30f, 0.45f,
                              0.05f, 0.10f, 0.85f};
    static const int64_t truth[] = {0, 0, 1, 1};
    pl_pred p = scores_pred(s, 4, 3);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &p, truth, 4), 0.625,
                       EPS);
}

/* Logits, not probabilities: softmax first, as a constant added to one
 * sample's logits changes nothing. Truth 1 0 0 1, logits (0, 5),
 * (10, 11), (3, 1), (0, 0.5): class 1's probabilities .993 .731 .119
 * .622; the positives .993 and .622 against the negatives .731 and
 * .119 win 3 pairs of 4: 0.75 (class 0's AUC is the same), where the raw
 * columns gave 0.625. One logit written as (0, z), z = -2 -1 1 2 for
 * truth 0 0 1 1: a perfect ranking, 1.0 (0.75 raw: column 0 all ties). */
static void rocauc_logits(void **state)
{
    static const float logits[] = {0, 5, 10, 11, 3, 1, 0, 0.5f};
    static const int64_t truth[] = {1, 0, 0, 1};
    pl_pred p = scores_pred(logits, 4, 2);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &p, truth, 4), 0.75,
                       EPS);
    static const float one[] = {0, -2, 0, -1, 0, 1, 0, 2};
    static const int64_t ordered[] = {0, 0, 1, 1};
    pl_pred q = scores_pred(one, 4, 2);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &q, ordered, 4),
                       1.0, EPS);
    /* a confident model: softmax rounds both to a probability of 1 (in
     * float), a tie at 0.75; their log-softmax keeps them apart */
    static const float sure[] = {0, 25, 0, 18};
    static const int64_t sure_truth[] = {1, 0};
    pl_pred r = scores_pred(sure, 2, 2);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &r, sure_truth, 2),
                       1.0, EPS);
}

/* A perfect ranking and an inverted one. */
static void rocauc_extremes(void **state)
{
    static const float s[] = {0.9f, 0.1f, 0.8f, 0.2f, 0.3f, 0.7f};
    static const int64_t right[] = {0, 0, 1}, wrong[] = {1, 1, 0};
    pl_pred p = scores_pred(s, 3, 2);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &p, right, 3), 1.0,
                       EPS);
    assert_float_equal(compute("{\"name\": \"RocAuc\"}", &p, wrong, 3), 0.0,
                       EPS);
}

/* ---- undefined values ---- */

static void nan_cases(void **state)
{
    static const float s[] = {0.9f, 0.1f, 0.8f, 0.2f};
    static const int64_t truth[] = {0, 0};
    pl_pred p = scores_pred(s, 2, 2);
    /* one class only: no class has both positives and negatives */
    assert_true(isnan(compute("{\"name\": \"RocAuc\"}", &p, truth, 2)));
    /* no samples, whatever the metric and predictions */
    pl_pred none = labels_pred(NULL, 0);
    assert_true(isnan(compute("{\"name\": \"RocAuc\"}", &none, NULL, 0)));
    assert_true(isnan(compute("{\"name\": \"Accuracy\", \"topn\": 3}", &none,
                              NULL, 0)));
    assert_true(isnan(compute("{\"name\": \"F1Score\", \"num_classes\": 2}",
                              &p, NULL, 0)));
}

/* ---- what predictions cannot give ---- */

static void cannot_compute(void **state)
{
    static const int64_t labels[] = {0, 1, 5}, truth[] = {0, 1, 1};
    static const float s[] = {0.9f, 0.1f, 0.8f, 0.2f, 0.3f, 0.7f};
    pl_pred lp = labels_pred(labels, 3), sp = scores_pred(s, 3, 2);
    compute_fails("{\"name\": \"RocAuc\"}", &lp, truth, 2, "labels only");
    compute_fails("{\"name\": \"Accuracy\", \"topn\": 2}", &lp, truth, 2,
                  "Top-2-Accuracy: needs a score");
    /* key 12's predicted label 5 is not a class of 3 */
    compute_fails("{\"name\": \"F1Score\", \"num_classes\": 3}", &lp, truth,
                  3, "predicted label 5 of key 12");
    compute_fails("{\"name\": \"F1Score\", \"num_classes\": 3}", &sp, truth,
                  3, "the predictions score 2 classes");
    static const int64_t bad_truth[] = {0, 2, 1}, negative[] = {-1, 0, 1};
    compute_fails("{\"name\": \"RocAuc\"}", &sp, bad_truth, 3,
                  "true label 2 of key 11");
    compute_fails("{\"name\": \"Accuracy\", \"topn\": 2}", &sp, bad_truth, 3,
                  "true label 2 of key 11");
    compute_fails("{\"name\": \"F1Score\", \"num_classes\": 2}", &lp,
                  bad_truth, 2, "true label 2 of key 11");
    compute_fails("{\"name\": \"F1Score\", \"num_classes\": 2}", &lp,
                  negative, 2, "true label -1 of key 10");
}

/* ---- the metric's entry ---- */

static void parse_defaults(void **state)
{
    pl_metric m = metric("{\"name\": \"Accuracy\"}");
    assert_int_equal(m.kind, PL_METRIC_ACCURACY);
    assert_int_equal(m.topn, 1);
    assert_string_equal(m.name, "Accuracy");
    m = metric("{\"name\": \"Accuracy\", \"topn\": 3}");
    assert_string_equal(m.name, "Top-3-Accuracy");
    m = metric("{\"name\": \"F1Score\", \"num_classes\": 10}");
    assert_int_equal(m.kind, PL_METRIC_F1);
    assert_int_equal(m.num_classes, 10);
    assert_int_equal(m.average, PL_F1_MACRO);
    assert_int_equal(m.pos_label, 1);
    assert_string_equal(m.name, "F1-macro");
    const char *avg[] = {"micro", "weighted", "binary"};
    for (int i = 0; i < 3; i++) {
        char json[128], name[40];
        snprintf(json, sizeof json, "{\"name\": \"F1Score\", \"num_classes\":"
                 " 2, \"average\": \"%s\", \"pos_label\": 0}", avg[i]);
        snprintf(name, sizeof name, "F1-%s", avg[i]);
        m = metric(json);
        assert_int_equal(m.average, PL_F1_MICRO + i);
        assert_int_equal(m.pos_label, 0);
        assert_string_equal(m.name, name);
    }
    m = metric("{\"name\": \"RocAuc\", "
               "\"evaluation_transformer_function\": null}");
    assert_int_equal(m.kind, PL_METRIC_ROCAUC);
    assert_string_equal(m.name, "RocAuc");
}

/* The entry must be refused with "PATH.KEY: ..." holding part. */
static void refused(const char *json, const char *key, const char *part)
{
    json_error_t jerr;
    json_t *obj = json_loads(json, JSON_DECODE_ANY, &jerr);
    assert_non_null(obj);
    pl_metric m;
    char err[256] = "", want[128];
    const char *path = "evaluation.datasets[1].metrics[2]";
    assert_int_equal(pl_metric_parse(obj, path, &m, err, sizeof err), -1);
    json_decref(obj);
    snprintf(want, sizeof want, "%s%s%s:", path, key ? "." : "", key ? key : "");
    if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, part))
        fail_msg("'%s' is not '%s ... %s'", err, want, part);
}

static void parse_errors(void **state)
{
    refused("[1]", NULL, "mapping");
    refused("{}", "name", "required");
    refused("{\"name\": \"Precision\"}", "name", "'Precision' is not one of");
    refused("{\"name\": 3}", "name", "string");
    refused("{\"name\": \"Accuracy\", \"topn\": 0}", "topn", "between 1");
    refused("{\"name\": \"Accuracy\", \"topn\": \"2\"}", "topn", "integer");
    refused("{\"name\": \"Accuracy\", \"num_classes\": 2}", "num_classes",
            "unknown key");
    refused("{\"name\": \"Accuracy\", \"color\": 2}", "color", "unknown key");
    refused("{\"name\": \"RocAuc\", \"topn\": 2}", "topn", "unknown key");
    refused("{\"name\": \"F1Score\", \"topn\": 2, \"num_classes\": 2}",
            "topn", "unknown key");
    refused("{\"name\": \"F1Score\"}", "num_classes", "required");
    refused("{\"name\": \"F1Score\", \"num_classes\": 1}", "num_classes",
            "between 2");
    refused("{\"name\": \"F1Score\", \"num_classes\": 2, \"average\": "
            "\"median\"}", "average", "'median' is not one of");
    refused("{\"name\": \"F1Score\", \"num_classes\": 3, \"average\": "
            "\"binary\"}", "num_classes", "must be 2 for average binary");
    refused("{\"name\": \"F1Score\", \"num_classes\": 2, \"average\": "
            "\"binary\", \"pos_label\": 2}", "pos_label", "0 or 1");
    refused("{\"name\": \"F1Score\", \"num_classes\": 2, \"pos_label\": "
            "1.5}", "pos_label", "integer");
    refused("{\"name\": \"Accuracy\", \"evaluation_transformer_function\": "
            "\"def f(x): return x\"}", "evaluation_transformer_function",
            "in the evaluation command");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f1_averages), cmocka_unit_test(f1_binary),
        cmocka_unit_test(f1_from_scores), cmocka_unit_test(accuracy_top_n),
        cmocka_unit_test(accuracy_labels), cmocka_unit_test(rocauc_tie),
        cmocka_unit_test(rocauc_skips_class),
        cmocka_unit_test(rocauc_extremes),
        cmocka_unit_test(rocauc_logits), cmocka_unit_test(nan_cases),
        cmocka_unit_test(cannot_compute), cmocka_unit_test(parse_defaults),
        cmocka_unit_test(parse_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
