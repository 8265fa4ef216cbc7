/* ladder.c -- the OOM recovery ladder: the memory floors a job climbs
 * after each out-of-memory exit.
 *
 * Buckets sit at 25/50/75% of the GPU's memory (AEGIS config/settings.py,
 * recovery.percentage_buckets default [0.25, 0.50, 0.75], bucket_mode
 * "percentage_buckets_with_max_step"); a gap wider than the maximum step
 * between two buckets gets extra buckets every max step above the lower
 * one, so one OOM never costs more than a step of collocation room.
 * 40960 MiB and 8192 MiB give 10240, 18432, 20480, 28672, 30720.
 */
#include "core.h"

static const double ladder_fractions[] = {0.25, 0.50, 0.75};
#define LADDER_FRACTIONS (int)(sizeof(ladder_fractions) / sizeof(ladder_fractions[0]))

int core_ladder(double total_mib, double max_step_mib, double *buckets,
                int max) {
    int n = 0;
    double prev = 0;
    for (int f = 0; f < LADDER_FRACTIONS; f++) {
        double bucket = ladder_fractions[f] * total_mib;
        /* The first bucket is the first rung: nothing below it to refine. */
        if (f > 0 && max_step_mib > 0)
            for (double mid = prev + max_step_mib; mid < bucket && n < max;
                 mid += max_step_mib)
                buckets[n++] = mid;
        if (n < max) buckets[n++] = bucket;
        prev = bucket;
    }
    return n;
}
