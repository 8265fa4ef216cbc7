/* history_view.h -- a job's history (`aegis show ID --history`, whose
 * answer carries it as {period_s, columns, gpus, samples}: each sample
 * [t, mem_mib, gpu_used_mib, gpu_total_mib, sm_pct], null where unknown)
 * as text: a table, a one-line sparkline, or a standalone SVG plot. Pure
 * formatting, so the unit tests drive it alone.
 */
#ifndef AEGIS_HISTORY_VIEW_H
#define AEGIS_HISTORY_VIEW_H

#include <stdio.h>

#include <jansson.h>

/* One line per sample: time, the job's memory, its GPUs' memory used and
 * in all, its SM share. */
void history_table(FILE *out, json_t *hist);

/* The job's memory over its run as one line of block characters, from 0
 * to its peak, then its peak and its GPUs' capacity in words. */
void history_spark(FILE *out, json_t *hist);

/* An SVG plot of the job's memory beside its GPUs' memory used and their
 * capacity, over time, with axes, labels and a title naming the job (id,
 * name) and its GPUs. 0, or -1 when out could not be written. */
int history_svg(FILE *out, json_int_t id, const char *name, json_t *hist);

#endif
