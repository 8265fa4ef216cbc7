/* test_timelimit.c -- the time limits of `aegis submit --time` (timelimit.c):
 * Slurm's forms and the unit forms parsed to seconds, malformed and
 * out-of-range limits refused, and the form a limit is shown in; and the
 * protocol's fields for them (time_limit_s, hold, release, shutdown, a
 * drain's reason). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"
#include "timelimit.h"

static void test_slurm_forms(void **state) {
    (void)state;
    static const struct { const char *text; double s; } good[] = {
        {"10", 600},             /* minutes */
        {"90", 5400},
        {"10:00", 600},          /* MM:SS */
        {"0:30", 30},
        {"1:30:00", 5400},       /* HH:MM:SS */
        {"36:00:00", 129600},
        {"2-00:00:00", 172800},  /* D-HH:MM:SS */
        {"1-12", 129600},        /* D-HH */
        {"1-1:30", 91800},       /* D-HH:MM */
        {"0-0:0:5", 5},
        {"90s", 90}, {"90S", 90}, {"2h", 7200}, {"30m", 1800},
        {"1d", 86400}, {"1.5h", 5400}, {"365d", 365 * 86400.0},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        double s = -1;
        if (timelimit_parse(good[i].text, &s) != 0 || s != good[i].s)
            fail_msg("'%s': %g, not %g", good[i].text, s, good[i].s);
    }
}

static void test_refused(void **state) {
    (void)state;
    static const char *const bad[] = {
        "", "0", "0:00", "0s", "-5", "+5", " 5", "5 ", "10 min", "5x",
        "1:60", "1:2:60", "1:60:00", "1-24", "1-0:60", "1-", "-1", "1--2",
        "1:2:3:4", ":30", "30:", "1::2", "2-1-1", "1e3", "0x10", "inf",
        "nan", "1.5", "1.5:00", "s", "h", ".h", "366d", "1000000000",
        "99999999999999999999", "1:99999999999999999999",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        double s = -1;
        if (timelimit_parse(bad[i], &s) == 0)
            fail_msg("'%s' taken as %g s", bad[i], s);
    }
}

static void test_format(void **state) {
    (void)state;
    static const struct { double s; const char *text; } cases[] = {
        {2, "0:02"}, {600, "10:00"}, {3599, "59:59"}, {3600, "1:00:00"},
        {5400, "1:30:00"}, {86399, "23:59:59"}, {86400, "1-00:00:00"},
        {91830, "1-01:30:30"}, {1.4, "0:01"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char text[32];
        timelimit_format(cases[i].s, text, sizeof(text));
        assert_string_equal(text, cases[i].text);
        double back;
        /* what is shown parses back to the same limit */
        assert_int_equal(timelimit_parse(text, &back), 0);
        assert_true(back == (double)(long long)(cases[i].s + 0.5));
    }
}

/* Parses line; returns 0 or -1, with the error in err. */
static int parse(const char *line, proto_request *req, char *err) {
    return proto_parse(line, strlen(line), req, err, 256);
}

static void test_protocol(void **state) {
    (void)state;
    proto_request req;
    char err[256];
    assert_int_equal(parse("{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":"
                           "[\"true\"],\"time_limit_s\":600}]}", &req, err), 0);
    assert_true(req.jobs[0].time_limit_s == 600);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":"
                           "[\"true\"]}]}", &req, err), 0);
    assert_true(req.jobs[0].time_limit_s == 0);
    proto_request_free(&req);
    static const char *const bad_limits[] = {"0", "-1", "1e12", "\"10\"",
                                             "null"};
    for (size_t i = 0; i < 5; i++) {
        char line[200];
        snprintf(line, sizeof(line), "{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":"
                 "[{\"cmd\":[\"true\"],\"time_limit_s\":%s}]}", bad_limits[i]);
        assert_int_equal(parse(line, &req, err), -1);
        assert_non_null(strstr(err, "jobs[0].time_limit_s"));
        proto_request_free(&req);
    }
    assert_int_equal(parse("{\"op\":\"hold\",\"ids\":[3,4]}", &req, err), 0);
    assert_int_equal(req.op, PROTO_HOLD);
    assert_int_equal(req.nids, 2);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"release\",\"ids\":[3]}", &req, err), 0);
    assert_int_equal(req.op, PROTO_RELEASE);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"shutdown\",\"drain\":true}", &req, err),
                     0);
    assert_true(req.op == PROTO_SHUTDOWN && req.drain_jobs);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"shutdown\",\"drain\":1}", &req, err), -1);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"drain\",\"gpu\":1,\"reason\":\"fan\"}",
                           &req, err), 0);
    assert_string_equal(req.reason, "fan");
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"drain\",\"gpu\":1,\"reason\":\"a\\nb\"}",
                           &req, err), -1);
    assert_non_null(strstr(err, "reason"));
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"resume\",\"gpu\":1,\"reason\":\"x\"}",
                           &req, err), -1);
    proto_request_free(&req);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm_forms),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
