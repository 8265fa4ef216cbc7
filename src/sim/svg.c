/* svg.c -- drawing the timeline picture (svg.h). */
#include "svg.h"
#include "xml_text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Sub-lanes per GPU lane: a fifth concurrent job shares the fourth. */
#define MAX_SUBLANES 4
#define WIDTH 1200.0
#define LEFT 80.0               /* room for lane labels */
#define PLOT_W (WIDTH - LEFT - 20)
#define SUB_H 6.0               /* height of one sub-lane */
#define LOAD_H 40.0             /* height of the load chart */
#define LOAD_BINS 300
#define BAR_H 12.0              /* height of a bar in the comparison */

typedef struct svg_canvas {
    FILE *out;
    double y;                   /* top of the next thing to draw */
    double t_max;               /* time at the right edge */
} svg_canvas;

static double x_of(const svg_canvas *c, double t) {
    return LEFT + PLOT_W * (c->t_max > 0 ? t / c->t_max : 0);
}

static unsigned hue_of(const char *name) {
    unsigned h = 2166136261u;
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 16777619u;
    return h % 360;
}

static double end_of(const sim_result *r, const sim_attempt *at) {
    return at->end_s >= 0 ? at->end_s : r->start_s + r->makespan_s;
}

static void draw_bar(svg_canvas *c, const sim_result *r, const sim_attempt *at,
                     double y) {
    const trace_job *src = r->jobs[at->job].src;
    double x0 = x_of(c, at->start_s - r->start_s);
    double w = x_of(c, end_of(r, at) - r->start_s) - x0;
    fprintf(c->out, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.0f' ", x0,
            y, w > 0.5 ? w : 0.5, SUB_H - 1);
    if (at->oom) fputs("fill='#e33' stroke='#900'", c->out);
    else fprintf(c->out, "fill='hsl(%u,55%%,60%%)'", hue_of(src->work->name));
    fprintf(c->out, "><title>job %lld ", (long long)src->index);
    xml_text(c->out, src->work->name); /* a catalog's or a trace's own */
    fprintf(c->out, "%s</title></rect>\n", at->oom ? " (OOM)" : "");
}

/* Draws the attempts on the first ngpus GPUs, server by server in launch
 * order (the order they are stored in), each in the lowest sub-lane free
 * at its start.
 * Returns how many bars were left out over SVG_MAX_BARS. */
static int draw_bars(svg_canvas *c, const sim_result *r, int ngpus) {
    double lane_end[SVG_MAX_GPUS][MAX_SUBLANES];
    int drawn = 0, skipped = 0;
    double lane_h = MAX_SUBLANES * SUB_H;
    for (int g = 0; g < ngpus; g++)
        for (int k = 0; k < MAX_SUBLANES; k++) lane_end[g][k] = -1;
    for (int s = 0; s < r->servers && s * r->gpus_per_server < ngpus; s++) {
        const sim_server_log *log = &r->logs[s];
        for (int a = 0; a < log->nattempts; a++) {
            const sim_attempt *at = &log->attempts[a];
            for (int i = 0; i < at->ngpus; i++) {
                int g = sim_attempt_gpu(r, s, at, i);
                if (g >= ngpus) continue;
                int k = 0;
                while (k < MAX_SUBLANES - 1 && lane_end[g][k] > at->start_s) k++;
                lane_end[g][k] = end_of(r, at);
                if (drawn++ < SVG_MAX_BARS)
                    draw_bar(c, r, at, c->y + g * lane_h + k * SUB_H);
                else skipped++;
            }
        }
    }
    return skipped;
}

/* Ticks and labels of the time axis, in hours when the run is long. */
static void draw_axis(svg_canvas *c) {
    double unit = c->t_max > 7200 ? 3600 : 1;
    const char *name = unit > 1 ? "h" : "s";
    for (int i = 0; i <= 5; i++) {
        double t = c->t_max * i / 5;
        /* The last label ends at the axis end, so it stays on the page. */
        fprintf(c->out, "<text x='%.1f' y='%.1f' class='tick'%s>%.4g %s</text>\n",
                x_of(c, t), c->y + 10, i == 5 ? " text-anchor='end'" : "",
                t / unit, name);
    }
    c->y += 16;
}

/* Active job-GPUs per GPU over time (above 1 means collocation). */
static void draw_load(svg_canvas *c, const sim_result *r) {
    double load[LOAD_BINS] = {0}, peak = 1;
    double bin_s = c->t_max / LOAD_BINS;
    int total = r->servers * r->gpus_per_server;
    for (int s = 0; s < r->servers && bin_s > 0; s++) {
        const sim_server_log *log = &r->logs[s];
        for (int a = 0; a < log->nattempts; a++) {
            const sim_attempt *at = &log->attempts[a];
            if (at->oom || at->active_s < 0) continue;
            double t0 = at->active_s - r->start_s;
            double t1 = end_of(r, at) - r->start_s;
            for (int b = (int)(t0 / bin_s); b < LOAD_BINS && b * bin_s < t1; b++) {
                double lo = b * bin_s > t0 ? b * bin_s : t0;
                double hi = (b + 1) * bin_s < t1 ? (b + 1) * bin_s : t1;
                load[b] += at->ngpus * (hi - lo) / (bin_s * total);
            }
        }
    }
    for (int b = 0; b < LOAD_BINS; b++) if (load[b] > peak) peak = load[b];
    double base = c->y + LOAD_H;
    fprintf(c->out, "<text x='4' y='%.1f' class='lab'>jobs/GPU</text>\n"
            "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' class='one'/>\n"
            "<polyline class='load' points='", c->y + LOAD_H / 2, LEFT,
            LEFT + PLOT_W, base - LOAD_H / peak, base - LOAD_H / peak);
    for (int b = 0; b < LOAD_BINS; b++)
        fprintf(c->out, "%.1f,%.1f ", x_of(c, (b + 0.5) * bin_s),
                base - LOAD_H * load[b] / peak);
    fprintf(c->out, "'/>\n<text x='%.1f' y='%.1f' class='tick'>peak %.2f "
            "(dashed: 1)</text>\n", LEFT + PLOT_W - 110, c->y + 8, peak);
    c->y += LOAD_H + 4;
}

static void draw_panel(svg_canvas *c, const sim_result *r,
                       const report_summary *s) {
    int total = r->servers * r->gpus_per_server;
    int ngpus = total < SVG_MAX_GPUS ? total : SVG_MAX_GPUS;
    double lane_h = MAX_SUBLANES * SUB_H;
    fprintf(c->out, "<text x='4' y='%.1f' class='head'>", c->y + 14);
    xml_text(c->out, s->label);
    fprintf(c->out, ": makespan %.0f s, mean JCT %.0f s, %d OOM%s</text>\n",
            s->makespan_s, s->mean_jct_s, s->ooms, s->ooms == 1 ? "" : "s");
    c->y += 22;
    if (ngpus < total)
        fprintf(c->out, "<text x='%.1f' y='%.1f' class='note'>showing the "
                "first %d of %d GPUs</text>\n", LEFT + 400, c->y - 8, ngpus,
                total);
    for (int g = 0; g < ngpus; g++)
        fprintf(c->out, "<text x='4' y='%.1f' class='lab'>gpu %d</text>"
                "<line x1='%.1f' x2='%.1f' y1='%.1f' y2='%.1f' class='sep'/>\n",
                c->y + g * lane_h + lane_h / 2 + 3, g, LEFT, LEFT + PLOT_W,
                c->y + (g + 1) * lane_h, c->y + (g + 1) * lane_h);
    int skipped = draw_bars(c, r, ngpus);
    c->y += ngpus * lane_h + 2;
    if (skipped)
        fprintf(c->out, "<text x='%.1f' y='%.1f' class='note'>%d more job bars "
                "not drawn (limit %d)</text>\n", LEFT, c->y + 10, skipped,
                SVG_MAX_BARS);
    draw_axis(c);
    draw_load(c, r);
    c->y += 12;
}

static void draw_comparison(svg_canvas *c, const report_summary *sums, int n) {
    double most = 1;
    for (int i = 0; i < n; i++) {
        if (sums[i].makespan_s > most) most = sums[i].makespan_s;
        if (sums[i].mean_jct_s > most) most = sums[i].mean_jct_s;
    }
    fprintf(c->out, "<text x='4' y='%.1f' class='head'>makespan (blue) and "
            "mean JCT (orange), s</text>\n", c->y + 14);
    c->y += 22;
    for (int i = 0; i < n; i++) {
        const double v[2] = {sums[i].makespan_s, sums[i].mean_jct_s};
        const char *fill[2] = {"#4a7bd0", "#e8903a"};
        fprintf(c->out, "<text x='4' y='%.1f' class='lab'>", c->y + BAR_H + 2);
        xml_text(c->out, sums[i].label);
        fputs("</text>\n", c->out);
        for (int k = 0; k < 2; k++) {
            double w = (PLOT_W - 80) * v[k] / most;
            fprintf(c->out, "<rect x='%.1f' y='%.1f' width='%.1f' "
                    "height='%.0f' fill='%s'/><text x='%.1f' y='%.1f' "
                    "class='tick'>%.0f</text>\n", LEFT, c->y, w, BAR_H - 1,
                    fill[k], LEFT + w + 4, c->y + BAR_H - 2, v[k]);
            c->y += BAR_H;
        }
        c->y += 6;
    }
}

/* The picture's height, known before drawing because SVG needs it first. */
static double height_of(sim_result *const *runs, int n) {
    double h = 10 + 22 + n * (2 * BAR_H + 6) + 10;
    for (int i = 0; i < n; i++) {
        int total = runs[i]->servers * runs[i]->gpus_per_server;
        int ngpus = total < SVG_MAX_GPUS ? total : SVG_MAX_GPUS;
        h += 22 + ngpus * MAX_SUBLANES * SUB_H + 2 + 16 + LOAD_H + 4 + 12;
    }
    return h;
}

int svg_timeline(const char *path, sim_result *const *runs,
                 const report_summary *sums, int n, char *err, size_t errlen) {
    FILE *out = fopen(path, "w");
    if (!out) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    svg_canvas c = {out, 10, 0};
    for (int i = 0; i < n; i++)
        if (sums[i].makespan_s > c.t_max) c.t_max = sums[i].makespan_s;
    fprintf(out, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
            "height='%.0f' font-family='sans-serif'>\n<style>"
            ".head{font-size:13px;font-weight:bold} .lab{font-size:10px} "
            ".tick{font-size:9px;fill:#444} .note{font-size:10px;fill:#a00} "
            ".sep{stroke:#ddd} .one{stroke:#999;stroke-dasharray:3} "
            ".load{fill:none;stroke:#333}</style>\n"
            "<rect width='100%%' height='100%%' fill='white'/>\n", WIDTH,
            height_of(runs, n));
    for (int i = 0; i < n; i++) draw_panel(&c, runs[i], &sums[i]);
    draw_comparison(&c, sums, n);
    fputs("</svg>\n", out);
    if (fclose(out) != 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
