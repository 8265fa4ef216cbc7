/* trace_repeat.h -- finding a job_index that a trace uses twice.
 *
 * A replay reports jobs by their job_index, so two jobs with one number
 * would be two rows no reader could tell apart. */
#ifndef AEGIS_TRACE_REPEAT_H
#define AEGIS_TRACE_REPEAT_H

#include "trace.h"

/* Finds the earliest job of jobs[0..count) (in array order) whose index
 * an earlier job already has. Returns 1 with the two jobs' positions in
 * *first and *second, 0 when every index differs, -1 when out of memory. */
int trace_find_repeat(const trace_job *jobs, int count, int *first,
                      int *second);

#endif
