/* test_number.c -- cmocka tests of the numbers every aegis command takes
 * (cli_number.c): plain decimal numbers only, and ranges printed as a
 * user would type them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs fn with stderr into a file, and returns what it said. */
static const char *quietly(int (*fn)(const char *), const char *text,
                           int *rc) {
    static char said[512];
    char path[] = "/tmp/aegis-number-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    *rc = fn(text);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, said, sizeof(said) - 1, 0);
    said[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return said;
}

static int parse_gpu(const char *text) {
    long v;
    return cli_parse_long("drain", "GPU", text, 0, 63, &v);
}

static int parse_context(const char *text) {
    double v;
    return cli_parse_double("estimate", "cuda-context", text, 0, 1 << 20, &v);
}

/* drain ' 1' drained GPU 1, show +1 showed job 1, sim --gpu-mem-mib
 * 0x400 took 1024: strtol's and strtod's extra forms are refused. */
static void test_plain_decimal(void **state) {
    (void)state;
    static const char *const whole[] = {"0", "1", "-3", "007", "63"};
    for (size_t i = 0; i < sizeof(whole) / sizeof(*whole); i++) {
        assert_true(cli_is_decimal(whole[i], false));
        assert_true(cli_is_decimal(whole[i], true));
    }
    static const char *const real[] = {"0.5", ".5", "5.", "1e3", "2.5E-2",
                                       "1e+3", "-1.5"};
    for (size_t i = 0; i < sizeof(real) / sizeof(*real); i++) {
        if (!cli_is_decimal(real[i], true)) fail_msg("'%s' refused", real[i]);
        if (cli_is_decimal(real[i], false)) fail_msg("'%s' whole", real[i]);
    }
    static const char *const bad[] = {"", " 1", "1 ", "+1", "0x10", "0X10",
                                      "inf", "nan", "-", ".", "e3", "1e",
                                      "1e+", "--1", "1.2.3", "１"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        if (cli_is_decimal(bad[i], true)) fail_msg("'%s' accepted", bad[i]);
        if (cli_is_decimal(bad[i], false)) fail_msg("'%s' accepted", bad[i]);
    }
}

static void test_parse_refusals(void **state) {
    (void)state;
    int rc;
    static const char *const gpus[] = {" 1", "+1", "0x1", "1.0", "64", ""};
    for (size_t i = 0; i < sizeof(gpus) / sizeof(*gpus); i++) {
        const char *said = quietly(parse_gpu, gpus[i], &rc);
        if (rc != -1) fail_msg("GPU '%s' accepted", gpus[i]);
        char want[64];
        snprintf(want, sizeof(want), "aegis drain: GPU: '%s' is not a whole "
                 "number in [0, 63]\n", gpus[i]);
        assert_string_equal(said, want);
    }
    assert_string_equal(quietly(parse_gpu, "1", &rc), "");
    assert_int_equal(rc, 0);
    static const char *const ctx[] = {"0x10", "inf", " 5", "+5", "1e-400",
                                      "2e6"};
    for (size_t i = 0; i < sizeof(ctx) / sizeof(*ctx); i++) {
        const char *said = quietly(parse_context, ctx[i], &rc);
        if (rc != -1) fail_msg("--cuda-context '%s' accepted", ctx[i]);
        /* the bound in full: %g printed 1.04858e+06 */
        char want[96];
        snprintf(want, sizeof(want), "aegis estimate: --cuda-context: '%s' "
                 "is not a number in [0, 1048576]\n", ctx[i]);
        assert_string_equal(said, want);
    }
    quietly(parse_context, "1.5e2", &rc);
    assert_int_equal(rc, 0);
}

static void test_number_text(void **state) {
    (void)state;
    char buf[32];
    cli_number_text(1048576, buf, sizeof(buf));
    assert_string_equal(buf, "1048576");
    cli_number_text(1e9, buf, sizeof(buf));
    assert_string_equal(buf, "1000000000");
    cli_number_text(0.1, buf, sizeof(buf));
    assert_string_equal(buf, "0.1");
    cli_number_text(-2, buf, sizeof(buf));
    assert_string_equal(buf, "-2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_decimal),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_number_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
