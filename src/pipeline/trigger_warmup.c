/* trigger_warmup.c -- the warm-up that Modyn's batched triggers (drift,
 * performance, cost) share: for their first warmup_intervals detection
 * points a simple warmup_policy decides instead of the trigger's own
 * criteria (which meanwhile calibrate).
 *
 * Modyn's rules, which this keeps (its triggers/utils/warmuptrigger.py and
 * each trigger's _evaluate_batch):
 *   - the first detection point always fires, warm-up or not, so the
 *     pipeline has a first model;
 *   - the policy sees the samples, but its fires count only at the next
 *     detection point: a warm-up detection point fires when the policy
 *     fired since the one before;
 *   - without a warmup_policy, warmup_intervals counts 0 (Modyn ignores
 *     it), and an unset warmup_intervals is 0 too.
 * Modyn stops at an assertion when a policy is given with 0 intervals;
 * here the first detection point then fires as it would without one.
 */
#include <stdlib.h>

#include "pl_config.h"
#include "trigger_impl.h"

int trig_warmup_parse(trig_warmup *w, const json_t *section, const char *path,
                      char *err, size_t errlen)
{
    char sub[PLCFG_PATH_MAX];
    bool has;
    const json_t *policy = json_object_get(section, "warmup_policy");
    w->policy = NULL;
    w->delegated = 0;
    w->fired = false;
    if (plcfg_opt_int(section, path, "warmup_intervals", 0, 1000000,
                      &w->intervals, &has, err, errlen) < 0)
        return -1;
    if (!has || !policy || json_is_null(policy)) {
        w->intervals = 0;
        return 0;
    }
    w->policy = trig_new_at(policy, plcfg_join(sub, sizeof sub, path,
                            "warmup_policy"), true, err, errlen);
    return w->policy ? 0 : -1;
}

bool trig_warmup_delegates(const trig_warmup *w, int64_t detection)
{
    return detection == 0 || w->delegated < w->intervals;
}

int trig_warmup_feed(trig_warmup *w, const pl_sample *s, char *err,
                     size_t errlen)
{
    bool fire = false;
    if (!w->policy || w->delegated >= w->intervals)
        return 0;
    if (trig_feed(w->policy, s, NULL, 0, &fire, err, errlen) < 0)
        return -1;
    w->fired = w->fired || fire;
    return 0;
}

bool trig_warmup_decide(trig_warmup *w, int64_t detection)
{
    bool fire = detection == 0 || w->fired;
    if (w->delegated < w->intervals)
        w->delegated++;
    w->fired = false;
    return fire;
}

bool trig_warmup_done(const trig_warmup *w)
{
    return w->delegated >= w->intervals;
}

void trig_warmup_free(trig_warmup *w)
{
    pl_trigger_free(w->policy);
    w->policy = NULL;
}
