/* pdef_config.c -- a step's parameters from a module-configuration slot:
 * the slot holds a definition of that one module (encoded as any
 * definition); its parameters come first, the step's own override them.
 * Also loading the pipelines the store's slots hold. */
#include <stdio.h>
#include <string.h>

#include "pdef.h"
#include "slots.h"

static void merge(dipp_params *base, const dipp_params *over) {
    for (uint32_t k = 0; k < over->count; k++) {
        uint32_t j = 0;
        while (j < base->count && strcmp(base->item[j].name, over->item[k].name))
            j++;
        if (j < DIPP_PARAMS_MAX)
            base->item[j] = over->item[k];
        base->count += j == base->count && j < DIPP_PARAMS_MAX;
    }
}

static int apply(pdef_step *s, const char *dir, char *err, size_t errlen) {
    uint8_t buf[SLOT_MAX_BYTES];
    size_t len;
    pdef cfg;
    int rc = slot_read(dir, SLOT_CONFIG, s->config, buf, &len, err, errlen);
    if (rc == 1)
        snprintf(err, errlen, "%s/config-%u: empty", dir, (unsigned)s->config);
    if (rc || pdef_decode(buf, len, &cfg, err, errlen))
        return -1;
    if (cfg.count != 1 || strcmp(cfg.step[0].name, s->name)) {
        snprintf(err, errlen, "%s/config-%u: not a configuration of module %s", dir,
                 (unsigned)s->config, s->name);
        return -1;
    }
    merge(&cfg.step[0].params, &s->params);
    s->params = cfg.step[0].params;
    return 0;
}

int pdef_apply_configs(pdef *d, const char *dir, char *err, size_t errlen) {
    for (uint32_t k = 0; k < d->count; k++) {
        char why[400];
        if (d->step[k].config && (!dir || apply(&d->step[k], dir, why, sizeof why))) {
            snprintf(err, errlen, "modules[%u]: %s", (unsigned)k,
                     dir ? why : "takes a configuration slot: give --store");
            return -1;
        }
    }
    return 0;
}

int pdef_load_slots(const char *dir, pdef *defs,
                    void (*warn)(void *ctx, const char *why), void *ctx) {
    int n = 0;
    for (unsigned k = 1; k <= SLOT_PIPELINES; k++) {
        uint8_t buf[SLOT_MAX_BYTES];
        size_t len;
        char err[512];
        int rc = slot_read(dir, SLOT_PIPELINE, k, buf, &len, err, sizeof err);
        if (rc == 0 && (pdef_decode(buf, len, &defs[n], err, sizeof err) ||
                        pdef_apply_configs(&defs[n], dir, err, sizeof err)))
            rc = -1;
        if (rc < 0)
            warn(ctx, err);
        n += rc == 0;
    }
    return n;
}
