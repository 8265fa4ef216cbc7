/* dataset_stand_in.c -- a stand-in for aegis_dataset (src/pipeline/
 * dataset.h) while the real library is built on its own branch: the
 * supervisor's tests link it only when no aegis_dataset target exists.
 *
 * Its "dataset" is <state>/datasets/<name>/samples.csv, lines "ts,label"
 * appended by the test; a line is a sample once its newline is written.
 */
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pl_dataset {
    char path[4300];
    long offset;            /* bytes read so far (whole lines) */
    pl_sample *samples;
    uint64_t count, cap;
};

char *pl_state_dir(char *buf, size_t size) {
    const char *home = getenv("AEGIS_STATE_HOME"), *xdg, *user;
    int n = -1;
    if (home && *home) n = snprintf(buf, size, "%s", home);
    else if ((xdg = getenv("XDG_STATE_HOME")) && *xdg)
        n = snprintf(buf, size, "%s/aegis", xdg);
    else if ((user = getenv("HOME")) && *user)
        n = snprintf(buf, size, "%s/.local/state/aegis", user);
    return n > 0 && (size_t)n < size ? buf : NULL;
}

int pl_dataset_open(const char *state, const char *name, pl_dataset **out,
                    char *err, size_t errlen) {
    pl_dataset *ds = calloc(1, sizeof(*ds));
    if (!ds) return -1;
    snprintf(ds->path, sizeof(ds->path), "%s/datasets/%s/samples.csv", state,
             name);
    *out = ds;
    return pl_dataset_refresh(ds, err, errlen);
}

void pl_dataset_close(pl_dataset *ds) {
    free(ds->samples);
    free(ds);
}

static int ds_add(pl_dataset *ds, long long ts, long long label) {
    if (ds->count == ds->cap) {
        uint64_t cap = ds->cap ? ds->cap * 2 : 256;
        pl_sample *grown = realloc(ds->samples, cap * sizeof(*grown));
        if (!grown) return -1;
        ds->samples = grown;
        ds->cap = cap;
    }
    ds->samples[ds->count] = (pl_sample){.key = ds->count, .ts = ts,
                                         .label = label};
    ds->count++;
    return 0;
}

int pl_dataset_refresh(pl_dataset *ds, char *err, size_t errlen) {
    FILE *f = fopen(ds->path, "r");
    if (!f) return 0; /* nothing registered yet */
    char line[256];
    fseek(f, ds->offset, SEEK_SET);
    while (fgets(line, sizeof(line), f)) {
        size_t len = strlen(line);
        long long ts, label;
        if (line[len - 1] != '\n') break;
        if (sscanf(line, "%lld,%lld", &ts, &label) != 2 ||
            ds_add(ds, ts, label) != 0) {
            snprintf(err, errlen, "%s: bad line %s", ds->path, line);
            fclose(f);
            return -1;
        }
        ds->offset += (long)len;
    }
    fclose(f);
    return 0;
}

uint64_t pl_dataset_count(const pl_dataset *ds) { return ds->count; }

const pl_sample *pl_dataset_samples(const pl_dataset *ds) {
    return ds->samples;
}

const void *pl_dataset_bytes(pl_dataset *ds, uint64_t key, size_t *len,
                             char *err, size_t errlen) {
    (void)ds;
    (void)len;
    snprintf(err, errlen, "sample %llu: the stand-in keeps no bytes",
             (unsigned long long)key);
    return NULL;
}

int pl_dataset_features(pl_dataset *ds, uint64_t key, float *out, size_t max,
                        size_t *dim, char *err, size_t errlen) {
    (void)out;
    (void)max;
    *dim = 0;
    return key < ds->count ? 0 : (snprintf(err, errlen, "no sample"), -1);
}
