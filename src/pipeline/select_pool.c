/* select_pool.c -- the random choices selection strategies make from a
 * pool of samples, and the record of which keys were trained on
 * (select_impl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select_impl.h"

static int append(sel_out *out, uint64_t key)
{
    if (out->count == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 1024;
        pl_trainset_item *items = realloc(out->items, cap * sizeof *items);
        if (!items) {
            snprintf(out->err, sizeof out->err, "selection: out of memory");
            return -1;
        }
        out->items = items;
        out->cap = cap;
    }
    out->items[out->count++] = (pl_trainset_item){key, 1.0f, 0};
    return 0;
}

int sel_out_add(sel_out *out, uint64_t key)
{
    if (!out->stream)
        return append(out, key);
    if (out->mark && sel_mark_used(out->mark, key) < 0) {
        snprintf(out->err, sizeof out->err, "selection: out of memory");
        return -1;
    }
    return pl_trainset_add(out->stream, key, 1.0f, out->err, sizeof out->err);
}

static int cmp_item(const void *a, const void *b)
{
    uint64_t x = ((const pl_trainset_item *)a)->key;
    uint64_t y = ((const pl_trainset_item *)b)->key;
    return (x > y) - (x < y);
}

void sel_out_sort(sel_out *out)
{
    qsort(out->items, out->count, sizeof *out->items, cmp_item);
}

int sel_choose_range(uint64_t lo, uint64_t hi, uint64_t k, pl_rng *rng,
                     sel_out *out)
{
    uint64_t taken = 0;
    if (k > hi - lo)
        k = hi - lo;
    /* Knuth's algorithm S: sample i is kept with probability
     * (still wanted) / (still left), which gives every k-subset the same
     * chance and ends with exactly k. */
    for (uint64_t i = lo; i < hi && taken < k; i++)
        if (k - taken == hi - i || pl_rng_below(rng, hi - i) < k - taken) {
            if (sel_out_add(out, i) < 0)
                return -1;
            taken++;
        }
    return 0;
}

int sel_choose_list(const uint64_t *idx, uint64_t n, uint64_t k, pl_rng *rng,
                    sel_out *out)
{
    uint64_t taken = 0;
    if (k > n)
        k = n;
    for (uint64_t i = 0; i < n && taken < k; i++)
        if (k - taken == n - i || pl_rng_below(rng, n - i) < k - taken) {
            if (sel_out_add(out, idx[i]) < 0)
                return -1;
            taken++;
        }
    return 0;
}

bool sel_used(const pl_selector *sel, uint64_t key)
{
    uint64_t word = key / 64;
    return word < sel->used_words && (sel->used[word] >> (key % 64) & 1);
}

int sel_mark_used(pl_selector *sel, uint64_t key)
{
    uint64_t word = key / 64;
    if (word >= sel->used_words) {
        uint64_t words = word + 1 > sel->used_words * 2 ? word + 1
                                                        : sel->used_words * 2;
        uint64_t *used = realloc(sel->used, words * sizeof *used);
        if (!used)
            return -1;
        memset(used + sel->used_words, 0,
               (words - sel->used_words) * sizeof *used);
        sel->used = used;
        sel->used_words = words;
    }
    sel->used[word] |= 1ULL << (key % 64);
    return 0;
}

uint64_t *sel_split_used(const pl_selector *sel, uint64_t lo, uint64_t hi,
                         uint64_t *nunused)
{
    uint64_t n = hi - lo;
    uint64_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return NULL;
    uint64_t front = 0, back = n;
    for (uint64_t i = lo; i < hi; i++)
        if (!sel_used(sel, i))
            idx[front++] = i;
    for (uint64_t i = hi; i-- > lo;)
        if (sel_used(sel, i))
            idx[--back] = i;
    *nunused = front;
    return idx;
}
