/* backoff.h -- when a pipeline's supervisor that died starts again
 * (pipelines.c): after 1 s, 2 s, 4 s ... doubling with each restart of
 * the last hour, and not at all past BACKOFF_MAX_RESTARTS of them. Pure,
 * so the unit tests drive it alone.
 */
#ifndef AEGIS_BACKOFF_H
#define AEGIS_BACKOFF_H

#include <jansson.h>

/* Restarts in a window before a supervisor that keeps dying is left
 * failed, and the window, seconds. */
#define BACKOFF_MAX_RESTARTS 5
#define BACKOFF_WINDOW_S 3600.0

/* The restarts among a job's attempts (its store rows: "n", "started")
 * that started at or after since: the attempts after its first. */
int backoff_restarts_since(json_t *attempts, double since);

/* Seconds to wait before the next restart after `recent` restarts in the
 * window, or -1 when there is to be none. */
double backoff_delay_s(int recent);

#endif
