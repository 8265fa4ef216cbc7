/* split.c -- how one GPU's energy is shared among the jobs on it.
 *
 * NVML meters energy per GPU, not per process, so a job's share is an
 * estimate: its activity (the SM utilization NVML samples per process)
 * when the GPU reports any, else its memory, else an even share. Activity
 * comes first because power follows the SMs that run, not the bytes held:
 * an idle job holding half the memory draws little.
 */
#include "tel.h"

/* Sums the non-negative entries of v; *known counts them. */
static double tel_sum_known(int n, const double *v, int *known) {
    double sum = 0;
    *known = 0;
    for (int i = 0; i < n; i++)
        if (v[i] >= 0) {
            sum += v[i];
            (*known)++;
        }
    return sum;
}

void tel_energy_split(int n, const double *util, const double *mib,
                      double joules, double *share) {
    int known = 0;
    double sum = tel_sum_known(n, util, &known);
    const double *w = util;
    if (known == 0 || sum <= 0) {
        sum = tel_sum_known(n, mib, &known);
        w = mib;
    }
    for (int i = 0; i < n; i++)
        share[i] = sum > 0 ? (w[i] > 0 ? joules * w[i] / sum : 0)
                           : joules / n;
}
