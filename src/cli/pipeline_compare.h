/* pipeline_compare.h -- what `aegis pipeline compare` (pipeline_compare.c)
 * hands its drawing (pipeline_compare_svg.c): each pipeline's kept
 * evaluations, trained models and costs.
 */
#ifndef AEGIS_PIPELINE_COMPARE_H
#define AEGIS_PIPELINE_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "eval.h"

/* One pipeline's figures. */
typedef struct pc_row {
    const char *name;
    json_t *docs;               /* its kept evaluations (pv_eval_load) */
    uint32_t *models;           /* its trained models, by trigger, */
    int64_t *ends;              /*   and their last samples' ts
                                   (models/N.json) */
    size_t nmodels;
    json_int_t trainings, samples;
    double gpu_hours, energy_j; /* NAN: aegisd could not say */
} pc_row;

/* r's results of handler's metric, into *out (malloc'd; NULL when out of
 * memory); their count. */
size_t pc_results(const pc_row *r, const char *handler, const char *metric,
                  pl_eval_result **out);

/* Draws the composite model's metric (the active model's, each window at
 * its middle) of each row over time, trainings marked, into path. CLI_OK,
 * or CLI_FAIL after saying why. */
int pc_svg(const char *path, const pc_row *rows, int n, const char *handler,
           const char *metric);

#endif
