/* dish_helpers.h -- what the DISH tests share: compiling a source string,
 * running a procedure on a fresh simulated satellite, hand-made images. */
#ifndef DISH_HELPERS_H
#define DISH_HELPERS_H

#include "dish_compile.h"
#include "dish_sim.h"
#include "dish_vm.h"

/* A simulated satellite and a VM on it. */
typedef struct bench {
    dish_sim sim;
    dish_vm vm;
} bench;

void bench_init(bench *b);
/* Compiles src into img (DISH_MAX_IMAGE bytes): its length, or -1 with
 * the error in err. */
int compile_src(const char *src, uint8_t *img, char *err, size_t errlen);
/* Compiles and loads src on b, starts its first procedure with args and
 * runs the simulation for at most seconds: the run's END value, or
 * INT32_MIN when it faulted or did not end. */
int32_t run_src(bench *b, const char *src, const int32_t *args, int nargs, int seconds);
/* An image of n procedures p[] over code[0..len), CRC filled: its length. */
int craft(uint8_t *out, const dish_proc *p, int n, const uint8_t *code, int len);
/* Recomputes the CRC of an image after an edit. */
void recrc(uint8_t *img, size_t len);

#endif
