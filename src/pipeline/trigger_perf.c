/* trigger_perf.c -- Modyn's PerformanceTrigger (perf.h), and its
 * AvoidableMisclassificationCostTrigger (a performance trigger with one
 * more criterion: the cost of not retraining, below): every
 * evaluation_interval_data_points samples the newest model is evaluated
 * on those samples (the pipeline's evaluation command, through the
 * supervisor: pl_perf_fn), and the trigger fires when any decision
 * criterion says the model has fallen behind.
 *
 * After a fire, the next detection point also evaluates the new model on
 * the samples that made it fire: that score is what a fresh model is
 * expected to reach (Modyn measures it the same way, on samples the
 * model was trained on). Both evaluations go in one ask: one job.
 *
 * The cost criterion weighs the avoidable misclassifications (those
 * beyond what the expected accuracy allows) by how long they stayed
 * unaddressed: their area over sample time, each interval's new ones
 * counted for half of it. It fires when that area times
 * avoidable_misclassification_latency_per_training_second reaches the
 * forecast time of training the waiting samples (cost_forecast, over the
 * trainings aegisd measured, as trigger_cost.c).
 *
 * The first detection point fires, as Modyn's (even with a warm-up), so
 * a pipeline has a first model. For the first warmup_intervals detection
 * points warmup_policy decides (trigger_warmup.c), and the evaluations
 * only calibrate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_config.h"
#include "trigger_perf.h"

static int perf_fail_memory(char *err, size_t errlen) {
    snprintf(err, errlen, "trigger: out of memory for the performance "
             "trigger's samples");
    return -1;
}

/* A fire: the batch it came in is measured on the new model next; the
 * regrets start again. */
static int perf_fired(trig_perf *p) {
    p->regret_now = p->regret_area = p->waiting = 0;
    free(p->fired_on);
    p->fired_on = malloc((p->nbatch ? p->nbatch : 1) * sizeof(uint64_t));
    if (!p->fired_on) return -1;
    memcpy(p->fired_on, p->batch, p->nbatch * sizeof(uint64_t));
    p->nfired_on = p->nbatch;
    for (size_t i = 0; i < p->ncriteria; i++) perf_reset(&p->criteria[i]);
    return 0;
}

/* The criteria's decision: any one fires (each sees every evaluation:
 * the misclassification sums must count all of them). */
static bool perf_any(trig_perf *p, const perf_obs *o) {
    bool fire = false;
    for (size_t i = 0; i < p->ncriteria; i++)
        fire = perf_decide(&p->criteria[i], &p->tracker, o) || fire;
    return fire;
}

/* One ask of the evaluator: the batch that fired (when one is pending)
 * and this batch. 0 with obs, 1 when there is no model, -1 with err. */
static int perf_ask(trig_perf *p, perf_obs obs[2], bool *with_fired,
                    char *err, size_t errlen) {
    const uint64_t *keys[2];
    size_t n[2], w = 0;
    *with_fired = p->fired_on && p->nfired_on > 0;
    if (*with_fired) {
        keys[w] = p->fired_on;
        n[w++] = p->nfired_on;
    }
    keys[w] = p->batch;
    n[w++] = p->nbatch;
    pl_perf_ask ask = {keys, n, w, p->metrics, p->nmetrics};
    return p->evaluate(p->evaluate_ctx, &ask, obs, err, errlen);
}

/* The cost criterion on the newest evaluation o: *fire when the regret
 * of the avoidable misclassifications outweighs a training. */
static int perf_cost_decide(trig_perf *p, const perf_obs *o, bool *fire,
                            char *err, size_t errlen) {
    double duration = (double)(p->last_ts - p->prev_end);
    double fresh = perf_new_avoidable(&p->avoidable, &p->tracker, o);
    const double *samples, *seconds;
    size_t n;
    if (isnan(fresh)) return 0;
    p->regret_area += p->regret_now * duration + fresh * duration / 2;
    p->regret_now += fresh;
    if (p->trainings(p->cost_ctx, &samples, &seconds, &n, err, errlen) != 0)
        return -1;
    size_t from = n > (size_t)p->cost_window ? n - (size_t)p->cost_window : 0;
    if (n > from)
        *fire = *fire || p->regret_area * p->conversion >=
                             cost_forecast(samples + from, seconds + from,
                                           n - from, p->waiting);
    return 0;
}

/* What happens at a detection point. The warm-up's (the first always
 * is one) decide as trigger_warmup.c says, their evaluations only
 * calibrate the expected score; later ones ask the criteria. */
static int perf_detect(trig_perf *p, bool *fire, char *err, size_t errlen) {
    perf_obs obs[2];
    bool with_fired;
    int64_t n = p->detections++;
    bool warming = trig_warmup_delegates(&p->warm, n);
    int rc = p->nbatch ? perf_ask(p, obs, &with_fired, err, errlen) : 1;
    if (rc < 0) return -1;
    if (warming) *fire = trig_warmup_decide(&p->warm, n);
    if (rc == 1) return 0; /* no model yet: nothing to measure */
    if (with_fired && perf_after_training(&p->tracker, &obs[0]) != 0)
        return perf_fail_memory(err, errlen);
    if (with_fired) {
        free(p->fired_on);
        p->fired_on = NULL;
    }
    if (warming) return 0;
    *fire = perf_any(p, &obs[with_fired]);
    return p->cost ? perf_cost_decide(p, &obs[with_fired], fire, err, errlen)
                   : 0;
}

static int perf_feed(pl_trigger *t, const pl_sample *s, const float *features,
                     size_t dim, bool *fire, char *err, size_t errlen) {
    (void)features;
    (void)dim;
    trig_perf *p = (trig_perf *)t;
    if (!p->batch && !(p->batch = malloc((size_t)p->interval *
                                         sizeof(*p->batch))))
        return perf_fail_memory(err, errlen);
    if (p->nbatch == 0) p->prev_end = p->nfed ? p->last_ts : s->ts;
    p->nfed++;
    p->last_ts = s->ts;
    p->batch[p->nbatch++] = s->key;
    if (trig_warmup_feed(&p->warm, s, err, errlen) < 0) return -1;
    if ((int64_t)p->nbatch < p->interval) return 0;
    p->waiting += (double)p->nbatch;
    if (perf_detect(p, fire, err, errlen) < 0) return -1;
    if (*fire && perf_fired(p) != 0) return perf_fail_memory(err, errlen);
    p->nbatch = 0;
    return 0;
}

static void perf_free(pl_trigger *t) {
    trig_perf *p = (trig_perf *)t;
    trig_warmup_free(&p->warm);
    perf_tracker_free(&p->tracker);
    for (size_t i = 0; p->criteria && i < p->ncriteria; i++)
        drift_criterion_free(&p->criteria[i].dynamic);
    free(p->criteria);
    free(p->batch);
    free(p->fired_on);
    free(p);
}

/* The supervisor's checks of the newest model; a cost trigger's also
 * its trainings. */
static size_t perf_set_hook(pl_trigger *t, const trig_hook *h) {
    trig_perf *p = (trig_perf *)t;
    if (h->kind == TRIG_HOOK_EVALUATE) {
        p->evaluate = h->evaluate;
        p->evaluate_ctx = h->ctx;
        return 1;
    }
    if (h->kind != TRIG_HOOK_TRAININGS || !p->cost) return 0;
    p->trainings = h->trainings;
    p->cost_ctx = h->ctx;
    return 1;
}

/* An evaluator that has none: a trigger built only to be checked. */
static int perf_no_evaluator(void *ctx, const pl_perf_ask *ask,
                             perf_obs *out, char *err, size_t errlen) {
    (void)ctx;
    (void)ask;
    (void)out;
    snprintf(err, errlen, "trigger: a PerformanceTrigger needs the "
             "evaluation section's command");
    return -1;
}

static const pl_trigger_ops perf_ops = {perf_feed, perf_free, perf_set_hook};

pl_trigger *trig_perf_new(const json_t *section, const char *path, bool cost,
                          char *err, size_t errlen) {
    trig_perf *p = calloc(1, sizeof(*p));
    if (!p) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    p->base.ops = &perf_ops;
    p->evaluate = perf_no_evaluator;
    p->trainings = trig_no_trainings;
    p->cost = cost;
    if (perf_parse(p, section, path, err, errlen) < 0) {
        perf_free(&p->base);
        return NULL;
    }
    return &p->base;
}
