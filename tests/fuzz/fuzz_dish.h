/* fuzz_dish.h -- what the two DISH fuzz targets (fuzz_dish_image.c,
 * fuzz_dish_source.c) share: an image the verifier accepted, installed
 * and run on a simulated satellite with every rule of the DISH design
 * checked (fuzz_dish.c). */
#ifndef AEGIS_FUZZ_DISH_H
#define AEGIS_FUZZ_DISH_H

#include <stddef.h>
#include <stdint.h>

#include "dish_verify.h"

/* img[0..len), which dish_verify accepted on an empty board as *im:
 * loads it into a fresh VM, starts each of its procedures, runs them
 * until they end or a bounded number of ticks, then stops and deletes
 * them. Aborts (FUZZ_CHECK) when the load or a start is refused, a run
 * faults in a way only a verifier bug allows (its stack or arena, a call
 * of an empty slot), a run executes more than the verifier's bound, or
 * the slots do not all delete again. */
void fuzz_dish_run(const uint8_t *img, size_t len, const dish_image *im);

#endif
