/* test_dish_lang.c -- the DISH language end to end: lexer and parser
 * errors name FILE:LINE:COL; compiled programs compute what they say on
 * the VM (int and fixed-point arithmetic, nested if, counted loops,
 * calls) and their waits and sleeps follow the simulated clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dish_helpers.h"

static bench b;

static void compile_error(const char *src, const char *want) {
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_int_equal(compile_src(src, img, err, sizeof err), -1);
    if (!strstr(err, want))
        print_message("got: %s\nwant: %s\n", err, want);
    assert_non_null(strstr(err, want));
}

static void errors_have_positions(void **state) {
    (void)state;
    compile_error("proc p() {\n  let x = 1 $ 2\n}", "t.dish:2:13: unexpected character '$'");
    compile_error("proc p() {\n  y = 3\n}", "t.dish:2:3: 'y' is not a local");
    compile_error("proc p() {\n  let x = 1\n", "t.dish:3:1: '}' expected before the end");
    compile_error("proc p() {\n  if 1 { return 2 \n}", "t.dish:3:2: '}' expected");
    compile_error("proc p() { let x = 1.5 % 2.0 }", "t.dish:1:24: '%' takes ints");
    compile_error("proc p() { let x = 0\n x = 2.5 }", "t.dish:2:6: a fix value where an int");
    compile_error("proc p() { repeat n { } }", "t.dish:1:19: loop bound must be an integer constant");
    compile_error("proc p() { repeat 20000 { } }", "t.dish:1:19: loop bound 20000 out of range");
    compile_error("proc p() { let v = param(64, 1) }", "t.dish:1:26: node 64 out of range");
    /* the limit said with its reason: DIPP's node cannot be addressed */
    compile_error("proc p() { set(162, 1, 0) }",
                  "t.dish:1:16: node 162 out of range 0..63: DISH's bytecode addresses "
                  "nodes 0..63 only, not CSP 2's 0..16383 (so not DIPP's 162)");
    compile_error("proc p() { let v = param(2, 200) }",
                  "t.dish:1:29: parameter 200 out of range 0..127: DISH's bytecode "
                  "addresses ids 0..127 only, not libparam's 16-bit ids");
    compile_error("proc p() { wait q() == 1 within 5 }\nproc q() { }",
                  "t.dish:1:17: a call is not allowed in a wait condition");
    compile_error("proc p() { q(1) }\nproc q() { }", "t.dish:1:12: 1 arguments given, 0 expected");
    compile_error("proc p() { break }", "t.dish:1:12: break outside a repeat");
    compile_error("proc p() { wait 1 }", "t.dish:1:19: 'within' expected");
    compile_error("proc p() { let x = 99999999999 }", "t.dish:1:20: number too large");
    compile_error("proc p() { }\nproc p() { }", "t.dish:2:1: procedure 'p' defined twice");
    compile_error("slot 3\nproc a() { tm(1, 1) }\nslot 3\nproc b() { tm(1, 1) }",
                  "t.dish:4:1: procedure 'b' would take slot 3, which 'a' has");
    /* 64 zeros after the point overflowed the scale: SIGFPE */
    compile_error("proc p() { tm(1, 0.0000000000000000000000000000000000000000000000000"
                  "000000000000001) }", "t.dish:1:84: too many digits after the point");
    /* lines ended by \r alone are lines (every error was on line 1, and a
     * comment ran to the end of the file) */
    compile_error("# c\rproc p() {\r  let x = 1 $ 2\r}", "t.dish:3:13: unexpected character");
}

/* A UTF-8 byte-order mark before the text, as some editors write, is not
 * an unexpected character. */
static void byte_order_mark_skipped(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_true(compile_src("\xEF\xBB\xBFproc p() { tm(1, 2) }", img, err, sizeof err) > 0);
}

/* A character no token starts with is named so it can be found: a UTF-8
 * one as itself and its code point, an invisible or direction-changing
 * one by number alone, a control byte or a byte of another encoding in
 * hex, each at its line and column (all were '?'). */
static void unexpected_characters_named(void **state) {
    (void)state;
    compile_error("proc \xC3\xA1() {\n}",
                  "t.dish:1:6: unexpected character '\xC3\xA1' (U+00E1): outside "
                  "comments DISH is ASCII");
    compile_error("proc p() {\n  tm(1, \x01)\n}", "t.dish:2:9: unexpected control byte 0x01");
    compile_error("proc p() {\n\x7F}", "t.dish:2:1: unexpected control byte 0x7F");
    compile_error("proc p\xE9() { }", "t.dish:1:7: unexpected byte 0xE9: not ASCII, nor "
                  "the start of a UTF-8 character");
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_int_equal(compile_src("proc p() { tm(1, 2)\xE2\x80\xAE }", img, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "t.dish:1:20: unexpected character U+202E (an invisible"));
    assert_null(strstr(err, "\xE2\x80\xAE")); /* not printed: it would turn the line */
    /* in a comment any UTF-8 is text */
    assert_true(compile_src("# caf\xC3\xA9 \xE2\x80\xAE\nproc p() { tm(1, 2) }", img, err,
                            sizeof err) > 0);
}

/* "proc p() { tm(1, " + `open` n times + "1" + `close` n times + ") }". */
static const char *nested_src(const char *open, const char *close, int n) {
    static char src[200000];
    size_t at = (size_t)snprintf(src, sizeof src, "proc p() { tm(1, ");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(src + at, sizeof src - at, "%s", open);
    at += (size_t)snprintf(src + at, sizeof src - at, "1");
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(src + at, sizeof src - at, "%s", close);
    snprintf(src + at, sizeof src - at, ") }");
    return src;
}

/* A deep nesting is refused where it passes the bound, and does not
 * overflow the parser's stack first (30,000 parentheses did). */
static void deep_nesting_refused(void **state) {
    (void)state;
    compile_error(nested_src("(", ")", 30000), "t.dish:1:146: expressions "
                  "nested too deeply");
    compile_error(nested_src("not ", "", 30000), "nested too deeply");
    compile_error(nested_src("int(", ")", 30000), "nested too deeply");
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_true(compile_src(nested_src("(", ")", 100), img, err, sizeof err) >
                0);
}

/* Recursion is legal syntax; the verifier refuses it at compile time, at
 * the FILE:LINE:COL of the call that closes the cycle (it said only the
 * slot). */
static void recursion_refused(void **state) {
    (void)state;
    compile_error("proc p() { return p() }", "t.dish:1:19: the verifier refuses the result: "
                  "procedure 0 (slot 1) at 0: call of slot 1 closes the cycle of calls "
                  "1 -> 1 (no recursion)");
    compile_error("proc a() { return b() }\nproc b() {\n  tm(1, 2)\n  return a() }",
                  "t.dish:4:10: the verifier refuses the result: procedure 1 (slot 2) at 5: "
                  "call of slot 1 closes the cycle of calls 1 -> 2 -> 1 (no recursion)");
    compile_error("slot 7\nproc a() { b() }\nproc b() { tm(1, c() + 1) }\n"
                  "proc c() { return int(fix(a())) }",
                  "t.dish:4:27: the verifier refuses the result: procedure 2 (slot 9) at 0: "
                  "call of slot 7 closes the cycle of calls 7 -> 8 -> 9 -> 7");
}

/* A sleep or a wait timeout that is a literal or a constant over
 * DISH_MAX_WAIT_S is refused with the value and the cap (the runtime cut
 * it to 7 days without a word); one computed on board, or a `sleep
 * until` (a clock reading), is left to the runtime's cut. */
static void long_constant_times_refused(void **state) {
    (void)state;
    compile_error("proc p() { sleep 604801 }", "t.dish:1:18: a sleep's time is 604801 s, "
                  "over the 604800 s (7 days) the runtime allows");
    compile_error("const WEEK = 700000\nproc p() { wait hasfix within WEEK }",
                  "t.dish:2:31: a wait's timeout is 700000 s, over the 604800 s (7 days) "
                  "the runtime allows");
    compile_error("proc p() { wait now > 5 within (2147483647) else { } }",
                  "t.dish:1:32: a wait's timeout is 2147483647 s");
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_true(compile_src("proc p(x) {\n  sleep 604800\n  wait hasfix within 604800\n"
                            "  sleep x * 700000\n  sleep until 2147483647\n}",
                            img, err, sizeof err) > 0);
}

/* Calls nested past DISH_MAX_DEPTH frames are refused at the call that
 * makes the chain too deep (the verifier said only the slot). */
static void deep_calls_refused(void **state) {
    (void)state;
    static char src[512];
    size_t at = 0;
    for (int k = 1; k < 9; k++) /* p1 calls p2 ... calls p9: 9 frames */
        at += (size_t)snprintf(src + at, sizeof src - at,
                               "proc p%d() {\n  tm(1, 1)\n  p%d()\n}\n", k, k + 1);
    snprintf(src + at, sizeof src - at, "proc p9() { }\n");
    compile_error(src, "t.dish:3:3: the verifier refuses the result: procedure 0 (slot 1) "
                  "at 5: calls nest 9 deep through this call of slot 2, the limit is 8");
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    strcpy(strstr(src, "proc p8"), "proc p8() { }\n"); /* 8 deep is allowed */
    assert_true(compile_src(src, img, err, sizeof err) > 0);
}

/* tm() takes ints as set, return and start do (a fix value was recorded
 * as its raw Q16.16 bits: tm(44, 0.5 * 3) recorded 98304); a literal
 * below one fix step, which a fix holds as 0 or one step, is refused
 * (0.00001 became 1/65536 without a word, 0.000007 became 0); a division or remainder by a literal or constant 0 is refused
 * where the runtime would stop the run. */
static void values_refused_at_compile_time(void **state) {
    (void)state;
    compile_error("proc p() { tm(44, 0.5 * 3) }",
                  "t.dish:1:19: a fix value where an int is wanted (use int())");
    compile_error("proc p() { tm(1.5, 2) }", "t.dish:1:15: a fix value where an int");
    compile_error("proc p() {\n  let a = 0.00001\n}",
                  "t.dish:2:11: 0.00001 is below the smallest fix step, 1/65536 (about "
                  "0.0000153): a fix cannot hold it (write 0, or scale the value up)");
    compile_error("const TINY = -0.000007\nproc p() { }",
                  "t.dish:1:15: 0.000007 is below the smallest fix step");
    compile_error("proc p() { tm(1, 1 / 0) }",
                  "t.dish:1:22: division by zero: the divisor is the constant 0 (the run "
                  "would stop with fault 1)");
    compile_error("const Z = 0\nproc p(x) { return x % Z }", "t.dish:2:24: division by zero");
    compile_error("proc p() { let h = 1.5 / 0.0 }", "t.dish:1:26: division by zero");
    compile_error("proc p() { let h = 1.5 / (0) }", "t.dish:1:26: division by zero");
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    assert_true(compile_src("proc p(z) {\n  tm(44, int(0.5 * 3))\n  tm(1, 1 / z)\n"
                            "  let f = 0.0000153 + 0.0 + 0.00000\n}", img, err, sizeof err) > 0);
}

static void arithmetic(void **state) {
    (void)state;
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p(a, b2) { return (a + b2) * 3 - a / 2 % 3 }",
                             (int32_t[]){7, 5}, 2, 1), 36); /* 7 / 2 % 3 is 0 */
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p() { return 2147483647 + 1 }", NULL, 0, 1),
                     2147483647); /* saturates */
    bench_init(&b);
    /* 1.5 * 2.25 = 3.375; * 1000 = 3375 */
    assert_int_equal(run_src(&b, "proc p() { return int(1.5 * 2.25 * 1000) }", NULL, 0, 1),
                     3375);
    bench_init(&b);
    /* an int widened beside a fix: 7 / 2.0 = 3.5, then 3.5 + 1 = 4.5 */
    assert_int_equal(run_src(&b, "proc p() { let h = 7 / 2.0 + 1\n return int(h * 10) }",
                             NULL, 0, 1), 45);
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p() { return int(-0.5 * 3) }", NULL, 0, 1), -1);
}

/* The least int and fix, -2147483648 and -32768.0, are written as a
 * negative literal wherever a negative number may be (an expression, a
 * constant); their magnitude without the sign is one past the largest,
 * refused where it stands (-2147483648 was "number too large"). */
static void least_values_written(void **state) {
    (void)state;
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p() { return -2147483648 + 1 }", NULL, 0, 1),
                     -2147483647);
    bench_init(&b);
    assert_int_equal(run_src(&b, "const LEAST = -2147483648\nproc p() { return LEAST + 2 }",
                             NULL, 0, 1), -2147483646);
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p() { return int(-32768.0) + 1 }", NULL, 0, 1), -32767);
    /* recorded as written (run_src's INT32_MIN means a fault) */
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p() {\n  tm(1, -2147483648)\n  return 0\n}", NULL,
                             0, 1), 0);
    const dish_tlm *t = dish_sim_find(&b.sim, DISH_TLM_USER, 1);
    assert_non_null(t);
    assert_int_equal(t->value, INT32_MIN);
    compile_error("proc p() { tm(1, 2147483648) }", "t.dish:1:18: 2147483648 is over "
                  "2147483647, the largest int; only -2147483648 (a sign, not a "
                  "subtraction) fits");
    compile_error("proc p(x) { tm(1, x - 2147483648) }", "t.dish:1:23: 2147483648 is over");
    compile_error("proc p() { repeat 2147483648 { } }", "t.dish:1:19: 2147483648 is over");
    compile_error("proc p() { let f = 32768.0 }", "t.dish:1:20: 32768.0 is over "
                  "32767.99998, the largest fix; only -32768.0");
    compile_error("proc p() { let f = -32768.5 }", "t.dish:1:21: fixed-point number too "
                  "large: a fix is -32768.0 to 32767.99998");
    compile_error("proc p() { tm(1, -2147483649) }", "t.dish:1:19: number too large: an "
                  "int is -2147483648 to 2147483647");
}

static void division_by_zero_faults(void **state) {
    (void)state;
    bench_init(&b);
    assert_int_equal(run_src(&b, "proc p(z) { return 1 / z }", (int32_t[]){0}, 1, 1),
                     INT32_MIN);
    const dish_tlm *t = dish_sim_find(&b.sim, DISH_TLM_FAULT, -1);
    assert_non_null(t);
    assert_int_equal(t->code, DISH_FAULT_DIV0);
}

static const char nested[] =
    "proc p(x) {\n"
    "  if x > 10 {\n"
    "    if x > 100 { return 3 } else { return 2 }\n"
    "  } else if x >= 0 and not (x == 5) {\n"
    "    return 1\n"
    "  } else { return 0 }\n"
    "}\n";

static void nested_if(void **state) {
    (void)state;
    int32_t in[] = {500, 50, 7, 5, -3}, want[] = {3, 2, 1, 0, 0};
    for (int k = 0; k < 5; k++) {
        bench_init(&b);
        assert_int_equal(run_src(&b, nested, &in[k], 1, 1), want[k]);
    }
}

static void counted_loops_and_break(void **state) {
    (void)state;
    bench_init(&b);
    assert_int_equal(run_src(&b,
        "proc p() { let s = 0\n repeat 10 as i { repeat 3 as j { s = s + i * j } }\n"
        " return s }", NULL, 0, 1), 45 * 3);
    bench_init(&b);
    assert_int_equal(run_src(&b,
        "proc p() { let n = 0\n repeat 100 as i { if i == 7 { break }\n n = n + 1 }\n"
        " return n }", NULL, 0, 1), 7);
    bench_init(&b); /* 10 000 x 10 iterations: the scheduler's budget yields */
    assert_int_equal(run_src(&b,
        "proc p() { let n = 0\n repeat 10000 { repeat 10 { n = n + 1 } }\n return n }",
        NULL, 0, 1), 100000);
}

static void calls(void **state) {
    (void)state;
    bench_init(&b);
    assert_int_equal(run_src(&b,
        "proc p() { return sq(3) + half(9.0) }\n"
        "proc sq(v) { return v * v }\n"
        "proc half(v: fix) { return int(v / 2) }\n", NULL, 0, 1), 9 + 4);
}

static const char timed[] =
    "proc p() {\n"
    "  let t0 = now\n"
    "  wait now >= t0 + 1000000 within 30 else { tm(1, now - t0) }\n"
    "  sleep 100\n"
    "  tm(2, now - t0)\n"
    "  wait pipe(4) == 1 within 60 else { return -1 }\n"
    "  return now - t0\n"
    "}\n";

static void waits_follow_the_clock(void **state) {
    (void)state;
    bench_init(&b);
    b.sim.fix_after_ms = 1000000000; /* no fix: the local clock alone */
    b.sim.pl.power(b.sim.pl.ctx, 1);
    b.sim.pipe_ms = 50000;
    b.sim.pl.pipe_start(b.sim.pl.ctx, 4); /* done at 50 s */
    assert_int_equal(run_src(&b, timed, NULL, 0, 3600), 130);
    const dish_tlm *t1 = dish_sim_find(&b.sim, DISH_TLM_USER, 1);
    const dish_tlm *t2 = dish_sim_find(&b.sim, DISH_TLM_USER, 2);
    assert_non_null(t1);
    assert_non_null(t2);
    assert_int_equal(t1->value, 30); /* timed out at 30 s, polled each second */
    assert_int_equal(t2->value, 130);
}

/* `sleep until` a time years away sleeps DISH_MAX_WAIT_S (7 days) at
 * most, as a relative sleep does: such a run held its place among the
 * runs for good. */
/* A wait on the clock wakes when the second it waits for begins, not up
 * to a second later: the flight's block re-checks every 250 ms
 * (csp_proc MIN_PROC_BLOCK_PERIOD_MS), and at 7 km/s a second late is a
 * capture 7 km off. The run starts 700 ms into a second; the polls each
 * DISH_POLL_MS from then woke it at 5.7 s. */
static void clock_wait_wakes_as_the_second_turns(void **state) {
    (void)state;
    bench_init(&b);
    b.sim.fix_after_ms = 1000000000; /* no fix: the local clock alone */
    b.sim.local_ms = 700;
    assert_int_equal(run_src(&b, "proc p() { wait now >= 5 within 60 else { return -1 }\n"
                                 "tm(1, now)\n return 0 }", NULL, 0, 60), 0);
    const dish_tlm *t = dish_sim_find(&b.sim, DISH_TLM_USER, 1);
    assert_non_null(t);
    print_message("woke at %lld ms\n", (long long)t->t_ms);
    assert_int_equal(t->value, 5);
    assert_true(t->t_ms >= 5000 && t->t_ms < 5000 + 250);
}

static void sleep_until_capped(void **state) {
    (void)state;
    bench_init(&b);
    b.sim.fix_after_ms = 1000000000; /* no fix: the local clock alone */
    assert_int_equal(run_src(&b, "proc p() { sleep until 2147483647\n return 7 }",
                             NULL, 0, 8 * 86400), 7);
    assert_true(b.sim.local_ms <= (int64_t)DISH_MAX_WAIT_S * 1000 + 1000);
}

static void wait_timeout_and_events(void **state) {
    (void)state;
    bench_init(&b);
    /* no fix for an hour: the GNSS wait times out at 600 s */
    b.sim.fix_after_ms = 3600 * 1000;
    assert_int_equal(run_src(&b, "proc p() { wait hasfix within 600 else { return 0 }\n"
                                 "return 1 }", NULL, 0, 7200), 0);
    assert_int_equal(b.sim.local_ms, 600 * 1000);
    bench_init(&b);
    b.sim.fix_after_ms = 45 * 1000;
    assert_int_equal(run_src(&b, "proc p() { wait hasfix within 600 else { return 0 }\n"
                                 "return 1 }", NULL, 0, 7200), 1);
    assert_int_equal(b.sim.local_ms, 45 * 1000);
    assert_true(b.vm.synced);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors_have_positions),
        cmocka_unit_test(byte_order_mark_skipped),
        cmocka_unit_test(unexpected_characters_named),
        cmocka_unit_test(deep_nesting_refused),
        cmocka_unit_test(recursion_refused),
        cmocka_unit_test(deep_calls_refused),
        cmocka_unit_test(long_constant_times_refused),
        cmocka_unit_test(values_refused_at_compile_time),
        cmocka_unit_test(arithmetic),
        cmocka_unit_test(least_values_written),
        cmocka_unit_test(division_by_zero_faults),
        cmocka_unit_test(nested_if),
        cmocka_unit_test(counted_loops_and_break),
        cmocka_unit_test(calls),
        cmocka_unit_test(waits_follow_the_clock),
        cmocka_unit_test(clock_wait_wakes_as_the_second_turns),
        cmocka_unit_test(sleep_until_capped),
        cmocka_unit_test(wait_timeout_and_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
