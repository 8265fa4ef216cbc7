/* drift_window.c -- the drift trigger's recent rows and their keys
 * (drift.h). Rows are appended at the end and dropped from the front; the
 * arrays are compacted when the dropped part is as large as the kept
 * part, so a push costs O(1) amortised and every window is one contiguous
 * slice the metrics can read in place. */
#include <stdlib.h>
#include <string.h>

#include "drift.h"

/* Slides the kept rows to the front of the array. */
static void compact(drift_window *w)
{
    size_t kept = w->count - w->first;
    if (w->dim)
        memmove(w->rows, w->rows + w->first * w->dim,
                kept * w->dim * sizeof(float));
    memmove(w->keys, w->keys + w->first, kept * sizeof(uint64_t));
    memmove(w->ts, w->ts + w->first, kept * sizeof(int64_t));
    w->first = 0;
    w->count = kept;
}

static int grow(drift_window *w)
{
    size_t cap = w->cap ? w->cap * 2 : 1024;
    if (w->dim) {
        float *rows = realloc(w->rows, cap * w->dim * sizeof(float));
        if (!rows)
            return -1;
        w->rows = rows;
    }
    uint64_t *keys = realloc(w->keys, cap * sizeof(uint64_t));
    if (!keys)
        return -1;
    w->keys = keys;
    int64_t *ts = realloc(w->ts, cap * sizeof(int64_t));
    if (!ts)
        return -1;
    w->ts = ts;
    w->cap = cap;
    return 0;
}

int drift_window_push(drift_window *w, int64_t ts, uint64_t key,
                      const float *row)
{
    if (w->count == w->cap && w->first >= w->count / 2 && w->first > 0)
        compact(w);
    if (w->count == w->cap && grow(w) < 0)
        return -1;
    if (w->dim)
        memcpy(w->rows + w->count * w->dim, row, w->dim * sizeof(float));
    w->keys[w->count] = key;
    w->ts[w->count++] = ts;
    return 0;
}

size_t drift_window_len(const drift_window *w)
{
    return w->count - w->first;
}

size_t drift_window_last(const drift_window *w, size_t n, size_t *got)
{
    size_t len = drift_window_len(w);
    *got = n < len ? n : len;
    return w->count - *got;
}

/* The index of the first kept row with a timestamp after ts_min
 * (timestamps arrive in order, so a binary search finds it). */
static size_t first_after(const drift_window *w, int64_t ts_min)
{
    size_t lo = w->first, hi = w->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->ts[mid] <= ts_min)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t drift_window_since(const drift_window *w, int64_t ts_min, size_t *got)
{
    size_t from = first_after(w, ts_min);
    *got = w->count - from;
    return from;
}

void drift_window_keep_last(drift_window *w, size_t keep)
{
    if (drift_window_len(w) > keep)
        w->first = w->count - keep;
}

void drift_window_drop_until(drift_window *w, int64_t ts_min)
{
    w->first = first_after(w, ts_min);
}

void drift_window_free(drift_window *w)
{
    free(w->rows);
    free(w->keys);
    free(w->ts);
    memset(w, 0, sizeof *w);
}
