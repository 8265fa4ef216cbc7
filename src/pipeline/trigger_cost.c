/* trigger_cost.c -- Modyn's DataIncorporationLatencyCostTrigger: retrain
 * when the regret of not retraining outweighs what a training costs.
 *
 * The regret is the data incorporation latency: the area under the curve
 * of samples not yet trained on, over sample time (each sample counts
 * the seconds from its arrival to the end of each detection interval it
 * waits through). At every detection point (evaluation_interval_data_points
 * samples) the trigger fires when
 *
 *     regret x incorporation_delay_per_training_second
 *         >= the forecast training time of the samples waiting,
 *
 * the forecast a linear model (ridge, alpha 1, as Modyn's scikit-learn
 * default) of training time against training set size over the last
 * cost_tracking_window_size trainings that aegisd measured (pl_cost_fn).
 * With one training measured the forecast is its time. The first
 * detection point fires, so there is a first training to measure; a fire
 * starts the regret again, its samples being incorporated. As in Modyn,
 * a warmup_policy may decide the first warmup_intervals detection points
 * (trigger_warmup.c), the regret growing meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"
#include "pl_config.h"
#include "trigger_impl.h"

/* scikit-learn's Ridge default penalty, which Modyn's cost model uses. */
#define COST_RIDGE_ALPHA 1.0

typedef struct trig_cost {
    pl_trigger base;
    /* configuration */
    int64_t interval;           /* samples between detection points */
    double conversion;          /* incorporation_delay_per_training_second */
    int64_t window;             /* trainings the cost model fits */
    pl_cost_fn trainings;
    void *ctx;
    /* state */
    int64_t *ts;                /* this interval's samples' timestamps */
    int64_t nts;
    int64_t prev_end;           /* the last interval's end (a timestamp) */
    bool has_prev;
    double waiting;             /* samples not trained on, at prev_end */
    double regret;              /* the area under that curve since the
                                   last fire, sample-seconds */
    trig_warmup warm;           /* warmup_intervals, warmup_policy */
    int64_t detections;         /* detection points passed */
} trig_cost;

double cost_forecast(const double *x, const double *y, size_t n, double at) {
    double xbar = 0, ybar = 0, sxy = 0, sxx = 0;
    for (size_t i = 0; i < n; i++) {
        xbar += x[i] / (double)n;
        ybar += y[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - xbar) * (y[i] - ybar);
        sxx += (x[i] - xbar) * (x[i] - xbar);
    }
    return ybar + sxy / (sxx + COST_RIDGE_ALPHA) * (at - xbar);
}

/* The interval's samples added to the regret: those waiting from before
 * for all of it, each new one from its arrival to its end. */
static void cost_add_interval(trig_cost *c) {
    int64_t start = c->has_prev ? c->prev_end : c->ts[0];
    int64_t end = c->ts[c->nts - 1];
    double fresh = 0;
    for (int64_t i = 0; i < c->nts; i++) fresh += (double)(end - c->ts[i]);
    c->regret += c->waiting * (double)(end - start) + fresh;
    c->waiting += (double)c->nts;
    c->prev_end = end;
    c->has_prev = true;
}

/* The decision at a detection point: the warm-up's (the first always
 * is one, so a training can be measured) as trigger_warmup.c says; later
 * ones weigh the regret against the forecast training time. */
static int cost_decide(trig_cost *c, bool *fire, char *err, size_t errlen) {
    const double *samples, *seconds;
    size_t n;
    int64_t at = c->detections++;
    if (trig_warmup_delegates(&c->warm, at)) {
        *fire = trig_warmup_decide(&c->warm, at);
        return 0;
    }
    if (c->trainings(c->ctx, &samples, &seconds, &n, err, errlen) != 0)
        return -1;
    size_t from = n > (size_t)c->window ? n - (size_t)c->window : 0;
    if (n == from) return 0; /* nothing measured yet: no forecast */
    double cost = cost_forecast(samples + from, seconds + from, n - from,
                                c->waiting);
    *fire = c->regret * c->conversion >= cost;
    return 0;
}

static int cost_feed(pl_trigger *t, const pl_sample *s, const float *features,
                     size_t dim, bool *fire, char *err, size_t errlen) {
    (void)features;
    (void)dim;
    trig_cost *c = (trig_cost *)t;
    if (!c->ts && !(c->ts = malloc((size_t)c->interval * sizeof(*c->ts)))) {
        snprintf(err, errlen, "trigger: out of memory");
        return -1;
    }
    c->ts[c->nts++] = s->ts;
    if (trig_warmup_feed(&c->warm, s, err, errlen) < 0) return -1;
    if (c->nts < c->interval) return 0;
    cost_add_interval(c);
    c->nts = 0;
    if (cost_decide(c, fire, err, errlen) != 0) return -1;
    if (*fire) c->waiting = c->regret = 0;
    return 0;
}

static void cost_free(pl_trigger *t) {
    trig_cost *c = (trig_cost *)t;
    free(c->ts);
    trig_warmup_free(&c->warm);
    free(c);
}

/* The supervisor's trainings, which the forecast is fitted to. */
static size_t cost_set_hook(pl_trigger *t, const trig_hook *h) {
    trig_cost *c = (trig_cost *)t;
    if (h->kind != TRIG_HOOK_TRAININGS) return 0;
    c->trainings = h->trainings;
    c->ctx = h->ctx;
    return 1;
}

static const pl_trigger_ops cost_ops = {cost_feed, cost_free, cost_set_hook};

static int cost_parse(trig_cost *c, const json_t *section, const char *path,
                      char *err, size_t errlen) {
    static const char *const keys[] = {
        "id", "evaluation_interval_data_points", "warmup_intervals",
        "warmup_policy", "cost_tracking_window_size",
        "incorporation_delay_per_training_second", NULL};
    if (plcfg_check_keys(section, path, keys, err, errlen) < 0 ||
        plcfg_int(section, path, "evaluation_interval_data_points", 1000, 1,
                  100000000, &c->interval, err, errlen) < 0 ||
        plcfg_int(section, path, "cost_tracking_window_size", 1000, 1,
                  1000000, &c->window, err, errlen) < 0 ||
        plcfg_num(section, path, "incorporation_delay_per_training_second",
                  -1, 0, 1e12, &c->conversion, err, errlen) < 0)
        return -1;
    if (c->conversion < 0)
        return plcfg_fail(err, errlen, path, NULL, "missing key "
                          "incorporation_delay_per_training_second");
    return trig_warmup_parse(&c->warm, section, path, err, errlen);
}

pl_trigger *trig_cost_new(const json_t *section, const char *path,
                          char *err, size_t errlen) {
    trig_cost *c = calloc(1, sizeof(*c));
    if (!c) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    c->base.ops = &cost_ops;
    c->trainings = trig_no_trainings;
    if (cost_parse(c, section, path, err, errlen) < 0) {
        cost_free(&c->base);
        return NULL;
    }
    return &c->base;
}
