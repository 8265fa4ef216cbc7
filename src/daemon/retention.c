/* retention.c -- history_days: a server run for years keeps its finished
 * jobs that long after their end, then forgets them, rows and logs, so
 * the database and the log folder stop growing. Each pass removes at
 * most D_PRUNE_BATCH jobs, in one transaction, so that a first pass over
 * years of jobs does not hold the loop; the next ones take the rest.
 */
#include "daemon.h"

#include <math.h>
#include <stdlib.h>

/* Jobs forgotten per pass. */
#define D_PRUNE_BATCH 500
/* Seconds between passes: a minute, or less for a history of minutes. */
#define D_PRUNE_EVERY_S 60.0

void d_retention_tick(d_daemon *d) {
    double keep_s = d->keys.history_days * 86400;
    double now = d_now(d);
    if (keep_s <= 0 || store_failing(d->st) ||
        now - d->pruned_at < fmin(D_PRUNE_EVERY_S, keep_s / 100))
        return;
    d->pruned_at = now;
    json_t *ids = store_prune_ids(d->st, d_wall() - keep_s, D_PRUNE_BATCH);
    char *text = json_array_size(ids) ? json_dumps(ids, JSON_COMPACT) : NULL;
    if (text) {
        store_prune(d->st, text);
        size_t i;
        json_t *id;
        json_array_foreach(ids, i, id)
            exec_log_remove(d->log_dirfd, json_integer_value(id));
        d_log("history_days %g: forgot %zu finished jobs and their logs",
              d->keys.history_days, json_array_size(ids));
    }
    free(text);
    json_decref(ids);
}
