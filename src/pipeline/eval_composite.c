/* eval_composite.c -- a pipeline's composite model (eval.h): each
 * evaluation window judged by the model that served it, so that
 * pipelines that trained at different times compare fairly.
 */
#include "eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t pl_composite_model(const uint32_t *models, const int64_t *ends,
                           size_t nmodels, int64_t start, bool trained) {
    size_t served = 0;  /* models whose data ended before start */
    while (served < nmodels && ends[served] < start) served++;
    if (trained) return served < nmodels ? (int64_t)models[served] : -1;
    return served > 0 ? (int64_t)models[served - 1] : -1;
}

/* Model m's value in the window's results g[0..n), or NULL. */
static const pl_eval_result *find_result(const pl_eval_result *g, size_t n,
                                         int64_t m) {
    for (size_t i = 0; m >= 0 && i < n; i++)
        if (g[i].model == (uint32_t)m && !isnan(g[i].value)) return &g[i];
    return NULL;
}

/* The window's length of time, open bounds cut at its samples. */
static double window_weight(const pl_eval_result *w) {
    int64_t a = w->start == INT64_MIN ? w->first_ts : w->start;
    int64_t b = w->end == INT64_MAX ? w->last_ts + 1 : w->end;
    return b > a ? (double)(b - a) : 0;
}

static int by_window(const void *a, const void *b) {
    const pl_eval_result *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->model < y->model ? -1 : x->model > y->model;
}

size_t pl_composite_windows(const pl_eval_result *r, size_t n,
                            const uint32_t *models, const int64_t *ends,
                            size_t nmodels, bool trained,
                            pl_eval_result *out) {
    size_t nout = 0;
    pl_eval_result *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    if (!sorted) return 0;
    memcpy(sorted, r, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), by_window);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && sorted[j].start == sorted[i].start &&
                    sorted[j].end == sorted[i].end; j++) {}
        int64_t m = pl_composite_model(models, ends, nmodels, sorted[i].start,
                                       trained);
        const pl_eval_result *got = find_result(sorted + i, j - i, m);
        if (got) out[nout++] = *got;
    }
    free(sorted);
    return nout;
}

/* The mean of the served windows' values, each weighted by its length. */
static double weighted_mean(const pl_eval_result *w, size_t n) {
    double sum = 0, weight = 0;
    for (size_t i = 0; i < n; i++) {
        sum += window_weight(&w[i]) * w[i].value;
        weight += window_weight(&w[i]);
    }
    return weight > 0 ? sum / weight : NAN;
}

pl_composite pl_composite_score(const pl_eval_result *r, size_t n,
                                const uint32_t *models, const int64_t *ends,
                                size_t nmodels) {
    pl_composite out = {NAN, NAN, 0};
    pl_eval_result *served = malloc((n ? n : 1) * sizeof(*served));
    if (!served) return out;
    out.windows = pl_composite_windows(r, n, models, ends, nmodels, false,
                                       served);
    out.active = weighted_mean(served, out.windows);
    size_t ntrained = pl_composite_windows(r, n, models, ends, nmodels, true,
                                           served);
    out.trained = weighted_mean(served, ntrained);
    free(served);
    return out;
}
