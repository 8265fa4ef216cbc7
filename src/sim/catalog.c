/* catalog.c -- loading the workload catalog and looking names up. */
#include "catalog.h"

#include "core.h"
#include "csv.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const est_columns[CAT_NEST] = {
    "horus_mib", "faketensor_mib", "gpumemnet_mib", "aegis_mib"};

int cat_estimator(const char *column) {
    for (int i = 0; i < CAT_NEST; i++)
        if (strcmp(est_columns[i], column) == 0) return i;
    return -1;
}

const char *cat_estimator_column(int est) { return est_columns[est]; }

/* Hashes eight bytes at a time: a trace resolves one name per job, and
 * byte-at-a-time FNV over ~35-byte names was most of cat_find's cost on a
 * million-job trace. Each word is folded in by a rotate and an xor, the
 * mixing left to one multiply at the end: a multiply a word was half the
 * cost again, and a rotate keeps the words' order. Plenty for 53 names.
 * The last eight bytes are read as one word, overlapping the one before
 * when the length is not a multiple of 8, not copied byte by byte: the
 * copy of a variable length was a library call. */
static unsigned hash_name(const char *s, size_t len) {
    uint64_t h = 0x9e3779b97f4a7c15u ^ len, word = 0;
    if (len < 8) {
        memcpy(&word, s, len);
    } else {
        const char *last = s + len - 8;
        for (; s < last; s += 8) {
            memcpy(&word, s, 8);
            h = (h << 23 | h >> 41) ^ word;
        }
        memcpy(&word, last, 8);
    }
    h = ((h << 23 | h >> 41) ^ word) * 0xc4ceb9fe1a85ec53u;
    return (unsigned)(h ^ h >> 32);
}

const cat_workload *cat_find(const cat_catalog *cat, const char *name,
                             size_t len) {
    for (unsigned i = hash_name(name, len) & cat->mask;; i = (i + 1) & cat->mask) {
        int idx = cat->slots[i];
        if (idx < 0) return NULL;
        /* Lengths first: a probe past another name rarely costs a compare. */
        const cat_workload *w = &cat->items[idx];
        if (w->name_len == len && memcmp(w->name, name, len) == 0) return w;
    }
}

/* Names longer than this get no suggestion: a trace's field is not a typo
 * of a workload then. */
#define CAT_SUGGEST_MAX 128

/* Levenshtein's edit distance of a and b (at most CAT_SUGGEST_MAX bytes
 * each): the fewest insertions, deletions and substitutions between. */
static size_t cat_distance(const char *a, size_t la, const char *b,
                           size_t lb) {
    size_t row[CAT_SUGGEST_MAX + 1];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

void cat_suggest(const cat_catalog *cat, const char *name, size_t len,
                 char *out, size_t outlen) {
    enum { SHOWN = 3 };
    const cat_workload *near[SHOWN];
    size_t dist[SHOWN];
    int n = 0;
    out[0] = '\0';
    if (len > CAT_SUGGEST_MAX) return;
    /* the SHOWN nearest, each within half the longer name's length */
    for (int i = 0; i < cat->count; i++) {
        const cat_workload *w = &cat->items[i];
        if (w->name_len > CAT_SUGGEST_MAX) continue;
        size_t d = cat_distance(name, len, w->name, w->name_len);
        if (d * 2 > (len > w->name_len ? len : w->name_len)) continue;
        int at = n < SHOWN ? n++ : SHOWN;
        while (at > 0 && dist[at - 1] > d) {
            if (at < SHOWN) {
                near[at] = near[at - 1];
                dist[at] = dist[at - 1];
            }
            at--;
        }
        if (at < SHOWN) {
            near[at] = w;
            dist[at] = d;
        }
    }
    /* only those about as near as the nearest */
    while (n > 1 && dist[n - 1] > dist[0] + 1) n--;
    size_t at = 0;
    for (int i = 0; i < n && at < outlen; i++) {
        int w = snprintf(out + at, outlen - at, "%s%s", i == 0 ? "; did you mean "
                         : i == n - 1 ? " or " : ", ", near[i]->name);
        if (w < 0) break;
        at += (size_t)w;
    }
    if (n > 0 && at < outlen) snprintf(out + at, outlen - at, "?");
}

/* Column indexes of the fields read; -1 for an optional column absent. */
typedef struct cat_columns {
    int name, num_gpus, solo, peak, peak_b, smact, smocc, drama, util, ss;
    int derived_from;
    int est[CAT_NEST];
} cat_columns;

static int find_columns(const csv_file *f, cat_columns *c, char *err,
                        size_t errlen) {
    const char *required[] = {"name", "num_gpus", "solo_duration_s",
                              "peak_memory_mib"};
    for (size_t i = 0; i < sizeof(required) / sizeof(*required); i++) {
        if (csv_col(f, required[i]) < 0) {
            snprintf(err, errlen, "%s:%d: missing column '%s'", f->path,
                     f->line, required[i]);
            return -1;
        }
    }
    c->name = csv_col(f, "name");
    c->num_gpus = csv_col(f, "num_gpus");
    c->solo = csv_col(f, "solo_duration_s");
    c->peak = csv_col(f, "peak_memory_mib");
    c->peak_b = csv_col(f, "peak_memory_full_run_gpu_b_mib");
    c->smact = csv_col(f, "avg_smact");
    c->smocc = csv_col(f, "avg_smocc");
    c->drama = csv_col(f, "avg_drama");
    c->util = csv_col(f, "horus_gpu_util_mean_pct");
    c->ss = csv_col(f, "lucid_ss");
    c->derived_from = csv_col(f, "derived_from");
    for (int i = 0; i < CAT_NEST; i++) c->est[i] = csv_col(f, est_columns[i]);
    return 0;
}

/* Whether a workload's name goes out as it is: reports write it into
 * JSON and SVG, which take UTF-8 text without control characters. Says
 * why not in why. */
static bool name_fault(const char *name, char *why, size_t whylen) {
    for (const char *c = name; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            snprintf(why, whylen, "control character 0x%02x at byte %d",
                     (unsigned char)*c, (int)(c - name) + 1);
            return true;
        }
    /* jansson's check, as for a trace's user names (trace.c) */
    json_t *utf8 = json_string(name);
    json_decref(utf8);
    if (!utf8) snprintf(why, whylen, "not UTF-8 text");
    return !utf8;
}

static int read_row(const csv_file *f, const cat_columns *c, cat_workload *w,
                    char *err, size_t errlen) {
    const double big = 1e12;
    int gpus = -1, ss = -1;
    w->solo_s = w->peak_mib = w->peak_b_mib = CORE_UNKNOWN;
    w->smact = w->smocc = w->drama = 0;
    w->util_pct = CORE_UNKNOWN;
    w->declared = false; /* a catalog's figures are estimates */
    for (int i = 0; i < CAT_NEST; i++) w->est_mib[i] = CORE_UNKNOWN;
    if (csv_count(f, c->num_gpus, 1, CORE_MAX_JOB_GPUS, &gpus, err, errlen) ||
        csv_bounded(f, c->solo, 1e-3, big, &w->solo_s, err, errlen) ||
        csv_bounded(f, c->peak, 0, big, &w->peak_mib, err, errlen) ||
        csv_bounded(f, c->peak_b, 0, big, &w->peak_b_mib, err, errlen) ||
        csv_bounded(f, c->smact, 0, 1, &w->smact, err, errlen) ||
        csv_bounded(f, c->smocc, 0, 1, &w->smocc, err, errlen) ||
        csv_bounded(f, c->drama, 0, 1, &w->drama, err, errlen) ||
        csv_bounded(f, c->util, 0, 100, &w->util_pct, err, errlen) ||
        csv_count(f, c->ss, 0, 2, &ss, err, errlen))
        return -1;
    for (int i = 0; i < CAT_NEST; i++)
        if (csv_bounded(f, c->est[i], 0, big, &w->est_mib[i], err, errlen))
            return -1;
    const char *missing = f->row[c->name][0] == '\0' ? "name"
                        : gpus < 0                   ? "num_gpus"
                        : w->solo_s == CORE_UNKNOWN  ? "solo_duration_s"
                        : w->peak_mib == CORE_UNKNOWN ? "peak_memory_mib"
                                                      : NULL;
    if (missing) {
        snprintf(err, errlen, "%s:%d: field '%s': empty, but required",
                 f->path, f->line, missing);
        return -1;
    }
    char why[64];
    if (name_fault(f->row[c->name], why, sizeof(why))) {
        snprintf(err, errlen, "%s:%d: field 'name': %s", f->path, f->line,
                 why);
        return -1;
    }
    w->num_gpus = gpus;
    w->sharing_score = ss;
    w->derived = c->derived_from >= 0 && f->row[c->derived_from][0] != '\0';
    if (w->peak_b_mib == CORE_UNKNOWN) w->peak_b_mib = w->peak_mib;
    w->name = strdup(f->row[c->name]);
    w->name_len = strlen(f->row[c->name]);
    if (!w->name) {
        snprintf(err, errlen, "%s:%d: out of memory", f->path, f->line);
        return -1;
    }
    return 0;
}

/* Fills the hash; fails on a duplicate name, naming both its lines
 * (lines[n]: the line of item n). */
static int index_names(cat_catalog *cat, const int *lines, const char *path,
                       char *err, size_t errlen) {
    unsigned size = 16;
    while (size < 2u * (unsigned)cat->count) size *= 2;
    cat->mask = size - 1;
    cat->slots = malloc(size * sizeof(*cat->slots));
    if (!cat->slots) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memset(cat->slots, -1, size * sizeof(*cat->slots));
    for (int n = 0; n < cat->count; n++) {
        const char *name = cat->items[n].name;
        size_t len = strlen(name);
        const cat_workload *first = cat_find(cat, name, len);
        if (first) {
            snprintf(err, errlen, "%s:%d: field 'name': workload '%.80s' is "
                     "listed twice (line %d)", path, lines[n], name,
                     lines[first - cat->items]);
            return -1;
        }
        unsigned i = hash_name(name, len) & cat->mask;
        while (cat->slots[i] >= 0) i = (i + 1) & cat->mask;
        cat->slots[i] = n;
    }
    return 0;
}

/* Room for twice the items (and their lines); -1 when out of memory. */
static int grow(cat_catalog *cat, int **lines, int *cap) {
    int bigger = *cap ? *cap * 2 : 64;
    cat_workload *more = realloc(cat->items, bigger * sizeof(*more));
    if (more) cat->items = more;
    int *more_lines = more ? realloc(*lines, bigger * sizeof(**lines)) : NULL;
    if (!more_lines) return -1;
    *lines = more_lines;
    *cap = bigger;
    return 0;
}

cat_catalog *cat_load(const char *path, char *err, size_t errlen) {
    csv_file *f = csv_open(path, err, errlen);
    if (!f) return NULL;
    cat_catalog *cat = calloc(1, sizeof(*cat));
    cat_columns cols;
    int *lines = NULL; /* each item's line, for messages */
    int cap = 0, rc = cat ? find_columns(f, &cols, err, errlen) : -1;
    if (!cat) snprintf(err, errlen, "%s: out of memory", path);
    while (rc == 0 && (rc = csv_next(f, err, errlen)) == 1) {
        if (cat->count == cap && grow(cat, &lines, &cap) < 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
        lines[cat->count] = f->line;
        rc = read_row(f, &cols, &cat->items[cat->count], err, errlen);
        if (rc == 0) cat->count++;
    }
    if (rc == 0 && cat->count == 0) {
        snprintf(err, errlen, "%s: no workloads after the header", path);
        rc = -1;
    }
    if (rc == 0) rc = index_names(cat, lines, path, err, errlen);
    free(lines);
    csv_close(f);
    if (rc < 0) {
        cat_free(cat);
        return NULL;
    }
    return cat;
}

void cat_free(cat_catalog *cat) {
    if (!cat) return;
    for (int i = 0; i < cat->count; i++) free(cat->items[i].name);
    free(cat->items);
    free(cat->slots);
    free(cat);
}
