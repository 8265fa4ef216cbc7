/* sup_feed.c -- a supervisor's dataset fed to its trigger (supervisor.h):
 * the samples registered since the last look, in key order (a replay's
 * in timestamp order, chosen once), their features when the trigger
 * needs them; each fire's bound kept.
 */
#include "supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Samples fed to the trigger at once, and the features one may have. */
#define SUP_CHUNK 4096
#define SUP_MAX_DIM 1024

const pl_sample *sup_samples(const sup *s, uint64_t *count) {
    if (s->replay) {
        *count = s->norder;
        return s->order;
    }
    *count = pl_dataset_count(s->ds);
    return pl_dataset_samples(s->ds);
}

static int sup_add_fire(sup *s, uint64_t bound, char *err, size_t errlen) {
    if (s->nfires == s->capfires) {
        uint32_t cap = s->capfires ? s->capfires * 2 : 64;
        uint64_t *grown = realloc(s->bounds, cap * sizeof(*grown));
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        s->bounds = grown;
        s->capfires = cap;
    }
    s->bounds[s->nfires++] = bound;
    return 0;
}

/* A sample whose row gives dim features where the ones before gave want
 * (a field that is a number elsewhere is text, inf or nan in it): told
 * once a run; the trigger takes the sample before's features for it (0s
 * at a chunk's start), where the pipeline used to stop for good, at
 * every restart. */
static void sup_unlike_row(sup *s, uint64_t key, size_t dim, size_t want) {
    if (s->unlike_rows++ == 0)
        printf("warning: sample %llu has %zu features, the ones before %zu: "
               "the trigger takes the sample before's (said once)\n",
               (unsigned long long)key, dim, want);
}

/* The features of samples[0..n) into out (n x *dim, the dataset's first
 * sample's count). 0, or -1 with err. */
static int sup_features(sup *s, const pl_sample *samples, size_t n,
                        float *out, size_t *dim, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++) {
        size_t d;
        float *row = out + i * (s->dim_known ? s->dim : SUP_MAX_DIM);
        if (pl_dataset_features(s->ds, samples[i].key, row, SUP_MAX_DIM, &d,
                                err, errlen) != 0)
            return -1;
        if (!s->dim_known)
            s->dim = d, s->dim_known = true;
        if (d == s->dim)
            continue;
        sup_unlike_row(s, samples[i].key, d, s->dim);
        if (i > 0)
            memcpy(row, row - s->dim, sizeof(*row) * s->dim);
        else
            memset(row, 0, sizeof(*row) * s->dim);
    }
    *dim = s->dim;
    return 0;
}

/* Feeds samples[0..n) (from s->fed on), the fires' bounds kept. With a
 * trigger that asks for models (embeddings, performance checks), one
 * sample at a time: a fire's bound must be known before the next
 * detection point asks for the newest model (sup_embed.c, sup_perf.c). */
static int sup_feed_chunk(sup *s, const pl_sample *samples, size_t n,
                          float *features, char *err, size_t errlen) {
    size_t fires[SUP_CHUNK], nfires = 0, dim = 0;
    bool needs = pl_trigger_needs_features(s->trigger);
    if (needs && sup_features(s, samples, n, features, &dim, err, errlen))
        return -1;
    size_t step = s->asks_models ? 1 : n;
    for (size_t at = 0; at < n; at += step) {
        size_t count = n - at < step ? n - at : step;
        if (pl_trigger_inform(s->trigger, samples + at,
                              needs ? features + at * dim : NULL, dim, count,
                              fires, &nfires, err, errlen) != 0)
            return -1;
        for (size_t k = 0; k < nfires; k++) {
            if (s->cfg.max_triggers > 0 && s->nfires >= s->cfg.max_triggers)
                break;
            if (sup_add_fire(s, s->fed + at + fires[k] + 1, err, errlen))
                return -1;
        }
    }
    s->fed += n;
    return 0;
}

int sup_feed(sup *s, char *err, size_t errlen) {
    if (!s->replay && pl_dataset_refresh(s->ds, err, errlen) != 0) return -1;
    uint64_t count;
    const pl_sample *all = sup_samples(s, &count);
    float *features = NULL;
    if (pl_trigger_needs_features(s->trigger) &&
        !(features = malloc(sizeof(float) * SUP_CHUNK * SUP_MAX_DIM))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    while (rc == 0 && s->fed < count) {
        size_t n = count - s->fed < SUP_CHUNK ? (size_t)(count - s->fed)
                                              : SUP_CHUNK;
        rc = sup_feed_chunk(s, all + s->fed, n, features, err, errlen);
    }
    free(features);
    return rc;
}
