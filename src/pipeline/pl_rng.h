/* pl_rng.h -- the pipeline wing's seeded random numbers: splitmix64 to
 * spread a seed, xoshiro256** to draw. The same seed gives the same
 * numbers on every machine, which is what makes a training set or a
 * permutation test repeatable after a restart. */
#ifndef AEGIS_PL_RNG_H
#define AEGIS_PL_RNG_H

#include <stdint.h>

typedef struct pl_rng {
    uint64_t s[4];
} pl_rng;

static inline uint64_t pl_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Seeds from two numbers (a pipeline's seed and a trigger, say), so each
 * pair has its own stream. */
static inline void pl_rng_seed(pl_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ pl_splitmix64(&stream);
    for (int i = 0; i < 4; i++)
        r->s[i] = pl_splitmix64(&x);
}

static inline uint64_t pl_rng_next(pl_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3] << 45 | s[3] >> 19;
    return result;
}

/* Uniform in [0, 1). */
static inline double pl_rng_unit(pl_rng *r)
{
    return (double)(pl_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply; the bias is below 2^-32
 * for the sizes the pipeline draws from). */
static inline uint64_t pl_rng_below(pl_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)pl_rng_next(r) * n) >> 64);
}

#endif
