/* gen.c -- writing synthetic traces (gen.h). */
#include "gen.h"

#include <math.h>

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and every seed,
 * including 0, gives a good stream. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), 53 random bits. */
static double uniform(uint64_t *state) {
    return (double)(next_random(state) >> 11) * 0x1.0p-53;
}

int gen_trace(FILE *out, const cat_workload *const *pool, int npool, long jobs,
              uint64_t seed, double mean_gap_s, int users) {
    /* Users come from a stream of their own, so a trace with them has the
     * jobs the same seed gives without them. */
    uint64_t state = seed, user_state = seed ^ 0x5eed05e5ull;
    double t = 0;
    fputs(users > 0 ? "job_index,submit_time_s,workload,user\n"
                    : "job_index,submit_time_s,workload\n", out);
    for (long i = 1; i <= jobs; i++) {
        const cat_workload *w = pool[next_random(&state) % (uint64_t)npool];
        fprintf(out, "%ld,%.1f,%s", i, t, w->name);
        if (users > 0)
            fprintf(out, ",user%d",
                    1 + (int)(next_random(&user_state) % (uint64_t)users));
        putc('\n', out);
        t += -log1p(-uniform(&state)) * mean_gap_s;
    }
    return ferror(out) ? -1 : 0;
}
