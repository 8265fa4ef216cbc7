/* test_runner.c -- a bad module loses its batch, with the right DIPP code,
 * and nothing else: after each bad one (crash, abort, spin, allocation
 * bomb, wrong ABI, missing symbol, missing file, open(), socket(), a write
 * into its input or an attempt to make it writable, an error of its own,
 * bad parameters) the next good batch is processed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>

#include <cmocka.h>

#include "batch.h"
#include "camera.h"
#include "errors.h"
#include "pipeline.h"
#include "runner.h"

static runner r;
static dbatch frame;

static int setup(void **state) {
    (void)state;
    plat_limits lim = {3000, 64u << 20}; /* 3 s: a loaded machine */
    if (runner_start(&r, DIPP_TEST_MODULES, lim))
        return -1;
    return batch_create(&frame, 64 * 64) || camera_shoot(&frame, 64, 7);
}

static int teardown(void **state) {
    (void)state;
    batch_close(&frame);
    runner_stop(&r);
    return 0;
}

static int run_one(const char *name, const dipp_params *p, uint32_t *images) {
    static const dipp_params none;
    dbatch out;
    run_report rep;
    assert_int_equal(batch_create(&out, 1u << 20), 0);
    int code = runner_run(&r, name, p ? p : &none, &frame, &out, &rep);
    if (code)
        print_message("%s: %d %s\n", name, code, rep.detail);
    *images = out.api.count;
    batch_close(&out);
    return code;
}

/* name loses its batch with code; the good module's next batch arrives. */
static void loses_only_its_batch(const char *name, int code) {
    uint32_t n;
    assert_int_equal(run_one(name, NULL, &n), code);
    assert_int_equal(run_one("copy", NULL, &n), 0);
    assert_int_equal(n, 1);
}

static void test_good_module(void **s) {
    (void)s;
    uint32_t n;
    assert_int_equal(run_one("copy", NULL, &n), 0);
    assert_int_equal(n, 1);
}

static void test_crash(void **s) { (void)s; loses_only_its_batch("crash", DIPP_E_CRASH); }
static void test_abort(void **s) { (void)s; loses_only_its_batch("abort", DIPP_E_CRASH); }
static void test_spin(void **s) { (void)s; loses_only_its_batch("spin", DIPP_E_TIMEOUT); }
static void test_bomb(void **s) { (void)s; loses_only_its_batch("bomb", DIPP_E_NOMEM); }
static void test_shared_bomb(void **s) { (void)s; loses_only_its_batch("shmbomb", DIPP_E_NOMEM); }
static void test_abi(void **s) { (void)s; loses_only_its_batch("wrong_abi", DIPP_E_ABI); }
static void test_symbol(void **s) {
    (void)s;
    loses_only_its_batch("no_symbol", DIPP_E_MISSING_SYMBOL);
}
static void test_missing(void **s) {
    (void)s;
    loses_only_its_batch("absent", DIPP_E_MISSING_MODULE);
    loses_only_its_batch("../copy", DIPP_E_MISSING_MODULE);
}
/* The input is mapped read-only in the child: the write faults, and the
 * frame the next module reads is unchanged. */
static void test_input_is_read_only(void **s) {
    (void)s;
    uint8_t first = frame.api.images[0].data[0];
    loses_only_its_batch("scribble", DIPP_E_CRASH);
    assert_int_equal(frame.api.images[0].data[0], first);
}

/* Nor can it make its input writable: it gets a read-only descriptor. */
static void test_input_stays_read_only(void **s) {
    (void)s;
    uint8_t first = frame.api.images[0].data[0];
    loses_only_its_batch("reprotect", DIPP_E_MODULE + 1);
    assert_int_equal(frame.api.images[0].data[0], first);
}

/* A fork server that dies loses the batch in flight (605), and a new one
 * takes the next. */
static void test_fork_server_killed(void **s) {
    (void)s;
    uint32_t n;
    kill(r.srv.pid, SIGKILL);
    assert_int_equal(run_one("copy", NULL, &n), DIPP_E_RUNNER);
    assert_int_equal(run_one("copy", NULL, &n), 0);
    assert_int_equal(n, 1);
}

static void test_own_error(void **s) { (void)s; loses_only_its_batch("fail", 742); }
static void test_socket(void **s) { (void)s; loses_only_its_batch("socketer", DIPP_E_SANDBOX); }

static void test_open(void **s) {
    (void)s;
#ifdef DIPP_SANITIZER_FILTER
    loses_only_its_batch("opener", DIPP_E_MODULE + 2); /* EPERM, not killed */
#else
    loses_only_its_batch("opener", DIPP_E_SANDBOX);
#endif
}

/* A module cannot reach its fork server, a process of the same user (nor
 * so the satellite's daemon): not by a signal, a pidfd, its limits or its
 * priority; nor get around the ban on open (io_uring, a path) or the
 * memory limit (SysV memory). The server lives on, the same process, and
 * serves the next. Limits and priority are refused (702), not fatal. */
static void test_other_processes(void **s) {
    (void)s;
    int server = r.srv.pid;
    for (int how = 1; how <= 7; how++) {
        dipp_params p = {1, {{"how", DIPP_PARAM_INT, how, 0, ""}}};
        uint32_t n;
        int refused = how == 3 || how == 4;
#ifdef DIPP_SANITIZER_FILTER
        refused = 1;
#endif
        assert_int_equal(run_one("meddler", &p, &n),
                         refused ? DIPP_E_MODULE + 2 : DIPP_E_SANDBOX);
        assert_int_equal(r.srv.pid, server);
        assert_int_equal(kill(server, 0), 0);
        assert_int_equal(run_one("copy", NULL, &n), 0);
    }
}

static void test_params(void **s) {
    (void)s;
    dipp_params p = {1, {{"nope", DIPP_PARAM_INT, 1, 0, ""}}};
    uint32_t n;
    assert_int_equal(run_one("copy", &p, &n), DIPP_E_PARAM);
    /* out of the declared range (factor 1..64) */
    p.item[0] = (dipp_param){"factor", DIPP_PARAM_INT, 99, 0, ""};
    assert_int_equal(run_one("downsample", &p, &n), DIPP_E_PARAM);
    p.item[0].i = 2;
    assert_int_equal(run_one("downsample", &p, &n), DIPP_E_MODULE + DIPP_ERR_FORMAT);
}

/* What coder publishes with code c (and exit e). */
static int coder(int64_t c, int64_t e) {
    dipp_params p = {2, {{"code", DIPP_PARAM_INT, c, 0, ""}, {"exit", DIPP_PARAM_INT, e, 0, ""}}};
    uint32_t n;
    return run_one("coder", &p, &n);
}

/* Every code means what the flight DIPP's table (discosat/DIPP
 * dipp_error.h, README) means where it defines one; a module's own code
 * maps as its dipp_process.c does: 1-99 to 700 + n, 100-999 as is. */
static void test_flight_numbers(void **s) {
    (void)s;
    uint32_t n;
    assert_int_equal(coder(5, 0), 705);
    assert_int_equal(coder(99, 0), 799);
    assert_int_equal(coder(100, 0), 100); /* the flight's "Memory Error: Malloc" */
    assert_int_equal(coder(150, 0), 150);
    assert_int_equal(coder(999, 0), 999);
    assert_int_equal(coder(1002, 0), 604); /* would read as an update's code */
    assert_int_equal(coder(-1, 0), 604);
#ifndef DIPP_SANITIZER_FILTER
    /* exited, no result: the flight's 601 "Module Exit Error: Normal" */
    assert_int_equal(coder(3, 1), 601);
    assert_int_equal(coder(0, 1), 601);
#endif
    assert_int_equal(run_one("copy", NULL, &n), 0);
    assert_int_equal(run_one("bomb", NULL, &n), 100);
    assert_int_equal(run_one("wrong_abi", NULL, &n), 520); /* flight 503: a bool param */
    dipp_params p = {1, {{"nope", DIPP_PARAM_INT, 1, 0, ""}}};
    assert_int_equal(run_one("copy", &p, &n), 521); /* flight 504: an int param */
    assert_string_equal(dipp_code_name(503), "bool parameter not found");
    assert_string_equal(dipp_code_name(601), "exited without a result");
    assert_string_equal(dipp_code_name(742), "module error");
    assert_string_equal(dipp_code_name(100), "allocation failed");
}

static void test_pipeline_number(void **s) {
    (void)s;
    pdef d = {.id = 2, .count = 3};
    strcpy(d.step[0].name, "copy");
    strcpy(d.step[1].name, "crash");
    strcpy(d.step[2].name, "copy");
    dbatch out;
    pipe_report rep;
    assert_int_equal(pipeline_run(&r, &d, &frame, &out, &rep), 600202u);
    assert_int_equal(rep.module, 2);
    strcpy(d.step[1].name, "copy");
    assert_int_equal(pipeline_run(&r, &d, &frame, &out, &rep), 0);
    assert_int_equal(out.api.count, 1);
    assert_memory_equal(out.api.images[0].data, frame.api.images[0].data, 64 * 64);
    batch_close(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_module), cmocka_unit_test(test_crash),
        cmocka_unit_test(test_abort),       cmocka_unit_test(test_spin),
        cmocka_unit_test(test_bomb),        cmocka_unit_test(test_abi),
        cmocka_unit_test(test_shared_bomb),
        cmocka_unit_test(test_symbol),      cmocka_unit_test(test_missing),
        cmocka_unit_test(test_own_error),   cmocka_unit_test(test_socket),
        cmocka_unit_test(test_other_processes),
        cmocka_unit_test(test_open),        cmocka_unit_test(test_params),
        cmocka_unit_test(test_pipeline_number), cmocka_unit_test(test_input_is_read_only),
        cmocka_unit_test(test_input_stays_read_only),
        cmocka_unit_test(test_fork_server_killed),
        cmocka_unit_test(test_flight_numbers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
