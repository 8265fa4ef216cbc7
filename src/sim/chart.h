/* chart.h -- a bar chart comparing simulation runs on three figures.
 *
 * One group of bars per run (its label), one bar each for makespan, mean
 * JCT and energy, each relative to a reference run (the exclusive one when
 * there is one, as in report_table(), else the first), with the value
 * printed at the bar's end. Where --timeline draws what happened, this
 * draws only the outcome, small enough to sit in a README.
 */
#ifndef AEGIS_CHART_H
#define AEGIS_CHART_H

#include "report.h"

#include <stddef.h>

/* Writes the chart of n runs to path under `title`. Returns 0, or -1
 * with "PATH: why" in err. */
int chart_compare(const char *path, const char *title,
                  const report_summary *sums, int n, char *err, size_t errlen);

#endif
