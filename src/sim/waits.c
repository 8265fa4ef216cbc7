/* waits.c -- waiting time by reason (waits.h). */
#include "waits.h"

#include <stdlib.h>
#include <string.h>

int sim_waits_init(sim_waits *w, double *by_reason, const int32_t *ids,
                   int njobs) {
    *w = (sim_waits){.by_reason = by_reason};
    return sim_waits_reserve(w, ids, njobs);
}

/* Grows *items, of n elements of `size` bytes, to `cap` elements, the new
 * ones zeroed. Returns 0, or -1 when out of memory. */
static int grow_zeroed(void **items, int n, int cap, size_t size) {
    char *more = realloc(*items, (size_t)cap * size);
    if (!more) return -1;
    memset(more + (size_t)n * size, 0, (size_t)(cap - n) * size);
    *items = more;
    return 0;
}

int sim_waits_reserve(sim_waits *w, const int32_t *ids, int njobs) {
    w->ids = ids;
    if (!w->by_reason || njobs <= w->cap) return 0;
    if (grow_zeroed((void **)&w->kind, w->cap, njobs, sizeof(*w->kind)) < 0 ||
        grow_zeroed((void **)&w->since, w->cap, njobs, sizeof(*w->since)) < 0 ||
        grow_zeroed((void **)&w->queued, w->cap, njobs, sizeof(*w->queued)) < 0 ||
        grow_zeroed((void **)&w->front_at, w->cap, njobs,
                    sizeof(*w->front_at)) < 0)
        return -1;
    w->cap = njobs;
    return 0;
}

void sim_waits_free(sim_waits *w) {
    free(w->kind);
    free(w->since);
    free(w->queued);
    free(w->front_at);
    *w = (sim_waits){0};
}

/* Counts job j's time under its reason up to t, and gives it `kind`. */
static void change(sim_waits *w, int32_t j, core_wait kind, double t) {
    w->by_reason[(size_t)w->ids[j] * SIM_WAIT_KINDS + w->kind[j]] +=
        t - w->since[j];
    w->since[j] = t;
    w->kind[j] = (uint8_t)kind;
}

void sim_waits_queue(sim_waits *w, int32_t j, double t) {
    if (!w->by_reason) return;
    w->queued[j] = true;
    w->kind[j] = CORE_WAIT_BEHIND;
    w->since[j] = t;
}

void sim_waits_start(sim_waits *w, int32_t j, double t) {
    if (!w->by_reason || !w->queued[j]) return;
    change(w, j, CORE_WAIT_NONE, t);
    w->queued[j] = false;
}

void sim_waits_refresh(sim_waits *w, core_state *core, double t,
                       bool arrivals_only) {
    /* Nothing a reason reads changed: each is what the last refresh
     * found, and so is the front of the queue. */
    uint64_t version = core_reasons_version(core, t);
    if (version == w->version) return;
    w->version = version;
    int64_t ids[CORE_BACKFILL_DEPTH];
    bool known[CORE_BACKFILL_DEPTH];
    int n = core_reason_front(core, ids, CORE_BACKFILL_DEPTH);
    uint32_t stamp = ++w->refreshes;
    for (int i = 0; i < n; i++) {
        known[i] = w->front_at[ids[i]] == stamp - 1;
        w->front_at[ids[i]] = stamp;
    }
    /* Who was at the front and is no longer waits behind the head now. */
    for (int i = 0; i < w->nfront; i++) {
        int32_t j = w->front[i];
        if (w->queued[j] && w->front_at[j] != stamp)
            change(w, j, CORE_WAIT_BEHIND, t);
    }
    /* Arrivals change no GPU and no gate: only who joined the front then
     * has a reason to ask for. */
    w->nfront = 0;
    for (int i = 0; i < n; i++) {
        int32_t j = (int32_t)ids[i];
        w->front[w->nfront++] = j;
        if (arrivals_only && known[i]) continue;
        core_reason why;
        core_front_reason(core, i, t, &why);
        if ((uint8_t)why.kind != w->kind[j]) change(w, j, why.kind, t);
    }
    /* The jobs known at the front were not asked: a pass after the
     * arrivals may have moved them all the same (a user's job it launched
     * before left others of that user at their limit), so the next
     * moment asks them. */
    if (arrivals_only) w->version = 0;
}
