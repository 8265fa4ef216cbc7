/* drift.h -- the pieces of the data drift trigger (trigger_drift.c):
 * distance metrics between two windows of feature rows (drift_mmd.c,
 * drift_ks.c), the criteria that turn a distance into a decision
 * (drift_criterion.c) and the window of recent rows (drift_window.c).
 *
 * Windows are row-major float arrays: n rows of dim features.
 */
#ifndef AEGIS_PL_DRIFT_H
#define AEGIS_PL_DRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- metrics ---------------------------------------------------------- */

/* The bandwidth of the Gaussian kernel by the median heuristic, as
 * alibi-detect (Modyn's MMD) sets it: sqrt(median squared distance / 2)
 * between rows of x (at most its first DRIFT_SIGMA_ROWS rows). 1 when all
 * rows coincide. */
#define DRIFT_SIGMA_ROWS 1000
double drift_median_sigma(const float *x, size_t n, size_t dim);

/* The bandwidths of the MMD kernel, as multiples of the median
 * heuristic's sigma; the kernel is the mean of the Gaussians at each (as
 * alibi-detect's GaussianRBF with several sigmas). The heuristic alone is
 * too wide for mixtures whose clusters move without moving the mixture's
 * mean and covariance (a rotation of equally likely classes on a circle):
 * the narrower ones see those, the heuristic's sees broad shifts. */
#define DRIFT_MMD_SCALES {1.0, 0.5, 0.25}

/* The unbiased estimate of the squared maximum mean discrepancy between
 * x (nx rows) and y (ny rows), both >= 2, with the kernel above. With permutations > 0 also the p-value of
 * a permutation test (seeded, so repeatable); *p_value is 1 otherwise.
 * 0, or -1 when out of memory. */
int drift_mmd(const float *x, size_t nx, const float *y, size_t ny,
              size_t dim, double sigma, int64_t permutations, uint64_t seed,
              double *mmd2, double *p_value);

/* Two-sample Kolmogorov-Smirnov on each feature: the largest statistic
 * D over the features, and the smallest p-value corrected for testing dim
 * features (bonferroni, or Benjamini-Hochberg when fdr). 0, or -1 when out
 * of memory. */
int drift_ks(const float *x, size_t nx, const float *y, size_t ny,
             size_t dim, bool fdr, double *max_d, double *p_value);

/* Asymptotic two-sided p-value of a KS statistic d for sizes n and m. */
double drift_ks_pvalue(double d, size_t n, size_t m);

/* ---- decision criteria ------------------------------------------------ */

typedef enum drift_crit_kind {
    DRIFT_CRIT_THRESHOLD,   /* ThresholdDecisionCriterion{threshold} */
    DRIFT_CRIT_QUANTILE,    /* DynamicQuantileThresholdCriterion */
    DRIFT_CRIT_ROLLING,     /* DynamicRollingAverageThresholdCriterion */
    DRIFT_CRIT_HYPOTHESIS,  /* HypothesisTestDecisionCriterion: p < p_val */
} drift_crit_kind;

typedef struct drift_criterion {
    drift_crit_kind kind;
    double threshold;     /* THRESHOLD: drift when the distance exceeds it */
    int64_t window_size;  /* dynamic kinds: distances remembered */
    double quantile;      /* QUANTILE: drift in the top this share */
    double deviation;     /* ROLLING: how far above the average is drift */
    bool absolute;        /* ROLLING: deviation in distance units, not share */
    double *history;      /* dynamic kinds: the last window_size distances */
    size_t nhistory;      /* how many history holds (<= window_size) */
    size_t next;          /* where the next distance goes in history */
    bool lower;           /* a low value fires (a performance trigger's
                             score), not a high one (a distance) */
} drift_criterion;

/* Reads a decision_criterion mapping at PATH. 0, or -1 with err. */
int drift_criterion_parse(const json_t *obj, const char *path,
                          drift_criterion *c, char *err, size_t errlen);
bool drift_criterion_dynamic(const drift_criterion *c);
/* Whether this distance (or p-value, for HYPOTHESIS, against p_val) is
 * drift; dynamic kinds then remember it. Before a dynamic kind has seen a
 * distance it says no. */
bool drift_criterion_decide(drift_criterion *c, double distance,
                            double p_value, double p_val);
/* Remembers a distance without deciding (calibration during warm-up). */
void drift_criterion_observe(drift_criterion *c, double distance);
void drift_criterion_free(drift_criterion *c);

/* ---- a configured metric: distance plus its decision ----------------- */

/* MMD's threshold when neither `threshold` nor `num_permutations` is
 * given: chosen with bench/pipeline/bench_drift.c (docs/benchmarks.md) so
 * that the generator's default drift is caught and no-drift windows of
 * 1,000 samples rarely cross it. */
#define DRIFT_MMD_DEFAULT_THRESHOLD 0.004

typedef struct drift_metric {
    char name[64];          /* its key under `metrics` */
    bool is_ks;             /* AlibiDetectKSDriftMetric, else MMD */
    int64_t permutations;   /* MMD: permutation test size, 0 for none */
    bool kernel_from_ref;   /* MMD: bandwidth from the reference alone */
    bool fdr;               /* KS: Benjamini-Hochberg, else Bonferroni */
    double p_val;           /* the hypothesis test's significance level */
    drift_criterion crit;   /* how a distance becomes a decision */
} drift_metric;

/* Reads metric NAME's mapping at PATH. 0, or -1 with err. */
int drift_metric_parse(const json_t *obj, const char *path, const char *name,
                       drift_metric *m, char *err, size_t errlen);
/* The distance between windows ref and cur (and its p-value, 1 without a
 * test). sigma: the kernel bandwidth when kernel_from_ref. 0, or -1 when
 * out of memory. */
int drift_metric_measure(const drift_metric *m, const float *ref, size_t nref,
                         const float *cur, size_t ncur, size_t dim,
                         double sigma, uint64_t seed, double *distance,
                         double *p_value);
void drift_metric_free(drift_metric *m);

/* ---- the window of recent rows ---------------------------------------- */

/* Rows in arrival order with their samples' keys and timestamps; old rows
 * are dropped from the front, and rows [first, count) are contiguous in
 * memory. A window of dim 0 keeps keys only (a trigger measuring on a
 * model's embeddings has the samples embedded when it compares). */
typedef struct drift_window {
    size_t dim;
    float *rows;       /* cap x dim */
    uint64_t *keys;    /* cap */
    int64_t *ts;       /* cap */
    size_t first;      /* index of the oldest kept row */
    size_t count;      /* one past the newest row */
    size_t cap;
} drift_window;

int drift_window_push(drift_window *w, int64_t ts, uint64_t key,
                      const float *row);
size_t drift_window_len(const drift_window *w);
/* The newest rows, at most n of them: the index of the first (rows from
 * w->rows + index * dim, keys from w->keys + index), their number in got. */
size_t drift_window_last(const drift_window *w, size_t n, size_t *got);
/* The rows with a timestamp after ts_min, the same way. */
size_t drift_window_since(const drift_window *w, int64_t ts_min, size_t *got);
/* Drops all but the newest keep rows. */
void drift_window_keep_last(drift_window *w, size_t keep);
/* Drops rows with a timestamp at or before ts_min. */
void drift_window_drop_until(drift_window *w, int64_t ts_min);
void drift_window_free(drift_window *w);

#endif
