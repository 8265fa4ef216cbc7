/* job_columns.c -- a trace row's own figures for its job (job_columns.h). */
#include "job_columns.h"

#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bound of every memory and time figure, as the catalog's. */
#define JOB_BIG 1e12

/* Workloads per block: a block is one allocation, about 16 KiB. */
#define JOB_BLOCK 128

struct job_block {
    struct job_block *next;
    int used;
    cat_workload items[JOB_BLOCK];
};

static char own_name[] = JOB_OWN_NAME;

void job_columns_find(const csv_file *f, job_columns *c) {
    *c = (job_columns){csv_col(f, "num_gpus"), csv_col(f, "mem_mib"),
                       csv_col(f, "peak_mib"), csv_col(f, "duration_s"),
                       csv_col(f, "smact"), csv_col(f, "smocc"),
                       csv_col(f, "drama")};
}

/* The columns in a fixed order, for the loops below. */
static void as_list(const job_columns *c, int out[7]) {
    const int cols[7] = {c->num_gpus, c->mem, c->peak, c->duration,
                         c->smact, c->smocc, c->drama};
    memcpy(out, cols, sizeof(cols));
}

bool job_columns_any(const job_columns *c) {
    int cols[7];
    as_list(c, cols);
    for (int i = 0; i < 7; i++)
        if (cols[i] >= 0) return true;
    return false;
}

bool job_columns_given(const job_columns *c, const csv_file *f) {
    int cols[7];
    as_list(c, cols);
    for (int i = 0; i < 7; i++)
        if (cols[i] >= 0 && f->row[cols[i]][0] != '\0') return true;
    return false;
}

/* The figures of a job that names no workload, before its row's: unknown
 * where the row must say, the defaults where it may. */
static void unnamed(cat_workload *w) {
    *w = (cat_workload){.name = own_name, .name_len = strlen(own_name),
                        .num_gpus = 1, .solo_s = CORE_UNKNOWN,
                        .peak_mib = CORE_UNKNOWN, .peak_b_mib = CORE_UNKNOWN,
                        .smact = JOB_DEFAULT_SMACT, .smocc = JOB_DEFAULT_SMOCC,
                        .drama = JOB_DEFAULT_DRAMA, .util_pct = CORE_UNKNOWN,
                        .sharing_score = -1};
    for (int i = 0; i < CAT_NEST; i++) w->est_mib[i] = CORE_UNKNOWN;
}

/* The fault of a row that names no workload and leaves field empty,
 * which it may not (what else is empty: why). Returns -1. */
static int required(const csv_file *f, const char *field, int col,
                    const char *why, char *err, size_t errlen) {
    if (col < 0)
        snprintf(err, errlen, "%s:%d: no column '%s' in the header, but the "
                 "row names no workload", f->path, f->line, field);
    else
        snprintf(err, errlen, "%s:%d: field '%s': empty%s where the row names "
                 "no workload", f->path, f->line, field, why);
    return -1;
}

/* The memory: a declared mem_mib is every estimator's figure, and the
 * peak where the row gives none and names no workload. */
static int read_memory(const job_columns *c, const csv_file *f,
                       cat_workload *w, char *err, size_t errlen) {
    double mem = CORE_UNKNOWN, peak = CORE_UNKNOWN;
    if (csv_bounded(f, c->mem, 0, JOB_BIG, &mem, err, errlen) < 0 ||
        csv_bounded(f, c->peak, 0, JOB_BIG, &peak, err, errlen) < 0)
        return -1;
    if (mem != CORE_UNKNOWN) {
        for (int i = 0; i < CAT_NEST; i++) w->est_mib[i] = mem;
        w->declared = true;
    }
    if (peak == CORE_UNKNOWN && w->peak_mib == CORE_UNKNOWN) peak = mem;
    if (peak != CORE_UNKNOWN) w->peak_mib = w->peak_b_mib = peak;
    bool column = c->peak >= 0 || c->mem >= 0;
    if (w->peak_mib == CORE_UNKNOWN)
        return required(f, column ? "peak_mib" : "mem_mib' or 'peak_mib",
                        column ? 0 : -1, ", and so is mem_mib,", err, errlen);
    return 0;
}

int job_columns_read(const job_columns *c, const csv_file *f,
                     const cat_workload *base, cat_workload *w, char *err,
                     size_t errlen) {
    if (base) *w = *base;
    else unnamed(w);
    if (csv_count(f, c->num_gpus, 1, CORE_MAX_JOB_GPUS, &w->num_gpus, err,
                  errlen) < 0 ||
        read_memory(c, f, w, err, errlen) < 0 ||
        csv_bounded(f, c->duration, 1e-3, JOB_BIG, &w->solo_s, err,
                    errlen) < 0 ||
        csv_bounded(f, c->smact, 0, 1, &w->smact, err, errlen) < 0 ||
        csv_bounded(f, c->smocc, 0, 1, &w->smocc, err, errlen) < 0 ||
        csv_bounded(f, c->drama, 0, 1, &w->drama, err, errlen) < 0)
        return -1;
    if (w->solo_s == CORE_UNKNOWN)
        return required(f, "duration_s", c->duration, ", but required", err,
                        errlen);
    return 0;
}

cat_workload *job_works_add(job_works *w) {
    struct job_block *b = w->blocks;
    if (!b || b->used == JOB_BLOCK) {
        b = malloc(sizeof(*b));
        if (!b) return NULL;
        b->next = w->blocks;
        b->used = 0;
        w->blocks = b;
    }
    return &b->items[b->used++];
}

void job_works_join(job_works *into, job_works *from) {
    struct job_block **end = &from->blocks;
    while (*end) end = &(*end)->next;
    *end = into->blocks;
    into->blocks = from->blocks;
    from->blocks = NULL;
}

void job_works_free(job_works *w) {
    while (w->blocks) {
        struct job_block *next = w->blocks->next;
        free(w->blocks);
        w->blocks = next;
    }
}
