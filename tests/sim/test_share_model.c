/* test_share_model.c -- the simulator's model of the sharing modes
 * (share_model.h): MIG slowdown from a job's activity and its instance's
 * slices, the MPS share of the naive slowdown, the memory each mode lets a
 * job have, and the GPU table names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "share_model.h"

static const mig_model *a100(void) {
    const mig_model *m = share_model_gpu("A100-40GB");
    assert_non_null(m);
    return m;
}

static cat_workload job(double smact, double drama) {
    cat_workload w = {.name = "j", .num_gpus = 1, .solo_s = 100,
                      .smact = smact, .drama = drama};
    return w;
}

/* On 1g (1/7 of 0.907 of the SMs, 1/8 of the bandwidth) a job of SMACT
 * 0.3 runs 2.31x slower; on 7g it barely notices; a DRAM-bound job is
 * held by its bandwidth share; a light job not at all. Its GPU reads its
 * activity spread over the longer time. */
static void test_mig_slowdown(void **state) {
    sim_model m;
    sim_model_default(&m);
    const mig_profile *p1 = mig_profile_find(a100(), "1g.5gb");
    const mig_profile *p7 = mig_profile_find(a100(), "7g.40gb");
    cat_workload w = job(0.3, 0.05);
    double sd = share_model_slowdown(&m, SHARE_MIG, p1, &w, 5.0);
    assert_true(sd > 2.30 && sd < 2.32);
    assert_true(share_model_scale(&m, SHARE_MIG, p1, &w) > 1 / 2.32);
    assert_true(share_model_slowdown(&m, SHARE_MIG, p7, &w, 5.0) == 1.0);
    cat_workload dram = job(0.1, 0.5);
    assert_true(share_model_slowdown(&m, SHARE_MIG, p1, &dram, 1.0) == 4.0);
    cat_workload light = job(0.05, 0.01);
    assert_true(share_model_slowdown(&m, SHARE_MIG, p1, &light, 3.0) == 1.0);
    assert_true(share_model_scale(&m, SHARE_MIG, p1, &light) == 1.0);
}

/* Whole-GPU modes: naive takes the fitted slowdown, MPS keeps mps_excess
 * of its part above 1, and neither scales the job's reading. */
static void test_whole_gpu_modes(void **state) {
    sim_model m;
    sim_model_default(&m);
    cat_workload w = job(0.5, 0.2);
    assert_true(share_model_slowdown(&m, SHARE_NAIVE, NULL, &w, 1.8) == 1.8);
    assert_true(share_model_slowdown(&m, SHARE_EXCLUSIVE, NULL, &w, 1.0) == 1.0);
    m.mps_excess = 0.5;
    assert_true(share_model_slowdown(&m, SHARE_MPS, NULL, &w, 1.8) == 1.4);
    assert_true(share_model_scale(&m, SHARE_MPS, NULL, &w) == 1.0);
}

/* A MIG job has its instance's memory whatever the GPU holds; a whole-GPU
 * job has what its co-runners leave. */
static void test_fits(void **state) {
    const mig_profile *p1 = mig_profile_find(a100(), "1g.5gb");
    assert_true(share_model_fits(p1, 4864, 39000, 40960));
    assert_false(share_model_fits(p1, 4865, 0, 40960));
    assert_true(share_model_fits(NULL, 20000, 20960, 40960));
    assert_false(share_model_fits(NULL, 20001, 20960, 40960));
}

static void test_gpu_names(void **state) {
    assert_ptr_equal(share_model_gpu("a100-40gb"), a100());
    assert_ptr_equal(share_model_gpu("NVIDIA A100-PCIE-40GB"), a100());
    assert_int_equal(share_model_gpu("H200-141GB")->total_mib, 144384);
    assert_null(share_model_gpu("V100"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mig_slowdown),
        cmocka_unit_test(test_whole_gpu_modes),
        cmocka_unit_test(test_fits),
        cmocka_unit_test(test_gpu_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
