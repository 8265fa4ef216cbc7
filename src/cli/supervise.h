/* supervise.h -- has aegisd run a command as a job of kind pipeline
 * (src/daemon/pipelines.c): the caller's own process, with no GPU,
 * outside placement, started at once and restarted with a back-off when
 * it dies. A pipeline's supervisor is one (aegis pipeline start); a
 * dataset's watcher, run on its own, is another.
 */
#ifndef AEGIS_SUPERVISE_H
#define AEGIS_SUPERVISE_H

#include <jansson.h>

/* Submits cmd (taken: a JSON array of words) as the job of kind pipeline
 * named name (one of a name per user at a time), run in this directory
 * with this environment. Its id, or -1 after saying why (*rc: the exit
 * status, as client_call sets it). */
json_int_t supervise(const char *socket, const char *name, json_t *cmd,
                     int *rc);

#endif
