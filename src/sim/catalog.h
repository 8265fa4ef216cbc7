/* catalog.h -- the workload catalog: what is known of each workload.
 *
 * A trace names workloads; the catalog holds their profiled facts (solo
 * runtime, peak memory, DCGM activity, memory estimates, Lucid sharing
 * score). Unknown values are CORE_UNKNOWN, as the core expects them.
 * Lookup by name is a hash probe, so a million-job trace resolves fast.
 *
 * Ownership: cat_load() allocates; cat_free() frees. Entry pointers stay
 * valid until then.
 */
#ifndef AEGIS_CATALOG_H
#define AEGIS_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

/* Memory estimators a catalog can carry, in the order of cat_workload.est. */
enum { CAT_EST_HORUS, CAT_EST_FAKETENSOR, CAT_EST_GPUMEMNET, CAT_EST_AEGIS,
       CAT_NEST };

typedef struct cat_workload {
    char *name;             /* e.g. "bert_base_wiki_bs32_1gpu" */
    size_t name_len;        /* strlen(name), for cat_find */
    int num_gpus;           /* GPUs the job requests */
    double solo_s;          /* exclusive end-to-end runtime */
    double peak_mib;        /* profiled peak memory, GPU a (the truth) */
    double peak_b_mib;      /* peak on the job's other GPUs (= peak_mib
                               when the catalog does not say) */
    double smact, smocc, drama; /* mean DCGM activity, 0..1 (0 if unknown) */
    double util_pct;        /* mean GPU utilization, 0..100 (horus) */
    double est_mib[CAT_NEST]; /* memory estimates, or CORE_UNKNOWN */
    bool declared;          /* est_mib is the job's own declaration (a
                               trace's mem_mib, job_columns.h): trusted
                               whole, never capped at est_cap_mib */
    int sharing_score;      /* Lucid: 0 tiny, 1 medium, 2 jumbo, -1 unknown */
    int derived;            /* 1 when derived_from names the measured row
                               this one was computed from (docs/model.md) */
} cat_workload;

typedef struct cat_catalog {
    cat_workload *items;    /* in file order */
    int count;
    int *slots;             /* open-addressing hash: item index or -1 */
    unsigned mask;          /* slots has mask + 1 entries */
} cat_catalog;

/* Reads a catalog CSV. Returns NULL with "PATH:LINE: field ..." in err. */
cat_catalog *cat_load(const char *path, char *err, size_t errlen);
void cat_free(cat_catalog *cat);

/* The workload of that name (len bytes, need not be NUL-terminated), or
 * NULL. */
const cat_workload *cat_find(const cat_catalog *cat, const char *name,
                             size_t len);

/* Writes "; did you mean A, B or C?" into out, naming the catalog's
 * workloads nearest to an unknown name (len bytes) by edit distance, or
 * "" when none is near: what a message about an unknown name ends with. */
void cat_suggest(const cat_catalog *cat, const char *name, size_t len,
                 char *out, size_t outlen);

/* The estimator index of a column name ("horus_mib", ...), or -1. */
int cat_estimator(const char *column);
const char *cat_estimator_column(int est);

#endif
