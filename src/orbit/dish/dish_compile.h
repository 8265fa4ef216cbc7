/* dish_compile.h -- the ground compiler: DISH source to a verified
 * bytecode image (dish.h), or the first error as "FILE:LINE:COL: what". */
#ifndef DISH_COMPILE_H
#define DISH_COMPILE_H

#include <stddef.h>
#include <stdint.h>

/* Compiles src[0..len) (named file in errors) into out (cap bytes) and runs
 * the verifier on the result. Image bytes, or -1 with err filled. */
int dish_compile(const char *file, const char *src, size_t len, uint8_t *out,
                 size_t cap, char *err, size_t errlen);

#endif
