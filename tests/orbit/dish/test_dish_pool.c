/* test_dish_pool.c -- the runtime's two pools: each run's arena is
 * exactly its procedure's verified need, taken first fit from the arena
 * pool at the start and given back at the end; a start with all runs
 * busy or no range long enough is refused with its reason, and a later
 * one succeeds; a need short of what a run uses (a verifier bug) stops
 * that run and leaves its neighbour's words alone. Slots' code is packed
 * in the code pool: a delete frees its bytes for the next load, and a
 * load without room is refused leaving the VM as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dish_helpers.h"

static bench b;

static void load_src(const char *src) {
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    int n = compile_src(src, img, err, sizeof err);
    if (n < 0 || dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err))
        fail_msg("%s", err);
}

static void load_img(const uint8_t *img, int n) {
    char err[256];
    if (dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err))
        fail_msg("%s", err);
}

static const dish_run *run_of(int r) {
    assert_true(r >= 0 && r < DISH_MAX_RUNS);
    return &b.vm.runs[r];
}

/* Starts slot, which must start at pool offset at: the run. */
static int start_at(unsigned slot, unsigned at) {
    int r = dish_vm_start(&b.vm, slot, NULL, 0);
    assert_true(r >= 0);
    assert_int_equal(run_of(r)->arena_at, at);
    assert_int_equal(run_of(r)->arena_words, b.vm.slots[slot].info.need);
    return r;
}

/* The value run r returned (its newest END), once the simulation ran to
 * the end of every run; INT32_MIN when it did not end. */
static int32_t ended_with(int r) {
    dish_vm_run(&b.vm, b.sim.local_ms + 60000);
    int first = b.sim.ntlm > DISH_SIM_TLM ? b.sim.ntlm - DISH_SIM_TLM : 0;
    for (int k = b.sim.ntlm - 1; k >= first; k--) {
        const dish_tlm *t = &b.sim.tlm[k % DISH_SIM_TLM];
        if (t->run == r && (t->kind == DISH_TLM_END || t->kind == DISH_TLM_FAULT))
            return t->kind == DISH_TLM_END ? t->value : INT32_MIN;
    }
    return INT32_MIN;
}

/* ---- the arena pool ---- */

static const char *const nested_src =
    "proc outer(): fix {\n  let a = 2\n  return inner(a, 3) + 1.5\n}\n"
    "proc inner(x, y) {\n  let z = x * (y + (x * (y + 1)))\n  return z\n}\n";

static void runs_reserve_their_need(void **state) {
    (void)state;
    bench_init(&b);
    load_src(nested_src);
    const dish_slotinfo *outer = &b.vm.slots[1].info, *inner = &b.vm.slots[2].info;
    assert_true(outer->need > inner->need && inner->need > 0);
    int r1 = start_at(1, 0), r2 = start_at(1, outer->need);
    assert_true(r1 != r2);
    /* both ran to their end inside exactly their need */
    assert_int_equal(ended_with(r1), 23 * DISH_FIX_ONE + DISH_FIX_ONE / 2); /* 2 * 11 + 1.5 */
    assert_int_equal(ended_with(r2), 23 * DISH_FIX_ONE + DISH_FIX_ONE / 2);
    assert_int_equal(run_of(r1)->arena_words, 0); /* given back */
    start_at(1, 0);
}

static void seventeenth_start_refused(void **state) {
    (void)state;
    char why[160];
    bench_init(&b);
    load_src("proc p() {\n  sleep 10\n  return 1\n}\n");
    unsigned need = b.vm.slots[1].info.need;
    for (int k = 0; k < DISH_MAX_RUNS; k++)
        start_at(1, need * (unsigned)k);
    assert_int_equal(dish_vm_start(&b.vm, 1, NULL, 0), DISH_START_BUSY);
    dish_vm_refusal(&b.vm, 1, DISH_START_BUSY, why, sizeof why);
    assert_string_equal(why, "slot 1: all 16 runs busy: not started");
    dish_vm_stop(&b.vm, 5);
    assert_int_equal(start_at(1, 5 * need), 5);
}

static void hole_reused_first_fit(void **state) {
    (void)state;
    bench_init(&b);
    load_src("proc big() {\n  let a = 1\n  let b = 2\n  let c = 3\n  sleep 10\n"
             "  return a + b + c\n}\n"
             "proc small() {\n  sleep 10\n  return 0\n}\n");
    unsigned nbig = b.vm.slots[1].info.need, nsmall = b.vm.slots[2].info.need;
    assert_true(nsmall < nbig);
    start_at(1, 0);
    int rb = start_at(1, nbig);
    start_at(1, 2 * nbig);
    dish_vm_stop(&b.vm, rb); /* A B C live, B ends */
    assert_true(nbig - nsmall >= nsmall);
    start_at(2, nbig);          /* fits B's hole: goes there */
    start_at(1, 3 * nbig);      /* the rest of the hole is too short for a big one */
    start_at(2, nbig + nsmall); /* ... and takes another small one */
}

enum { PUSH8 = DISH_OP_PUSH8, POP = DISH_OP_POP, RET = DISH_OP_RET, CALL = DISH_OP_CALL };

/* Slot 10 needs 256 arena words (the cap), 20 needs 255, 21 needs 2:
 * 10 and 20 (32 and 31 locals) call the chain 11 -> 12 -> ... -> 17 (32
 * locals each, 24 in 17), a word of stack in each frame; 21 holds one
 * local and one word of stack. */
static int sized_image(uint8_t *img) {
    uint8_t code[64];
    dish_proc p[10];
    int n = 0, len = 0;
    for (unsigned slot = 10; slot <= 17; slot++) {
        p[n++] = (dish_proc){(uint8_t)slot, 0, slot == 17 ? 24 : 32, 0, (uint16_t)len,
                             slot == 17 ? 3 : 4};
        if (slot == 17)
            code[len++] = PUSH8, code[len++] = 0, code[len++] = RET;
        else
            code[len++] = CALL, code[len++] = (uint8_t)(slot + 1), code[len++] = 0,
            code[len++] = RET;
    }
    p[n++] = (dish_proc){20, 0, 31, 0, (uint16_t)len, 4};
    code[len++] = CALL, code[len++] = 11, code[len++] = 0, code[len++] = RET;
    p[n++] = (dish_proc){21, 0, 1, 0, (uint16_t)len, 3};
    code[len++] = PUSH8, code[len++] = 0, code[len++] = RET;
    return craft(img, p, n, code, len);
}

/* Fragments the pool so that 15 live runs leave 4,066 words free in
 * ranges of 254 and 255: a run needing 256 is refused for room until a
 * run next to a hole ends. */
static void no_room_refused_until_a_run_ends(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    char why[160];
    int small[15];
    bench_init(&b);
    load_img(img, sized_image(img));
    assert_int_equal(b.vm.slots[10].info.need, DISH_ARENA_WORDS);
    assert_int_equal(b.vm.slots[20].info.need, 255);
    assert_int_equal(b.vm.slots[21].info.need, 2);
    int a = start_at(20, 0), big[15];
    for (int k = 0; k < 15; k++)
        big[k] = start_at(10, 255 + 256 * (unsigned)k); /* the pool is full to 1 word */
    for (int k = 14; k >= 0; k--) { /* from the top: each small run takes the lowest hole */
        dish_vm_stop(&b.vm, big[k]);
        small[k] = start_at(21, 255 + 256 * (unsigned)k);
    }
    dish_vm_stop(&b.vm, a);
    int rc = dish_vm_start(&b.vm, 10, NULL, 0);
    assert_int_equal(rc, DISH_START_NOROOM);
    dish_vm_refusal(&b.vm, 10, rc, why, sizeof why);
    assert_string_equal(why, "slot 10 needs 256 arena words in one range, the 4096-word pool "
                             "has 4066 free, none of them that long: not started");
    dish_vm_stop(&b.vm, small[0]); /* joins the holes on either side */
    start_at(10, 0);
}

/* A need short of what the run uses, as a verifier bug would leave:
 * the run faults at the end of its range, and the run above it keeps its
 * words. */
static void short_need_stops_only_that_run(void **state) {
    (void)state;
    bench_init(&b);
    load_src("proc x() {\n  let a = 1\n  return a + a\n}\n"
             "proc y() {\n  let a = 7\n  sleep 5\n  return a\n}\n");
    b.vm.slots[1].info.need = 1; /* its local only: no room for its stack */
    int x = start_at(1, 0), y = start_at(2, 1);
    dish_vm_stop(&b.vm, x);
    dish_vm_tick(&b.vm, 0); /* y sets its local at pool word 1, then sleeps */
    assert_int_equal(b.vm.pool[1], 7);
    x = start_at(1, 0);
    dish_vm_tick(&b.vm, 0);
    const dish_tlm *t = dish_sim_find(&b.sim, DISH_TLM_FAULT, -1);
    assert_non_null(t);
    assert_int_equal(t->run, x);
    assert_int_equal(t->code, DISH_FAULT_STACK);
    assert_int_equal(b.vm.pool[1], 7);
    assert_int_equal(ended_with(y), 7);
}

/* ---- the code pool ---- */

/* An image of n procedures from slot first, each of len bytes of code (a
 * multiple of 3: pushes and pops, then its slot number returned). */
static int code_image(uint8_t *img, unsigned first, int n, int len) {
    static uint8_t code[DISH_MAX_IMAGE];
    dish_proc p[DISH_MAX_PROCS];
    int at = 0;
    for (int k = 0; k < n; k++) {
        p[k] = (dish_proc){(uint8_t)(first + (unsigned)k), 0, 0, 0, (uint16_t)at,
                           (uint16_t)len};
        for (int i = 0; i < len - 3; i += 3)
            code[at + i] = PUSH8, code[at + i + 1] = (uint8_t)k, code[at + i + 2] = POP;
        code[at + len - 3] = PUSH8, code[at + len - 2] = (uint8_t)(first + (unsigned)k);
        code[at + len - 1] = RET;
        at += len;
    }
    return craft(img, p, n, code, at);
}

static void code_pool_delete_frees_for_reload(void **state) {
    (void)state;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    bench_init(&b);
    load_img(img, code_image(img, 1, 2, 300));
    load_img(img, code_image(img, 3, 1, 201));
    assert_int_equal(b.vm.code_used, 801);
    assert_int_equal(dish_vm_delete(&b.vm, 1, err, sizeof err), 0);
    assert_int_equal(b.vm.code_used, 501);
    /* the code above moved down and still runs */
    assert_int_equal(b.vm.slots[3].p.off, 300);
    assert_int_equal(ended_with(dish_vm_start(&b.vm, 3, NULL, 0)), 3);
    assert_int_equal(ended_with(dish_vm_start(&b.vm, 2, NULL, 0)), 2);
    load_img(img, code_image(img, 1, 1, 300));
    assert_int_equal(b.vm.slots[1].p.off, 501);
    assert_int_equal(ended_with(dish_vm_start(&b.vm, 1, NULL, 0)), 1);
}

static void code_pool_full_refused_unchanged(void **state) {
    (void)state;
    static dish_vm before;
    uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    bench_init(&b);
    load_img(img, code_image(img, 0, 8, 498));
    load_img(img, code_image(img, 8, 8, 498)); /* 7,968 bytes */
    int r = dish_vm_start(&b.vm, 3, NULL, 0); /* a run beside the refused load */
    assert_true(r >= 0);
    memcpy(&before, &b.vm, sizeof before);
    int n = code_image(img, 16, 2, 201);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), -1);
    assert_string_equal(err, "image of 2 procedures: 402 code bytes, the code pool has 224 of "
                             "8192 free: not loaded");
    assert_memory_equal(&before, &b.vm, sizeof before);
    load_img(img, code_image(img, 16, 1, 222)); /* what fits does */
    assert_int_equal(b.vm.code_used, DISH_CODE_POOL - 2);
    assert_int_equal(ended_with(r), 3);
    assert_int_equal(dish_vm_delete(&b.vm, 5, err, sizeof err), 0);
    load_img(img, code_image(img, 17, 1, 498));
    assert_int_equal(ended_with(dish_vm_start(&b.vm, 17, NULL, 0)), 17);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_reserve_their_need),
        cmocka_unit_test(seventeenth_start_refused),
        cmocka_unit_test(hole_reused_first_fit),
        cmocka_unit_test(no_room_refused_until_a_run_ends),
        cmocka_unit_test(short_need_stops_only_that_run),
        cmocka_unit_test(code_pool_delete_frees_for_reload),
        cmocka_unit_test(code_pool_full_refused_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
