/* trainset.h -- a trigger's training set on disk: the keys it trains on
 * and their weights, written once and kept, so a training can be repeated
 * exactly (select.c writes it, aegis_pipeline.py and the supervisor read it).
 *
 * Layout, little-endian:
 *   header  char magic[8] = "AEGTSET1"; uint64 count; uint64 seed;
 *           uint32 trigger; uint32 reserved (0)
 *   items   count x { uint64 key; float32 weight; uint32 reserved (0) }
 *   trailer uint32 CRC-32 (zlib's) of everything before it
 * The writer writes a temporary file, fsyncs it and renames it into
 * place, so a reader sees a whole set or none.
 */
#ifndef AEGIS_PL_TRAINSET_H
#define AEGIS_PL_TRAINSET_H

#include <stddef.h>
#include <stdint.h>

#define PL_TRAINSET_MAGIC "AEGTSET1"

typedef struct pl_trainset_item {
    uint64_t key;
    float weight;
    uint32_t reserved;
} pl_trainset_item;

_Static_assert(sizeof(pl_trainset_item) == 16, "trainset item layout");

int pl_trainset_write(const char *path, const pl_trainset_item *items,
                      size_t count, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen);
/* Reads a whole set into *items (malloc'd; the caller frees it). 0, or -1
 * with err naming the file and what is wrong (magic, size, checksum). */
int pl_trainset_read(const char *path, pl_trainset_item **items,
                     size_t *count, uint64_t *seed, uint32_t *trigger,
                     char *err, size_t errlen);

#endif
