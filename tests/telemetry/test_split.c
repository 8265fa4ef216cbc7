/* test_split.c -- tel_energy_split, the rule that shares a GPU's energy
 * among its jobs: by activity, else memory, else evenly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tel.h"

#define U CORE_UNKNOWN

static void assert_shares(const double *got, const double *want, int n) {
    for (int i = 0; i < n; i++)
        assert_float_equal(got[i], want[i], 1e-9);
}

/* Activity wins over memory: the busy job with little memory pays most. */
static void test_by_activity(void **state) {
    double util[] = {75, 25}, mib[] = {1000, 30000}, share[2];
    tel_energy_split(2, util, mib, 100.0, share);
    assert_shares(share, (double[]){75, 25}, 2);
}

/* An idle job (utilization 0, known) pays nothing while another runs. */
static void test_idle_job_pays_nothing(void **state) {
    double util[] = {0, 40}, mib[] = {5000, 5000}, share[2];
    tel_energy_split(2, util, mib, 10.0, share);
    assert_shares(share, (double[]){0, 10}, 2);
}

/* No utilization (old driver): by memory, a job without memory shown
 * paying nothing. */
static void test_by_memory(void **state) {
    double util[] = {U, U, U}, mib[] = {1000, 3000, U}, share[3];
    tel_energy_split(3, util, mib, 8.0, share);
    assert_shares(share, (double[]){2, 6, 0}, 3);
}

/* Every job idle: activity cannot split, memory does. */
static void test_all_idle_by_memory(void **state) {
    double util[] = {0, 0}, mib[] = {100, 300}, share[2];
    tel_energy_split(2, util, mib, 4.0, share);
    assert_shares(share, (double[]){1, 3}, 2);
}

/* Nothing known (jobs not yet on the GPU): evenly. */
static void test_evenly(void **state) {
    double util[] = {U, U, U, U}, mib[] = {0, U, 0, 0}, share[4];
    tel_energy_split(4, util, mib, 2.0, share);
    assert_shares(share, (double[]){0.5, 0.5, 0.5, 0.5}, 4);
}

/* The shares add up to the energy whichever rule applies. */
static void test_sums_to_total(void **state) {
    double util[] = {13, U, 7}, mib[] = {1, 2, 3}, share[3];
    tel_energy_split(3, util, mib, 9.5, share);
    assert_float_equal(share[0] + share[1] + share[2], 9.5, 1e-9);
    assert_float_equal(share[1], 0.0, 1e-9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_activity),
        cmocka_unit_test(test_idle_job_pays_nothing),
        cmocka_unit_test(test_by_memory),
        cmocka_unit_test(test_all_idle_by_memory),
        cmocka_unit_test(test_evenly),
        cmocka_unit_test(test_sums_to_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
