/* slots.h -- the on-board store of definitions: 6 numbered pipeline slots
 * and 20 module-configuration slots, each a small file in one folder
 * (and two more: "floors", of the versions each has taken, and
 * "commands", of the highest signed command's counter),
 * replaced whole and crash-safe (platform.h's plat_file_replace): after a
 * power cut at any moment a slot holds its old or its new content, and a
 * torn or corrupted file is detected (length and CRC-32) and reported,
 * never used. */
#ifndef DIPP_SLOTS_H
#define DIPP_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#define SLOT_PIPELINES 6
#define SLOT_CONFIGS 20
#define SLOT_MAX_BYTES 188

typedef enum slot_kind { SLOT_PIPELINE, SLOT_CONFIG } slot_kind;

/* Replaces slot n with data, kept with its version (the ground's number
 * for it; a write from the link must carry a higher one than the slot's).
 * 0, or -1 with "store/pipeline-3: why" in err. */
int slot_write(const char *dir, slot_kind kind, unsigned n, const uint8_t *data,
               size_t len, uint32_t version, char *err, size_t errlen);
/* 0 with the content in data (SLOT_MAX_BYTES), 1 when the slot is empty,
 * -1 when it is unreadable or corrupt (err says which). */
int slot_read(const char *dir, slot_kind kind, unsigned n, uint8_t *data,
              size_t *len, char *err, size_t errlen);
/* 0 with slot n's version in *version (0 when the slot is empty), or -1
 * when it is unreadable or corrupt (err says which; *version is 0). */
int slot_version(const char *dir, slot_kind kind, unsigned n, uint32_t *version,
                 char *err, size_t errlen);
/* The highest version slot n has taken from the link, kept apart from the
 * slot (file "floors") so that a slot found corrupt cannot be rolled back
 * by an old write: 0 with it in *version (0 when none yet), or -1 when the
 * floors cannot be read (err says why). */
int slot_floor(const char *dir, slot_kind kind, unsigned n, uint32_t *version, char *err,
               size_t errlen);
/* Raises slot n's floor to version (never lowers it), crash-safe: 0, or -1. */
int slot_raise_floor(const char *dir, slot_kind kind, unsigned n, uint32_t version,
                     char *err, size_t errlen);
/* Takes counter, a signed command's (cmd_sig.h), when it is above the
 * highest the board has taken, kept in a record of its own ("commands":
 * a corrupt "floors" does not stop commands, nor an older build's write
 * of the floors lose it). 0: taken, the record raised, crash-safe; 1: not
 * above, the highest in *floor; -1: the record unreadable or unwritten
 * (err says why). */
int slot_take_counter(const char *dir, uint64_t counter, uint64_t *floor, char *err,
                      size_t errlen);
/* Slots of a kind: 6 or 20. */
unsigned slot_count(slot_kind kind);
const char *slot_kind_name(slot_kind kind);

#endif
