/* pipeline_compare_svg.c -- `aegis pipeline compare --svg FILE`
 * (pipeline_compare.h): one line a pipeline, its composite model's metric
 * in each evaluation window (the active model's, at the window's middle),
 * and a mark under the plot where each of its models' data ended (when
 * it could start serving). Plain SVG 1.1, no script: any browser shows
 * it.
 */
#include "pipeline_compare.h"
#include "xml_text.h"

#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SVG_W 860
#define SVG_H 380
#define PLOT_L 70               /* the plot's box */
#define PLOT_R 680
#define PLOT_T 40
#define PLOT_B 290

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                     "#9467bd", "#ff7f0e", "#8c564b"};

/* One pipeline's served windows (active model), in time order. */
typedef struct svg_line {
    pl_eval_result *served;
    size_t n;
} svg_line;

/* A window's middle, open bounds cut at its samples. */
static double svg_mid(const pl_eval_result *w) {
    int64_t a = w->start == INT64_MIN ? w->first_ts : w->start;
    int64_t b = w->end == INT64_MAX ? w->last_ts + 1 : w->end;
    return ((double)a + (double)b) / 2;
}

/* The time the plot spans: every window's middle and model's end. */
static void svg_span(const pc_row *rows, const svg_line *lines, int n,
                     double *t0, double *t1) {
    *t0 = INFINITY;
    *t1 = -INFINITY;
    for (int k = 0; k < n; k++) {
        for (size_t i = 0; i < lines[k].n; i++) {
            *t0 = fmin(*t0, svg_mid(&lines[k].served[i]));
            *t1 = fmax(*t1, svg_mid(&lines[k].served[i]));
        }
        for (size_t i = 0; i < rows[k].nmodels; i++) {
            *t0 = fmin(*t0, (double)rows[k].ends[i]);
            *t1 = fmax(*t1, (double)rows[k].ends[i]);
        }
    }
    if (!(*t1 > *t0)) *t1 = *t0 + 1; /* one point, or none */
    if (!isfinite(*t0)) *t0 = 0, *t1 = 1;
}

static double svg_x(double t, double t0, double t1) {
    return PLOT_L + (t - t0) / (t1 - t0) * (PLOT_R - PLOT_L);
}

static double svg_y(double v) {
    return PLOT_B - v * (PLOT_B - PLOT_T);
}

/* The box, the metric's grid (0 to 1), and time in days from t0. */
static void svg_axes(FILE *f, double t0, double t1, const char *metric) {
    fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' "
            "stroke='#444'/>\n", PLOT_L, PLOT_T, PLOT_R - PLOT_L,
            PLOT_B - PLOT_T);
    for (int i = 0; i <= 4; i++) {
        double y = svg_y(i / 4.0);
        fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>"
                "<text x='%d' y='%.1f' text-anchor='end'>%.2f</text>\n",
                PLOT_L, PLOT_R, y, y, PLOT_L - 6, y + 4, i / 4.0);
    }
    char day[32];
    time_t start = (time_t)t0;
    strftime(day, sizeof(day), "%Y-%m-%d %H:%M UTC", gmtime(&start));
    for (int i = 0; i <= 4; i++) {
        double t = t0 + (t1 - t0) * i / 4;
        fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle'>+%.1fd</text>\n",
                svg_x(t, t0, t1), PLOT_B + 16, (t - t0) / 86400);
    }
    fprintf(f, "<text x='%d' y='%d' text-anchor='middle'>sample time from "
            "%s (marks: each model's data ends)</text>\n",
            (PLOT_L + PLOT_R) / 2, SVG_H - 12, day);
    fprintf(f, "<text x='16' y='%d' transform='rotate(-90 16 %d)' "
            "text-anchor='middle'>%s</text>\n", (PLOT_T + PLOT_B) / 2,
            (PLOT_T + PLOT_B) / 2, metric);
}

/* Pipeline k's line, points, trigger marks and legend entry. */
static void svg_pipeline(FILE *f, const pc_row *r, const svg_line *l, int k,
                         double t0, double t1) {
    const char *c = colors[k % (int)(sizeof(colors) / sizeof(*colors))];
    fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='2' "
            "points='", c);
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%.1f,%.1f ", svg_x(svg_mid(&l->served[i]), t0, t1),
                svg_y(l->served[i].value));
    fprintf(f, "'/>\n");
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'/>\n",
                svg_x(svg_mid(&l->served[i]), t0, t1),
                svg_y(l->served[i].value), c);
    double y = PLOT_B + 24 + 7 * k;
    for (size_t i = 0; i < r->nmodels; i++) {
        double x = svg_x((double)r->ends[i], t0, t1);
        fprintf(f, "<path d='M%.1f %.1f l-4 6 h8 z' fill='%s'/>\n", x, y, c);
    }
    fprintf(f, "<rect x='%d' y='%d' width='14' height='4' fill='%s'/>"
            "<text x='%d' y='%d'>%s (%lld trainings)</text>\n", PLOT_R + 14,
            PLOT_T + 18 * k + 2, c, PLOT_R + 34, PLOT_T + 18 * k + 8, r->name,
            (long long)r->trainings);
}

/* Pipeline r's served windows with a value, in time order. */
static int svg_line_of(const pc_row *r, const char *handler,
                       const char *metric, svg_line *l) {
    pl_eval_result *all;
    size_t n = pc_results(r, handler, metric, &all);
    l->served = malloc((n ? n : 1) * sizeof(*l->served));
    if (!all || !l->served) {
        free(all);
        return -1;
    }
    l->n = pl_composite_windows(all, n, r->models, r->ends, r->nmodels,
                                false, l->served);
    free(all);
    return 0;
}

int pc_svg(const char *path, const pc_row *rows, int n, const char *handler,
           const char *metric) {
    svg_line *lines = calloc((size_t)n, sizeof(*lines));
    int ok = lines != NULL;
    for (int k = 0; ok && k < n; k++)
        ok = svg_line_of(&rows[k], handler, metric, &lines[k]) == 0;
    FILE *f = ok ? fopen(path, "w") : NULL;
    if (f) {
        double t0, t1;
        svg_span(rows, lines, n, &t0, &t1);
        fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' "
                "height='%d' font-family='sans-serif' font-size='12'>\n"
                "<text x='%d' y='22' font-size='14'>Composite model: %s (",
                SVG_W, SVG_H, PLOT_L, metric);
        xml_text(f, handler);
        fprintf(f, "), the model serving each window</text>\n");
        svg_axes(f, t0, t1, metric);
        for (int k = 0; k < n; k++)
            svg_pipeline(f, &rows[k], &lines[k], k, t0, t1);
        fprintf(f, "</svg>\n");
    }
    int err = errno;
    if (f && fclose(f) != 0) f = NULL, err = errno;
    for (int k = 0; lines && k < n; k++) free(lines[k].served);
    free(lines);
    if (f) return CLI_OK;
    fprintf(stderr, "aegis pipeline compare: %s: %s\n", path,
            ok ? strerror(err) : "out of memory");
    return CLI_FAIL;
}
