/* test_gates.c -- each gate of the loop on its own (exclusive first,
 * observation, window full, memory with its guard, runtime pressure with
 * DCGM and with utilization only, drain) and each placement rule. */
#include "helpers.h"

static void test_exclusive_first_needs_no_window(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_launch out[4];
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    assert_int_equal(core_idle_gpu_count(core), 2);
    assert_int_equal(core_schedule(core, 0, out, 4), 2);
    assert_true(out[0].exclusive && out[1].exclusive);
    assert_int_equal(out[0].gpus[0], 0);
    assert_int_equal(out[1].gpus[0], 1);
    assert_int_equal(out[0].attempt, 1);
    assert_double_equal(out[0].floor_mib, 5120, 0);
    assert_int_equal(core_idle_gpu_count(core), 0);
    assert_int_equal(core_running_count(core), 2);
    core_destroy(core);
}

/* A GPU that received a job takes none until the job is active and 30 s
 * have passed since. */
static void test_observation_gate(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    feed(core, 0, 1000, -100); /* window long full */
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 100, NULL), -1); /* never seen active */
    core_job_active(core, 1, 105);
    assert_int_equal(place_one(core, 134.9, NULL), -1);
    assert_double_equal(core_next_wakeup(core, 120), 135, 0);
    core_launch l;
    assert_int_equal(place_one(core, 135, &l), 0);
    assert_false(l.exclusive);
    /* The newcomer closes the GPU again. */
    submit(core, 3, 1, 135);
    assert_int_equal(place_one(core, 500, NULL), -1);
    core_destroy(core);
}

static void test_window_full_gate(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    core_job_active(core, 1, 0); /* observation over at 30 */
    feed(core, 0, 1000, 10);     /* first sample at 10: full at 39 */
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 38, NULL), -1);
    assert_double_equal(core_next_wakeup(core, 38), 39, 0);
    assert_int_equal(place_one(core, 39, NULL), 0);
    core_destroy(core);
}

/* free - guard >= demand, guard = max(512, 1% of 40960) = 512 MiB. */
static void test_memory_gate_with_guard(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, GPU_MIB - 512 - 5120 + 1);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 100, NULL), -1);
    feed(core, 0, GPU_MIB - 512 - 5120, 100);
    /* The window's peak still holds the higher reading for 29 s. */
    assert_int_equal(place_one(core, 128, NULL), -1);
    assert_int_equal(place_one(core, 129, NULL), 0);
    core_destroy(core);
}

static void test_memory_gate_estimate(void **state) {
    core_state *core = make_core("aegis-est", "magm", 1);
    occupy_all(core, 1, 20000);
    core_job_spec s = job_spec(1, 1);
    char err[128];
    s.est_mib = GPU_MIB - 20000 - 512 - 2048 + 1; /* one MiB too many */
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 100, NULL), -1);
    assert_int_equal(core_cancel(core, 1, 100), 0);
    s.id = 2;
    s.est_mib -= 1;
    assert_int_equal(core_submit(core, &s, 100, err, sizeof(err)), 0);
    core_launch l;
    assert_int_equal(place_one(core, 100, &l), 0);
    assert_double_equal(l.floor_mib, s.est_mib + 2048, 0);
    core_destroy(core);
}

static int place_under(double smact, double smocc, double drama, double util) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 1000);
    core_reading r = reading(1000, smact, smocc, drama, util);
    core_sample(core, 0, &r, 0);
    submit(core, 1, 1, 0);
    int gpu = place_one(core, 100, NULL);
    core_destroy(core);
    return gpu;
}

static void test_pressure_dcgm(void **state) {
    assert_int_equal(place_under(0.70, 0.40, 0.10, 0.99), -1); /* smact+smocc */
    assert_int_equal(place_under(0.70, 0.10, 0.55, 0.99), -1); /* smact+drama */
    assert_int_equal(place_under(0.70, 0.10, 0.10, 0.99), 0);  /* smact alone */
    assert_int_equal(place_under(0.60, 0.90, 0.90, 0.99), 0);  /* no smact */
    assert_int_equal(place_under(0.65, 0.35, 0.10, 0.99), -1); /* >= bounds */
    assert_int_equal(place_under(0.65, 0.10, 0.50, 0.99), -1);
}

static void test_pressure_util_only(void **state) {
    double u = CORE_UNKNOWN;
    assert_int_equal(place_under(u, u, u, 0.75), -1);
    assert_int_equal(place_under(u, u, u, 0.65), 0);
    assert_int_equal(place_under(u, u, u, 0.70), -1);
    assert_int_equal(place_under(u, u, u, u), 0); /* nothing to filter on */
}

/* Pressure reads the risk score, not the latest sample: 20 busy seconds
 * out of 30 still keep the GPU closed after the load has dropped. */
static void test_pressure_uses_window_score(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 1000);
    core_reading busy = reading(1000, 0.9, 0.9, 0.9, 0.9);
    core_reading calm = reading(1000, 0.1, 0.1, 0.1, 0.1);
    core_sample(core, 0, &busy, 0);
    core_sample(core, 0, &calm, 100);
    submit(core, 1, 1, 100);
    assert_int_equal(place_one(core, 100, NULL), -1);
    assert_int_equal(place_one(core, 129, NULL), 0);
    core_destroy(core);
}

static void test_drain(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_gpu_drain(core, 0, true);
    assert_int_equal(core_idle_gpu_count(core), 1);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 1);
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), -1);
    core_gpu_drain(core, 0, false);
    assert_int_equal(place_one(core, 0, NULL), 0);
    core_destroy(core);
}

/* Three shared GPUs: used 30000 / 10000 / 20000 MiB, SMACT 0.1 / 0.5 / 0.3. */
static core_state *three_gpus(const char *placement) {
    core_state *core = make_core("aegis", placement, 3);
    occupy_all(core, 3, 0);
    double used[] = {30000, 10000, 20000}, smact[] = {0.1, 0.5, 0.3};
    for (int g = 0; g < 3; g++) {
        core_reading r = reading(used[g], smact[g], 0.1, 0.1, 0.1);
        core_sample(core, g, &r, 0);
    }
    return core;
}

static int first_choice(const char *placement) {
    core_state *core = three_gpus(placement);
    submit(core, 1, 1, 0);
    int gpu = place_one(core, 100, NULL);
    core_destroy(core);
    return gpu;
}

static void test_placement_rules(void **state) {
    assert_int_equal(first_choice("magm"), 1); /* most free */
    assert_int_equal(first_choice("bf"), 0);   /* least free that fits */
    assert_int_equal(first_choice("lug"), 0);  /* least SMACT */
    assert_int_equal(first_choice("ff"), 0);   /* lowest index */
}

static void test_placement_bf_skips_misfit(void **state) {
    core_state *core = three_gpus("bf");
    core_reading full = reading(GPU_MIB - 1000, 0.1, 0.1, 0.1, 0.1);
    core_sample(core, 0, &full, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 100, NULL), 2);
    core_destroy(core);
}

static void test_placement_round_robin(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.placement = "rr";
    cfg.observe_s = 0; /* let each GPU take a job per second */
    core_state *core = make_core_cfg(&cfg, 3);
    occupy_all(core, 3, 0); /* rr resumes after GPU 2: GPU 0 next */
    int want[] = {0, 1, 2, 0};
    for (int i = 0; i < 4; i++) {
        submit(core, i + 1, 1, 0);
        assert_int_equal(place_one(core, 100 + i, NULL), want[i]);
        core_job_active(core, i + 1, 100 + i);
    }
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusive_first_needs_no_window),
        cmocka_unit_test(test_observation_gate),
        cmocka_unit_test(test_window_full_gate),
        cmocka_unit_test(test_memory_gate_with_guard),
        cmocka_unit_test(test_memory_gate_estimate),
        cmocka_unit_test(test_pressure_dcgm),
        cmocka_unit_test(test_pressure_util_only),
        cmocka_unit_test(test_pressure_uses_window_score),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_placement_rules),
        cmocka_unit_test(test_placement_bf_skips_misfit),
        cmocka_unit_test(test_placement_round_robin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
