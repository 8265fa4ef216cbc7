/* names.c -- interning names (names.h). */
#include "names.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: names are a few bytes, so a short loop beats anything wider. */
static uint32_t name_hash(const char *name, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

/* The slot of the name, holding its id, or the empty slot it would take. */
static uint32_t *find_slot(const sim_names *n, const char *name, size_t len,
                           uint32_t hash) {
    uint32_t mask = n->nslots - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t id = n->slots[i];
        if (id == 0) return &n->slots[i];
        const char *held = n->text + n->at[id - 1];
        if (n->hashes[id - 1] == hash && memcmp(held, name, len) == 0 &&
            held[len] == '\0')
            return &n->slots[i];
    }
}

/* Doubles the slots (at least 1024) and puts every id back. */
static int grow_slots(sim_names *n) {
    uint32_t nslots = n->nslots ? n->nslots * 2 : 1024;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    free(n->slots);
    n->slots = slots;
    n->nslots = nslots;
    for (uint32_t id = 1; id <= n->count; id++) {
        uint32_t mask = nslots - 1, i = n->hashes[id - 1] & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = id;
    }
    return 0;
}

/* Room for one more name of len bytes in the arrays and the text. */
static int make_room(sim_names *n, size_t len) {
    if (n->count == n->cap) {
        uint32_t cap = n->cap ? n->cap * 2 : 256;
        size_t *at = realloc(n->at, cap * sizeof(*at));
        if (!at) return -1;
        n->at = at;
        uint32_t *hashes = realloc(n->hashes, cap * sizeof(*hashes));
        if (!hashes) return -1;
        n->hashes = hashes;
        n->cap = cap;
    }
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
    if ((n->count + 1) * 2 > n->nslots && grow_slots(n) < 0) return -1;
    uint32_t hash = name_hash(name, len);
    uint32_t *slot = find_slot(n, name, len, hash);
    if (*slot == 0) {
        if (n->count == UINT32_MAX - 1 || make_room(n, len) < 0) return -1;
        n->at[n->count] = n->text_len;
        n->hashes[n->count] = hash;
        memcpy(n->text + n->text_len, name, len);
        n->text[n->text_len + len] = '\0';
        n->text_len += len + 1;
        *slot = ++n->count;
    }
    *id = *slot;
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
    free(n->hashes);
    free(n->slots);
    *n = (sim_names){0};
}
