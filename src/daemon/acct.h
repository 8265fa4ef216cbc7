/* acct.h -- energy and CO2 accounting: one report row per job, in the
 * same schema for aegisd (`aegis report`) and the simulator (`aegis sim
 * --report-csv`).
 *
 * The row is measured from the job's attempts (acct_row_measure), turned
 * into JSON whose keys are the CSV columns (acct_row_json), and written as
 * CSV from that JSON (acct_csv_row), so the daemon's answer, the CLI's
 * CSV and the simulator's CSV cannot drift apart. The CSV uses CodeCarbon's
 * emissions.csv column names, with CodeCarbon's units, wherever the
 * meanings agree (ACCT_COLUMNS in acct.c lists them all).
 *
 * Named acct, not report: src/sim/report.h already exists and the `aegis`
 * command sees both folders' headers.
 *
 * Ownership: rows borrow their strings; every json_t returned is the
 * caller's.
 */
#ifndef AEGIS_ACCT_H
#define AEGIS_ACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* CodeCarbon's fallback when it knows nothing of the grid: a world average
 * of 475 gCO2eq/kWh from the IEA (CodeCarbon FAQ, "What are the sources of
 * your energy carbon intensity data?"). Set the local figure in the config. */
#define ACCT_GRID_DEFAULT 475.0
/* Power usage effectiveness: 1.0 counts the GPUs' energy only, right for a
 * lab server with no data-centre overhead measured (CodeCarbon's default
 * too); a data centre would give its own figure, typically 1.1 to 1.6. */
#define ACCT_PUE_DEFAULT 1.0
/* Bounds accepted from the config and the command line: the dirtiest
 * grids are near 1,000 g/kWh, and a PUE below 1 is impossible. */
#define ACCT_GRID_MAX 5000.0
#define ACCT_PUE_MAX 10.0

typedef struct acct_params {
    double grid_g_per_kwh;  /* grid carbon intensity, gCO2eq per kWh */
    double pue;             /* facility energy / IT energy, >= 1 */
} acct_params;

/* One attempt of a job: when it ran, on how many GPUs. */
typedef struct acct_span {
    double start, end;      /* seconds; end < 0 while it runs */
    int gpus;
} acct_span;

typedef struct acct_row {
    int64_t job_id;
    const char *user, *name, *state;
    double submit_s;        /* seconds (Unix time, or trace time in sim) */
    double end_s;           /* finished at; < 0 while unfinished */
    int gpus;               /* GPUs asked for */
    double energy_j;        /* the job's share of its GPUs' energy */
    /* Its CO2 as it ran (aegisd adds each tick's energy at the intensity
     * and PUE in force then), and that energy x PUE; pue_j 0: not
     * stamped (the simulator's rows, a job of an aegisd before stamps),
     * so CO2 is reckoned at the report's intensity and PUE. */
    double co2_g, pue_j;
    /* set by acct_row_measure(): */
    int attempts;
    double start_s;         /* first attempt's start; < 0 if never started */
    double run_s;           /* sum of the attempts' durations */
    double queue_wait_s;    /* time queued: before and between attempts */
    double gpu_hours;       /* sum of GPUs x attempt duration / 3600 */
    double slowdown;        /* JCT / last attempt's duration; < 0 unless done */
} acct_row;

/* Totals over rows (per user, per policy, overall). */
typedef struct acct_total {
    int jobs;
    double run_s, queue_wait_s, gpu_hours, energy_j;
    double co2_g;           /* of the stamped rows */
    double unstamped_j;     /* energy of the rows without a stamp, whose
                               CO2 is at the report's figures */
    double slowdown_sum;    /* over the jobs with a slowdown */
    int slowdowns;
} acct_total;

void acct_params_default(acct_params *p);

double acct_kwh(double joules);
/* CO2 in grams of the energy kwh drew at the GPUs: kwh x PUE x intensity. */
double acct_co2_g(double kwh, const acct_params *p);
/* GPU-hours of attempts; a running one (end < 0) counts up to `now`. */
double acct_gpu_hours(const acct_span *a, size_t n, double now);

/* Fills the measured fields of r from its n attempts, in start order. A
 * running attempt and an unfinished job count up to `now`. Queue wait is
 * the time from submission to the first start, plus the gaps between
 * attempts, plus the time since the last attempt ended for a job that is
 * not running (queued again, or cancelled while queued). */
void acct_row_measure(acct_row *r, const acct_span *a, size_t n, double now);

void acct_total_add(acct_total *t, const acct_row *r);

/* The row as a JSON object keyed by CSV column (see ACCT_COLUMNS); `now`
 * stamps an unfinished job's timestamp. A stamped row (pue_j > 0) keeps
 * its own CO2, and its pue and grid_intensity_g_per_kwh are the ones it
 * ran at (energy-weighted means, when a reload changed them meanwhile);
 * an unstamped one is at p's. */
json_t *acct_row_json(const acct_row *r, const acct_params *p, double now);
/* Totals as {jobs, duration, queue_wait_s, gpu_hours, energy_j,
 * energy_consumed, co2_g, emissions, mean_slowdown}. */
json_t *acct_total_json(const acct_total *t, const acct_params *p);

/* The answer to a `report` request from store_report()'s jobs: {jobs:
 * [rows], users: [totals + user], total, grid_intensity_g_per_kwh, pue,
 * now}. NULL when out of memory. */
json_t *acct_report(json_t *jobs, const acct_params *p, double now);

/* The CSV header, with a last `policy` column when with_policy. */
void acct_csv_header(FILE *out, bool with_policy);
/* One row from acct_row_json's object; policy NULL when without. */
void acct_csv_row(FILE *out, json_t *row, const char *policy);

#endif
