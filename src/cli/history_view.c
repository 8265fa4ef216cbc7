/* history_view.c -- the table, sparkline and SVG of a job's history (see
 * history_view.h). The SVG is written by hand: a few polylines, axes and
 * text, no library; every text from the job (its name, the GPUs' names)
 * is escaped for XML.
 */
#include "history_view.h"
#include "xml_text.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* The columns of a sample. */
enum { H_T, H_MEM, H_USED, H_TOTAL, H_SM };

/* SVG geometry: the plot area inside its margins. */
#define SVG_W 800
#define SVG_H 420
#define SVG_LEFT 80
#define SVG_RIGHT 20
#define SVG_TOP 50
#define SVG_BOTTOM 70
#define SVG_TICKS 5

/* Column c of sample i, or -1 when unknown. */
static double h_value(json_t *samples, size_t i, int c) {
    json_t *v = json_array_get(json_array_get(samples, i), (size_t)c);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static void h_clock(double t, char *out, size_t outlen) {
    time_t s = (time_t)t;
    struct tm tm;
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", localtime_r(&s, &tm));
}

/* A figure for the table: "-" when unknown. */
static void h_cell(double v, char *out, size_t outlen) {
    if (v < 0) snprintf(out, outlen, "-");
    else snprintf(out, outlen, "%.0f", v);
}

void history_table(FILE *out, json_t *hist) {
    json_t *samples = json_object_get(hist, "samples");
    fprintf(out, "%-19s %10s %13s %14s %6s\n", "TIME", "JOB_MIB",
            "GPU_USED_MIB", "GPU_TOTAL_MIB", "SM%");
    for (size_t i = 0; i < json_array_size(samples); i++) {
        char when[32], mem[32], used[32], total[32], sm[32];
        h_clock(h_value(samples, i, H_T), when, sizeof(when));
        h_cell(h_value(samples, i, H_MEM), mem, sizeof(mem));
        h_cell(h_value(samples, i, H_USED), used, sizeof(used));
        h_cell(h_value(samples, i, H_TOTAL), total, sizeof(total));
        h_cell(h_value(samples, i, H_SM), sm, sizeof(sm));
        fprintf(out, "%-19s %10s %13s %14s %6s\n", when, mem, used, total, sm);
    }
    if (json_array_size(samples) == 0) fprintf(out, "(no samples)\n");
}

/* The largest value of column c over the samples (0 when none known). */
static double h_peak(json_t *samples, int c) {
    double most = 0;
    for (size_t i = 0; i < json_array_size(samples); i++)
        if (h_value(samples, i, c) > most) most = h_value(samples, i, c);
    return most;
}

void history_spark(FILE *out, json_t *hist) {
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583",
                                         "\u2584", "\u2585", "\u2586",
                                         "\u2587", "\u2588"};
    json_t *samples = json_object_get(hist, "samples");
    size_t n = json_array_size(samples);
    double scale = h_peak(samples, H_MEM); /* its shape, its peak in words */
    /* at most 72 characters: a sample per character, or the peak of a
     * run of samples per character */
    size_t width = n < 72 ? n : 72;
    for (size_t k = 0; k < width; k++) {
        double v = -1;
        for (size_t i = k * n / width; i < (k + 1) * n / width; i++)
            if (h_value(samples, i, H_MEM) > v) v = h_value(samples, i, H_MEM);
        if (v < 0) {
            fputc(' ', out);
            continue;
        }
        int level = scale > 0 ? (int)(v / scale * 7.999) : 0;
        fputs(blocks[level < 0 ? 0 : level > 7 ? 7 : level], out);
    }
    fprintf(out, "%speak %.0f MiB of %.0f MiB (%zu samples)\n",
            width ? " " : "", h_peak(samples, H_MEM), h_peak(samples, H_TOTAL),
            n);
}

/* A round step for about SVG_TICKS ticks up to top: 1, 2 or 5 x 10^k. */
static double svg_step(double top) {
    double raw = top / SVG_TICKS, mag = pow(10, floor(log10(raw)));
    double unit = raw / mag;
    return mag * (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10);
}

typedef struct svg_scale {
    double t0, t1, top;         /* the time range and the top MiB */
} svg_scale;

static double svg_x(const svg_scale *s, double t) {
    double span = s->t1 > s->t0 ? s->t1 - s->t0 : 1;
    return SVG_LEFT + (t - s->t0) / span * (SVG_W - SVG_LEFT - SVG_RIGHT);
}

static double svg_y(const svg_scale *s, double mib) {
    return SVG_H - SVG_BOTTOM - mib / s->top * (SVG_H - SVG_TOP - SVG_BOTTOM);
}

/* Column c as a polyline, its unknown points left out. */
static void svg_line(FILE *out, const svg_scale *s, json_t *samples, int c,
                     const char *style) {
    fprintf(out, "<polyline fill=\"none\" %s points=\"", style);
    for (size_t i = 0; i < json_array_size(samples); i++) {
        double v = h_value(samples, i, c);
        if (v >= 0)
            fprintf(out, "%.1f,%.1f ", svg_x(s, h_value(samples, i, H_T)),
                    svg_y(s, v));
    }
    fputs("\"/>\n", out);
}

/* The axes with their ticks: MiB up, minutes since the first sample
 * across. */
static void svg_axes(FILE *out, const svg_scale *s) {
    double x0 = SVG_LEFT, x1 = SVG_W - SVG_RIGHT, y0 = SVG_H - SVG_BOTTOM;
    fprintf(out, "<g stroke=\"#444\">\n<line x1=\"%g\" y1=\"%d\" x2=\"%g\" "
            "y2=\"%g\"/>\n<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\"/>\n"
            "</g>\n", x0, SVG_TOP, x0, y0, x0, y0, x1, y0);
    double mib_step = svg_step(s->top);
    for (double m = 0; m <= s->top + 1e-9; m += mib_step)
        fprintf(out, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%.0f"
                "</text>\n", x0 - 6, svg_y(s, m) + 4, m);
    double minutes = (s->t1 - s->t0) / 60, t_step = svg_step(minutes > 0
                                                                 ? minutes
                                                                 : 1);
    for (double m = 0; m <= minutes + 1e-9; m += t_step)
        fprintf(out, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%g"
                "</text>\n", svg_x(s, s->t0 + m * 60), y0 + 18, m);
    fprintf(out, "<text x=\"%g\" y=\"%d\" text-anchor=\"middle\">minutes "
            "since the first sample</text>\n", (x0 + x1) / 2, SVG_H - 30);
    fprintf(out, "<text transform=\"translate(18 %g) rotate(-90)\" "
            "text-anchor=\"middle\">GPU memory (MiB)</text>\n",
            (SVG_TOP + y0) / 2);
}

/* The title: the job and the GPUs it ran on. */
static void svg_title(FILE *out, json_int_t id, const char *name,
                      json_t *hist) {
    fprintf(out, "<text x=\"%d\" y=\"24\" font-size=\"16\">job %lld",
            SVG_LEFT, (long long)id);
    if (name && name[0]) {
        fputs(" (", out);
        xml_text(out, name);
        fputc(')', out);
    }
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(hist, "gpus"), i, g) {
        fprintf(out, "%s GPU %lld ", i ? "," : " on",
                (long long)json_integer_value(json_object_get(g, "index")));
        xml_text(out, json_string_value(json_object_get(g, "name")));
    }
    fputs("</text>\n", out);
}

static void svg_legend(FILE *out) {
    static const struct {
        const char *label, *style;
    } keys[] = {
        {"this job", "stroke=\"#1f77b4\" stroke-width=\"2\""},
        {"GPU memory used (all processes)", "stroke=\"#ff7f0e\""},
        {"GPU capacity", "stroke=\"#888\" stroke-dasharray=\"6 4\""},
    };
    for (int k = 0; k < 3; k++) {
        int x = SVG_LEFT + k * 230, y = SVG_H - 10;
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" %s/>\n"
                "<text x=\"%d\" y=\"%d\">%s</text>\n", x, y - 4, x + 24, y - 4,
                keys[k].style, x + 30, y, keys[k].label);
    }
}

int history_svg(FILE *out, json_int_t id, const char *name, json_t *hist) {
    json_t *samples = json_object_get(hist, "samples");
    size_t n = json_array_size(samples);
    svg_scale s = {.t0 = n ? h_value(samples, 0, H_T) : 0,
                   .t1 = n ? h_value(samples, n - 1, H_T) : 0,
                   .top = h_peak(samples, H_TOTAL)};
    if (h_peak(samples, H_USED) > s.top) s.top = h_peak(samples, H_USED);
    if (s.top <= 0) s.top = 1;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n", SVG_W, SVG_H, SVG_W, SVG_H);
    svg_title(out, id, name, hist);
    svg_axes(out, &s);
    svg_line(out, &s, samples, H_TOTAL,
             "stroke=\"#888\" stroke-dasharray=\"6 4\"");
    svg_line(out, &s, samples, H_USED, "stroke=\"#ff7f0e\"");
    svg_line(out, &s, samples, H_MEM, "stroke=\"#1f77b4\" stroke-width=\"2\"");
    if (n == 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no "
                "samples</text>\n", SVG_W / 2, SVG_H / 2);
    svg_legend(out);
    fputs("</svg>\n", out);
    return ferror(out) ? -1 : 0;
}
