/* test_sharing.c -- the `sharing:` settings of aegis.yaml (sharing.h,
 * config.c): both forms, the MPS keys, and errors that name the file, the
 * line and the key; and the MPS control program run through mps.h against
 * aegis-fake-mps-control.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"
#include "mps.h"
#include "sharing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

static int setup_dir(void **state) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/aegis-sharing-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Loads text as aegis.yaml into share; the return code, err filled. */
static int load(const char *text, sharing_config *share, char *err,
                size_t errlen) {
    core_config cfg;
    acct_params acct;
    config_keys keys;
    return config_load_daemon(write_file("a.yaml", text), false, &cfg, &acct,
                              share, &keys, err, errlen);
}

static void test_default_is_naive(void **state) {
    sharing_config s;
    char err[256];
    assert_int_equal(load("policy: aegis\n", &s, err, sizeof(err)), 0);
    for (int g = 0; g < CORE_MAX_GPUS; g++)
        assert_int_equal(sharing_mode(&s, g), SHARE_NAIVE);
    assert_string_equal(s.mps_control, SHARING_MPS_CONTROL);
    assert_string_equal(s.mps_dir, "");
    assert_true(s.mps_pin_memory);
}

static void test_one_mode_for_all(void **state) {
    sharing_config s;
    char err[256];
    assert_int_equal(load("sharing: mps\nmps_control: /opt/mps-control\n"
                          "mps_dir: /run/aegis-mps\nmps_pin_memory: 0\n",
                          &s, err, sizeof(err)), 0);
    assert_int_equal(sharing_mode(&s, 0), SHARE_MPS);
    assert_int_equal(sharing_mode(&s, 7), SHARE_MPS);
    assert_string_equal(s.mps_control, "/opt/mps-control");
    assert_string_equal(s.mps_dir, "/run/aegis-mps");
    assert_false(s.mps_pin_memory);
}

static void test_default_and_overrides(void **state) {
    sharing_config s;
    char err[256];
    assert_int_equal(load("policy: aegis\nsharing:\n  default: exclusive\n"
                          "  1: mig\n  2: auto\nsmact_max: 0.5\n", &s, err,
                          sizeof(err)), 0);
    assert_int_equal(sharing_mode(&s, 0), SHARE_EXCLUSIVE);
    assert_int_equal(sharing_mode(&s, 1), SHARE_MIG);
    assert_int_equal(sharing_mode(&s, 2), SHARE_AUTO);
    assert_int_equal(sharing_mode(&s, 3), SHARE_EXCLUSIVE);
    /* the line that gave each GPU its mode, for the errors at start */
    assert_int_equal(sharing_mode_line(&s, 1), 4);
    assert_int_equal(sharing_mode_line(&s, 3), 3);
    /* an override on a GPU the server lacks is caught at start, by line */
    assert_int_equal(sharing_check_gpus(&s, 3, "a.yaml", err, sizeof(err)), 0);
    assert_int_equal(sharing_check_gpus(&s, 2, "a.yaml", err, sizeof(err)),
                     -1);
    assert_string_equal(err, "a.yaml:5: sharing: 2: no such GPU (2 found)");
    assert_int_equal(load("sharing: mig\n", &s, err, sizeof(err)), 0);
    assert_int_equal(sharing_mode_line(&s, 5), 1);
}

/* `sharing:` given again replaces the earlier line whole, in either
 * form, as any key given again does: an appended line sets every GPU. */
static void test_given_again(void **state) {
    sharing_config s;
    char err[256];
    assert_int_equal(load("sharing:\n  0: mig\nsharing: naive\n", &s, err,
                          sizeof(err)), 0);
    for (int g = 0; g < 3; g++)
        assert_int_equal(sharing_mode(&s, g), SHARE_NAIVE);
    assert_int_equal(sharing_check_gpus(&s, 0, "a.yaml", err, sizeof(err)), 0);
    assert_int_equal(load("sharing: mig\nsharing:\n  1: mps\n", &s, err,
                          sizeof(err)), 0);
    assert_int_equal(sharing_mode(&s, 0), SHARE_NAIVE);
    assert_int_equal(sharing_mode(&s, 1), SHARE_MPS);
    assert_int_equal(sharing_mode(&s, 2), SHARE_NAIVE);
    assert_int_equal(load("sharing:\n  default: mps\n  2: mig\n"
                          "sharing:\n  0: auto\n", &s, err, sizeof(err)), 0);
    assert_int_equal(sharing_mode(&s, 0), SHARE_AUTO);
    assert_int_equal(sharing_mode(&s, 1), SHARE_NAIVE);
    assert_int_equal(sharing_mode(&s, 2), SHARE_NAIVE);
}

static void test_bad(void **state) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"sharing: shared\n", "a.yaml:1: sharing: 'shared' is not a sharing "
                              "mode (exclusive, naive, mps, mig, auto)"},
        {"sharing:\n  0: mps\n  gpu1: mig\n",
         "a.yaml:3: sharing: gpu1: not 'default' or a GPU index 0..63"},
        {"sharing:\n  64: mps\n", "a.yaml:2: sharing: 64: not 'default'"},
        {"sharing:\n  0: [mps]\n", "a.yaml:2: sharing: 0: expected a single "
                                   "mode"},
        {"sharing:\n  default: time\n", "a.yaml:2: sharing: default: 'time' "
                                        "is not a sharing mode"},
        {"mps_dir: relative\n", "a.yaml:1: mps_dir: 'relative' is not an "
                                "absolute path"},
        {"mps_pin_memory: yes\n", "a.yaml:1: mps_pin_memory: 'yes' is not 0 "
                                  "or 1"},
        {"mps_control: ''\n", "a.yaml:1: mps_control: '' is empty"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        sharing_config s;
        char err[512] = "";
        assert_int_equal(load(cases[i].text, &s, err, sizeof(err)), -1);
        if (!strstr(err, cases[i].want))
            fail_msg("%s: got \"%s\", want \"%s\"", cases[i].text, err,
                     cases[i].want);
    }
}

/* The control program: started once, found running, refused twice,
 * stopped; a missing program is an error naming it. */
static void test_mps_lifecycle(void **state) {
    char pipe_dir[128], log_dir[128], err[1024];
    sharing_mps_dirs(tmpdir, 0, pipe_dir, log_dir, sizeof(pipe_dir));
    setenv("AEGIS_TEST_GPU_DIR", tmpdir, 1);
    mps_target t = {TEST_FAKE_MPS, "GPU-aegis-test-0000-0", pipe_dir,
                    log_dir};
    assert_false(mps_running(pipe_dir));
    assert_int_equal(mps_start(&t, err, sizeof(err)), 0);
    assert_true(mps_running(pipe_dir));
    assert_int_equal(mps_start(&t, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "already running"));
    assert_int_equal(mps_stop(&t, err, sizeof(err)), 0);
    assert_false(mps_running(pipe_dir));
    assert_int_equal(mps_stop(&t, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "Cannot find MPS control daemon"));
    mps_target missing = {"/nonexistent/mps-control", t.gpu_uuid, pipe_dir,
                          log_dir};
    assert_int_equal(mps_start(&missing, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/mps-control -d (GPU "
                                "GPU-aegis-test-0000-0"));
    assert_non_null(strstr(err, "No such file"));
}

/* The control program is looked for as execlp() would run it. */
static void test_mps_program_check(void **state) {
    char err[1024] = "";
    assert_int_equal(mps_program_check(TEST_FAKE_MPS, err, sizeof(err)), 0);
    assert_int_equal(mps_program_check("sh", err, sizeof(err)), 0);
    assert_int_equal(mps_program_check("/nonexistent/mps-control", err,
                                       sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/mps-control cannot run"));
    assert_int_equal(mps_program_check(tmpdir, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not an executable file"));
    assert_int_equal(mps_program_check("no-such-mps-control-xyz", err,
                                       sizeof(err)), -1);
    assert_non_null(strstr(err, "no-such-mps-control-xyz is not on PATH"));
}

/* A folder on the way that others cannot enter is found, existing or
 * not below it. */
static void test_mps_dir_blocked(void **state) {
    char dir[256], blocker[4096];
    int mode = 0;
    snprintf(dir, sizeof(dir), "%s/private", tmpdir);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(tmpdir, 0755), 0);
    snprintf(dir, sizeof(dir), "%s/private/mps", tmpdir);
    assert_true(mps_dir_blocked(dir, blocker, sizeof(blocker), &mode));
    assert_int_equal(mode, 0700);
    snprintf(dir, sizeof(dir), "%s/private", tmpdir);
    assert_string_equal(blocker, dir);
    assert_int_equal(chmod(dir, 0711), 0);
    snprintf(dir, sizeof(dir), "%s/private/mps/0", tmpdir);
    assert_false(mps_dir_blocked(dir, blocker, sizeof(blocker), &mode));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_naive),
        cmocka_unit_test(test_one_mode_for_all),
        cmocka_unit_test(test_default_and_overrides),
        cmocka_unit_test(test_given_again),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_mps_lifecycle),
        cmocka_unit_test(test_mps_program_check),
        cmocka_unit_test(test_mps_dir_blocked),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
