/* eval_interval.c -- the intervals of sample time a model is evaluated
 * on (eval.h), made by Modyn's evaluation strategies:
 *
 *   SlicingEvalStrategy{eval_every, eval_start_from, eval_end_at}
 *       back-to-back slices, the last cut at eval_end_at
 *   PeriodicEvalStrategy{every, start_timestamp, end_timestamp, interval}
 *       a window "[-Xu;+Yu]" around each point start, start+every, ...
 *       (sliding windows: they overlap when the window is wider than
 *       every)
 *   BetweenTwoTriggersEvalStrategy
 *       from one trigger's last sample to the next trigger's: the time
 *       one model served
 *   StaticEvalStrategy{intervals: [[start, end], [start, null], ...]}
 *
 * Every interval is half-open, [start, end), in whole seconds; a
 * window's "(" or "]" moves its bound by one second to say the same.
 */
#include "eval.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_config.h"

static const char *const strategy_names[] = {
    "SlicingEvalStrategy", "PeriodicEvalStrategy",
    "BetweenTwoTriggersEvalStrategy", "StaticEvalStrategy", NULL};

/* A window's bound, "-2d", "+0d", "0", "inf", "-inf" (spaces already
 * gone), into b. 0, or -1 when it is none. */
static int parse_bound(const char *text, size_t len, pl_eval_bound *b) {
    char sign = len && (text[0] == '+' || text[0] == '-') ? text[0] : 0;
    const char *body = text + (sign != 0);
    size_t blen = len - (sign != 0);
    if (blen == 3 && strncmp(body, "inf", 3) == 0) {
        b->inf = true;
        return 0;
    }
    if (blen == 1 && body[0] == '0') return 0; /* "0": the point itself */
    size_t digits = 0;
    while (digits < blen && isdigit((unsigned char)body[digits])) digits++;
    int64_t unit = blen ? plcfg_unit_seconds(body[blen - 1]) : 0;
    if (digits == 0 || digits > 12 || digits + 1 != blen || unit == 0)
        return -1;
    /* 12 digits of years would overflow; within the bound, a timestamp
     * plus the offset cannot (window_at()) */
    int64_t n = strtoll(body, NULL, 10);
    if (n > PLCFG_DURATION_MAX_S / unit) return -1;
    b->offset = n * unit * (sign == '-' ? -1 : 1);
    return 0;
}

/* Modyn's interval string, "[-2d;+1d]", "(-inf, +0d]", into the bounds. */
static int parse_window(const char *text, pl_eval_bound *left,
                        pl_eval_bound *right) {
    char s[64];
    size_t n = 0;
    for (; *text && n + 1 < sizeof(s); text++)
        if (!isspace((unsigned char)*text)) s[n++] = *text == ',' ? ';' : *text;
    s[n] = '\0';
    char *semi = strchr(s, ';');
    if (n < 5 || *text || !semi || strchr(semi + 1, ';') ||
        !strchr("[(", s[0]) || !strchr("])", s[n - 1]))
        return -1;
    left->inclusive = s[0] == '[';
    right->inclusive = s[n - 1] == ']';
    if (parse_bound(s + 1, (size_t)(semi - s - 1), left) != 0 ||
        parse_bound(semi + 1, (size_t)(s + n - 1 - semi - 1), right) != 0)
        return -1;
    /* -inf on the left, +inf on the right only; left before right */
    if ((left->inf && s[1] == '+') || (right->inf && semi[1] == '-'))
        return -1;
    return right->inf || left->inf || left->offset <= right->offset ? 0 : -1;
}

static int parse_slicing(const json_t *obj, const char *path,
                         pl_eval_strategy *st, char *err, size_t errlen) {
    static const char *const keys[] = {"type", "eval_every",
                                       "eval_start_from", "eval_end_at", NULL};
    if (plcfg_check_keys(obj, path, keys, err, errlen) ||
        plcfg_duration(obj, path, "eval_every", 0, &st->every, err, errlen) ||
        plcfg_int(obj, path, "eval_start_from", -1, 0, INT64_MAX / 2,
                  &st->start, err, errlen) ||
        plcfg_int(obj, path, "eval_end_at", -1, 0, INT64_MAX / 2, &st->end,
                  err, errlen))
        return -1;
    if (st->every == 0 || st->start < 0 || st->end < 0)
        return plcfg_fail(err, errlen, path, NULL, "needs eval_every, "
                          "eval_start_from and eval_end_at");
    if (st->end <= st->start)
        return plcfg_fail(err, errlen, path, "eval_end_at",
                          "must be after eval_start_from");
    return 0;
}

static int parse_periodic(const json_t *obj, const char *path,
                          pl_eval_strategy *st, char *err, size_t errlen) {
    static const char *const keys[] = {"type", "every", "start_timestamp",
                                       "end_timestamp", "interval", NULL};
    const char *window = NULL;
    if (plcfg_check_keys(obj, path, keys, err, errlen) ||
        plcfg_duration(obj, path, "every", 0, &st->every, err, errlen) ||
        plcfg_int(obj, path, "start_timestamp", -1, 0, INT64_MAX / 2,
                  &st->start, err, errlen) ||
        plcfg_int(obj, path, "end_timestamp", -1, 0, INT64_MAX / 2, &st->end,
                  err, errlen) ||
        plcfg_str(obj, path, "interval", NULL, &window, err, errlen))
        return -1;
    if (st->every == 0 || st->start < 0 || st->end < 0 || !window)
        return plcfg_fail(err, errlen, path, NULL, "needs every, "
                          "start_timestamp, end_timestamp and interval");
    if (st->end < st->start)
        return plcfg_fail(err, errlen, path, "end_timestamp",
                          "must not be before start_timestamp");
    if (parse_window(window, &st->left, &st->right) != 0)
        return plcfg_fail(err, errlen, path, "interval", "'%s' is not "
                          "[LEFT;RIGHT] with bounds such as -2d, +0d, inf, "
                          "left before right, each within %lld years",
                          window, PLCFG_DURATION_MAX_S / 31536000);
    return 0;
}

/* One [start, end] pair of a static strategy (end null: open). */
static int parse_fixed(const json_t *pair, const char *path, size_t i,
                       pl_interval *out, char *err, size_t errlen) {
    const json_t *a = json_array_get(pair, 0), *b = json_array_get(pair, 1);
    char at[PLCFG_PATH_MAX];
    snprintf(at, sizeof(at), "%s.intervals[%zu]", path, i);
    if (json_array_size(pair) != 2 || !json_is_integer(a) ||
        !(json_is_integer(b) || json_is_null(b)))
        return plcfg_fail(err, errlen, at, NULL,
                          "expected [start, end] (end a timestamp or null)");
    out->start = json_integer_value(a);
    out->end = json_is_null(b) ? INT64_MAX : json_integer_value(b);
    if (out->end <= out->start)
        return plcfg_fail(err, errlen, at, NULL, "end must be after start");
    return 0;
}

static int parse_static(const json_t *obj, const char *path,
                        pl_eval_strategy *st, char *err, size_t errlen) {
    static const char *const keys[] = {"type", "intervals", NULL};
    const json_t *list = json_object_get(obj, "intervals");
    if (plcfg_check_keys(obj, path, keys, err, errlen)) return -1;
    size_t n = json_array_size(list);
    if (!json_is_array(list) || n == 0 || n > PL_EVAL_MAX_INTERVALS)
        return plcfg_fail(err, errlen, path, "intervals", "expected a list "
                          "of 1 to %d [start, end] pairs",
                          PL_EVAL_MAX_INTERVALS);
    if (!(st->fixed = calloc(n, sizeof(*st->fixed))))
        return plcfg_fail(err, errlen, path, NULL, "out of memory");
    for (st->nfixed = 0; st->nfixed < n; st->nfixed++)
        if (parse_fixed(json_array_get(list, st->nfixed), path, st->nfixed,
                        &st->fixed[st->nfixed], err, errlen) != 0)
            return -1;
    return 0;
}

/* How many intervals a slicing or periodic strategy makes. */
static int64_t count_steps(const pl_eval_strategy *st) {
    if (st->kind == PL_EVAL_SLICING)
        return (st->end - st->start + st->every - 1) / st->every;
    return (st->end - st->start) / st->every + 1;
}

int pl_eval_strategy_parse(const json_t *obj, const char *path,
                           pl_eval_strategy *st, char *err, size_t errlen) {
    int kind;
    memset(st, 0, sizeof(*st));
    if (!json_is_object(obj))
        return plcfg_fail(err, errlen, path, NULL, "must be a mapping");
    if (!json_object_get(obj, "type"))
        return plcfg_fail(err, errlen, path, NULL, "missing key type");
    if (plcfg_enum(obj, path, "type", strategy_names, 0, &kind, err, errlen))
        return -1;
    st->kind = (pl_eval_kind)kind;
    static const char *const no_keys[] = {"type", NULL};
    int rc = kind == PL_EVAL_SLICING ? parse_slicing(obj, path, st, err, errlen)
           : kind == PL_EVAL_PERIODIC ? parse_periodic(obj, path, st, err,
                                                       errlen)
           : kind == PL_EVAL_STATIC ? parse_static(obj, path, st, err, errlen)
           : plcfg_check_keys(obj, path, no_keys, err, errlen);
    if (rc == 0 && (kind == PL_EVAL_SLICING || kind == PL_EVAL_PERIODIC) &&
        count_steps(st) > PL_EVAL_MAX_INTERVALS)
        rc = plcfg_fail(err, errlen, path, NULL, "makes %lld intervals, more "
                        "than %d", (long long)count_steps(st),
                        PL_EVAL_MAX_INTERVALS);
    if (rc != 0) pl_eval_strategy_free(st);
    return rc;
}

void pl_eval_strategy_free(pl_eval_strategy *st) {
    free(st->fixed);
    st->fixed = NULL;
    st->nfixed = 0;
}

/* Point p's window: [p+left, p+right), each bound moved by a second
 * where the window says "(" or "]". */
static pl_interval window_at(const pl_eval_strategy *st, int64_t p) {
    pl_interval w;
    w.start = st->left.inf ? INT64_MIN
                           : p + st->left.offset + !st->left.inclusive;
    w.end = st->right.inf ? INT64_MAX
                          : p + st->right.offset + st->right.inclusive;
    return w;
}

/* The intervals the triggers' last samples make: up to the first, then
 * between each and the next (a model serves from just after its data
 * until the next model), then from the last on. */
static size_t between_triggers(const int64_t *ends, size_t nends,
                               pl_interval *out) {
    int64_t from = INT64_MIN;
    for (size_t i = 0; i < nends; i++) {
        out[i] = (pl_interval){from, ends[i] + 1};
        from = ends[i] + 1;
    }
    out[nends] = (pl_interval){from, INT64_MAX};
    return nends + 1;
}

int pl_eval_intervals(const pl_eval_strategy *st, const int64_t *ends,
                      size_t nends, pl_interval **out, size_t *n) {
    size_t cap = st->kind == PL_EVAL_STATIC ? st->nfixed
               : st->kind == PL_EVAL_BETWEEN_TRIGGERS ? nends + 1
               : (size_t)count_steps(st);
    *n = 0;
    if (!(*out = malloc((cap ? cap : 1) * sizeof(**out)))) return -1;
    if (st->kind == PL_EVAL_STATIC) {
        memcpy(*out, st->fixed, cap * sizeof(**out));
        *n = cap;
    } else if (st->kind == PL_EVAL_BETWEEN_TRIGGERS) {
        *n = between_triggers(ends, nends, *out);
    } else {
        for (int64_t p = st->start; *n < cap; p += st->every) {
            bool slice = st->kind == PL_EVAL_SLICING;
            int64_t end = p + st->every < st->end ? p + st->every : st->end;
            (*out)[(*n)++] = slice ? (pl_interval){p, end} : window_at(st, p);
        }
    }
    return 0;
}

bool pl_eval_serves(pl_eval_models models, const int64_t *ends,
                    size_t nends, size_t i, bool all_known, int64_t start) {
    if (models == PL_EVAL_MATRIX) return true;
    if (i >= nends) return false;
    /* the next model takes over once its data ended before start */
    bool next_not_yet = !all_known || i + 1 == nends || start <= ends[i + 1];
    if (models == PL_EVAL_ACTIVE) return ends[i] < start && next_not_yet;
    /* most recent: active, or in training (the one after the active) */
    return (i == 0 || ends[i - 1] < start) && next_not_yet;
}
