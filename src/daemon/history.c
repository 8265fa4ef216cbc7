/* history.c -- when a running job is sampled, and how its samples are
 * kept bounded (history.h). The samples go to the store as any other
 * write: in the transaction of the tick that took them, and kept for
 * store_retry() while the database cannot be written.
 */
#include "history.h"

void history_track_init(history_track *h, int max, int count, int step) {
    h->max = max > 1 ? max : 2;
    h->count = count;
    h->step = step > 0 ? step : 1;
    h->period = 0; /* after a restart: a sample at once */
}

bool history_due(history_track *h) {
    return h->period++ % h->step == 0;
}

void history_add(store *st, int64_t id, history_track *h,
                 const store_sample *s) {
    if (h->count >= h->max) {
        /* the kept samples are those of every (2 * step)-th period: the
         * next ones fall on the same grid */
        h->step *= 2;
        store_history_thin(st, id, h->step);
        h->count = (h->count + 1) / 2;
    }
    store_history_add(st, id, s);
    h->count++;
}
