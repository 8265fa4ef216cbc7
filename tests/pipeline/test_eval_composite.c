/* test_eval_composite.c -- a composite model on hand-worked cases: which
 * model served each window (active, in training), and the scores
 * weighted by each window's length of time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "eval.h"

/* Model 0's data ends at 99, model 1's at 199: model 0 serves from 100,
 * model 1 from 200. */
static const uint32_t models[] = {0, 1};
static const int64_t ends[] = {99, 199};

static void served_models(void **state) {
    (void)state;
    assert_int_equal(pl_composite_model(models, ends, 2, 0, false), -1);
    assert_int_equal(pl_composite_model(models, ends, 2, 0, true), 0);
    assert_int_equal(pl_composite_model(models, ends, 2, 99, false), -1);
    assert_int_equal(pl_composite_model(models, ends, 2, 100, false), 0);
    assert_int_equal(pl_composite_model(models, ends, 2, 100, true), 1);
    assert_int_equal(pl_composite_model(models, ends, 2, 200, false), 1);
    assert_int_equal(pl_composite_model(models, ends, 2, 200, true), -1);
    assert_int_equal(pl_composite_model(models, ends, 2, INT64_MIN, true), 0);
}

/* The matrix of 2 models x 3 windows of 100 s:
 *            [0,100) [100,200) [200,300)
 *   model 0    0.5     0.9       0.6
 *   model 1    0.4     0.7       0.95
 * Active: none, model 0 (0.9), model 1 (0.95): (0.9 + 0.95) / 2 = 0.925
 * over 2 windows. In training: model 0 (0.5), model 1 (0.7), none:
 * 0.6. */
static void matrix_scores(void **state) {
    (void)state;
    pl_eval_result r[] = {
        {1, 200, 300, 200, 299, 0.95}, {0, 0, 100, 0, 99, 0.5},
        {0, 100, 200, 100, 199, 0.9},  {1, 0, 100, 0, 99, 0.4},
        {0, 200, 300, 200, 299, 0.6},  {1, 100, 200, 100, 199, 0.7}};
    pl_composite c = pl_composite_score(r, 6, models, ends, 2);
    assert_float_equal(c.active, 0.925, 1e-12);
    assert_float_equal(c.trained, 0.6, 1e-12);
    assert_int_equal(c.windows, 2);
}

/* An open window counts from its samples: [200, inf) with samples 200 to
 * 349 weighs 150 against [100,200)'s 100: (0.9*100 + 0.8*150) / 250 =
 * 0.84. A window without its served model's value is left out. */
static void open_window_weighted_by_its_samples(void **state) {
    (void)state;
    pl_eval_result r[] = {
        {0, 100, 200, 100, 199, 0.9}, {1, 200, INT64_MAX, 200, 349, 0.8},
        {1, 300, 400, 300, 399, NAN}};
    pl_composite c = pl_composite_score(r, 3, models, ends, 2);
    assert_float_equal(c.active, 0.84, 1e-12);
    assert_int_equal(c.windows, 2);
    assert_true(isnan(pl_composite_score(r, 0, models, ends, 2).active));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(served_models),
        cmocka_unit_test(matrix_scores),
        cmocka_unit_test(open_window_weighted_by_its_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
