/* job_columns.h -- a trace row's own figures for its job, given instead
 * of (or over) a catalog workload's (docs/simulator.md, "Per-job
 * columns").
 *
 * The columns: num_gpus, mem_mib (the memory the job declares, per GPU,
 * trusted whole as aegisd trusts `submit --mem`), peak_mib (the memory it
 * really reaches per GPU, which decides an OOM), duration_s (its run time
 * alone, start-up included), smact, smocc and drama (its mean DCGM
 * activity). A row that names a catalog workload takes the catalog's
 * figure for each of these it leaves empty; a row that names none needs
 * duration_s and mem_mib or peak_mib, and takes the defaults below for
 * the rest.
 *
 * Such a row's workload is its own: a job_works pool holds them in blocks
 * that never move, so trace_job.work can point at one.
 */
#ifndef AEGIS_JOB_COLUMNS_H
#define AEGIS_JOB_COLUMNS_H

#include "catalog.h"
#include "csv.h"

#include <stdbool.h>

/* The activity of a job whose row gives none and names no workload: the
 * medians of data/catalog.csv's 53 workloads (avg_smact, avg_smocc,
 * avg_drama), a typical job rather than an idle or a saturating one. */
#define JOB_DEFAULT_SMACT 0.30
#define JOB_DEFAULT_SMOCC 0.17
#define JOB_DEFAULT_DRAMA 0.12

/* The name reports give the workload of a job that names none. */
#define JOB_OWN_NAME "-"

/* Column indexes of a trace's per-job columns; -1 for one absent. */
typedef struct job_columns {
    int num_gpus, mem, peak, duration, smact, smocc, drama;
} job_columns;

/* Finds the per-job columns in f's header. */
void job_columns_find(const csv_file *f, job_columns *c);

/* Whether the header has any of them. */
bool job_columns_any(const job_columns *c);

/* Whether f's current row gives any of them (a field not empty). */
bool job_columns_given(const job_columns *c, const csv_file *f);

/* Fills *w with the job of f's current row: base's figures (NULL: the
 * row names no workload) under the row's own. Returns 0, or -1 with
 * "PATH:LINE: field 'NAME': ..." in err. */
int job_columns_read(const job_columns *c, const csv_file *f,
                     const cat_workload *base, cat_workload *w, char *err,
                     size_t errlen);

/* The workloads of the rows that have their own. */
typedef struct job_works {
    struct job_block *blocks;   /* the newest first */
} job_works;

/* Room for one more, which stays where it is until job_works_free();
 * NULL when out of memory. */
cat_workload *job_works_add(job_works *w);
/* Moves from's workloads into into. */
void job_works_join(job_works *into, job_works *from);
void job_works_free(job_works *w);

#endif
