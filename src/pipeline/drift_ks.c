/* drift_ks.c -- the two-sample Kolmogorov-Smirnov test on each feature
 * (drift.h), as Modyn's AlibiDetectKSDriftMetric applies it: one test per
 * feature, the p-values corrected for their number. */
#include <math.h>
#include <stdlib.h>

#include "drift.h"

double drift_ks_pvalue(double d, size_t n, size_t m)
{
    /* The Kolmogorov distribution's tail, with the small-sample
     * correction of Stephens (1970) on the argument. */
    double en = sqrt((double)n * m / (double)(n + m));
    double lambda = (en + 0.12 + 0.11 / en) * d;
    if (lambda < 0.2)
        return 1.0;
    double sum = 0, sign = 1;
    for (int j = 1; j <= 100; j++) {
        double term = exp(-2.0 * j * j * lambda * lambda);
        sum += sign * term;
        if (term < 1e-12)
            break;
        sign = -sign;
    }
    double p = 2.0 * sum;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Column k of the n rows of x, sorted, into out. */
static void sorted_column(const float *x, size_t n, size_t dim, size_t k,
                          float *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i * dim + k];
    qsort(out, n, sizeof *out, cmp_float);
}

/* The largest gap between the empirical distribution functions of two
 * sorted samples. */
static double ks_statistic(const float *a, size_t n, const float *b, size_t m)
{
    size_t i = 0, j = 0;
    double d = 0;
    while (i < n && j < m) {
        float v = a[i] < b[j] ? a[i] : b[j];
        while (i < n && a[i] == v)
            i++;
        while (j < m && b[j] == v)
            j++;
        double gap = fabs((double)i / n - (double)j / m);
        if (gap > d)
            d = gap;
    }
    return d;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The smallest p-value corrected for dim tests: Bonferroni multiplies by
 * dim; Benjamini-Hochberg's adjusted p of the i-th smallest is p*dim/i,
 * and the smallest of those decides. */
static double corrected_min(double *p, size_t dim, bool fdr)
{
    qsort(p, dim, sizeof *p, cmp_double);
    double best = p[0] * (double)dim;
    for (size_t i = 1; fdr && i < dim; i++) {
        double q = p[i] * (double)dim / (double)(i + 1);
        if (q < best)
            best = q;
    }
    return best > 1 ? 1 : best;
}

int drift_ks(const float *x, size_t nx, const float *y, size_t ny,
             size_t dim, bool fdr, double *max_d, double *p_value)
{
    float *a = malloc(nx * sizeof *a);
    float *b = malloc(ny * sizeof *b);
    double *p = malloc(dim * sizeof *p);
    if (!a || !b || !p) {
        free(a);
        free(b);
        free(p);
        return -1;
    }
    *max_d = 0;
    for (size_t k = 0; k < dim; k++) {
        sorted_column(x, nx, dim, k, a);
        sorted_column(y, ny, dim, k, b);
        double d = ks_statistic(a, nx, b, ny);
        p[k] = drift_ks_pvalue(d, nx, ny);
        if (d > *max_d)
            *max_d = d;
    }
    *p_value = corrected_min(p, dim, fdr);
    free(a);
    free(b);
    free(p);
    return 0;
}
