/* pl_modyn.c -- the checks of a pipeline file that reach into its
 * trigger and selection sections before their constructors do
 * (pl_file.h): Modyn's keys there that change nothing aegis does
 * (a drift metric's device, the selector's metadata processor) are named
 * with their line and dropped, so a Modyn file loads; a YAML merge key,
 * which the reader keeps as a key named "<<", is refused by name rather
 * than left to surface as a missing key; and the batch-then-sample ratio
 * rule of Modyn's config.py validator is applied, since it needs
 * training.batch_size, which the selector never sees. An evaluation
 * handler run manually in Modyn is said to be never run here.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "pl_file.h"

/* Drops key from obj (at path, a section's path), saying so when warn. */
static void pl_drop(const pl_yaml *y, json_t *obj, const char *path,
                    const char *key, bool warn, const char *why) {
    if (!json_object_get(obj, key)) return;
    char full[PL_PATH_MAX];
    snprintf(full, sizeof(full), "%s.%s", path, key);
    if (warn)
        fprintf(stderr, "%s:%d: %s: Modyn's key, not aegis's: ignored (%s)\n",
                y->path, pl_yaml_line(y, full), full, why);
    json_object_del(obj, key);
}

/* A trigger at path: its drift metrics' device keys dropped, and its
 * sub-triggers' (an EnsembleTrigger's, a mapping of name to trigger). */
static void pl_drop_trigger(const pl_yaml *y, json_t *t, const char *path,
                            bool warn) {
    const char *name;
    json_t *v;
    char sub[PL_PATH_MAX];
    json_object_foreach(json_object_get(t, "metrics"), name, v) {
        snprintf(sub, sizeof(sub), "%s.metrics.%s", path, name);
        if (json_is_object(v))
            pl_drop(y, v, sub, "device", warn,
                    "aegis measures drift on the CPU");
    }
    json_object_foreach(json_object_get(t, "subtriggers"), name, v) {
        snprintf(sub, sizeof(sub), "%s.subtriggers.%s", path, name);
        if (json_is_object(v)) pl_drop_trigger(y, v, sub, warn);
    }
}

void pl_modyn_drop(const pl_yaml *y, json_t *trigger, json_t *selection,
                   bool warn) {
    pl_drop_trigger(y, trigger, "trigger", warn);
    pl_drop(y, selection, "selection_strategy", "processor_type", warn,
            "Modyn's metadata processor; aegis keeps no per-sample "
            "metadata");
}

/* The path of the first "<<" key under v (at path) into out. */
static bool pl_find_merge(json_t *v, const char *path, char *out,
                          size_t outlen) {
    const char *name;
    json_t *child;
    size_t i;
    char sub[PL_PATH_MAX];
    json_object_foreach(v, name, child) {
        snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "." : "", name);
        if (strcmp(name, "<<") == 0) {
            snprintf(out, outlen, "%s", sub);
            return true;
        }
        if (pl_find_merge(child, sub, out, outlen)) return true;
    }
    json_array_foreach(v, i, child) {
        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (pl_find_merge(child, sub, out, outlen)) return true;
    }
    return false;
}

int pl_modyn_merge_keys(const pl_yaml *y, char *err, size_t errlen) {
    char at[PL_PATH_MAX];
    if (!pl_find_merge(y->root, "", at, sizeof(at))) return 0;
    pl_yaml_error(y, at, err, errlen, "YAML merge keys are not supported: "
                  "write the merged keys out in this mapping (an alias of "
                  "a whole mapping, *name, works)");
    return -1;
}

/* A whole number of a downsampling config, or def when absent (the
 * selector refuses a bad one with its own message). */
static long pl_ds_long(json_t *ds, const char *key, long def) {
    json_t *v = json_object_get(ds, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : def;
}

int pl_modyn_bts_ratio(const pl_yaml *y, json_t *selection, long batch_size,
                       char *err, size_t errlen) {
    json_t *ds = json_object_get(selection, "downsampling_config");
    const char *name = json_string_value(json_object_get(selection, "name"));
    /* Modyn's rule holds for one config in batch-then-sample mode, not for
     * a MultiDownsamplingConfig nor sample_then_batch */
    if (!name || strcmp(name, "CoresetStrategy") != 0 ||
        !json_is_object(ds) || json_object_get(ds, "downsampling_list") ||
        json_is_true(json_object_get(ds, "sample_then_batch")))
        return 0;
    long ratio_max = pl_ds_long(ds, "ratio_max", 100);
    long ratio = pl_ds_long(ds, "ratio", ratio_max);
    if (ratio < 0 || ratio_max < 1 || ratio > ratio_max || batch_size < 1)
        return 0;
    /* ratio * batch_size / ratio_max; past a long, through the fraction
     * (the selector takes any ratio_max, and the quotient is at most the
     * batch) */
    long kept = ratio <= LONG_MAX / batch_size
                    ? ratio * batch_size / ratio_max
                    : (long)((long double)ratio / ratio_max * batch_size);
    if (kept < 1) kept = 1;
    if (batch_size % kept == 0) return 0;
    pl_yaml_error(y, "selection_strategy.downsampling_config.ratio", err,
                  errlen, "%ld of %ld keeps %ld of a batch of %ld "
                  "(training.batch_size), which does not divide it: "
                  "batch-then-sample cannot refill whole batches (Modyn "
                  "refuses this too); choose a ratio that keeps a divisor "
                  "of the batch size", ratio, ratio_max, kept, batch_size);
    return -1;
}

void pl_modyn_manual(const pl_yaml *y, json_t *evaluation, bool warn) {
    json_t *h;
    size_t i;
    char path[PL_PATH_MAX];
    json_array_foreach(json_object_get(evaluation, "handlers"), i, h) {
        const char *when =
            json_string_value(json_object_get(h, "execution_time"));
        if (!warn || !when || strcmp(when, "manual") != 0) continue;
        snprintf(path, sizeof(path), "evaluation.handlers[%zu]."
                 "execution_time", i);
        fprintf(stderr, "%s:%d: %s: manual: this handler is not run (Modyn "
                "runs it only from a separate manual entry point, which "
                "aegis has not; after_pipeline runs it at the end)\n",
                y->path, pl_yaml_line(y, path), path);
    }
}
