/* select_stand_in.c -- a stand-in for aegis_select (src/pipeline/
 * trigger.h, select.h, trainset.h) while the real library is built on its
 * own branch: DataAmountTrigger{num_samples} and NewDataStrategy with
 * tail_triggers 0 only; the training-set file without its checks. The supervisor's tests link it only when no
 * aegis_select target exists.
 */
#include "select.h"
#include "trigger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct pl_trigger {
    uint64_t every, seen;
};

struct pl_selector {
    uint64_t seed;
};

pl_trigger *pl_trigger_new(const json_t *section, char *err, size_t errlen) {
    const char *id = json_string_value(json_object_get(section, "id"));
    json_t *n = json_object_get(section, "num_samples");
    if (!id || strcmp(id, "DataAmountTrigger") != 0) {
        snprintf(err, errlen, "trigger.id: the stand-in knows "
                 "DataAmountTrigger only");
        return NULL;
    }
    if (!json_is_integer(n) || json_integer_value(n) < 1) {
        snprintf(err, errlen, "trigger.num_samples: expected a number >= 1");
        return NULL;
    }
    pl_trigger *t = calloc(1, sizeof(*t));
    if (t) t->every = (uint64_t)json_integer_value(n);
    return t;
}

void pl_trigger_free(pl_trigger *t) { free(t); }

bool pl_trigger_needs_features(const pl_trigger *t) {
    (void)t;
    return false;
}

int pl_trigger_inform(pl_trigger *t, const pl_sample *s, const float *features,
                      size_t dim, size_t n, size_t *fires, size_t *nfires,
                      char *err, size_t errlen) {
    (void)s;
    (void)features;
    (void)dim;
    (void)err;
    (void)errlen;
    *nfires = 0;
    for (size_t i = 0; i < n; i++)
        if (++t->seen % t->every == 0) fires[(*nfires)++] = i;
    return 0;
}

pl_selector *pl_selector_new(const json_t *section, uint64_t seed, char *err,
                             size_t errlen) {
    const char *name = json_string_value(json_object_get(section, "name"));
    if (!name || strcmp(name, "NewDataStrategy") != 0) {
        snprintf(err, errlen, "selection_strategy.name: the stand-in knows "
                 "NewDataStrategy only");
        return NULL;
    }
    pl_selector *sel = calloc(1, sizeof(*sel));
    if (sel) sel->seed = seed;
    return sel;
}

void pl_selector_free(pl_selector *sel) { free(sel); }

void pl_selector_note_used(pl_selector *sel, const pl_trainset_item *items,
                           size_t count) {
    (void)sel;
    (void)items;
    (void)count;
}

int pl_selector_build(pl_selector *sel, const pl_sample *samples, uint64_t end,
                      const uint64_t *bounds, uint32_t trigger,
                      const char *path, char *err, size_t errlen) {
    uint64_t start = trigger > 0 ? bounds[trigger - 1] : 0;
    size_t count = (size_t)(end - start);
    pl_trainset_item *items = calloc(count ? count : 1, sizeof(*items));
    if (!items) return -1;
    for (size_t i = 0; i < count; i++)
        items[i] = (pl_trainset_item){.key = samples[start + i].key,
                                      .weight = 1.0f};
    int rc = pl_trainset_write(path, items, count, sel->seed, trigger, err,
                               errlen);
    free(items);
    return rc;
}

int pl_trainset_write(const char *path, const pl_trainset_item *items,
                      size_t count, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen) {
    char tmp[4400];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write", tmp);
        return -1;
    }
    unsigned char head[32] = PL_TRAINSET_MAGIC;
    uint64_t n = count;
    memcpy(head + 8, &n, 8);
    memcpy(head + 16, &seed, 8);
    memcpy(head + 24, &trigger, 4);
    uLong crc = crc32(0L, head, sizeof(head));
    crc = crc32(crc, (const Bytef *)items, (uInt)(count * sizeof(*items)));
    uint32_t c = (uint32_t)crc;
    fwrite(head, 1, sizeof(head), f);
    fwrite(items, sizeof(*items), count, f);
    fwrite(&c, 4, 1, f);
    fflush(f);
    fsync(fileno(f));
    fclose(f);
    return rename(tmp, path);
}

int pl_trainset_read(const char *path, pl_trainset_item **items,
                     size_t *count, uint64_t *seed, uint32_t *trigger,
                     char *err, size_t errlen) {
    unsigned char head[32];
    FILE *f = fopen(path, "rb");
    uint64_t n = 0;
    if (!f || fread(head, 1, sizeof(head), f) != sizeof(head)) {
        snprintf(err, errlen, "%s: cannot read", path);
        if (f) fclose(f);
        return -1;
    }
    memcpy(&n, head + 8, 8);
    memcpy(seed, head + 16, 8);
    memcpy(trigger, head + 24, 4);
    *items = calloc(n ? n : 1, sizeof(**items));
    *count = *items ? fread(*items, sizeof(**items), n, f) : 0;
    fclose(f);
    return *items && *count == n ? 0 : -1;
}
