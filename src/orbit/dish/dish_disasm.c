/* dish_disasm.c -- the disassembler (dish_disasm.h): one line per
 * instruction, "offset NAME operands", after a line per procedure with
 * what the verifier derived. */
#include "dish_disasm.h"

/* The operands of the instruction at c as text. */
static void operands(FILE *f, const uint8_t *c) {
    char fx[32];
    switch (c[0]) {
    case DISH_OP_PUSH8: fprintf(f, " %d", (int8_t)c[1]); return;
    case DISH_OP_PUSH32:
        dish_fix_str(dish_get32(c + 1), fx, sizeof fx);
        fprintf(f, " %d (fix %s)", dish_get32(c + 1), fx);
        return;
    case DISH_OP_JMP: case DISH_OP_JZ: case DISH_OP_NEXT:
        fprintf(f, " ->%u", dish_get16(c + 1));
        return;
    case DISH_OP_INIT: fprintf(f, " c%u %u", c[1], dish_get16(c + 2)); return;
    case DISH_OP_TEST: fprintf(f, " c%u ->%u", c[1], dish_get16(c + 2)); return;
    case DISH_OP_WAIT:
        fprintf(f, " cond ->%u else ->%u events %u", dish_get16(c + 1), dish_get16(c + 3),
                c[5]);
        return;
    case DISH_OP_PGET: case DISH_OP_PSET: fprintf(f, " %u:%u", c[1], c[2]); return;
    case DISH_OP_CALL: fprintf(f, " slot %u args %u", c[1], c[2]); return;
    }
    for (int k = 0; k < dish_ops[c[0]].operand_bytes; k++)
        fprintf(f, " %u", c[1 + k]);
}

void dish_disasm(FILE *f, const dish_image *im) {
    for (int k = 0; k < im->nprocs; k++) {
        const dish_proc *p = &im->proc[k];
        const uint8_t *c = im->code + p->off;
        fprintf(f, "proc slot %u: %u args, %u locals, %u loops, %u bytes; stack %u, "
                   "call depth %u, arena %u words; at most %lu instructions a run, "
                   "%u more a wait re-check\n",
                p->slot, p->nargs, p->nlocals, p->ncounters, p->len, im->maxstack[k],
                im->depth[k], im->need[k], (unsigned long)im->steps[k], im->recheck[k]);
        for (unsigned pc = 0; pc < p->len; pc += 1u + dish_ops[c[pc]].operand_bytes) {
            fprintf(f, "  %4u %s", pc, dish_ops[c[pc]].name);
            operands(f, c + pc);
            fputc('\n', f);
        }
    }
}
