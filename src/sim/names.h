/* names.h -- interning: a small number for each distinct name.
 *
 * A trace names users and feeds; the core and the replay want numbers
 * that are equal exactly when the names are (a hash of the name was not:
 * "costarring" and "liquid" shared one). Names are numbered from 1 in the
 * order they are first added, compared byte for byte; 0 is left to the
 * caller (no name). A table is one thread's: a file read in two halves
 * fills one per half and merges the second into the first (names_merge).
 *
 * Ownership: the table owns copies of its names; names_free() frees them.
 */
#ifndef AEGIS_NAMES_H
#define AEGIS_NAMES_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_names {
    char *text;                 /* the names, each ending in a NUL; at
                                   most UINT32_MAX bytes */
    size_t text_len, text_cap;
    size_t *at;                 /* name id's offset in text, at[id - 1] */
    uint32_t count, cap;        /* names held; room in at */
    struct sim_name_slot {      /* open addressing, linear probing: */
        uint32_t hash, id;      /*   a name's hash and id; id 0: empty */
        uint32_t at, len;       /*   its place in text (at[id - 1], one
                                     cache miss less) and length */
    } *slots;
    uint32_t nslots;            /* a power of two, over twice count */
} sim_names;

/* The number of the len bytes at name into *id (>= 1), added when new.
 * Returns 0, or -1 when out of memory. */
int names_intern(sim_names *n, const char *name, size_t len, uint32_t *id);

/* Name id (1..count), NUL-terminated. */
const char *names_get(const sim_names *n, uint32_t id);

/* Adds from's names to into and writes each one's number there to
 * map[0..from->count], map[0] = 0. Returns 0, or -1 when out of memory.
 * map has from->count + 1 entries. */
int names_merge(sim_names *into, const sim_names *from, uint32_t *map);

void names_free(sim_names *n);

#endif
