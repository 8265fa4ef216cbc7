/* dish_verify.h -- the one verifier of DISH bytecode, run by the ground
 * compiler before upload and by the runtime before it installs an image:
 * whatever it accepts runs in bounded time, stack and memory. */
#ifndef DISH_VERIFY_H
#define DISH_VERIFY_H

#include "dish.h"

/* What the board already holds in a slot, for calls into it. */
typedef struct dish_slotinfo {
    uint8_t used, nargs;
    uint8_t depth;  /* frames of its deepest call chain, itself included */
    uint16_t need;  /* arena words of that chain */
    uint32_t steps; /* instructions of one call, at most (dish_image.steps) */
    uint16_t recheck; /* a wait's re-check in that chain, at most (dish_image.recheck) */
} dish_slotinfo;

/* A verified image: its procedures and what the verifier derived. */
typedef struct dish_image {
    int nprocs;
    dish_proc proc[DISH_MAX_PROCS];
    const uint8_t *code; /* the code section, inside the caller's buffer */
    uint8_t maxstack[DISH_MAX_PROCS];
    uint8_t depth[DISH_MAX_PROCS];
    uint16_t need[DISH_MAX_PROCS];
    /* The most instructions one call executes, callees included, when
     * each wait's condition is evaluated once: at most DISH_MAX_STEPS.
     * Each further evaluation, one per event the wait is woken by, costs
     * at most recheck instructions (the longest wait's of the procedure
     * and the procedures it calls, as it may be waiting in any). No stretch
     * between two yields of a run is longer than steps. */
    uint32_t steps[DISH_MAX_PROCS];
    uint16_t recheck[DISH_MAX_PROCS];
    /* Where a refusal lies when it is at an instruction (a call that
     * closes a cycle or nests too deep, an operand out of range...): the
     * procedure's index and the code offset, so that the compiler can
     * name the source line; fail_proc is -1 for a refusal of the header
     * or of a procedure's record, and after an acceptance. */
    int fail_proc;
    uint16_t fail_pc;
} dish_image;

/* Checks the image img[0..len) against the runtime's limits and the slots
 * already on board (onboard[DISH_SLOTS], or NULL for an empty board).
 * 0 and *out filled, or -1 and a sentence in err naming the procedure and
 * the code offset ("procedure 1 (slot 2) at 0: ..."), which are also in
 * out->fail_proc and out->fail_pc. */
int dish_verify(const uint8_t *img, size_t len, const dish_slotinfo *onboard,
                dish_image *out, char *err, size_t errlen);

/* What the board records of procedure k of a verified image once it is
 * installed: what later images' calls into its slot are checked against. */
dish_slotinfo dish_image_slotinfo(const dish_image *im, int k);

#endif
