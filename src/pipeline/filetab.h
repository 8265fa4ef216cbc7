/* filetab.h -- a dataset's file table (files.log): file index to name,
 * relative to the dataset's folder, append-only like the key log.
 *
 * Layout, little-endian:
 *   header  char magic[8] = "AEGFILE1"; uint32 version (1); uint32 0
 *   entries each: uint32 crc (CRC-32 of what follows it in the entry);
 *           uint32 index (the entry's number, from 0); uint32 len;
 *           char name[len] (no NUL)
 * A torn or corrupt tail is ignored by readers and cut by the watcher.
 */
#ifndef AEGIS_PL_FILETAB_H
#define AEGIS_PL_FILETAB_H

#include <stddef.h>
#include <stdint.h>

#define PL_FILETAB_MAGIC "AEGFILE1"

typedef struct pl_filetab {
    char **names;      /* by index */
    uint32_t count, cap;
    uint32_t *slots;   /* hash of names: index + 1, 0 empty */
    uint32_t nslots;
    uint64_t end;      /* bytes of files.log read so far (valid part) */
} pl_filetab;

void pl_filetab_init(pl_filetab *t);
void pl_filetab_free(pl_filetab *t);

/* Reads the entries of files.log at path appended since the last call.
 * Stops at a torn tail (t->end stays before it). A missing file is an
 * empty table. 0, or -1 with err. */
int pl_filetab_refresh(pl_filetab *t, const char *path, char *err,
                       size_t errlen);

/* The index of NAME, or -1. */
int64_t pl_filetab_find(const pl_filetab *t, const char *name);

/* Appends NAME to the table and to the open files.log fd (whose valid
 * end is t->end). Its index, or -1 with err. */
int64_t pl_filetab_add(pl_filetab *t, int fd, const char *path,
                       const char *name, char *err, size_t errlen);

#endif
