/* test_proto_supervisor.c -- the submit protocol's pipeline field (a
 * pipeline's supervisor, daemon/pipelines.c): taken with its name, no
 * GPU and nothing of placement; refused, naming the field, otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto.h"

/* Parses a submit of the one job `job` (JSON text): its rc, err why. */
static int parse(const char *job, proto_request *req, char *err,
                 size_t errlen) {
    char line[1024];
    snprintf(line, sizeof(line), "{\"op\":\"submit\",\"cwd\":\"/\",\"env\":[],"
             "\"jobs\":[%s]}", job);
    return proto_parse(line, strlen(line), req, err, errlen);
}

static void expect_refused(const char *job, const char *want) {
    proto_request req;
    char err[512];
    assert_int_equal(parse(job, &req, err, sizeof(err)), -1);
    proto_request_free(&req); /* proto_parse's contract: freed either way */
    if (!strstr(err, want)) fail_msg("'%s' lacks '%s'", err, want);
}

static void test_supervisor(void **state) {
    (void)state;
    proto_request req;
    char err[512];
    assert_int_equal(parse("{\"cmd\":[\"aegis-pipeline\",\"run\",\"f\"],"
                           "\"pipeline\":\"tiny-1.a\"}", &req, err,
                           sizeof(err)), 0);
    assert_string_equal(req.jobs[0].pipeline, "tiny-1.a");
    assert_string_equal(req.jobs[0].name, "tiny-1.a");
    assert_int_equal(req.jobs[0].gpus, 0);
    assert_true(req.jobs[0].mem_mib < 0);
    proto_request_free(&req);
}

static void test_plain_job(void **state) {
    (void)state;
    proto_request req;
    char err[512];
    assert_int_equal(parse("{\"cmd\":[\"true\"]}", &req, err, sizeof(err)), 0);
    assert_string_equal(req.jobs[0].pipeline, "");
    assert_int_equal(req.jobs[0].gpus, 1);
    proto_request_free(&req);
}

static void test_refused(void **state) {
    (void)state;
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"p\",\"gpus\":1}",
                   "jobs[0].gpus: a pipeline's supervisor is not placed");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"p\",\"mem_mib\":10}",
                   "jobs[0].mem_mib: a pipeline's supervisor");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"p\",\"feed\":\"f\"}",
                   "jobs[0].feed: a pipeline's supervisor");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"a/b\"}",
                   "jobs[0].pipeline: only letters, digits");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"\"}",
                   "jobs[0].pipeline: expected a name");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":7}",
                   "jobs[0].pipeline: expected a string");
    expect_refused("{\"cmd\":[\"x\"],\"pipeline\":\"p\",\"name\":\"n\"}",
                   "jobs[0].name: a pipeline's supervisor");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supervisor),
        cmocka_unit_test(test_plain_job),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
