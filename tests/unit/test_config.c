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
                          "horus", "lucid"};
    for (int i = 0; i < 6; i++) assert_string_equal(p[i], want[i]);
    assert_null(p[6]);
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
        cmocka_unit_test(test_create_rejects_bad_config),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_ladder_40gb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
