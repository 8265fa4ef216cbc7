/* report.h -- what a simulation run measured, as a table or as JSON.
 *
 * report_summarize() reduces a sim_result to the figures compared across
 * policies; the writers print them. JSON goes out as one object,
 * {"policies": [...]}, written policy by policy so a million-job run never
 * holds its whole text in memory.
 */
#ifndef AEGIS_REPORT_H
#define AEGIS_REPORT_H

#include "acct.h"
#include "engine.h"

#include <stdbool.h>
#include <stdio.h>

/* A row's name: "aegis-oracle/exclusive" is 22 characters. */
#define REPORT_LABEL_MAX 48

typedef struct report_summary {
    const char *policy;
    const char *sharing;        /* the GPUs' sharing mode */
    char label[REPORT_LABEL_MAX];             /* the row's name: the policy, or
                                   "policy/sharing" when the caller compares
                                   sharing modes */
    int jobs, done, stopped, timeouts, unfinished, ooms;
    double makespan_s;
    double mean_jct_s, p50_jct_s, p95_jct_s;    /* finished jobs only */
    double mean_wait_s;         /* JCT - time spent running attempts */
    double mean_slowdown;       /* JCT / catalog solo time */
    double gpu_busy;            /* mean fraction of GPU time with a job */
    double energy_j;            /* all GPUs, idle ones included */
    double load_cpu_s;          /* CPU-seconds of data loading */
    bool loads;                 /* the trace gives loading costs */
    /* set by report_account(), and only these (it and report_summarize()
     * write disjoint fields, so they may run at once): */
    acct_params acct;
    acct_total jobs_total;      /* the per-job rows summed (their energy
                                   excludes idle GPUs) */
    double co2_g;               /* of energy_j: idle power counts too */
} report_summary;

/* Returns 0, or -1 when out of memory. */
int report_summarize(const sim_result *r, report_summary *out);

/* Measures every job as aegisd's report does (acct.h), totals them into
 * out, and writes one CSV row per job to csv unless it is NULL. Returns 0,
 * or -1 when out of memory. */
int report_account(const sim_result *r, const acct_params *p, FILE *csv,
                   report_summary *out);

/* The first row whose policy or sharing mode is "exclusive", the
 * reference other runs are compared with; NULL when there is none. */
const report_summary *report_exclusive(const report_summary *rows, int n);

/* An aligned table, one row per run, named by its label; columns relative
 * to report_exclusive() are added when there is one. */
void report_table(FILE *out, const report_summary *rows, int n);

void report_json_begin(FILE *out);
void report_json_policy(FILE *out, const sim_result *r,
                        const report_summary *sum, bool first);
void report_json_end(FILE *out);

#endif
