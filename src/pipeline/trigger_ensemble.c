/* trigger_ensemble.c -- Modyn's EnsembleTrigger as its current code
 * decides (ensembletrigger.py): named sub-triggers, each fed every
 * sample. A sub-trigger's fire is its vote, which stands until the
 * ensemble fires; at each sample where a sub-trigger fires the ensemble
 * decides, and fires when MajorityVote (more than half) or AtLeastN{n}
 * says so, which clears every vote. Sub-triggers keep their own state (a
 * drift trigger that fired takes a new reference) whether or not the
 * ensemble fires.
 */
#include <stdlib.h>

#include "pl_config.h"
#include "trigger_impl.h"

typedef struct trig_ensemble {
    pl_trigger base;
    int64_t at_least;       /* votes needed; 0: a majority */
    pl_trigger **subs;
    bool *voted;            /* per sub: fired since the ensemble last did */
    size_t nsubs;
} trig_ensemble;

/* Whether the votes standing fire the ensemble; a fire clears them. */
static bool ensemble_decides(trig_ensemble *e)
{
    size_t yes = 0;
    for (size_t i = 0; i < e->nsubs; i++)
        yes += e->voted[i];
    bool fire = e->at_least > 0 ? (int64_t)yes >= e->at_least
                                : yes * 2 > e->nsubs;
    for (size_t i = 0; fire && i < e->nsubs; i++)
        e->voted[i] = false;
    return fire;
}

static int ensemble_feed(pl_trigger *t, const pl_sample *s, const float *f,
                         size_t dim, bool *fire, char *err, size_t errlen)
{
    trig_ensemble *e = (trig_ensemble *)t;
    bool any = false;
    for (size_t i = 0; i < e->nsubs; i++) {
        bool sub_fire = false;
        const float *row = e->subs[i]->needs_features ? f : NULL;
        if (trig_feed(e->subs[i], s, row, dim, &sub_fire, err, errlen) < 0)
            return -1;
        e->voted[i] = e->voted[i] || sub_fire;
        any = any || sub_fire;
    }
    *fire = any && ensemble_decides(e);
    return 0;
}

static void ensemble_free(pl_trigger *t)
{
    trig_ensemble *e = (trig_ensemble *)t;
    for (size_t i = 0; i < e->nsubs; i++)
        pl_trigger_free(e->subs[i]);
    free(e->subs);
    free(e->voted);
    free(e);
}

/* The hook set on each subtrigger; with embeddings the ensemble then
 * needs features only if one of them still does. */
static size_t ensemble_set_hook(pl_trigger *t, const trig_hook *h)
{
    trig_ensemble *e = (trig_ensemble *)t;
    size_t took = 0;
    bool features = false;
    for (size_t i = 0; i < e->nsubs; i++) {
        pl_trigger *sub = e->subs[i];
        took += sub->ops->set_hook ? sub->ops->set_hook(sub, h) : 0;
        features = features || sub->needs_features;
    }
    e->base.needs_features = features;
    return took;
}

static const pl_trigger_ops ensemble_ops = {ensemble_feed, ensemble_free,
                                            ensemble_set_hook};

static int parse_subs(trig_ensemble *e, const json_t *subs, const char *path,
                      char *err, size_t errlen)
{
    if (!json_is_object(subs) || json_object_size(subs) == 0)
        return plcfg_fail(err, errlen, path, NULL,
                          "must map names to at least one trigger");
    size_t n = json_object_size(subs);
    e->subs = calloc(n, sizeof *e->subs);
    e->voted = calloc(n, sizeof *e->voted);
    if (!e->subs || !e->voted)
        return plcfg_fail(err, errlen, path, NULL, "out of memory");
    const char *name;
    const json_t *sub;
    char at[PLCFG_PATH_MAX];
    json_object_foreach((json_t *)subs, name, sub) {
        pl_trigger *t = trig_new_at(sub, plcfg_join(at, sizeof at, path, name),
                                    false, err, errlen);
        if (!t)
            return -1;
        e->subs[e->nsubs++] = t;
        e->base.needs_features = e->base.needs_features || t->needs_features;
    }
    return 0;
}

static int parse_strategy(trig_ensemble *e, const json_t *s, const char *path,
                          char *err, size_t errlen)
{
    static const char *const ids[] = {"MajorityVote", "AtLeastN", NULL};
    static const char *const keys[] = {"id", "n", NULL};
    int id;
    if (!s)
        return plcfg_fail(err, errlen, path, NULL,
                          "missing (MajorityVote or AtLeastN)");
    if (plcfg_check_keys(s, path, keys, err, errlen) < 0 ||
        plcfg_enum(s, path, "id", ids, 0, &id, err, errlen) < 0)
        return -1;
    if (id == 0)
        return json_object_get(s, "n")
                   ? plcfg_fail(err, errlen, path, "n", "only for AtLeastN") : 0;
    if (!json_object_get(s, "n"))
        return plcfg_fail(err, errlen, path, "n", "missing");
    return plcfg_int(s, path, "n", 1, 1, (int64_t)e->nsubs, &e->at_least, err,
                     errlen);
}

pl_trigger *trig_ensemble_new(const json_t *section, const char *path,
                              char *err, size_t errlen)
{
    static const char *const keys[] = {"id", "subtriggers",
                                       "ensemble_strategy", NULL};
    char sub[PLCFG_PATH_MAX];
    trig_ensemble *e = calloc(1, sizeof *e);
    if (!e) {
        plcfg_fail(err, errlen, path, NULL, "out of memory");
        return NULL;
    }
    e->base.ops = &ensemble_ops;
    if (json_object_get(section, "detection_interval_data_points")) {
        /* an older Modyn's key, gone from its schema (which forbids
         * unknown keys): said, as it changes when the ensemble decides */
        plcfg_fail(err, errlen, path, "detection_interval_data_points",
                   "not a key of Modyn's EnsembleTrigger: it decides at "
                   "each sub-trigger's fire, votes standing until it fires");
        ensemble_free(&e->base);
        return NULL;
    }
    if (plcfg_check_keys(section, path, keys, err, errlen) < 0 ||
        parse_subs(e, json_object_get(section, "subtriggers"),
                   plcfg_join(sub, sizeof sub, path, "subtriggers"), err, errlen) < 0 ||
        parse_strategy(e, json_object_get(section, "ensemble_strategy"),
                       plcfg_join(sub, sizeof sub, path, "ensemble_strategy"),
                       err, errlen) < 0) {
        ensemble_free(&e->base);
        return NULL;
    }
    return &e->base;
}
