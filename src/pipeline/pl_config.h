/* pl_config.h -- reading a pipeline section (the YAML as JSON) with errors
 * that name the key's path, "trigger.metrics.mmd.threshold: must be > 0",
 * so the supervisor can point at the line the key is on.
 *
 * Every reader takes the path of the object it reads in; an absent key
 * gives the default, a present key of the wrong type or range an error.
 */
#ifndef AEGIS_PL_CONFIG_H
#define AEGIS_PL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Longest key path kept in a message; deeper paths are cut. */
#define PLCFG_PATH_MAX 256

/* Writes "PATH.KEY: message" (or "PATH: message" when key is NULL) to err
 * and returns -1, so a caller can `return plcfg_fail(...)`. */
int plcfg_fail(char *err, size_t errlen, const char *path, const char *key,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* PATH.KEY into buf (for the path of a nested section). */
const char *plcfg_join(char *buf, size_t size, const char *path,
                       const char *key);

/* 0 when obj is an object whose keys are all in allowed (NULL-ended). */
int plcfg_check_keys(const json_t *obj, const char *path,
                     const char *const *allowed, char *err, size_t errlen);

/* An integer in [min, max]; def when absent. */
int plcfg_int(const json_t *obj, const char *path, const char *key,
              int64_t def, int64_t min, int64_t max, int64_t *out,
              char *err, size_t errlen);

/* An integer in [min, max], or null: *present says which (absent counts
 * as null). */
int plcfg_opt_int(const json_t *obj, const char *path, const char *key,
                  int64_t min, int64_t max, int64_t *out, bool *present,
                  char *err, size_t errlen);

/* A number (integer or real) in [min, max]; def when absent. */
int plcfg_num(const json_t *obj, const char *path, const char *key,
              double def, double min, double max, double *out,
              char *err, size_t errlen);

int plcfg_bool(const json_t *obj, const char *path, const char *key,
               bool def, bool *out, char *err, size_t errlen);

/* A string; def (may be NULL) when absent. The pointer lives as long as
 * obj. */
int plcfg_str(const json_t *obj, const char *path, const char *key,
              const char *def, const char **out, char *err, size_t errlen);

/* The index in names (NULL-ended) of the string at KEY; def when absent. */
int plcfg_enum(const json_t *obj, const char *path, const char *key,
               const char *const *names, int def, int *out,
               char *err, size_t errlen);

/* Seconds in one of Modyn's time units (s, m, h, d, w, y: 365 days), 0
 * for an unknown unit. */
/* The longest duration taken (and the widest offset of an evaluation
 * window): 10,000 years, far past any data's span, and far from int64's
 * end when added to a timestamp (at most INT64_MAX / 2). */
#define PLCFG_DURATION_MAX_S (10000LL * 31536000LL)

int64_t plcfg_unit_seconds(char unit);

/* Modyn's duration strings, "<int><unit>" with unit s, m, h, d, w or y
 * (a year is 365 days), into seconds; def when absent. */
int plcfg_duration(const json_t *obj, const char *path, const char *key,
                   int64_t def, int64_t *seconds, char *err, size_t errlen);

#endif
