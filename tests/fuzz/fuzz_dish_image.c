/* fuzz_dish_image.c -- fuzz target (fuzz.h) of DISH's on-board verifier
 * and VM (docs/orbit.md, "DISH"), the one invariant the design rests on:
 * an image dish_verify() accepts can never make the VM read or write out
 * of bounds, overflow its arena or stacks, call an empty slot or run past
 * its instruction bound (at most DISH_MAX_STEPS). A refused image has a
 * message; an accepted one is disassembled, then loaded, run on a
 * simulated satellite and deleted (fuzz_dish.c), on an empty board and
 * again on one holding a small library it may call. The input's header
 * sizes and CRC are made to agree with its bytes before the second
 * check, so that edits reach the code rather than the CRC check. Seeds:
 * seeds/dish_image/, the `dish` compiler's output for the example
 * procedures and a few hand-made ones (loops, waits, calls).
 */
#include "fuzz.h"

#include <string.h>

#include "dish_disasm.h"
#include "fuzz_dish.h"

/* The opcodes (0..45) and small operands, the loop bound 10,000
 * (0x2710), the library's slots (48, 49). */
FUZZ_TOKENS("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
            "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
            "\x20\x21\x22\x23\x24\x25\x26\x27\x28\x29\x2a\x2b\x2c\x2d\x2e\xff"
            "\x30\x31");

/* What the verifier promises of an image it accepted. */
static void check_derived(const dish_image *im) {
    FUZZ_CHECK(im->nprocs >= 1 && im->nprocs <= DISH_MAX_PROCS, "a procedure count out of range");
    FUZZ_CHECK(im->fail_proc == -1, "an acceptance that names a failure");
    for (int k = 0; k < im->nprocs; k++) {
        FUZZ_CHECK(im->steps[k] >= 1 && im->steps[k] <= DISH_MAX_STEPS,
                   "an instruction bound out of range");
        FUZZ_CHECK(im->depth[k] >= 1 && im->depth[k] <= DISH_MAX_DEPTH, "a call depth out of range");
        FUZZ_CHECK(im->need[k] <= DISH_ARENA_WORDS, "an arena need over a run's");
        FUZZ_CHECK(im->maxstack[k] <= DISH_MAX_STACK, "a stack depth over the limit");
    }
}

/* The code-length field and the CRC made to agree with the bytes. */
static void fix_header(uint8_t *img, size_t len) {
    unsigned n = img[5];
    size_t table = DISH_HDR + (size_t)n * DISH_PROC_REC;
    if (n >= 1 && n <= DISH_MAX_PROCS && len >= table)
        dish_put16(img + 6, (uint16_t)(len - table));
    dish_put32(img + 8, dish_crc32(img + DISH_HDR, len - DISH_HDR));
}

/* Verifies img against a board, empty or holding the library; an
 * acceptance is checked, shown and run there. */
static void verify_and_run(const uint8_t *img, size_t len, int with_library) {
    static FILE *null;
    static dish_slotinfo onboard[DISH_SLOTS];
    dish_image im;
    char err[256] = "";
    fuzz_dish_board(with_library);
    fuzz_dish_onboard(onboard);
    if (dish_verify(img, len, onboard, &im, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0', "a refusal without a message");
        return;
    }
    check_derived(&im);
    if (!null)
        null = fopen("/dev/null", "w");
    FUZZ_CHECK(null != NULL, "/dev/null");
    dish_disasm(null, &im);
    fuzz_dish_run(img, len, &im);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t img[DISH_MAX_IMAGE];
    char err[256] = "";
    dish_image im;
    if (size < DISH_HDR || size > DISH_MAX_IMAGE) {
        FUZZ_CHECK(dish_verify(data, size, NULL, &im, err, sizeof err) != 0 && err[0],
                   "an image of the wrong size accepted, or refused without a message");
        return 0;
    }
    memcpy(img, data, size);
    fix_header(img, size);
    if (memcmp(img, data, size) != 0) /* as it came: refused, with a message */
        FUZZ_CHECK(dish_verify(data, size, NULL, &im, err, sizeof err) != 0 && err[0],
                   "an image with wrong sizes or CRC accepted");
    verify_and_run(img, size, 0);
    verify_and_run(img, size, 1);
    return 0;
}
