/* test_dish_verify.c -- the verifier refuses each kind of hostile
 * bytecode with a reason (bad jumps, unbounded loops, stack overflow and
 * underflow, out-of-range locals, slots and parameters, recursion, call
 * depth, arena, truncation, corruption, unknown versions), and the
 * runtime refuses to delete a procedure another one calls; the bound on
 * a run's instructions: loops multiply, calls add (into this image or
 * one on board), a break or a wait counts once, and a procedure over
 * DISH_MAX_STEPS is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dish_helpers.h"

enum {
    PUSH8 = DISH_OP_PUSH8, RET = DISH_OP_RET, JMP = DISH_OP_JMP, ADD = DISH_OP_ADD,
    LOAD = DISH_OP_LOAD, CALL = DISH_OP_CALL, PGET = DISH_OP_PGET, INIT = DISH_OP_INIT,
    TEST = DISH_OP_TEST, NEXT = DISH_OP_NEXT, WAIT = DISH_OP_WAIT, HASFIX = DISH_OP_HASFIX,
    POP = DISH_OP_POP, JZ = DISH_OP_JZ, WSET = DISH_OP_WSET,
};

/* One procedure at slot 1 with nlocals 1 over code: the verifier's error. */
static void refused1(const uint8_t *code, int len, int ncounters, const char *want) {
    uint8_t img[DISH_MAX_IMAGE];
    dish_image im;
    char err[256] = "";
    dish_proc p = {1, 0, 1, (uint8_t)ncounters, 0, (uint16_t)len};
    int n = craft(img, &p, 1, code, len);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    if (!strstr(err, want))
        print_message("got: %s\nwant: %s\n", err, want);
    assert_non_null(strstr(err, want));
}

static void good_code_accepted(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    dish_image im;
    char err[256];
    static const uint8_t code[] = {INIT, 0, 10, 0, TEST, 0, 11, 0, NEXT, 4, 0,
                                   PUSH8, 1, RET};
    dish_proc p = {1, 0, 1, 1, 0, sizeof code};
    int n = craft(img, &p, 1, code, sizeof code);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), 0);
    assert_int_equal(im.maxstack[0], 1);
    assert_int_equal(im.fail_proc, -1);
}

static void bad_jumps(void **state) {
    (void)state;
    refused1((uint8_t[]){JMP, 4, 0, PUSH8, 1, RET}, 6, 0, "jump to 4 is not an instruction");
    refused1((uint8_t[]){JMP, 90, 0, PUSH8, 1, RET}, 6, 0, "jump to 90 is not an instruction");
    refused1((uint8_t[]){PUSH8, 0, JMP, 20, 0}, 5, 0, "jump to 20");
    refused1((uint8_t[]){PUSH8, 1, RET, 77}, 4, 0, "unknown opcode 77");
    refused1((uint8_t[]){PUSH8, 1, DISH_OP_PUSH32, 1}, 4, 0, "cut short");
}

static void unbounded_loops(void **state) {
    (void)state;
    /* a plain backward jump */
    refused1((uint8_t[]){PUSH8, 1, POP, JMP, 0, 0}, 6, 0, "backward jump");
    /* NEXT onto something that is not a counted loop's test */
    refused1((uint8_t[]){PUSH8, 1, POP, NEXT, 0, 0, PUSH8, 1, RET}, 9, 1,
             "is not a counted loop's test");
    /* a counter set again inside its own loop */
    refused1((uint8_t[]){INIT, 0, 5, 0, TEST, 0, 15, 0, INIT, 0, 5, 0, NEXT, 4, 0,
                         PUSH8, 1, RET}, 18, 1, "set twice");
    /* a loop bound over the limit */
    refused1((uint8_t[]){INIT, 0, 0x30, 0x75, TEST, 0, 11, 0, NEXT, 4, 0, PUSH8, 1, RET},
             14, 1, "loop bound 30000 out of range");
    /* a jump into a loop from outside, past its test */
    refused1((uint8_t[]){PUSH8, 0, JZ, 13, 0, INIT, 0, 3, 0, TEST, 0, 19, 0, PUSH8, 1,
                         POP, NEXT, 9, 0, PUSH8, 1, RET}, 22, 1, "jump into the loop");
    /* a wait whose re-check is not preceded by its deadline */
    refused1((uint8_t[]){HASFIX, WAIT, 0, 0, 7, 0, 2, PUSH8, 1, RET}, 10, 0,
             "not preceded by its deadline");
}

static void stack_limits(void **state) {
    (void)state;
    uint8_t code[80];
    int n = 0;
    for (int k = 0; k < 33; k++)
        code[n++] = PUSH8, code[n++] = 1;
    code[n++] = RET;
    refused1(code, n, 0, "stack depth 33 over the limit 32");
    refused1((uint8_t[]){ADD, RET}, 2, 0, "ADD pops 2 values, the stack holds 0");
    /* two paths meeting with different depths */
    refused1((uint8_t[]){PUSH8, 1, JZ, 7, 0, PUSH8, 2, PUSH8, 3, RET}, 10, 0,
             "stack depth 0 here on one path and 1 on another");
    refused1((uint8_t[]){PUSH8, 1, POP}, 3, 0, "runs off the end");
}

static void out_of_range(void **state) {
    (void)state;
    refused1((uint8_t[]){LOAD, 5, RET}, 3, 0, "local 5 out of range");
    refused1((uint8_t[]){CALL, 60, 0, RET}, 4, 0, "call of slot 60");
    refused1((uint8_t[]){CALL, 7, 0, RET}, 4, 0, "call of slot 7, which is empty");
    refused1((uint8_t[]){PGET, 64, 1, RET}, 4, 0, "node 64 out of range");
    refused1((uint8_t[]){PGET, 2, 200, RET}, 4, 0, "parameter 200 out of range");
    refused1((uint8_t[]){DISH_OP_CTR, 0, RET}, 3, 0, "loop counter 0 out of range");
}

static void call_graph(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE], code[64];
    dish_image im;
    char err[256];
    dish_proc p[DISH_MAX_PROCS];
    /* ten procedures each calling the next: 10 frames deep */
    for (int k = 0; k < 10; k++) {
        uint8_t *c = code + 4 * k;
        c[0] = k < 9 ? CALL : PUSH8, c[1] = (uint8_t)(k < 9 ? k + 2 : 0);
        c[2] = k < 9 ? 0 : RET, c[3] = RET;
        p[k] = (dish_proc){(uint8_t)(k + 1), 0, 0, 0, (uint16_t)(4 * k), k < 9 ? 4 : 3};
    }
    int n = craft(img, p, 10, code, 39);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    /* named at the call that makes the chain too deep, for the compiler
     * to find its source line (it said "slot 2: calls nest 9 deep") */
    assert_string_equal(err, "procedure 1 (slot 2) at 0: calls nest 9 deep through this "
                             "call of slot 3, the limit is 8");
    assert_int_equal(im.fail_proc, 1);
    assert_int_equal(im.fail_pc, 0);
    /* seven frames deep is allowed, but not with 32 locals and 8 counters
     * each: 7 x 41 words over the run's arena */
    for (int k = 0; k < 7; k++) {
        uint8_t *c = code + 4 * k;
        c[0] = k < 6 ? CALL : PUSH8, c[1] = (uint8_t)(k < 6 ? k + 2 : 0);
        c[2] = k < 6 ? 0 : RET, c[3] = RET;
        p[k] = (dish_proc){(uint8_t)(k + 1), 0, 32, 8, (uint16_t)(4 * k), k < 6 ? 4 : 3};
    }
    n = craft(img, p, 7, code, 27);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_string_equal(err, "procedure 0 (slot 1) at 0: needs 287 arena words through "
                             "this call of slot 2, a run has 256");
    assert_int_equal(im.fail_proc, 0);
}

/* A cycle of calls is refused at the call that closes it, with the
 * cycle's slots (it said "slot 1 calls itself through a cycle", with no
 * offset and naming where the walk began). */
static void recursion_named_at_its_call(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    dish_image im;
    char err[256];
    /* slot 4 calls 5, 5 calls 6 after a push, 6 calls 5 after two */
    static const uint8_t code[] = {CALL, 5, 0, RET,
                                   PUSH8, 1, POP, CALL, 6, 0, RET,
                                   PUSH8, 1, PUSH8, 2, ADD, POP, CALL, 5, 0, RET};
    dish_proc p[] = {{4, 0, 0, 0, 0, 4}, {5, 0, 0, 0, 4, 7}, {6, 0, 0, 0, 11, 10}};
    int n = craft(img, p, 3, code, sizeof code);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_string_equal(err, "procedure 2 (slot 6) at 6: call of slot 5 closes the cycle "
                             "of calls 5 -> 6 -> 5 (no recursion)");
    assert_int_equal(im.fail_proc, 2);
    assert_int_equal(im.fail_pc, 6);
    /* a procedure calling itself */
    static const uint8_t self[] = {CALL, 1, 0, RET};
    n = craft(img, &(dish_proc){1, 0, 0, 0, 0, 4}, 1, self, 4);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_string_equal(err, "procedure 0 (slot 1) at 0: call of slot 1 closes the cycle "
                             "of calls 1 -> 1 (no recursion)");
    /* a refusal of the header has no place in the code */
    img[4] = 9;
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_int_equal(im.fail_proc, -1);
}

/* Verifies n procedures p[] over code: the derived image. */
static void accepted(const dish_proc *p, int n, const uint8_t *code, int len,
                     dish_image *im) {
    uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    int total = craft(img, p, n, code, len);
    if (dish_verify(img, (size_t)total, NULL, im, err, sizeof err))
        print_message("refused: %s\n", err);
    assert_int_equal(dish_verify(img, (size_t)total, NULL, im, err, sizeof err), 0);
}

static void bound_nested_loops_multiply(void **state) {
    (void)state;
    dish_image im;
    /* INIT 10; TEST; INIT 20; TEST; PUSH8 POP; NEXT; NEXT; PUSH8 RET.
     * The inner loop: 20 x (test + 3) + the last test + the outer's NEXT
     * = 82; the outer: 10 x (test + INIT + 82) + the last test + 2 = 843;
     * and the first INIT. */
    static const uint8_t code[] = {INIT, 0, 10, 0, TEST, 0, 25, 0, INIT, 1, 20, 0,
                                   TEST, 1, 22, 0, PUSH8, 1, POP, NEXT, 12, 0,
                                   NEXT, 4, 0, PUSH8, 0, RET};
    dish_proc p = {1, 0, 0, 2, 0, sizeof code};
    accepted(&p, 1, code, sizeof code, &im);
    assert_int_equal(im.steps[0], 844);
    assert_int_equal(im.recheck[0], 0);
}

static void bound_call_adds(void **state) {
    (void)state;
    dish_image im;
    /* slot 1 calls slot 2 (PUSH8 RET: 2) five times: 5 x (test + CALL
     * + 2 + POP + NEXT) + the last test + PUSH8 RET + the INIT */
    static const uint8_t code[] = {INIT, 0, 5, 0, TEST, 0, 15, 0, CALL, 2, 0, POP,
                                   NEXT, 4, 0, PUSH8, 0, RET, PUSH8, 7, RET};
    dish_proc p[2] = {{1, 0, 0, 1, 0, 18}, {2, 0, 0, 0, 18, 3}};
    accepted(p, 2, code, sizeof code, &im);
    assert_int_equal(im.steps[1], 2);
    assert_int_equal(im.steps[0], 34);
}

/* What runs really execute (dish_run.executed) against the bound: a
 * procedure with one way through executes exactly its bound, the loops
 * and a call of the two tests above. */
static void bound_held_by_runs(void **state) {
    (void)state;
    static bench b;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    static const uint8_t loops[] = {INIT, 0, 10, 0, TEST, 0, 25, 0, INIT, 1, 20, 0,
                                    TEST, 1, 22, 0, PUSH8, 1, POP, NEXT, 12, 0,
                                    NEXT, 4, 0, PUSH8, 0, RET};
    static const uint8_t calls[] = {INIT, 0, 5, 0, TEST, 0, 15, 0, CALL, 2, 0, POP,
                                    NEXT, 4, 0, PUSH8, 0, RET, PUSH8, 7, RET};
    dish_proc pl = {1, 0, 0, 2, 0, sizeof loops};
    dish_proc pc[2] = {{3, 0, 0, 1, 0, 18}, {2, 0, 0, 0, 18, 3}};
    bench_init(&b);
    int n = craft(img, &pl, 1, loops, sizeof loops);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    n = craft(img, pc, 2, calls, sizeof calls);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    int r1 = dish_vm_start(&b.vm, 1, NULL, 0), r3 = dish_vm_start(&b.vm, 3, NULL, 0);
    assert_true(r1 >= 0 && r3 >= 0);
    assert_int_equal(dish_vm_run(&b.vm, 1000), 0);
    assert_int_equal(b.vm.runs[r1].executed, 844);
    assert_int_equal(b.vm.runs[r3].executed, 34);
    assert_int_equal(b.vm.slots[1].info.steps, 844);
    assert_int_equal(b.vm.slots[3].info.steps, 34);
}

/* A wait in a callee is re-checked on each event that wakes it, the
 * callee's condition and WAIT: the caller's re-check figure covers it
 * (it said 0, and a run of the caller went past bound + figure x waits),
 * from the same image and from a slot on board. */
static void bound_recheck_of_callee(void **state) {
    (void)state;
    static bench b;
    static dish_image im;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    dish_slotinfo onboard[DISH_SLOTS];
    int n = compile_src("slot 30\nproc caller() {\n  return waiter(3)\n}\n"
                        "proc waiter(n) {\n  wait param(2, 1) == 99 and param(3, 1) == 7"
                        " within 600\n  return n\n}\n", img, err, sizeof err);
    assert_true(n > 0);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), 0);
    assert_int_equal(im.recheck[1], 8); /* 7 of condition, the WAIT */
    assert_int_equal(im.recheck[0], 8); /* was 0 */
    bench_init(&b);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    /* a caller in another image, of slot 30 on board */
    static const uint8_t code[] = {CALL, 30, 0, RET};
    dish_proc p = {32, 0, 0, 0, 0, sizeof code};
    n = craft(img, &p, 1, code, sizeof code);
    for (int k = 0; k < DISH_SLOTS; k++)
        onboard[k] = b.vm.slots[k].info;
    assert_int_equal(dish_verify(img, (size_t)n, onboard, &im, err, sizeof err), 0);
    assert_int_equal(im.recheck[0], 8);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    /* run it: each wake-up (a fix or a parameter change a second) costs
     * at most the figure */
    int r = dish_vm_start(&b.vm, 32, NULL, 0);
    assert_true(r >= 0);
    uint32_t waits = 0;
    for (int tick = 0; tick < 200 && dish_vm_alive(&b.vm); tick++) {
        uint32_t before = b.vm.runs[r].executed;
        dish_vm_tick(&b.vm, b.sim.pl.wait_event(&b.sim, dish_vm_next(&b.vm)));
        waits += b.vm.runs[r].executed != before && b.vm.runs[r].state == DISH_R_WAIT;
    }
    assert_true(waits > 0);
    assert_true(b.vm.runs[r].executed <= im.steps[0] + waits * im.recheck[0]);
}

static void bound_break_and_wait(void **state) {
    (void)state;
    dish_image im;
    /* A break leaves the loop (here to a longer way out than the loop's
     * own exit): what follows is counted once, at the costliest exit, not
     * once per iteration: 3 x (test + PUSH8 JZ + JMP or NEXT) + the last
     * test + the 6 after the break + the INIT = 20. */
    static const uint8_t brk[] = {INIT, 0, 3, 0, TEST, 0, 19, 0, PUSH8, 1, JZ, 16, 0,
                                  JMP, 22, 0, NEXT, 4, 0, PUSH8, 0, RET,
                                  PUSH8, 1, POP, PUSH8, 1, POP, PUSH8, 0, RET};
    dish_proc p = {1, 0, 0, 1, 0, sizeof brk};
    accepted(&p, 1, brk, sizeof brk, &im);
    assert_int_equal(im.steps[0], 20);
    /* A wait's condition counts once per pass (2 x (test + PUSH8 WSET
     * HASFIX WAIT + NEXT) + the last test + PUSH8 RET + the INIT); each
     * re-check costs HASFIX WAIT. */
    static const uint8_t wait[] = {INIT, 0, 2, 0, TEST, 0, 21, 0, PUSH8, 5, WSET,
                                   HASFIX, WAIT, 11, 0, 18, 0, DISH_EV_GNSS,
                                   NEXT, 4, 0, PUSH8, 0, RET};
    p.len = sizeof wait;
    accepted(&p, 1, wait, sizeof wait, &im);
    assert_int_equal(im.steps[0], 16);
    assert_int_equal(im.recheck[0], 2);
}

static void bound_over_the_limit_refused(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    /* two nested loops of 10,000: inner 10,000 x (test + PUSH8 PUSH8 TLM
     * NEXT) + 2, outer 10,000 x (test + INIT + that) + 3, and the INIT */
    int n = compile_src("proc p() {\n  repeat 10000 {\n    repeat 10000 {\n"
                        "      tm(1, 2)\n    }\n  }\n}", img, err, sizeof err);
    assert_int_equal(n, -1);
    const char *want = "the verifier refuses the result: slot 1: a run may execute "
                       "500040004 instructions, the limit is 10000000 (loops multiply";
    if (!strstr(err, want))
        print_message("got: %s\n", err);
    assert_non_null(strstr(err, want));
    /* one loop of 10,000 is fine */
    n = compile_src("proc p() {\n  repeat 10000 {\n    tm(1, 2)\n  }\n}", img, err,
                    sizeof err);
    assert_true(n > 0);
    /* four nested loops saturate the count rather than wrap it */
    static const uint8_t code[] = {
        INIT, 0, 0x10, 0x27, TEST, 0, 47, 0, INIT, 1, 0x10, 0x27, TEST, 1, 44, 0,
        INIT, 2, 0x10, 0x27, TEST, 2, 41, 0, INIT, 3, 0x10, 0x27, TEST, 3, 38, 0,
        PUSH8, 1, POP, NEXT, 28, 0, NEXT, 20, 0, NEXT, 12, 0, NEXT, 4, 0,
        PUSH8, 0, RET};
    refused1(code, sizeof code, 4, "a run may execute 4294967295 or more instructions");
}

static void bound_call_into_board_adds(void **state) {
    (void)state;
    static bench b;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256], want[128];
    bench_init(&b);
    int n = compile_src("slot 30\nproc heavy() {\n  repeat 10000 {\n"
                        "    repeat 100 { tm(1, 2) }\n  }\n}", img, err, sizeof err);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    uint32_t heavy = b.vm.slots[30].info.steps;
    assert_true(heavy > DISH_MAX_STEPS / 2 && heavy <= DISH_MAX_STEPS);
    /* another image calling it twice: CALL, POP, CALL, RET and twice its
     * recorded bound, over the limit */
    static const uint8_t code[] = {CALL, 30, 0, POP, CALL, 30, 0, RET};
    dish_proc p = {31, 0, 0, 0, 0, sizeof code};
    n = craft(img, &p, 1, code, sizeof code);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), -1);
    snprintf(want, sizeof want, "slot 31: a run may execute %lu instructions",
             (unsigned long)heavy * 2 + 4);
    if (!strstr(err, want))
        print_message("got: %s\nwant: %s\n", err, want);
    assert_non_null(strstr(err, want));
}

static void header_checks(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE], good[DISH_MAX_IMAGE];
    dish_image im;
    char err[256];
    int n = compile_src("proc p() { return 1 }", good, err, sizeof err);
    assert_true(n > 0);
    memcpy(img, good, (size_t)n);
    img[4] = 2;
    recrc(img, (size_t)n);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "version 2 is unknown"));
    assert_int_equal(dish_verify(good, (size_t)n - 1, NULL, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated"));
    memcpy(img, good, (size_t)n);
    img[n - 1] ^= 0x40;
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "CRC-32"));
    assert_int_equal(dish_verify(good, 5, NULL, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated"));
}

static void delete_of_a_callee_refused(void **state) {
    (void)state;
    static bench b;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    bench_init(&b);
    int n = compile_src("slot 30\nproc helper() { return 4 }", img, err, sizeof err);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    /* a second image calling into slot 30: the call is checked against
     * what the board holds */
    static const uint8_t code[] = {CALL, 30, 0, RET};
    dish_proc p = {31, 0, 0, 0, 0, sizeof code};
    n = craft(img, &p, 1, code, sizeof code);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    /* the call adds the bound recorded with slot 30 (PUSH8 RET): CALL,
     * 2, RET */
    assert_int_equal(b.vm.slots[30].info.steps, 2);
    assert_int_equal(b.vm.slots[31].info.steps, 4);
    assert_int_equal(dish_vm_delete(&b.vm, 30, err, sizeof err), -1);
    assert_non_null(strstr(err, "called by another"));
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), -1);
    assert_non_null(strstr(err, "slot 31 is taken"));
    assert_int_equal(dish_vm_delete(&b.vm, 31, err, sizeof err), 0);
    assert_int_equal(dish_vm_delete(&b.vm, 30, err, sizeof err), 0);
    assert_int_equal(dish_vm_start(&b.vm, 30, NULL, 0), -1);
}

/* Two procedures over the same code bytes, or code bytes no procedure
 * owns: code must lie packed in table order (a delete on board copies
 * each procedure's code out, and shared bytes would be copied twice). */
static void code_not_packed_refused(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    dish_image im;
    char err[256];
    static const uint8_t code[] = {PUSH8, 1, RET, PUSH8, 2, RET};
    dish_proc shared[2] = {{1, 0, 0, 0, 0, 3}, {2, 0, 0, 0, 0, 3}};
    int n = craft(img, shared, 2, code, 3);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_string_equal(err, "procedure 1: code starts at 0, not at 3 where the one before ends");
    dish_proc gap[2] = {{1, 0, 0, 0, 0, 3}, {2, 0, 0, 0, 3, 2}};
    n = craft(img, gap, 2, code, sizeof code);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), -1);
    assert_non_null(strstr(err, "procedure 1: code ends at 5, the image's at 6"));
    dish_proc packed[2] = {{1, 0, 0, 0, 0, 3}, {2, 0, 0, 0, 3, 3}};
    n = craft(img, packed, 2, code, sizeof code);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), 0);
}

/* 300 calls of slot 30 from three procedures: more than a byte counts,
 * and slot 30 stays undeletable until the last caller goes. */
static void many_call_sites_counted(void **state) {
    (void)state;
    static bench b;
    static uint8_t img[DISH_MAX_IMAGE], code[3 * 403];
    char err[256];
    bench_init(&b);
    int n = compile_src("slot 30\nproc helper() { return 4 }", img, err, sizeof err);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    dish_proc p[3];
    for (int k = 0; k < 3; k++) {
        uint8_t *c = code + k * 403;
        for (int i = 0; i < 100; i++)
            memcpy(c + 4 * i, (uint8_t[]){CALL, 30, 0, POP}, 4);
        memcpy(c + 400, (uint8_t[]){PUSH8, 0, RET}, 3);
        p[k] = (dish_proc){(uint8_t)(31 + k), 0, 0, 0, (uint16_t)(k * 403), 403};
    }
    n = craft(img, p, 3, code, (int)sizeof code);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    assert_int_equal(b.vm.slots[30].call_sites, 300);
    assert_int_equal(dish_vm_delete(&b.vm, 30, err, sizeof err), -1);
    assert_int_equal(dish_vm_delete(&b.vm, 31, err, sizeof err), 0);
    assert_int_equal(dish_vm_delete(&b.vm, 32, err, sizeof err), 0);
    assert_int_equal(dish_vm_delete(&b.vm, 30, err, sizeof err), -1);
    assert_int_equal(dish_vm_delete(&b.vm, 33, err, sizeof err), 0);
    assert_int_equal(dish_vm_delete(&b.vm, 30, err, sizeof err), 0);
}

/* Code no path reaches may end without a RET; the bound counts what runs
 * (PUSH8, RET) and reads nothing past the code, even at the largest
 * procedure (under the sanitizers a read past it would stop the test). */
static void bound_ignores_unreachable_tail(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    dish_image im;
    char err[256];
    static uint8_t code[DISH_MAX_CODE];
    memcpy(code, (uint8_t[]){PUSH8, 0, RET, POP}, 4);
    for (int pc = 4; pc < DISH_MAX_CODE; pc += 2)
        memcpy(code + pc, (uint8_t[]){PUSH8, 0}, 2);
    dish_proc p = {1, 0, 0, 0, 0, sizeof code};
    int n = craft(img, &p, 1, code, sizeof code);
    assert_int_equal(dish_verify(img, (size_t)n, NULL, &im, err, sizeof err), 0);
    assert_int_equal(im.steps[0], 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_code_accepted),
        cmocka_unit_test(bad_jumps),
        cmocka_unit_test(unbounded_loops),
        cmocka_unit_test(stack_limits),
        cmocka_unit_test(out_of_range),
        cmocka_unit_test(call_graph),
        cmocka_unit_test(recursion_named_at_its_call),
        cmocka_unit_test(bound_nested_loops_multiply),
        cmocka_unit_test(bound_call_adds),
        cmocka_unit_test(bound_break_and_wait),
        cmocka_unit_test(bound_held_by_runs),
        cmocka_unit_test(bound_recheck_of_callee),
        cmocka_unit_test(bound_over_the_limit_refused),
        cmocka_unit_test(bound_call_into_board_adds),
        cmocka_unit_test(header_checks),
        cmocka_unit_test(delete_of_a_callee_refused),
        cmocka_unit_test(code_not_packed_refused),
        cmocka_unit_test(many_call_sites_counted),
        cmocka_unit_test(bound_ignores_unreachable_tail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
