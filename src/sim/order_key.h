/* order_key.h -- a double as an unsigned integer that orders as the double
 * does.
 *
 * A double's bits order its magnitude; flipping the negative ones and
 * setting the sign bit of the others makes the whole range ascend. Two
 * places use it: the report counts a million JCTs into buckets by a key's
 * leading bits, and the dispatcher compares drain times as integers, which
 * the compiler picks between without a branch. -0.0 keys below 0.0; NaNs
 * key above (positive) or below (negative) everything else.
 */
#ifndef AEGIS_ORDER_KEY_H
#define AEGIS_ORDER_KEY_H

#include <stdint.h>
#include <string.h>

#define ORDER_KEY_SIGN (UINT64_C(1) << 63)

static inline uint64_t order_key(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return bits & ORDER_KEY_SIGN ? ~bits : bits | ORDER_KEY_SIGN;
}

/* The double whose order_key() is key. */
static inline double order_key_value(uint64_t key) {
    uint64_t bits = key & ORDER_KEY_SIGN ? key & ~ORDER_KEY_SIGN : ~key;
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

#endif
