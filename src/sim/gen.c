/* gen.c -- writing synthetic traces (gen.h). */
#include "gen.h"

#include <math.h>
#include <stdlib.h>

/* splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and every seed,
 * including 0, gives a good stream. */
uint64_t gen_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double gen_uniform(uint64_t *state) {
    return (double)(gen_next(state) >> 11) * 0x1.0p-53;
}

/* A shared data set: the workload its sweep trains, its loading cost. */
typedef struct gen_feed {
    const cat_workload *work;
    double load_cpus;
} gen_feed;

/* The feeds of a trace, from a stream of their own; NULL when out of
 * memory. */
static gen_feed *gen_feeds(const cat_workload *const *pool, int npool,
                           int feeds, uint64_t *state) {
    gen_feed *f = malloc((size_t)feeds * sizeof(*f));
    for (int k = 0; f && k < feeds; k++) {
        f[k].work = pool[gen_next(state) % (uint64_t)npool];
        f[k].load_cpus = round(10 * (GEN_LOAD_CPUS_MIN + gen_uniform(state) *
                               (GEN_LOAD_CPUS_MAX - GEN_LOAD_CPUS_MIN))) / 10;
    }
    return f;
}

int gen_trace(FILE *out, const cat_workload *const *pool, int npool, long jobs,
              uint64_t seed, double mean_gap_s, int users, int feeds) {
    /* Users and feeds come from streams of their own, so a trace with
     * them has the arrival times the same seed gives without them. */
    uint64_t state = seed, user_state = seed ^ 0x5eed05e5ull,
             feed_state = seed ^ 0xfeedfeedull;
    gen_feed *feed = feeds > 0 ? gen_feeds(pool, npool, feeds, &feed_state)
                               : NULL;
    if (feeds > 0 && !feed) return -1;
    double t = 0;
    fprintf(out, "job_index,submit_time_s,workload%s%s\n",
            users > 0 ? ",user" : "", feeds > 0 ? ",feed,load_cpus" : "");
    for (long i = 1; i <= jobs; i++) {
        const cat_workload *w = pool[gen_next(&state) % (uint64_t)npool];
        int k = feeds > 0 ? (int)(gen_next(&feed_state) % (uint64_t)feeds)
                          : 0;
        fprintf(out, "%ld,%.1f,%s", i, t, feeds > 0 ? feed[k].work->name
                                                     : w->name);
        if (users > 0)
            fprintf(out, ",user%d",
                    1 + (int)(gen_next(&user_state) % (uint64_t)users));
        if (feeds > 0) fprintf(out, ",feed%d,%.1f", k + 1, feed[k].load_cpus);
        putc('\n', out);
        t += -log1p(-gen_uniform(&state)) * mean_gap_s;
    }
    free(feed);
    return ferror(out) ? -1 : 0;
}
