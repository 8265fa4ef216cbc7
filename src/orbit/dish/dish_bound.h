/* dish_bound.h -- the verifier's bound on the instructions a procedure
 * executes (dish_bound.c). For verified code only: it relies on the
 * verifier's rules (loops nest, only NEXT and a wait's re-check go
 * backward, nothing jumps into a loop). */
#ifndef DISH_BOUND_H
#define DISH_BOUND_H

#include <stdint.h>

/* The most instructions one call of the procedure code[0..len) executes
 * when each wait's condition is evaluated once (its re-checks aside):
 * loops multiply their body by their bound, a call adds callee[slot],
 * the bound of the procedure in that slot. Saturates at UINT32_MAX.
 * scratch holds len words. */
uint32_t dish_bound_steps(const uint8_t *code, unsigned len, const uint32_t *callee,
                          uint32_t *scratch);

/* The instructions of the longest re-check of a wait in code[0..len):
 * its condition and the WAIT; 0 without waits. */
unsigned dish_bound_recheck(const uint8_t *code, unsigned len);

#endif
