/* svg.h -- a timeline picture of simulation runs.
 *
 * One panel per policy: a lane per GPU with its jobs as bars over time
 * (collocated jobs in stacked sub-lanes, OOM attempts in red), the load of
 * the cluster over time under it, and at the end bars comparing the
 * policies' makespan and mean JCT. The picture is bounded whatever the
 * trace: at most SVG_MAX_GPUS lanes and SVG_MAX_BARS job bars per policy,
 * with a note in the picture when something was left out.
 */
#ifndef AEGIS_SVG_H
#define AEGIS_SVG_H

#include "engine.h"
#include "report.h"

#include <stddef.h>

/* 64 lanes still fit on a screen; 20000 bars keep the file near 2 MB. */
#define SVG_MAX_GPUS 64
#define SVG_MAX_BARS 20000

/* Writes the picture of n runs to path. Returns 0, or -1 with
 * "PATH: why" in err. */
int svg_timeline(const char *path, sim_result *const *runs,
                 const report_summary *sums, int n, char *err, size_t errlen);

#endif
