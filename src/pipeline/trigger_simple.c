/* trigger_simple.c -- Modyn's two simple triggers:
 *   DataAmountTrigger{num_samples}  fires after every num_samples-th sample;
 *   TimeTrigger{every, start_timestamp}  fires on sample timestamps, not
 *     wall time: after the first sample at or past each boundary
 *     start + k*every (start: the first sample's timestamp when absent).
 * A gap in the stream that spans several boundaries gives one trigger, not
 * a run of empty ones.
 */
#include <stdlib.h>

#include "pl_config.h"
#include "trigger_impl.h"

typedef struct trig_amount {
    pl_trigger base;
    int64_t num_samples;
    int64_t since_fire;  /* samples fed since the last fire */
} trig_amount;

static int amount_feed(pl_trigger *t, const pl_sample *s, const float *f,
                       size_t dim, bool *fire, char *err, size_t errlen)
{
    trig_amount *a = (trig_amount *)t;
    if (++a->since_fire >= a->num_samples) {
        a->since_fire = 0;
        *fire = true;
    }
    return 0;
}

static void simple_free(pl_trigger *t)
{
    free(t);
}

static const pl_trigger_ops amount_ops = {amount_feed, simple_free, NULL};

pl_trigger *trig_amount_new(const json_t *section, const char *path,
                            char *err, size_t errlen)
{
    static const char *const keys[] = {"id", "num_samples", NULL};
    int64_t n;
    if (plcfg_check_keys(section, path, keys, err, errlen) < 0)
        return NULL;
    if (!json_object_get(section, "num_samples")) {
        plcfg_fail(err, errlen, path, "num_samples", "missing");
        return NULL;
    }
    if (plcfg_int(section, path, "num_samples", 0, 1, INT64_MAX, &n, err,
                  errlen) < 0)
        return NULL;
    trig_amount *a = calloc(1, sizeof *a);
    if (!a) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    a->base.ops = &amount_ops;
    a->num_samples = n;
    return &a->base;
}

typedef struct trig_time {
    pl_trigger base;
    int64_t every;        /* seconds */
    bool started;         /* next_at holds a boundary */
    int64_t next_at;      /* the next boundary, in sample time */
} trig_time;

static int time_feed(pl_trigger *t, const pl_sample *s, const float *f,
                     size_t dim, bool *fire, char *err, size_t errlen)
{
    trig_time *tt = (trig_time *)t;
    if (!tt->started) {
        tt->started = true;
        tt->next_at = s->ts + tt->every;
        return 0;
    }
    if (s->ts < tt->next_at)
        return 0;
    *fire = true;
    /* The next boundary after this sample, on the same grid. */
    tt->next_at += ((s->ts - tt->next_at) / tt->every + 1) * tt->every;
    return 0;
}

static const pl_trigger_ops time_ops = {time_feed, simple_free, NULL};

pl_trigger *trig_time_new(const json_t *section, const char *path,
                          char *err, size_t errlen)
{
    static const char *const keys[] = {"id", "every", "start_timestamp", NULL};
    int64_t every, start;
    bool has_start;
    if (plcfg_check_keys(section, path, keys, err, errlen) < 0)
        return NULL;
    if (!json_object_get(section, "every")) {
        plcfg_fail(err, errlen, path, "every", "missing (e.g. \"1d\")");
        return NULL;
    }
    if (plcfg_duration(section, path, "every", 0, &every, err, errlen) < 0 ||
        plcfg_opt_int(section, path, "start_timestamp", INT64_MIN / 2,
                      INT64_MAX / 2, &start, &has_start, err, errlen) < 0)
        return NULL;
    trig_time *tt = calloc(1, sizeof *tt);
    if (!tt) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    tt->base.ops = &time_ops;
    tt->every = every;
    tt->started = has_start;
    tt->next_at = has_start ? start + every : 0;
    return &tt->base;
}
