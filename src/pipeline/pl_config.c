/* pl_config.c -- typed, range-checked reads of a pipeline section with
 * errors that name the key's path (pl_config.h). */
#include "pl_config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int plcfg_fail(char *err, size_t errlen, const char *path, const char *key,
               const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(err, errlen, "%s.%s: %s", path, key, msg);
    else
        snprintf(err, errlen, "%s: %s", path, msg);
    return -1;
}

const char *plcfg_join(char *buf, size_t size, const char *path,
                       const char *key)
{
    snprintf(buf, size, "%s.%s", path, key);
    return buf;
}

static bool is_allowed(const char *key, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strcmp(key, *allowed) == 0)
            return true;
    return false;
}

int plcfg_check_keys(const json_t *obj, const char *path,
                     const char *const *allowed, char *err, size_t errlen)
{
    if (!json_is_object(obj))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping");
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)obj, key, value) {
        (void)value;
        if (!is_allowed(key, allowed))
            return plcfg_fail(err, errlen, path, key, "unknown key");
    }
    return 0;
}

int plcfg_opt_int(const json_t *obj, const char *path, const char *key,
                  int64_t min, int64_t max, int64_t *out, bool *present,
                  char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *present = v && !json_is_null(v);
    if (!*present)
        return 0;
    if (!json_is_integer(v))
        return plcfg_fail(err, errlen, path, key, "must be an integer");
    int64_t n = json_integer_value(v);
    /* no upper bound but the type's: saying 9223372036854775807 tells
     * nothing */
    if (n < min && max == INT64_MAX)
        return plcfg_fail(err, errlen, path, key,
                          "must be at least %" PRId64, min);
    if (n < min || n > max)
        return plcfg_fail(err, errlen, path, key,
                          "must be between %" PRId64 " and %" PRId64, min, max);
    *out = n;
    return 0;
}

int plcfg_int(const json_t *obj, const char *path, const char *key,
              int64_t def, int64_t min, int64_t max, int64_t *out,
              char *err, size_t errlen)
{
    bool present;
    *out = def;
    return plcfg_opt_int(obj, path, key, min, max, out, &present, err, errlen);
}

int plcfg_num(const json_t *obj, const char *path, const char *key,
              double def, double min, double max, double *out,
              char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_number(v))
        return plcfg_fail(err, errlen, path, key, "must be a number");
    double x = json_number_value(v);
    if (!(x >= min && x <= max))
        return plcfg_fail(err, errlen, path, key,
                          "must be between %g and %g", min, max);
    *out = x;
    return 0;
}

int plcfg_bool(const json_t *obj, const char *path, const char *key,
               bool def, bool *out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return plcfg_fail(err, errlen, path, key, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

int plcfg_str(const json_t *obj, const char *path, const char *key,
              const char *def, const char **out, char *err, size_t errlen)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return plcfg_fail(err, errlen, path, key, "must be a string");
    *out = json_string_value(v);
    return 0;
}

int plcfg_enum(const json_t *obj, const char *path, const char *key,
               const char *const *names, int def, int *out,
               char *err, size_t errlen)
{
    const char *s;
    *out = def;
    if (plcfg_str(obj, path, key, NULL, &s, err, errlen) < 0)
        return -1;
    if (!s)
        return 0;
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char list[200] = "";
    for (int i = 0; names[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 i ? ", " : "", names[i]);
    return plcfg_fail(err, errlen, path, key, "'%s' is not one of %s", s, list);
}

int64_t plcfg_unit_seconds(char unit)
{
    switch (unit) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    case 'w': return 7 * 86400;
    case 'y': return 365 * 86400;
    default: return 0;
    }
}

int plcfg_duration(const json_t *obj, const char *path, const char *key,
                   int64_t def, int64_t *seconds, char *err, size_t errlen)
{
    const char *s;
    *seconds = def;
    if (plcfg_str(obj, path, key, NULL, &s, err, errlen) < 0)
        return -1;
    if (!s)
        return 0;
    size_t len = strlen(s);
    size_t digits = strspn(s, "0123456789");
    int64_t unit = len ? plcfg_unit_seconds(s[len - 1]) : 0;
    if (len < 2 || digits != len - 1 || digits > 12 || unit == 0)
        return plcfg_fail(err, errlen, path, key,
                          "'%s' is not <integer><unit> with unit s, m, h, d, w or y", s);
    int64_t n = 0;
    for (size_t i = 0; i < digits; i++)
        n = n * 10 + (s[i] - '0');
    if (n == 0)
        return plcfg_fail(err, errlen, path, key, "must be longer than 0");
    /* the sums of sample timestamps and durations stay within int64 */
    if (n > PLCFG_DURATION_MAX_S / unit)
        return plcfg_fail(err, errlen, path, key,
                          "'%s' is longer than %lld years", s,
                          (long long)(PLCFG_DURATION_MAX_S / 31536000));
    *seconds = n * unit;
    return 0;
}
