/* test_dish_faults.c -- 1,000 malformed or hostile uploads beside a
 * running procedure: truncations, corrupted bytes (with the CRC fixed up,
 * so the verifier and not the checksum must catch them), corrupted
 * headers, and crafted bad jumps, unbounded loops, stack overflows and
 * out-of-range slots and locals. Every crafted one and every truncation
 * is refused; a mutant that happens to stay valid runs a while and is
 * stopped; the victim procedure runs to its end unharmed. The sanitizer
 * build makes "none crashes" mean no memory error either. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dish_helpers.h"

#define CASES 1000
#define VICTIM_SLOT 45
#define VICTIM_LOOPS 1000

static bench b;
static dish_platform spy_pl;
static int victim_run = -1;
static int32_t victim_end = INT32_MIN;
static int victim_faulted;

/* Telemetry passes through here: the victim's end and faults are kept
 * aside, whatever the mutants report. */
static void spy(void *ctx, const dish_tlm *t) {
    if (t->run == victim_run && t->kind == DISH_TLM_END)
        victim_end = t->value;
    if (t->run == victim_run && t->kind == DISH_TLM_FAULT)
        victim_faulted = 1;
    b.sim.pl.telemetry(ctx, t);
}

static const char victim_src[] =
    "slot 45\n"
    "proc victim() {\n"
    "  let n = 0\n"
    "  repeat 1000 {\n"
    "    sleep 20\n"
    "    n = n + 1\n"
    "  }\n"
    "  return n\n"
    "}\n";

/* Valid programs the mutations start from. */
static const char *const seeds[] = {
    "slot 1\nproc a() { let s = 0\n repeat 20 as i { if i % 2 == 0 { s = s + i } }\n"
    " tm(1, s)\n return b(s) }\nproc b(x) { return x * 2 }\n",
    "slot 5\nproc w() { wait hasfix and inside(-10.0, 10.0, -20.0, 20.0) within 30 else {"
    " tm(2, 0) }\n wake\n start(1)\n wait pipe(1) != 0 within 40\n suspend\n"
    " return pipe(1) }\n",
    "slot 9\nproc p() { let e = fix(param(5, 1))\n repeat 4 { set(5, 1, int(e))\n"
    " e = e * 1.5\n sleep 3 }\n return int(e) }\n",
};

static uint32_t rng = 12345;

static uint32_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Mutation kinds: which must be refused. */
enum { TRUNCATE, FLIP, HEADER, CRAFTED, NKINDS };

static int mutate_copy(uint8_t *img, int kind) {
    int n = compile_src(seeds[next_rand() % 3], img, (char[256]){0}, 256);
    assert_true(n > 0);
    if (kind == TRUNCATE)
        return (int)(next_rand() % (uint32_t)n);
    if (kind == FLIP) {
        for (uint32_t k = 0, m = 1 + next_rand() % 3; k < m; k++)
            img[DISH_HDR + next_rand() % (uint32_t)(n - DISH_HDR)] ^= (uint8_t)(1u << next_rand() % 8);
    } else {
        img[4 + next_rand() % 4] = (uint8_t)next_rand();
    }
    recrc(img, (size_t)n);
    return n;
}

/* A hand-made hostile procedure of one of five sorts. */
static int crafted(uint8_t *img) {
    uint8_t code[128];
    int len = 0, sort = (int)(next_rand() % 5);
    uint8_t nlocals = 1;
    if (sort == 0) { /* jump to a random place */
        uint16_t t = (uint16_t)(next_rand() % 300);
        code[len++] = DISH_OP_PUSH8, code[len++] = 1;
        code[len++] = DISH_OP_JZ, code[len++] = (uint8_t)t, code[len++] = (uint8_t)(t >> 8);
        code[len++] = DISH_OP_PUSH32, len += 4; /* a target inside it is refused */
        code[len - 4] = code[len - 3] = code[len - 2] = code[len - 1] = 0;
        code[len++] = DISH_OP_RET;
        if (t == 5 || t == 10) /* the two real instructions after the JZ */
            code[len - 1] = DISH_OP_POP; /* ... then it runs off the end */
    } else if (sort == 1) { /* a loop back with no counter */
        code[len++] = DISH_OP_PUSH8, code[len++] = 1, code[len++] = DISH_OP_POP;
        code[len++] = next_rand() % 2 ? DISH_OP_JMP : DISH_OP_NEXT;
        code[len++] = (uint8_t)(next_rand() % 3), code[len++] = 0;
        code[len++] = DISH_OP_PUSH8, code[len++] = 0, code[len++] = DISH_OP_RET;
    } else if (sort == 2) { /* stack overflow */
        int depth = 33 + (int)(next_rand() % 28);
        for (int k = 0; k < depth; k++)
            code[len++] = DISH_OP_PUSH8, code[len++] = (uint8_t)k;
        code[len++] = DISH_OP_RET;
    } else if (sort == 3) { /* a slot out of range or empty */
        code[len++] = DISH_OP_CALL, code[len++] = (uint8_t)(2 + next_rand() % 254);
        code[len++] = 0, code[len++] = DISH_OP_RET;
        if (code[1] == VICTIM_SLOT) /* the victim is a legal callee: make it empty */
            code[1] = 47;
    } else { /* a local out of range */
        nlocals = (uint8_t)(next_rand() % 4);
        code[len++] = DISH_OP_LOAD, code[len++] = (uint8_t)(nlocals + next_rand() % 200);
        code[len++] = DISH_OP_RET;
    }
    dish_proc p = {1, 0, nlocals, 0, 0, (uint16_t)len};
    return craft(img, &p, 1, code, len);
}

/* Stops every run but the victim's and empties the slots the image took. */
static void clean_up(const uint8_t *img) {
    char err[256];
    for (int r = 0; r < DISH_MAX_RUNS; r++)
        if (r != victim_run)
            dish_vm_stop(&b.vm, r);
    for (int pass = 0; pass < img[5]; pass++)
        for (int k = 0; k < img[5]; k++)
            dish_vm_delete(&b.vm, img[DISH_HDR + k * DISH_PROC_REC], err, sizeof err);
}

/* Runs what an accepted mutant holds for a while. */
static void run_mutant(const uint8_t *img) {
    static const int32_t zeros[DISH_MAX_LOCALS];
    for (int k = 0; k < img[5]; k++) {
        const uint8_t *rec = img + DISH_HDR + k * DISH_PROC_REC;
        dish_vm_start(&b.vm, rec[0], zeros, rec[1]);
    }
    dish_vm_run(&b.vm, b.sim.local_ms + 30000);
    clean_up(img);
}

static void thousand_uploads(void **state) {
    (void)state;
    static uint8_t img[DISH_MAX_IMAGE];
    char err[256];
    int accepted = 0, refused[NKINDS] = {0}, total[NKINDS] = {0};
    bench_init(&b);
    spy_pl = b.sim.pl;
    spy_pl.telemetry = spy;
    dish_vm_init(&b.vm, &spy_pl);
    int n = compile_src(victim_src, img, err, sizeof err);
    assert_int_equal(dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err), 0);
    victim_run = dish_vm_start(&b.vm, VICTIM_SLOT, NULL, 0);
    assert_true(victim_run >= 0);
    for (int c = 0; c < CASES; c++) {
        int kind = (int)(next_rand() % NKINDS);
        n = kind == CRAFTED ? crafted(img) : mutate_copy(img, kind);
        total[kind]++;
        if (dish_vm_load(&b.vm, img, (size_t)n, err, sizeof err) == 0) {
            assert_true(kind == FLIP || kind == HEADER);
            accepted++;
            run_mutant(img);
        } else {
            refused[kind]++;
        }
        dish_vm_run(&b.vm, b.sim.local_ms + 10000);
        assert_int_not_equal(b.vm.runs[victim_run].state, DISH_R_FREE);
    }
    print_message("%d uploads: truncated %d/%d refused, flipped %d/%d, header %d/%d, "
                  "crafted %d/%d; %d accepted and run\n", CASES, refused[TRUNCATE],
                  total[TRUNCATE], refused[FLIP], total[FLIP], refused[HEADER],
                  total[HEADER], refused[CRAFTED], total[CRAFTED], accepted);
    assert_int_equal(refused[TRUNCATE], total[TRUNCATE]);
    assert_int_equal(refused[CRAFTED], total[CRAFTED]);
    dish_vm_run(&b.vm, b.sim.local_ms + (int64_t)VICTIM_LOOPS * 20000);
    assert_false(victim_faulted);
    assert_int_equal(victim_end, VICTIM_LOOPS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thousand_uploads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
