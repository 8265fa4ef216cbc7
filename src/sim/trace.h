/* trace.h -- a job trace: who arrives when, running which workload.
 *
 * A trace CSV needs submit_time_s and workload, task_path (the spec file
 * whose stem is the workload) or duration_s (job_columns.h); job_index, when present, numbers
 * the jobs (each number once), otherwise a job is numbered by its 1-based
 * row. Submit times lie in [0, TRACE_MAX_SUBMIT_S]. An optional user
 * column names who submitted each job (trace_user_name() has the rule), an
 * optional feed column the data feed it reads and load_cpus the CPU cores
 * its data loading keeps busy while it runs (docs/simulator.md, "Data
 * loading"), and time_limit_s its time limit. A row may give its job's
 * figures in the per-job columns of job_columns.h instead of naming a
 * workload (workload and task_path empty or absent), or over the named
 * workload's. Other columns are ignored. Jobs come back sorted by submit
 * time, stable, so equal times keep file order.
 *
 * Ownership: trace_load() allocates; trace_free() frees.
 */
#ifndef AEGIS_TRACE_H
#define AEGIS_TRACE_H

#include "catalog.h"
#include "job_columns.h"
#include "names.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The latest submit time a trace may hold, in seconds (some 31,700
 * years), the catalog's bound on durations too: a replay's clock, the sum
 * of such times, keeps sub-millisecond steps and its energies stay finite,
 * where a time of 1e308 made them infinite. */
#define TRACE_MAX_SUBMIT_S 1e12

typedef struct trace_job {
    double submit_s;            /* arrival, seconds from trace start */
    int64_t index;              /* job_index, or 1-based row in the file */
    const cat_workload *work;   /* points into the catalog, or into
                                   trace.own for a row with its own */
    uint32_t user;              /* its user's number (trace_user_name());
                                   0: the anonymous user "-" */
    uint32_t feed;              /* its feed's number, equal for equal
                                   names; 0 for none (no column, or empty) */
    float load_cpus;            /* its load_cpus column; 0 without one */
    float time_limit_s;         /* its time_limit_s (as submit --time), up
                                   to TRACE_MAX_LIMIT_S; 0: none */
} trace_job;

/* The longest time limit a job may have, seconds: a year, as aegisd's
 * --time (TIMELIMIT_MAX_S). */
#define TRACE_MAX_LIMIT_S (365 * 86400.0)

/* The most CPU cores a job's data loading may keep busy. */
#define TRACE_MAX_LOAD_CPUS 1e6

/* The longest user name, in bytes. */
#define TRACE_USER_MAX 64

typedef struct trace {
    trace_job *jobs;            /* sorted by submit_s, then file order */
    int count;
    int max_gpus;               /* largest num_gpus of any job */
    bool has_users;             /* the file has a user column */
    sim_names users;            /* the user names, numbered from 1 */
    job_works own;              /* the workloads of rows with their own */
} trace;

/* The name of user number id of t. A user cell is a name of 1 to
 * TRACE_USER_MAX bytes of UTF-8 text without control characters, spaces
 * at either end or only spaces; an empty cell and "-" are the anonymous
 * user "-" (number 0), the one every job of a trace without the column
 * belongs to. Different names are different users, equal ones the same
 * (compared byte for byte). */
const char *trace_user_name(const trace *t, uint32_t id);

/* Reads path resolving workloads in cat. Returns NULL with
 * "PATH:LINE: field 'NAME': ..." in err. */
trace *trace_load(const char *path, const cat_catalog *cat, char *err,
                  size_t errlen);
void trace_free(trace *t);

/* The line of path where the job numbered index lies, found by reading
 * the file again (jobs do not keep their lines: only a message needs
 * one); 0 when it is not there. */
int trace_job_line(const char *path, int64_t index);

#endif
