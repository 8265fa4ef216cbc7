/* test_policies.c -- what each policy adds to the loop: exclusive never
 * shares, aegis-oracle sizes by profiled peak, horus keeps summed profiled
 * utilization within 100%, lucid caps jobs, sharing scores and memory. */
#include "helpers.h"

static void submit_spec(core_state *core, core_job_spec s) {
    char err[128];
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
}

static void test_exclusive_never_shares(void **state) {
    core_state *core = make_core("exclusive", "magm", 1);
    occupy_all(core, 1, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 1000, NULL), -1);
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 1000, NULL), CORE_DONE);
    core_launch l;
    assert_int_equal(place_one(core, 1000, &l), 0);
    assert_true(l.exclusive);
    core_destroy(core);
}

static void test_oracle_demand_is_peak_plus_margin(void **state) {
    core_state *core = make_core("aegis-oracle", "magm", 1);
    occupy_all(core, 1, 10000);
    core_job_spec s = job_spec(1, 1);
    s.peak_mib = 12000;
    submit_spec(core, s);
    core_launch l;
    assert_int_equal(place_one(core, 100, &l), 0);
    assert_double_equal(l.floor_mib, 14048, 0);
    core_destroy(core);
}

static core_job_spec horus_job(int64_t id, double util) {
    core_job_spec s = job_spec(id, 1);
    s.util_pct = util;
    return s;
}

/* Horus reads no telemetry: no window is ever fed here. */
static void test_horus_utilization_budget(void **state) {
    core_state *core = make_core("horus", "magm", 2);
    core_launch out[2];
    submit_spec(core, horus_job(1, 60));
    submit_spec(core, horus_job(2, 30));
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    core_job_active(core, 1, 0);
    core_job_active(core, 2, 0);
    /* 50% fits only beside the 30% job; 70% fits on neither after it. */
    submit_spec(core, horus_job(3, 50));
    submit_spec(core, horus_job(4, 40));
    core_launch l;
    assert_int_equal(place_one(core, 29, NULL), -1); /* observation */
    assert_int_equal(place_one(core, 30, &l), 1);
    assert_false(l.exclusive);
    /* 40% fits beside the 60% job (100%), not beside 30+50. */
    assert_int_equal(place_one(core, 30, &l), 0);
    core_destroy(core);
}

static void test_horus_least_projected_first(void **state) {
    core_state *core = make_core("horus", "magm", 2);
    core_launch out[2];
    submit_spec(core, horus_job(1, 40));
    submit_spec(core, horus_job(2, 20));
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    core_job_active(core, 1, 0);
    core_job_active(core, 2, 0);
    submit_spec(core, horus_job(3, 10));
    assert_int_equal(place_one(core, 30, NULL), 1);
    submit_spec(core, horus_job(4, CORE_UNKNOWN)); /* unknown: runs alone */
    assert_int_equal(place_one(core, 1000, NULL), -1);
    core_destroy(core);
}

/* An unprofiled job fills its GPU whichever comes first: one already
 * running counts as 100% to the next, as it would count if it came next
 * (a trace's own row, an aegisd job). */
static void test_horus_unknown_job_first_fills_its_gpu(void **state) {
    core_state *core = make_core("horus", "magm", 1);
    submit_spec(core, horus_job(1, CORE_UNKNOWN));
    assert_int_equal(place_one(core, 0, NULL), 0);
    core_job_active(core, 1, 0);
    submit_spec(core, horus_job(2, 10));
    assert_int_equal(place_one(core, 1000, NULL), -1);
    core_destroy(core);
}

static core_job_spec lucid_job(int64_t id, int score, double peak) {
    core_job_spec s = job_spec(id, 1);
    s.sharing_score = score;
    s.peak_mib = peak;
    return s;
}

static void lucid_first(core_state *core, core_job_spec s) {
    submit_spec(core, s);
    assert_int_equal(place_one(core, 0, NULL), 0);
    core_job_active(core, s.id, 0);
}

static int lucid_second(core_job_spec first, core_job_spec second) {
    core_state *core = make_core("lucid", "magm", 1);
    lucid_first(core, first);
    submit_spec(core, second);
    int gpu = place_one(core, 30, NULL);
    core_destroy(core);
    return gpu;
}

static void test_lucid_constraints(void **state) {
    /* Scores 1 + 1 = 2 fit; 1 + 2 do not. */
    assert_int_equal(lucid_second(lucid_job(1, 1, 1000), lucid_job(2, 1, 1000)), 0);
    assert_int_equal(lucid_second(lucid_job(1, 1, 1000), lucid_job(2, 2, 1000)), -1);
    /* Memory: 20000 + 18912 = 40960 - 2048 fits, one MiB more does not. */
    assert_int_equal(lucid_second(lucid_job(1, 0, 20000), lucid_job(2, 0, 18912)), 0);
    assert_int_equal(lucid_second(lucid_job(1, 0, 20000), lucid_job(2, 0, 18913)), -1);

    /* An unscored job is jumbo (2) on its GPU too, not only as the
     * newcomer: a medium job does not join it. */
    assert_int_equal(lucid_second(lucid_job(1, -1, 1000), lucid_job(2, 1, 1000)), -1);
    assert_int_equal(lucid_second(lucid_job(1, -1, 1000), lucid_job(2, 0, 1000)), 0);

    /* At most two jobs, even tiny ones. */
    core_state *core = make_core("lucid", "magm", 1);
    lucid_first(core, lucid_job(1, 0, 100));
    submit_spec(core, lucid_job(2, 0, 100));
    assert_int_equal(place_one(core, 30, NULL), 0);
    core_job_active(core, 2, 30);
    submit_spec(core, lucid_job(3, 0, 100));
    assert_int_equal(place_one(core, 1000, NULL), -1);
    core_destroy(core);
}

/* A job of unknown peak memory (every aegisd job unless profiled) fills
 * its GPU's usable memory whichever comes first: one already running
 * weighs total - lucid_reserve_mib, as it would if it came next. */
static void test_lucid_unknown_peak_fills_its_gpu(void **state) {
    assert_int_equal(lucid_second(lucid_job(1, 0, CORE_UNKNOWN),
                                  lucid_job(2, 0, 1000)), -1);
    /* A job of no memory still fits beside it, as beside a full one. */
    assert_int_equal(lucid_second(lucid_job(1, 0, CORE_UNKNOWN),
                                  lucid_job(2, 0, 0)), 0);

    /* Two aegisd jobs (no profile at all) under a score cap that lets
     * two jumbo jobs pair: memory alone keeps them apart. */
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = "lucid";
    cfg.lucid_max_score = 4;
    core_state *core = make_core_cfg(&cfg, 1);
    lucid_first(core, job_spec(1, 1));
    submit_spec(core, job_spec(2, 1));
    assert_int_equal(place_one(core, 1000, NULL), -1);

    /* The reserve is read when placing, not when the job started: a
     * reload that shrinks it leaves the sums whole (core_check) and the
     * GPU still full. */
    cfg.lucid_reserve_mib = 1024;
    char err[256];
    assert_int_equal(core_reconfigure(core, &cfg, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 1000, NULL), -1);
    assert_int_equal(core_check(core, err, sizeof(err)), 0);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 1000, NULL), CORE_DONE);
    assert_int_equal(core_check(core, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 1000, NULL), 0);
    core_destroy(core);
}

/* A GPU full of a job of unknown peak ranks after one with memory left. */
static void test_lucid_ranks_unknown_peak_as_full(void **state) {
    core_state *core = make_core("lucid", "magm", 2);
    core_launch out[2];
    submit_spec(core, lucid_job(1, 0, CORE_UNKNOWN));
    submit_spec(core, lucid_job(2, 0, 5000));
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    assert_int_equal(out[0].gpus[0], 0);
    assert_int_equal(out[1].gpus[0], 1);
    for (int i = 1; i <= 2; i++) core_job_active(core, i, 0);
    submit_spec(core, lucid_job(3, 0, 0));
    assert_int_equal(place_one(core, 30, NULL), 1);
    core_destroy(core);
}

static void test_lucid_ranks_by_score_then_memory(void **state) {
    core_state *core = make_core("lucid", "magm", 3);
    core_launch out[3];
    submit_spec(core, lucid_job(1, 1, 1000));
    submit_spec(core, lucid_job(2, 0, 9000));
    submit_spec(core, lucid_job(3, 0, 5000));
    assert_int_equal(core_schedule(core, 0, out, 3), 3);
    for (int i = 1; i <= 3; i++) core_job_active(core, i, 0);
    submit_spec(core, lucid_job(4, 1, 1000));
    assert_int_equal(place_one(core, 30, NULL), 2);
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusive_never_shares),
        cmocka_unit_test(test_oracle_demand_is_peak_plus_margin),
        cmocka_unit_test(test_horus_utilization_budget),
        cmocka_unit_test(test_horus_least_projected_first),
        cmocka_unit_test(test_horus_unknown_job_first_fills_its_gpu),
        cmocka_unit_test(test_lucid_constraints),
        cmocka_unit_test(test_lucid_ranks_by_score_then_memory),
        cmocka_unit_test(test_lucid_unknown_peak_fills_its_gpu),
        cmocka_unit_test(test_lucid_ranks_unknown_peak_as_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
