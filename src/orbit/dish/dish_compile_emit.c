/* dish_compile_emit.c -- bytecode into the procedure being compiled:
 * opcodes and operands, the shortest push of a constant, jumps whose
 * target is patched once known, and the one insertion the type rules
 * need (an int operand widened after the fact). */
#include <string.h>

#include "dish_compile_int.h"

void dc_emit(comp *c, int byte) {
    if (c->pc >= DISH_MAX_CODE)
        dc_fail(c, dc_peek(c), "procedure over %d bytes of code", DISH_MAX_CODE);
    c->code_site[c->pc] = c->site;
    c->code[c->pc++] = (uint8_t)byte;
}

void dc_emit16(comp *c, int v) {
    dc_emit(c, v & 0xFF);
    dc_emit(c, (v >> 8) & 0xFF);
}

void dc_emit_push(comp *c, int32_t v) {
    if (v >= -128 && v <= 127) {
        dc_emit(c, DISH_OP_PUSH8);
        dc_emit(c, (uint8_t)(v & 0xFF));
        return;
    }
    dc_emit(c, DISH_OP_PUSH32);
    uint8_t b[4];
    dish_put32(b, (uint32_t)v);
    for (int k = 0; k < 4; k++)
        dc_emit(c, b[k]);
}

int dc_pushed_constant(const comp *c, int from, int32_t *v) {
    if (c->pc == from + 2 && c->code[from] == DISH_OP_PUSH8)
        return *v = (int8_t)c->code[from + 1], 1;
    if (c->pc == from + 5 && c->code[from] == DISH_OP_PUSH32)
        return *v = dish_get32(c->code + from + 1), 1;
    return 0;
}

int dc_emit_jump(comp *c, int op) {
    dc_emit(c, op);
    dc_emit16(c, 0);
    return c->pc - 2;
}

void dc_patch(comp *c, int at, int target) {
    dish_put16(c->code + at, (uint16_t)target);
}

/* Inserts op at code position at: widens an int operand already emitted
 * when the other turns out fix. Expression code holds no jumps, so
 * nothing else moves. */
void dc_insert_op(comp *c, int at, int op) {
    dc_emit(c, 0);
    memmove(c->code + at + 1, c->code + at, (size_t)(c->pc - 1 - at));
    memmove(c->code_site + at + 1, c->code_site + at,
            sizeof *c->code_site * (size_t)(c->pc - 1 - at));
    c->code[at] = (uint8_t)op;
}
