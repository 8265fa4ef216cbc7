/* cancel.c -- `aegis cancel` of many jobs without stalling aegisd.
 *
 * A cancel is committed for all its jobs in one transaction before
 * anything else. Running jobs are signalled at once. Queued jobs leave the
 * core at once too (none is placed meanwhile), but ending them (state,
 * event, notifier, waiters, dependents) costs tens of microseconds each:
 * 50,000 of them in one go froze every other client for seconds. Past
 * D_CANCEL_SLICE, they end in slices, one slice (one commit) per loop
 * turn, and other clients are answered between slices. The client that
 * asked is answered once its last job has ended, so what it reads next
 * (ls, show) says cancelled. A crash in between loses nothing: the
 * committed cancel holds, and the restarted aegisd ends them.
 */
#include "daemon.h"

#include <stdio.h>
#include <stdlib.h>

/* Queued jobs ended per loop turn: a few milliseconds' work. */
#define D_CANCEL_SLICE 256

typedef struct d_pending_answer {
    d_conn *c;                  /* NULL once it closed */
    json_t *answer;
    size_t upto;                /* sent once the queue's head is past it */
} d_pending_answer;

typedef struct d_cancels {
    uv_idle_t idle;             /* runs a slice per loop turn */
    int64_t *ids;               /* queued jobs to end, from head to n */
    size_t head, n, cap;
    d_pending_answer *answers;
    size_t nanswers, capanswers;
} d_cancels;

/* Grows a vector of elements of size each to hold one more; 0, or -1. */
static int d_grow(void **v, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 0;
    size_t more = *cap ? *cap * 2 : 256;
    void *grown = realloc(*v, more * size);
    if (!grown) return -1;
    *v = grown;
    *cap = more;
    return 0;
}

static void on_cancel_slice(uv_idle_t *h);

static d_cancels *d_cancels_get(d_daemon *d) {
    if (d->cancels) return d->cancels;
    d_cancels *q = calloc(1, sizeof(*q));
    if (!q) return NULL;
    uv_idle_init(d->loop, &q->idle);
    q->idle.data = d;
    d->cancels = q;
    return q;
}

static bool d_cancels_pending(const d_daemon *d) {
    return d->cancels && d->cancels->head < d->cancels->n;
}

/* Takes a queued job out of the core and queues its end; ends it now
 * when out of memory. */
static void d_cancel_queue(d_daemon *d, d_job *job) {
    d_cancels *q = d_cancels_get(d);
    if (!q || d_grow((void **)&q->ids, &q->cap, q->n, sizeof(*q->ids)) != 0) {
        d_job_cancel(d, job);
        return;
    }
    d_job_leave_core(d, job);
    job->cancel_queued = true;
    q->ids[q->n++] = job->id;
    uv_idle_start(&q->idle, on_cancel_slice);
}

/* Sends the answers whose jobs have all ended. */
static void d_cancel_answers_due(d_cancels *q) {
    size_t kept = 0;
    for (size_t i = 0; i < q->nanswers; i++) {
        d_pending_answer *a = &q->answers[i];
        if (a->upto > q->head) {
            q->answers[kept++] = *a;
        } else if (a->c) {
            a->c->cancel_waiting = false;
            d_conn_answer_later(a->c, a->answer);
        } else {
            json_decref(a->answer);
        }
    }
    q->nanswers = kept;
}

static void on_cancel_slice(uv_idle_t *h) {
    d_daemon *d = h->data;
    d_cancels *q = d->cancels;
    d_turn_begin(d);
    for (int k = 0; k < D_CANCEL_SLICE && q->head < q->n; k++) {
        d_job *job = d_job_find(d, q->ids[q->head++]);
        if (!job || !job->cancel_queued) continue; /* ended otherwise */
        job->cancel_queued = false;
        if (!job->cancelling) d_job_cancel(d, job);
    }
    d_turn_end(d); /* the answers go once it is committed */
    d_cancel_answers_due(q);
    if (q->head < q->n) return;
    q->head = q->n = 0;
    uv_idle_stop(h);
}

int d_jobs_cancel(d_daemon *d, const int64_t *ids, size_t nids, char *err,
                  size_t errlen) {
    double now = d_wall();
    int64_t *live = malloc((nids ? nids : 1) * sizeof(*live));
    if (!live) {
        snprintf(err, errlen, "not cancelled: out of memory");
        return -1;
    }
    size_t nlive = 0;
    for (size_t i = 0; i < nids; i++) {
        d_job *job = d_job_find(d, ids[i]);
        if (job && !job->cancelling && !job->cancel_queued)
            live[nlive++] = ids[i];
    }
    store_begin(d->st);
    store_jobs_cancel(d->st, live, nlive, now);
    free(live);
    /* Answered only once committed, so that it holds after a crash. */
    if (store_commit_now(d->st) != 0) {
        snprintf(err, errlen, "not cancelled: aegisd cannot write its state "
                 "(%s)", store_failing(d->st) ? store_failure(d->st)
                                             : store_errmsg(d->st));
        return -1;
    }
    bool slices = nids > D_CANCEL_SLICE || d_cancels_pending(d);
    store_begin(d->st); /* their ends and events: one commit, not one each */
    /* from the last: a finished job leaves the table by a move of the
     * jobs after it, none when it is the last (ids come in order) */
    for (size_t i = nids; i-- > 0;) {
        d_job *job = d_job_find(d, ids[i]);
        if (!job || job->cancelling || job->cancel_queued) continue;
        job->cancel_at = now;
        if (slices && job->state != D_RUNNING) d_cancel_queue(d, job);
        else d_job_cancel(d, job);
    }
    store_commit(d->st);
    return 0;
}

void d_cancel_answer(d_daemon *d, d_conn *c, json_t *answer) {
    d_cancels *q = d->cancels;
    if (!d_cancels_pending(d) ||
        d_grow((void **)&q->answers, &q->capanswers, q->nanswers,
               sizeof(*q->answers)) != 0) {
        d_reply(c, answer);
        return;
    }
    c->cancel_waiting = true;
    q->answers[q->nanswers++] =
        (d_pending_answer){.c = c, .answer = answer, .upto = q->n};
}

void d_cancel_conn_gone(d_daemon *d, d_conn *c) {
    for (size_t i = 0; d->cancels && i < d->cancels->nanswers; i++)
        if (d->cancels->answers[i].c == c) d->cancels->answers[i].c = NULL;
}

void d_cancels_free(d_daemon *d) {
    d_cancels *q = d->cancels;
    if (!q) return;
    for (size_t i = 0; i < q->nanswers; i++) json_decref(q->answers[i].answer);
    free(q->answers);
    free(q->ids);
    free(q);
    d->cancels = NULL;
}
