/* proc_store.h -- the satellite's store of DISH procedures: every image
 * of procedures the ground uploaded (docs/orbit.md, "DISH"), kept with
 * the name and version it came with in one file, "procedures" in the
 * store's folder, which every change replaces whole and crash-safe
 * (platform.h's plat_file_replace): after a power cut at any moment the
 * file holds the images before or after the change.
 *
 * The file: "DPS1", then one record per image in the order they came, so
 * an image is always after the images it calls into:
 *   length (2), name (24, NUL-padded), version (4), the image, CRC-32 (4)
 * of the record's bytes before it; little endian, as the image itself.
 *
 * The store keeps only images the runtime took: each is loaded (verified
 * against the slots on board) before it is written, and again, in order,
 * when the store opens; one that is torn, corrupt or refused is reported and left
 * out (and gone from the file at the next change). */
#ifndef DIPP_PROC_STORE_H
#define DIPP_PROC_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "dish_vm.h"
#include "upload_msg.h"

#define PROC_STORE_FILE "procedures"
#define PROC_STORE_IMAGES DISH_SLOTS /* each image holds a slot at least */

typedef struct proc_image {
    char name[UP_NAME_MAX];
    uint32_t version;
    uint16_t len;
    uint8_t bytes[DISH_MAX_IMAGE];
} proc_image;

typedef struct proc_store {
    char dir[512];
    dish_vm *vm;
    unsigned count;
    proc_image img[PROC_STORE_IMAGES];
} proc_store;

/* Reports one image left out at open (a sentence naming file, record and
 * why). */
typedef void (*proc_warn_fn)(void *ctx, const char *why);

/* Opens dir's store and loads its images into vm, oldest first; each one
 * left out is told to warn. The images loaded, or -1 when the file cannot
 * be read at all (warn says why; the store is then empty). */
int proc_store_open(proc_store *ps, const char *dir, dish_vm *vm, proc_warn_fn warn,
                    void *ctx);
/* Loads img[0..len) into the runtime (which verifies it against the
 * slots on board) and keeps it (the file replaced; when that fails it is
 * unloaded again). 0, or an errors.h code (DIPP_E_UP_PROCS refused,
 * DIPP_E_UP_STORE the file); what happened either way in detail. Name
 * and version already kept with these bytes: 0. */
int proc_store_add(proc_store *ps, const char *name, uint32_t version,
                   const uint8_t *img, size_t len, char *detail, size_t cap);
/* Deletes the procedure in slot from the runtime (refused while another
 * procedure calls it or a run is inside it) and from the file: 0, or an
 * errors.h code, why in detail. */
int proc_store_delete(proc_store *ps, unsigned slot, char *detail, size_t cap);
/* The image holding slot, or NULL. */
const proc_image *proc_store_holding(const proc_store *ps, unsigned slot);

#endif
