/* names.c -- interning names (names.h). */
#include "names.h"

#include "prefault.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: names are a few bytes, so a short loop beats anything wider. */
static uint32_t name_hash(const char *name, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

/* The slot of the name, or the empty slot it would take. A slot holds its
 * name's hash so that other names are passed without reading them. */
static struct sim_name_slot *find_slot(const sim_names *n, const char *name,
                                       size_t len, uint32_t hash) {
    uint32_t mask = n->nslots - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        struct sim_name_slot *slot = &n->slots[i];
        if (slot->id == 0) return slot;
        if (slot->hash == hash && slot->len == len &&
            memcmp(n->text + slot->at, name, len) == 0)
            return slot;
    }
}

/* Moves the names to a table of nslots slots, on huge pages where it is
 * big: a name's slot is anywhere in it, and a million names' 32 MB on
 * small pages took twice as long to fill (a TLB miss a look-up). */
static int resize_slots(sim_names *n, uint32_t nslots) {
    uint32_t mask = nslots - 1;
    struct sim_name_slot *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    prefault_huge(slots, nslots * sizeof(*slots));
    for (uint32_t k = 0; k < n->nslots; k++) {
        if (n->slots[k].id == 0) continue;
        uint32_t i = n->slots[k].hash & mask;
        while (slots[i].id) i = (i + 1) & mask;
        slots[i] = n->slots[k];
    }
    free(n->slots);
    n->slots = slots;
    n->nslots = nslots;
    return 0;
}

/* Room for one more name of len bytes in at and the text. */
static int make_room(sim_names *n, size_t len) {
    if (n->count == n->cap) {
        uint32_t cap = n->cap ? n->cap * 2 : 256;
        size_t *at = realloc(n->at, cap * sizeof(*at));
        if (!at) return -1;
        n->at = at;
        n->cap = cap;
    }
    if (len >= UINT32_MAX - n->text_len) return -1; /* past what at holds */
    if (n->text_cap - n->text_len <= len) {
        size_t cap = n->text_cap ? n->text_cap * 2 : 4096;
        while (cap - n->text_len <= len) cap *= 2;
        char *text = realloc(n->text, cap);
        if (!text) return -1;
        n->text = text;
        n->text_cap = cap;
    }
    return 0;
}

int names_intern(sim_names *n, const char *name, size_t len, uint32_t *id) {
    /* Kept under half full, so a probe ends after a step or two. */
    if ((n->count + 1) * 2 > n->nslots &&
        resize_slots(n, n->nslots ? n->nslots * 2 : 1024) < 0)
        return -1;
    uint32_t hash = name_hash(name, len);
    struct sim_name_slot *slot = find_slot(n, name, len, hash);
    if (slot->id == 0) {
        if (n->count == UINT32_MAX - 1 || make_room(n, len) < 0) return -1;
        size_t at = n->text_len;
        memcpy(n->text + at, name, len);
        n->text[at + len] = '\0';
        n->text_len += len + 1;
        n->at[n->count++] = at;
        *slot = (struct sim_name_slot){hash, n->count, (uint32_t)at,
                                       (uint32_t)len};
    }
    *id = slot->id;
    return 0;
}

const char *names_get(const sim_names *n, uint32_t id) {
    return n->text + n->at[id - 1];
}

int names_merge(sim_names *into, const sim_names *from, uint32_t *map) {
    map[0] = 0;
    for (uint32_t id = 1; id <= from->count; id++) {
        const char *name = names_get(from, id);
        if (names_intern(into, name, strlen(name), &map[id]) < 0) return -1;
    }
    return 0;
}

void names_free(sim_names *n) {
    free(n->text);
    free(n->at);
    free(n->slots);
    *n = (sim_names){0};
}
