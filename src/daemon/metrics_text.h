/* metrics_text.h -- Prometheus' text exposition format (version 0.0.4)
 * written into a growing buffer: a family's # HELP and # TYPE lines, its
 * samples with escaped label values, and a histogram's buckets. What the
 * samples are is metrics.c's; this file only writes them correctly.
 *
 *     # HELP aegis_gpu_power_watts Power the GPU draws.
 *     # TYPE aegis_gpu_power_watts gauge
 *     aegis_gpu_power_watts{gpu="0"} 61.5
 *
 * Labels are given as a NULL-terminated list of name, value pairs; names
 * are the caller's constants, values anything (a job name a user chose):
 * backslash, double quote and newline are escaped as the format says.
 */
#ifndef AEGIS_METRICS_TEXT_H
#define AEGIS_METRICS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mtext {
    char *buf;              /* NUL-terminated once anything was written */
    size_t len, cap;
    bool failed;            /* out of memory: the text is incomplete */
} mtext;

/* "# HELP name help" and "# TYPE name type" (counter, gauge, histogram). */
void mtext_family(mtext *t, const char *name, const char *type,
                  const char *help);
/* "name{k="v",...} value"; labels NULL or {k, v, ..., NULL}. */
void mtext_sample(mtext *t, const char *name, const char *const *labels,
                  double value);
/* A label value as it goes between the quotes. */
void mtext_label_value(mtext *t, const char *value);
void mtext_free(mtext *t);

/* A histogram with fixed upper bounds (seconds, ascending). */
#define MTEXT_HIST_MAX 16
typedef struct mtext_hist {
    int nbounds;
    double bounds[MTEXT_HIST_MAX];
    uint64_t counts[MTEXT_HIST_MAX]; /* per bucket, not cumulative */
    uint64_t count;                  /* all observations (le="+Inf") */
    double sum;
} mtext_hist;

void mtext_hist_init(mtext_hist *h, const double *bounds, int nbounds);
void mtext_hist_observe(mtext_hist *h, double value);
/* Its _bucket (cumulative, le="+Inf" last), _sum and _count samples. */
void mtext_histogram(mtext *t, const char *name, const mtext_hist *h);

#endif
