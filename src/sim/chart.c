/* chart.c -- the comparison bar chart (chart.h). */
#include "chart.h"
#include "xml_text.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define LEFT 130.0              /* room for run labels */
#define PLOT_W 420.0
#define BAR_H 9.0
#define GROUP_GAP 8.0
#define NFIGURES 3

static const char *const figure_name[NFIGURES] = {"makespan", "mean JCT",
                                                  "energy"};
static const char *const figure_fill[NFIGURES] = {"#4a7bd0", "#e8903a",
                                                  "#5aa469"};

static void figures(const report_summary *s, double v[NFIGURES]) {
    v[0] = s->makespan_s;
    v[1] = s->mean_jct_s;
    v[2] = s->energy_j;
}

static void draw(FILE *out, const char *title, const report_summary *sums,
                 int n) {
    const report_summary *ref = report_exclusive(sums, n);
    if (!ref) ref = &sums[0];
    double base[NFIGURES], most = 1;
    figures(ref, base);
    for (int i = 0; i < n; i++) {
        double v[NFIGURES];
        figures(&sums[i], v);
        for (int k = 0; k < NFIGURES; k++)
            if (base[k] > 0 && v[k] / base[k] > most) most = v[k] / base[k];
    }
    double group_h = NFIGURES * BAR_H + GROUP_GAP;
    double height = 58 + n * group_h + 10;
    fprintf(out, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' "
            "height='%.0f' font-family='sans-serif' font-size='11'>\n"
            "<rect width='100%%' height='100%%' fill='white'/>\n"
            "<text x='4' y='16' font-size='13' font-weight='bold'>",
            LEFT + PLOT_W + 60, height);
    xml_text(out, title);
    fputs("</text>\n<text x='4' y='32'>relative to ", out);
    xml_text(out, ref->label);
    fputs(" (= 1, dashed line); lower is better</text>\n", out);
    for (int k = 0; k < NFIGURES; k++)
        fprintf(out, "<rect x='%.0f' y='38' width='10' height='10' fill='%s'/>"
                "<text x='%.0f' y='47'>%s</text>\n", LEFT + k * 110.0,
                figure_fill[k], LEFT + k * 110.0 + 14, figure_name[k]);
    double y = 58;
    for (int i = 0; i < n; i++) {
        double v[NFIGURES];
        figures(&sums[i], v);
        fprintf(out, "<text x='4' y='%.1f'>", y + NFIGURES * BAR_H / 2 + 4);
        xml_text(out, sums[i].label);
        fputs("</text>\n", out);
        for (int k = 0; k < NFIGURES; k++, y += BAR_H) {
            double rel = base[k] > 0 ? v[k] / base[k] : 0;
            fprintf(out, "<rect x='%.0f' y='%.1f' width='%.1f' height='%.0f' "
                    "fill='%s'/><text x='%.1f' y='%.1f' font-size='9'>%.3f"
                    "</text>\n", LEFT, y, PLOT_W * rel / most, BAR_H - 1,
                    figure_fill[k], LEFT + PLOT_W * rel / most + 3,
                    y + BAR_H - 2, rel);
        }
        y += GROUP_GAP;
    }
    double x1 = LEFT + PLOT_W / most;
    fprintf(out, "<line x1='%.1f' x2='%.1f' y1='52' y2='%.1f' stroke='#444' "
            "stroke-dasharray='3,3'/>\n</svg>\n", x1, x1, y);
}

int chart_compare(const char *path, const char *title,
                  const report_summary *sums, int n, char *err,
                  size_t errlen) {
    FILE *out = fopen(path, "w");
    if (!out) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (n > 0) draw(out, title, sums, n);
    if (ferror(out) | (fclose(out) != 0)) {
        snprintf(err, errlen, "%s: cannot write", path);
        return -1;
    }
    return 0;
}
