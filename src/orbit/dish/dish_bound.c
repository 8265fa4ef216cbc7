/* dish_bound.c -- the bound on the instructions of one call of a
 * verified procedure (dish_bound.h), part of the verifier and so run on
 * board too: no allocation, one backward pass over the code, 32-bit
 * arithmetic that saturates.
 *
 * Going from the last instruction to the first, each instruction gets
 * the most instructions that can run from it on: itself, a callee's
 * bound for a CALL, and the larger of what follows on each way out of
 * it. Every jump but two goes forward, so what follows is known by then.
 * The two backward ones: a wait's re-check of its condition, which is
 * left out (it runs once per event, not a fixed number of times), and a
 * loop's NEXT. Inside a loop body the cost is counted only to the body's
 * end (its NEXT, or a jump out of it); the loop's TEST then costs N
 * times (its test and the body) for the bound N set by the INIT before
 * it, plus the last test, plus the most costly way on from any of the
 * loop's exits. Loops nest, so inner loops are part of the outer body's
 * cost, and their products multiply. */
#include "dish_bound.h"

#include <string.h>

#include "dish.h"

static uint32_t sat_add(uint32_t a, uint32_t b) {
    return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

static uint32_t sat_mul(uint32_t a, uint32_t b) {
    return b && a > UINT32_MAX / b ? UINT32_MAX : a * b;
}

static unsigned size_at(const uint8_t *code, unsigned pc) {
    return 1u + dish_ops[code[pc]].operand_bytes;
}

/* A loop's body (top, end]: its TEST at top, its NEXT at end. */
typedef struct body {
    unsigned top, end;
} body;

typedef struct walk {
    const uint8_t *code;
    const uint32_t *callee;
    uint32_t *cost;                  /* per instruction, once past it */
    unsigned len;                    /* code bytes */
    body open[DISH_MAX_COUNTERS];    /* the loops around, innermost last */
    int nopen;
} walk;

/* The forward target of a jump at pc (a wait's: its else branch). */
static int forward_target(const uint8_t *code, unsigned pc, unsigned *t) {
    const uint8_t *o = code + pc + 1;
    switch (code[pc]) {
    case DISH_OP_JMP: case DISH_OP_JZ: *t = dish_get16(o); return 1;
    case DISH_OP_TEST: *t = dish_get16(o + 1); return 1;
    case DISH_OP_WAIT: *t = dish_get16(o + 2); return 1;
    }
    return 0;
}

/* What going on at x costs: cost[x] when x is in the innermost open
 * body (or no loop is open), 0 when x leaves it (the loop counts it). */
static uint32_t onward(const walk *w, unsigned x) {
    const body *b = w->nopen ? &w->open[w->nopen - 1] : NULL;
    /* past the end: only from code no path reaches (the verifier's depth
     * pass refuses a reachable one), so it costs nothing */
    if (x >= w->len)
        return 0;
    return b && (x <= b->top || x > b->end) ? 0 : w->cost[x];
}

/* The most costly way on after the instruction at pc. */
static uint32_t after(const walk *w, unsigned pc) {
    uint8_t op = w->code[pc];
    uint32_t most = 0;
    unsigned t;
    if (op == DISH_OP_RET || op == DISH_OP_NEXT)
        return 0;
    if (op != DISH_OP_JMP)
        most = onward(w, pc + size_at(w->code, pc));
    if (forward_target(w->code, pc, &t) && onward(w, t) > most)
        most = onward(w, t);
    return most;
}

/* The TEST at top heading the innermost open loop, which closes: n runs
 * of test and body, the last test, the costliest exit's way on. */
static uint32_t loop_cost(walk *w, unsigned top) {
    body b = w->open[--w->nopen];
    uint32_t n = dish_get16(w->code + top - 2); /* the INIT's bound */
    uint32_t out = onward(w, dish_get16(w->code + top + 2));
    for (unsigned q = top + 4; q <= b.end; q += size_at(w->code, q)) {
        unsigned t;
        if (forward_target(w->code, q, &t) && t > b.end && onward(w, t) > out)
            out = onward(w, t);
    }
    return sat_add(sat_mul(n, sat_add(1, w->cost[top + 4])), sat_add(1, out));
}

static uint32_t cost_at(walk *w, unsigned pc) {
    const uint8_t *c = w->code + pc;
    if (w->nopen && w->open[w->nopen - 1].top == pc)
        return loop_cost(w, pc);
    uint32_t own = c[0] == DISH_OP_CALL ? sat_add(1, w->callee[c[1]]) : 1;
    if (c[0] != DISH_OP_NEXT)
        return sat_add(own, after(w, pc));
    /* one counter per loop: the verifier allows no more; refuse rather
     * than overflow */
    if (w->nopen == DISH_MAX_COUNTERS)
        return UINT32_MAX;
    w->open[w->nopen++] = (body){dish_get16(c + 1), pc};
    return own;
}

uint32_t dish_bound_steps(const uint8_t *code, unsigned len, const uint32_t *callee,
                          uint32_t *scratch) {
    walk w = {.code = code, .callee = callee, .cost = scratch, .len = len};
    memset(scratch, 0, sizeof *scratch * len);
    for (unsigned pc = 0; pc < len; pc += size_at(code, pc))
        scratch[pc] = 1; /* instruction starts; their costs are never 0 */
    for (unsigned pc = len; pc-- > 0;)
        if (scratch[pc])
            scratch[pc] = cost_at(&w, pc);
    return scratch[0];
}

unsigned dish_bound_recheck(const uint8_t *code, unsigned len) {
    unsigned most = 0;
    for (unsigned pc = 0; pc < len; pc += size_at(code, pc)) {
        if (code[pc] != DISH_OP_WAIT)
            continue;
        unsigned n = 1; /* the WAIT */
        for (unsigned q = dish_get16(code + pc + 1); q < pc; q += size_at(code, q))
            n++;
        most = n > most ? n : most;
    }
    return most;
}
