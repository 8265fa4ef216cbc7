/* pipeline_view.h -- what `aegis pipeline ls|show|models` print: a
 * pipeline's supervisor job as aegisd lists it, and its triggers and
 * models as its trigger log (pl_tlog.h) says, in the caller's own state
 * folder. Shared by pipeline_cmd.c, which starts and stops them.
 */
#ifndef AEGIS_PIPELINE_VIEW_H
#define AEGIS_PIPELINE_VIEW_H

#include <stdbool.h>

#include <jansson.h>

/* The caller's pipelines' supervisor jobs (kind "pipeline"), oldest
 * first; all: finished ones too. NULL after saying why (*rc set). */
json_t *pv_supervisors(const char *socket, bool all, int *rc);
/* The newest of them for pipeline name (borrowed from list), or NULL. */
json_t *pv_find(json_t *list, const char *name);
/* The pipeline's folder into buf (pl_dir of pl_state_dir): buf, or NULL
 * after saying why. */
char *pv_dir(const char *name, char *buf, size_t size);
/* Whether the caller has pipeline name, one with a trigger log: 1 or 0;
 * -1 when its log cannot be read (said on stderr, naming file and line). */
int pv_exists(const char *name);

int pv_ls(const char *socket, bool json);
int pv_show(const char *socket, const char *name, bool json);
int pv_models(const char *name, bool json);

/* pipeline_eval.c: a pipeline's kept evaluations (its folder's
 * evals/N.E.json), in model order; `show NAME --eval` prints them. */
json_t *pv_eval_load(const char *dir);
int pv_eval(const char *name, bool json);

/* pipeline_compare.c: `compare`. */
typedef struct pv_compare_opts {
    const char *socket;
    bool json;
    const char *svg;            /* draw into this file; NULL: no drawing */
    const char *handler;        /* the table's (NULL: the first found) */
    const char *metric;         /*   and metric */
} pv_compare_opts;
int pv_compare(const pv_compare_opts *o, char **names, int n);

/* pipeline_trace.c: `trace`, a pipeline's trainings as a sim trace. */
typedef struct pv_trace_opts {
    const char *name;
    double start;               /* sample time at trace time 0; NAN: the
                                   first training's */
    const char *user;           /* the rows' user (NULL: the pipeline) */
    double mem_mib;             /* < 0: the pipeline file's */
    const char *merge;          /* add the rows to this trace's */
} pv_trace_opts;
int pv_trace(const pv_trace_opts *o);

#endif
