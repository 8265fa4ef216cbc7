/* test_config.c -- defaults, setting fields by name, validation in
 * core_create, and the recovery ladder's buckets. */
#include "helpers.h"

#include <string.h>

static void test_defaults(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    assert_int_equal(cfg.window_samples, 30);
    assert_double_equal(cfg.observe_s, 30, 0);
    assert_double_equal(cfg.no_est_demand_mib, 5120, 0);
    assert_double_equal(cfg.smact_max, 0.65, 0);
    assert_string_equal(cfg.policy, "aegis");
    assert_string_equal(cfg.placement, "magm");
}

static void test_config_set(void **state) {
    core_config cfg;
    char err[128] = "";
    core_config_default(&cfg);
    assert_int_equal(core_config_set(&cfg, "smact_max", "0.5", err, sizeof(err)), 0);
    assert_double_equal(cfg.smact_max, 0.5, 0);
    assert_int_equal(core_config_set(&cfg, "window_samples", "10", err, sizeof(err)), 0);
    assert_int_equal(cfg.window_samples, 10);
    char name[] = "lucid";
    assert_int_equal(core_config_set(&cfg, "policy", name, err, sizeof(err)), 0);
    name[0] = 'x'; /* the config must not point into the caller's buffer */
    assert_string_equal(cfg.policy, "lucid");

    assert_int_equal(core_config_set(&cfg, "smact_maxx", "1", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "smact_maxx"));
    assert_int_equal(core_config_set(&cfg, "observe_s", "30s", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "observe_s"));
    assert_double_equal(cfg.observe_s, 30, 0);
    assert_int_equal(core_config_set(&cfg, "window_samples", "2.5", err, sizeof(err)), -1);
    assert_int_equal(core_config_set(&cfg, "placement", "worst", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "worst"));
}

/* Every number has a range: a value outside it is refused, naming the
 * field, and the config keeps its old value. */
static void test_config_ranges(void **state) {
    static const struct { const char *name, *value; } bad[] = {
        {"observe_s", "-100"}, {"guard_frac", "5"}, {"smact_max", "-1"},
        {"smocc_max", "1.5"}, {"drama_max", "-0.1"}, {"util_max", "2"},
        {"est_margin_mib", "1e308"}, {"est_margin_mib", "-1"},
        {"no_est_demand_mib", "-5"}, {"guard_min_mib", "1e300"},
        {"window_samples", "1e9"}, {"window_samples", "0"},
        {"window_samples", "-3"}, {"window_samples", "3601"},
        {"sample_period_s", "0"}, {"sample_period_s", "-1"},
        {"ladder_max_step_mib", "-1"}, {"ladder_from_free", "2"},
        {"recovery_collocates", "-1"}, {"lucid_reserve_mib", "-1"},
        {"lucid_max_jobs", "0"}, {"lucid_max_score", "-1"},
        {"horus_max_util_pct", "-1"}, {"observe_s", "nan"},
        {"guard_frac", "inf"},
    };
    core_config cfg, def;
    core_config_default(&def);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char err[160] = "";
        cfg = def;
        if (core_config_set(&cfg, bad[i].name, bad[i].value, err,
                            sizeof(err)) != -1 ||
            !strstr(err, bad[i].name) || memcmp(&cfg, &def, sizeof(cfg)))
            fail_msg("%s: %s accepted or unnamed: '%s'", bad[i].name,
                     bad[i].value, err);
    }
    /* the edges are in */
    static const struct { const char *name, *value; } good[] = {
        {"observe_s", "0"}, {"guard_frac", "1"}, {"smact_max", "0"},
        {"util_max", "1"}, {"window_samples", "1"},
        {"window_samples", "3600"}, {"est_margin_mib", "0"},
        {"ladder_max_step_mib", "0"}, {"sample_period_s", "0.5"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        char err[160] = "";
        if (core_config_set(&cfg, good[i].name, good[i].value, err,
                            sizeof(err)) != 0)
            fail_msg("%s: %s refused: %s", good[i].name, good[i].value, err);
    }
}

static void test_create_rejects_bad_config(void **state) {
    core_config cfg;
    char err[128] = "";
    double totals[] = {GPU_MIB};
    core_config_default(&cfg);
    cfg.policy = "nope";
    assert_null(core_create(&cfg, 1, totals, err, sizeof(err)));
    assert_non_null(strstr(err, "nope"));
    core_config_default(&cfg);
    cfg.window_samples = 0;
    assert_null(core_create(&cfg, 1, totals, err, sizeof(err)));
}

static void test_names(void **state) {
    const char *const *p = core_policy_names();
    const char *want[] = {"exclusive", "aegis", "aegis-est", "aegis-oracle",
                          "horus", "lucid", "aegis-plus"};
    for (int i = 0; i < 7; i++) assert_string_equal(p[i], want[i]);
    assert_null(p[7]);
    assert_string_equal(core_placement_names()[4], "rr");
}

static void test_ladder_40gb(void **state) {
    double b[16];
    double want[] = {10240, 18432, 20480, 28672, 30720};
    assert_int_equal(core_ladder(40960, 8192, b, 16), 5);
    for (int i = 0; i < 5; i++) assert_double_equal(b[i], want[i], 0);
    /* A step wider than every gap adds nothing. */
    assert_int_equal(core_ladder(40960, 20480, b, 16), 3);
    assert_int_equal(core_ladder(40960, 8192, b, 2), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_config_set),
        cmocka_unit_test(test_config_ranges),
        cmocka_unit_test(test_create_rejects_bad_config),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_ladder_40gb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
