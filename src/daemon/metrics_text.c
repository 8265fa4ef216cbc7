/* metrics_text.c -- writing Prometheus' text exposition format: see
 * metrics_text.h. Numbers are written so that they read back exactly
 * enough (15 significant digits), NaN and infinities as the format spells
 * them.
 */
#include "metrics_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL; false (and failed) when none. */
static bool mtext_room(mtext *t, size_t n) {
    if (t->failed) return false;
    if (t->len + n + 1 <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1) cap *= 2;
    char *grown = realloc(t->buf, cap);
    if (!grown) {
        t->failed = true;
        return false;
    }
    t->buf = grown;
    t->cap = cap;
    return true;
}

static void mtext_put(mtext *t, const char *s, size_t n) {
    if (!mtext_room(t, n)) return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void mtext_puts(mtext *t, const char *s) {
    mtext_put(t, s, strlen(s));
}

static void mtext_printf(mtext *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mtext_printf(mtext *t, const char *fmt, ...) {
    char small[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = true;
        return;
    }
    mtext_put(t, small, (size_t)n < sizeof(small) ? (size_t)n
                                                    : sizeof(small) - 1);
}

/* A sample value: "NaN", "+Inf", "-Inf" or the number. */
static void mtext_number(mtext *t, double v) {
    if (isnan(v)) mtext_puts(t, "NaN");
    else if (isinf(v)) mtext_puts(t, v > 0 ? "+Inf" : "-Inf");
    else mtext_printf(t, "%.15g", v);
}

/* HELP text escapes backslash and newline (not the quote). */
static void mtext_help_text(mtext *t, const char *help) {
    for (const char *p = help; *p; p++) {
        if (*p == '\\') mtext_puts(t, "\\\\");
        else if (*p == '\n') mtext_puts(t, "\\n");
        else mtext_put(t, p, 1);
    }
}

void mtext_family(mtext *t, const char *name, const char *type,
                  const char *help) {
    mtext_puts(t, "# HELP ");
    mtext_puts(t, name);
    mtext_puts(t, " ");
    mtext_help_text(t, help);
    mtext_puts(t, "\n# TYPE ");
    mtext_puts(t, name);
    mtext_puts(t, " ");
    mtext_puts(t, type);
    mtext_puts(t, "\n");
}

void mtext_label_value(mtext *t, const char *value) {
    for (const char *p = value; *p; p++) {
        if (*p == '\\') mtext_puts(t, "\\\\");
        else if (*p == '"') mtext_puts(t, "\\\"");
        else if (*p == '\n') mtext_puts(t, "\\n");
        else mtext_put(t, p, 1);
    }
}

/* name{k="v",...}, with the extra pair (le) last when not NULL. */
static void mtext_series(mtext *t, const char *name, const char *const *labels,
                         const char *extra_name, const char *extra_value) {
    mtext_puts(t, name);
    bool any = (labels && labels[0]) || extra_name;
    if (!any) return;
    const char *sep = "{";
    for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
        mtext_puts(t, sep);
        mtext_puts(t, labels[i]);
        mtext_puts(t, "=\"");
        mtext_label_value(t, labels[i + 1]);
        mtext_puts(t, "\"");
        sep = ",";
    }
    if (extra_name) {
        mtext_puts(t, sep);
        mtext_puts(t, extra_name);
        mtext_puts(t, "=\"");
        mtext_puts(t, extra_value);
        mtext_puts(t, "\"");
    }
    mtext_puts(t, "}");
}

void mtext_sample(mtext *t, const char *name, const char *const *labels,
                  double value) {
    mtext_series(t, name, labels, NULL, NULL);
    mtext_puts(t, " ");
    mtext_number(t, value);
    mtext_puts(t, "\n");
}

void mtext_free(mtext *t) {
    free(t->buf);
    *t = (mtext){0};
}

void mtext_hist_init(mtext_hist *h, const double *bounds, int nbounds) {
    *h = (mtext_hist){0};
    h->nbounds = nbounds < MTEXT_HIST_MAX ? nbounds : MTEXT_HIST_MAX;
    memcpy(h->bounds, bounds, (size_t)h->nbounds * sizeof(*bounds));
}

void mtext_hist_observe(mtext_hist *h, double value) {
    for (int i = 0; i < h->nbounds; i++)
        if (value <= h->bounds[i]) {
            h->counts[i]++;
            break;
        }
    h->count++;
    h->sum += value;
}

void mtext_histogram(mtext *t, const char *name, const mtext_hist *h) {
    char series[128], le[32];
    snprintf(series, sizeof(series), "%s_bucket", name);
    uint64_t below = 0;
    for (int i = 0; i < h->nbounds; i++) {
        below += h->counts[i];
        snprintf(le, sizeof(le), "%.15g", h->bounds[i]);
        mtext_series(t, series, NULL, "le", le);
        mtext_printf(t, " %llu\n", (unsigned long long)below);
    }
    mtext_series(t, series, NULL, "le", "+Inf");
    mtext_printf(t, " %llu\n", (unsigned long long)h->count);
    snprintf(series, sizeof(series), "%s_sum", name);
    mtext_sample(t, series, NULL, h->sum);
    snprintf(series, sizeof(series), "%s_count", name);
    mtext_sample(t, series, NULL, (double)h->count);
}
