/* test_backoff.c -- a dying supervisor's restarts (daemon/backoff.h):
 * the delay doubles from 1 s, none after 5 restarts in the window, and
 * only the window's restarts count (not the first attempt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backoff.h"

static void test_delays(void **state) {
    (void)state;
    assert_true(backoff_delay_s(0) == 1);
    assert_true(backoff_delay_s(1) == 2);
    assert_true(backoff_delay_s(4) == 16);
    assert_true(backoff_delay_s(5) < 0);
    assert_true(backoff_delay_s(50) < 0);
}

/* Attempts 1..n started at the times given: rows as the store keeps them. */
static json_t *attempts(const double *started, int n) {
    json_t *rows = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:i, s:f}", "n", i + 1,
                                              "started", started[i]));
    return rows;
}

static void test_window(void **state) {
    (void)state;
    const double at[] = {100, 200, 5000, 5001, 5003};
    json_t *rows = attempts(at, 5);
    /* the first attempt is no restart, even inside the window */
    assert_int_equal(backoff_restarts_since(rows, 0), 4);
    /* a window starting later counts only the restarts inside it */
    assert_int_equal(backoff_restarts_since(rows, 5000), 3);
    assert_int_equal(backoff_restarts_since(rows, 5002), 1);
    assert_int_equal(backoff_restarts_since(rows, 9999), 0);
    json_decref(rows);
    assert_int_equal(backoff_restarts_since(NULL, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delays),
        cmocka_unit_test(test_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
