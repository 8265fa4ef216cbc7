/* fuzz_dish.h -- what the two DISH fuzz targets (fuzz_dish_image.c,
 * fuzz_dish_source.c) share: an image the verifier accepted, installed
 * and run on a simulated satellite with every rule of the DISH design
 * checked (fuzz_dish.c). */
#ifndef AEGIS_FUZZ_DISH_H
#define AEGIS_FUZZ_DISH_H

#include <stddef.h>
#include <stdint.h>

#include "dish_verify.h"

/* A fresh simulated satellite and VM, empty or (with_library) holding a
 * small library in slots 48 and 49 (a wait with a long condition, a loop
 * calling it) that the image may call. */
void fuzz_dish_board(int with_library);
/* What the board holds, for dish_verify (DISH_SLOTS records). */
void fuzz_dish_onboard(dish_slotinfo *onboard);
/* img[0..len), which dish_verify accepted as *im against the board
 * (fuzz_dish_onboard): loads it, starts each of its procedures, runs
 * them until they end or a bounded number of ticks, then stops them and
 * deletes its slots. Aborts (FUZZ_CHECK) when the load or a start is
 * refused, a run faults in a way only a verifier bug allows (its stack
 * or arena, a call of an empty slot), a run executes more than the
 * verifier's bound, or the slots do not all delete again, giving back
 * the code pool and the calls they took. */
void fuzz_dish_run(const uint8_t *img, size_t len, const dish_image *im);

#endif
