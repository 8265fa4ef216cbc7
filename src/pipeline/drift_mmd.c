/* drift_mmd.c -- maximum mean discrepancy with a Gaussian kernel between
 * two windows (drift.h): the distance Modyn's AlibiDetectMmdDriftMetric
 * measures, with its permutation test. The kernel averages Gaussians at
 * several bandwidths around the median heuristic's (DRIFT_MMD_SCALES).
 *
 * The permutation test computes the kernel between every pair of rows
 * once ((nx+ny)^2 floats) and then only re-sums it per permutation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "pl_rng.h"

static double sq_dist(const float *a, const float *b, size_t dim)
{
    double s = 0;
    for (size_t k = 0; k < dim; k++) {
        double d = (double)a[k] - b[k];
        s += d * d;
    }
    return s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double drift_median_sigma(const float *x, size_t n, size_t dim)
{
    if (n > DRIFT_SIGMA_ROWS)
        n = DRIFT_SIGMA_ROWS;
    size_t pairs = n * (n - 1) / 2;
    double *d = pairs ? malloc(pairs * sizeof *d) : NULL;
    if (!d)
        return 1.0;
    size_t p = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            d[p++] = sq_dist(x + i * dim, x + j * dim, dim);
    qsort(d, pairs, sizeof *d, cmp_double);
    /* As alibi-detect's sigma_median: sigma^2 is half the median squared
     * distance: the widest kernel is exp(-|a-b|^2 / median). */
    double sigma = sqrt(d[pairs / 2] / 2.0);
    free(d);
    return sigma > 0 ? sigma : 1.0;
}

/* The statistic from the three sums of kernel values: within x (i != j),
 * within y (i != j) and across. */
static double mmd2_of(double kxx, double kyy, double kxy, size_t nx, size_t ny)
{
    return kxx / ((double)nx * (nx - 1)) + kyy / ((double)ny * (ny - 1)) -
           2.0 * kxy / ((double)nx * ny);
}

/* The statistic when rows order[0..nx) form x and the rest y, read from
 * the kernel matrix k of n = nx+ny rows. */
static double mmd2_split(const float *k, const uint32_t *order, size_t nx,
                         size_t n)
{
    double kxx = 0, kyy = 0, kxy = 0;
    for (size_t i = 0; i < n; i++) {
        const float *row = k + (size_t)order[i] * n;
        double in_x = 0, in_y = 0;
        for (size_t j = 0; j < nx; j++)
            in_x += row[order[j]];
        for (size_t j = nx; j < n; j++)
            in_y += row[order[j]];
        if (i < nx) {
            kxx += in_x;
            kxy += in_y;
        } else {
            kyy += in_y;
        }
    }
    /* The diagonal (k = 1 for a row with itself) is not part of the
     * unbiased sums. */
    return mmd2_of(kxx - (double)nx, kyy - (double)(n - nx), kxy, nx, n - nx);
}

/* The kernel at squared distance d2: the mean of Gaussians at the
 * bandwidths sigma * DRIFT_MMD_SCALES. */
static double kernel(double d2, const double *neg_half_inv_var)
{
    static const double scales[] = DRIFT_MMD_SCALES;
    enum { NSCALES = sizeof scales / sizeof scales[0] };
    double sum = 0;
    for (int s = 0; s < NSCALES; s++)
        sum += exp(d2 * neg_half_inv_var[s]);
    return sum / NSCALES;
}

/* The kernel between every pair of the rows of x then y. */
static float *kernel_matrix(const float *x, size_t nx, const float *y,
                            size_t ny, size_t dim, double sigma)
{
    static const double scales[] = DRIFT_MMD_SCALES;
    double coef[sizeof scales / sizeof scales[0]];
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
        coef[s] = -1.0 / (2.0 * sigma * scales[s] * sigma * scales[s]);
    size_t n = nx + ny;
    float *k = malloc(n * n * sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const float *a = i < nx ? x + i * dim : y + (i - nx) * dim;
        k[i * n + i] = 1.0f;
        for (size_t j = i + 1; j < n; j++) {
            const float *b = j < nx ? x + j * dim : y + (j - nx) * dim;
            k[i * n + j] = k[j * n + i] = (float)kernel(sq_dist(a, b, dim), coef);
        }
    }
    return k;
}

static void shuffle(uint32_t *order, size_t n, pl_rng *rng)
{
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = pl_rng_below(rng, i + 1);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

int drift_mmd(const float *x, size_t nx, const float *y, size_t ny,
              size_t dim, double sigma, int64_t permutations, uint64_t seed,
              double *mmd2, double *p_value)
{
    size_t n = nx + ny;
    float *k = kernel_matrix(x, nx, y, ny, dim, sigma);
    uint32_t *order = malloc(n * sizeof *order);
    if (!k || !order) {
        free(k);
        free(order);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    *mmd2 = mmd2_split(k, order, nx, n);
    int64_t as_large = 0;
    pl_rng rng;
    pl_rng_seed(&rng, seed, 0x6d6d64);
    for (int64_t p = 0; p < permutations; p++) {
        shuffle(order, n, &rng);
        as_large += mmd2_split(k, order, nx, n) >= *mmd2;
    }
    *p_value = permutations > 0
                   ? (double)(1 + as_large) / (double)(1 + permutations)
                   : 1.0;
    free(k);
    free(order);
    return 0;
}
