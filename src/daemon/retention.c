/* retention.c -- history_days: a server run for years keeps its finished
 * jobs that long after their end, then forgets them, rows and logs, so
 * the database and the log folder stop growing. Each pass removes at
 * most D_PRUNE_BATCH jobs, in one transaction, so that a first pass over
 * years of jobs does not hold the loop; the next ones take the rest.
 * A job an unfinished job runs after is kept until that one ends.
 */
#include "daemon.h"

#include <math.h>
#include <stdlib.h>

/* Jobs forgotten per pass. */
#define D_PRUNE_BATCH 500
/* Seconds between passes: a minute, or less for a history of minutes. */
#define D_PRUNE_EVERY_S 60.0

static int cmp_id(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The jobs unfinished jobs run after, sorted (malloc'd, *n of them; NULL
 * when none): a queued job is checked against its dependencies' rows
 * again at a restart or a release, and a row forgotten reads as a
 * dependency that can never be met, which cancels the job. */
static int64_t *needed_ids(d_daemon *d, size_t *n) {
    size_t count = 0;
    for (size_t j = 0; j < d->njobs; j++) count += d->jobs[j]->ndeps;
    int64_t *ids = count ? malloc(count * sizeof(*ids)) : NULL;
    *n = 0;
    for (size_t j = 0; ids && j < d->njobs; j++)
        for (size_t k = 0; k < d->jobs[j]->ndeps; k++)
            ids[(*n)++] = d->jobs[j]->deps[k].id;
    if (ids) qsort(ids, *n, sizeof(*ids), cmp_id);
    return ids;
}

/* ids without those unfinished jobs still run after (needed_ids). */
static void spare_needed(d_daemon *d, json_t *ids) {
    if (d->ndependents == 0) return;
    size_t n;
    int64_t *needed = needed_ids(d, &n);
    for (size_t i = json_array_size(ids); needed && i-- > 0;) {
        int64_t id = json_integer_value(json_array_get(ids, i));
        if (bsearch(&id, needed, n, sizeof(*needed), cmp_id))
            json_array_remove(ids, i);
    }
    free(needed);
}

void d_retention_tick(d_daemon *d) {
    double keep_s = d->keys.history_days * 86400;
    double now = d_now(d);
    if (keep_s <= 0 || store_failing(d->st) ||
        now - d->pruned_at < fmin(D_PRUNE_EVERY_S, keep_s / 100))
        return;
    d->pruned_at = now;
    json_t *ids = store_prune_ids(d->st, d_wall() - keep_s, D_PRUNE_BATCH);
    spare_needed(d, ids);
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
