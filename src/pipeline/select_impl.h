/* select_impl.h -- the selector's parts behind select.h: its settings
 * (select.c reads them), the pool of candidate samples and the random
 * choices every strategy makes from it (select_pool.c), and presampling
 * (select_presample.c).
 *
 * A pool is a range of keys [lo, hi): keys are dense and sample i has key
 * i (sample.h), so the data of the last k+1 triggers is one range and a
 * choice need not read the samples, only their labels when it balances. Chosen samples become
 * items in key order, weight 1 (presampling weighs nothing, as Modyn's).
 * Choices errors (out of memory, a failed write) are in sel_out's err.
 */
#ifndef AEGIS_PL_SELECT_IMPL_H
#define AEGIS_PL_SELECT_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "pl_rng.h"
#include "select.h"
#include "trainset_writer.h"

typedef enum sel_kind {
    SEL_NEW_DATA,    /* NewDataStrategy */
    SEL_FRESHNESS,   /* FreshnessSamplingStrategy */
    SEL_CORESET,     /* CoresetStrategy (presampling only) */
} sel_kind;

typedef enum sel_presample_kind {
    PRE_RANDOM, PRE_RANDOM_NO_REPLACEMENT, PRE_LABEL_BALANCED,
    PRE_TRIGGER_BALANCED, PRE_NONE,
} sel_presample_kind;

struct pl_selector {
    sel_kind kind;
    uint64_t seed;
    bool all_data;            /* tail_triggers absent or null */
    int64_t tail_triggers;    /* earlier triggers' data kept besides the new */
    int64_t limit;            /* most samples per set; -1: no limit */
    bool limit_uar;           /* limit_reset sampleUAR, else lastX */
    int64_t unused_ratio;     /* freshness: percent of never-used samples */
    sel_presample_kind presample;
    int64_t ratio, ratio_max; /* presampling keeps ratio/ratio_max */
    bool force_balance;       /* force_column_balancing: balanced groups
                                 all as large as the smallest */
    int64_t warmup_triggers;  /* coreset: triggers trained on whole pools */
    uint64_t *used;           /* bitmap by key: trained on by an earlier set */
    uint64_t used_words;
    json_t *downsampling;     /* coreset: the downsampling configs, in turn */
    json_t *ds_thresholds;    /*   the trigger from which each next applies */
};

/* select_downsample.c: downsampling_config (absent: none) into sel. 0, or
 * -1 with err naming the key. */
int sel_parse_downsampling(pl_selector *sel, const json_t *d, char *err,
                           size_t errlen);

/* Where chosen keys go: straight to the set's file when the choices come
 * in key order (stream), else a list sorted before it is written. */
typedef struct sel_out {
    pl_trainset_writer *stream;  /* the file, or NULL for the list */
    pl_selector *mark;           /* marks each written key used, or NULL */
    pl_trainset_item *items;     /* the list */
    size_t count, cap;
    char err[512];               /* why an add failed */
} sel_out;

/* 0, or -1 with out->err. */
int sel_out_add(sel_out *out, uint64_t key);
/* Sorts the list by key (after choices from several lists). */
void sel_out_sort(sel_out *out);

/* k of the keys [lo, hi) uniformly at random, in key order (selection
 * sampling: one pass, no list of candidates). */
int sel_choose_range(uint64_t lo, uint64_t hi, uint64_t k, pl_rng *rng,
                     sel_out *out);
/* k of the n keys in idx, uniformly at random, in their order. */
int sel_choose_list(const uint64_t *idx, uint64_t n, uint64_t k, pl_rng *rng,
                    sel_out *out);

/* Whether key was trained on, and marking it so. */
bool sel_used(const pl_selector *sel, uint64_t key);
int sel_mark_used(pl_selector *sel, uint64_t key);

/* The pool's keys split by sel_used: unused first (*nunused of them),
 * then used; malloc'd, NULL when out of memory. */
uint64_t *sel_split_used(const pl_selector *sel, uint64_t lo, uint64_t hi,
                         uint64_t *nunused);

/* Presamples the pool [lo, hi) into out. bounds/trigger as in select.h
 * (TriggerBalanced groups by them). */
int sel_presample(pl_selector *sel, const pl_sample *s, uint64_t lo,
                  uint64_t hi, const uint64_t *bounds, uint32_t trigger,
                  pl_rng *rng, sel_out *out);

#endif
