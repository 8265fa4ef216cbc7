/* proc_store.c -- the on-board store of DISH procedures (proc_store.h):
 * the file's records, loading them at start-up, and the two changes,
 * each one replacement of the file: an image added, a procedure deleted
 * (its image rewritten without it, or dropped with its last one). */
#include "proc_store.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "platform.h"

#define MAGIC "DPS1"
#define REC_HEAD (2 + UP_NAME_MAX + 4) /* length, name, version */
#define REC_MAX (REC_HEAD + DISH_MAX_IMAGE + 4)

/* ---- the file ---- */

static size_t record_put(const proc_image *im, uint8_t *out) {
    dish_put16(out, im->len);
    memset(out + 2, 0, UP_NAME_MAX);
    memcpy(out + 2, im->name, strnlen(im->name, UP_NAME_MAX - 1));
    dish_put32(out + 2 + UP_NAME_MAX, im->version);
    memcpy(out + REC_HEAD, im->bytes, im->len);
    dish_put32(out + REC_HEAD + im->len, dish_crc32(out, REC_HEAD + (size_t)im->len));
    return REC_HEAD + (size_t)im->len + 4;
}

/* The whole file, as the images in memory say. 0 or -errno. */
static int save(const proc_store *ps) {
    uint8_t *buf = malloc(4 + (size_t)ps->count * REC_MAX);
    if (!buf)
        return -ENOMEM;
    size_t n = 4;
    memcpy(buf, MAGIC, 4);
    for (unsigned k = 0; k < ps->count; k++)
        n += record_put(&ps->img[k], buf + n);
    int rc = plat_file_replace(ps->dir, PROC_STORE_FILE, buf, n);
    free(buf);
    return rc;
}

/* Record k at data[off..len): into *im, its size in *used; or a sentence
 * in why. A record whose length runs past the end leaves the rest
 * unreadable. */
static int record_get(const uint8_t *data, size_t len, size_t off, proc_image *im,
                      size_t *used, char *why, size_t cap) {
    size_t left = len - off, n = left >= 2 ? dish_get16(data + off) : 0;
    if (left < REC_HEAD + 4 || n > DISH_MAX_IMAGE || left < REC_HEAD + n + 4) {
        snprintf(why, cap, "cut short (%zu bytes left, the record needs %zu)", left,
                 REC_HEAD + n + 4);
        *used = left;
        return -1;
    }
    *used = REC_HEAD + n + 4;
    memcpy(im->name, data + off + 2, UP_NAME_MAX);
    im->name[UP_NAME_MAX - 1] = 0;
    im->version = (uint32_t)dish_get32(data + off + 2 + UP_NAME_MAX);
    im->len = (uint16_t)n;
    memcpy(im->bytes, data + off + REC_HEAD, n);
    if (dish_crc32(data + off, REC_HEAD + n) != (uint32_t)dish_get32(data + off + REC_HEAD + n)) {
        snprintf(why, cap, "CRC-32 mismatch: torn or corrupt");
        return -1;
    }
    return 0;
}

/* Loads every record of the file's bytes in order: the images loaded. A
 * verified image takes a free slot, so no more than PROC_STORE_IMAGES
 * load; the rest are refused by the runtime as any other would be. */
static int load_records(proc_store *ps, const uint8_t *data, size_t len, proc_warn_fn warn,
                        void *ctx) {
    static proc_image im; /* 4 KiB: off the stack */
    char why[300], line[1024]; /* room for dir, why and the rest */
    size_t used;
    for (size_t off = 4, rec = 1; off < len; off += used, rec++) {
        snprintf(im.name, sizeof im.name, "?"), im.version = 0; /* until read */
        int bad = record_get(data, len, off, &im, &used, why, sizeof why) ||
                  dish_vm_load(ps->vm, im.bytes, im.len, why, sizeof why);
        if (bad) {
            snprintf(line, sizeof line, "%s/%s: record %zu at byte %zu ('%s' v%u): %s: "
                     "not loaded", ps->dir, PROC_STORE_FILE, rec, off, im.name,
                     im.version, why);
            warn(ctx, line);
            continue;
        }
        assert(ps->count < PROC_STORE_IMAGES);
        ps->img[ps->count++] = im;
    }
    return (int)ps->count;
}

int proc_store_open(proc_store *ps, const char *dir, dish_vm *vm, proc_warn_fn warn,
                    void *ctx) {
    char path[600], line[700];
    uint8_t *data;
    size_t len;
    memset(ps, 0, sizeof *ps);
    snprintf(ps->dir, sizeof ps->dir, "%s", dir);
    ps->vm = vm;
    snprintf(path, sizeof path, "%s/%s", dir, PROC_STORE_FILE);
    int rc = plat_file_read(path, &data, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc || len < 4 || memcmp(data, MAGIC, 4)) {
        snprintf(line, sizeof line, "%s: %s: no procedures loaded", path,
                 rc ? strerror(-rc) : "not a DPS1 store");
        warn(ctx, line);
        if (!rc)
            free(data);
        return -1;
    }
    int n = load_records(ps, data, len, warn, ctx);
    free(data);
    return n;
}

/* ---- images ---- */

static unsigned nprocs(const proc_image *im) {
    return im->bytes[5];
}

static const uint8_t *proc_rec(const proc_image *im, unsigned k) {
    return im->bytes + DISH_HDR + (size_t)k * DISH_PROC_REC;
}

const proc_image *proc_store_holding(const proc_store *ps, unsigned slot) {
    for (unsigned k = 0; k < ps->count; k++)
        for (unsigned j = 0; j < nprocs(&ps->img[k]); j++)
            if (proc_rec(&ps->img[k], j)[0] == slot)
                return &ps->img[k];
    return NULL;
}

/* Rewrites im without the procedure of slot: the same header, table and
 * code less that procedure's record and code (jumps are within a
 * procedure, calls by slot, so the rest runs unchanged). It was verified
 * when it came, so its table is whole. */
static void drop_proc(proc_image *im, unsigned slot) {
    static uint8_t out[DISH_MAX_IMAGE];
    unsigned n = nprocs(im), kept = 0;
    const uint8_t *code = im->bytes + DISH_HDR + (size_t)n * DISH_PROC_REC;
    uint8_t *table = out + DISH_HDR, *to = table + (size_t)(n - 1) * DISH_PROC_REC;
    uint16_t at = 0;
    assert(n > 1);
    for (unsigned k = 0; k < n; k++) {
        const uint8_t *rec = proc_rec(im, k);
        uint16_t off = dish_get16(rec + 4), len = dish_get16(rec + 6);
        if (rec[0] == slot)
            continue;
        /* the verifier keeps code packed, so what is copied stays in out */
        assert(code + off + len <= im->bytes + im->len);
        assert((size_t)(to - out) + at + len <= sizeof out);
        memcpy(table + (size_t)kept * DISH_PROC_REC, rec, 4);
        dish_put16(table + (size_t)kept * DISH_PROC_REC + 4, at);
        dish_put16(table + (size_t)kept * DISH_PROC_REC + 6, len);
        memcpy(to + at, code + off, len);
        at = (uint16_t)(at + len), kept++;
    }
    assert(kept == n - 1);
    memcpy(out, im->bytes, 5);
    out[5] = (uint8_t)kept;
    dish_put16(out + 6, at);
    im->len = (uint16_t)(to + at - out);
    dish_put32(out + 8, dish_crc32(out + DISH_HDR, im->len - DISH_HDR));
    memcpy(im->bytes, out, im->len);
}

static int already_kept(const proc_store *ps, const char *name, uint32_t version,
                        const uint8_t *img, size_t len) {
    for (unsigned k = 0; k < ps->count; k++) {
        const proc_image *im = &ps->img[k];
        if (!strcmp(im->name, name) && im->version == version && im->len == len &&
            !memcmp(im->bytes, img, len))
            return 1;
    }
    return 0;
}

/* The slots of img, as a list for a sentence. */
static void slot_list(const proc_image *im, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (unsigned k = 0; k < nprocs(im) && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s%u", k ? " " : "", proc_rec(im, k)[0]);
}

/* Takes img's procedures out of the runtime again: callers first, so
 * each delete is allowed (nothing else calls into an image just loaded,
 * and nothing runs in it). */
static void unload(proc_store *ps, const proc_image *im) {
    char why[160];
    for (unsigned pass = 0; pass < nprocs(im); pass++)
        for (unsigned k = 0; k < nprocs(im); k++) {
            unsigned slot = proc_rec(im, k)[0];
            if (ps->vm->slots[slot].info.used && ps->vm->slots[slot].call_sites == 0)
                dish_vm_delete(ps->vm, slot, why, sizeof why);
        }
}

int proc_store_add(proc_store *ps, const char *name, uint32_t version,
                   const uint8_t *img, size_t len, char *detail, size_t cap) {
    char why[256], slots[160];
    if (already_kept(ps, name, version, img, len))
        return dipp_say(detail, cap, 0, "%s v%u: already on board", name, version);
    /* the runtime verifies it against the slots on board, and has room */
    if (dish_vm_load(ps->vm, img, len, why, sizeof why))
        return dipp_say(detail, cap, DIPP_E_UP_PROCS, "%s v%u: %s", name, version, why);
    assert(ps->count < PROC_STORE_IMAGES && len <= DISH_MAX_IMAGE); /* it took a free slot */
    proc_image *im = &ps->img[ps->count++];
    snprintf(im->name, sizeof im->name, "%s", name);
    im->version = version, im->len = (uint16_t)len;
    memcpy(im->bytes, img, len);
    int rc = save(ps);
    if (rc) {
        unload(ps, im);
        ps->count--;
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "%s/%s: %s: %s v%u not loaded",
                        ps->dir, PROC_STORE_FILE, strerror(-rc), name, version);
    }
    slot_list(im, slots, sizeof slots);
    return dipp_say(detail, cap, 0, "%s v%u: slots %s loaded", name, version, slots);
}

int proc_store_delete(proc_store *ps, unsigned slot, char *detail, size_t cap) {
    char why[160];
    if (dish_vm_delete(ps->vm, slot, why, sizeof why))
        return dipp_say(detail, cap, DIPP_E_UP_PROCS, "%s", why);
    proc_image *im = (proc_image *)proc_store_holding(ps, slot);
    assert(im); /* the runtime holds only what the store keeps */
    if (nprocs(im) > 1)
        drop_proc(im, slot);
    else {
        ps->count--;
        memmove(im, im + 1, (size_t)(ps->img + ps->count - im) * sizeof *im);
    }
    int rc = save(ps);
    if (rc)
        return dipp_say(detail, cap, DIPP_E_UP_STORE, "slot %u deleted, but %s/%s could not "
                    "be written (%s): it is back after a restart", slot, ps->dir,
                    PROC_STORE_FILE, strerror(-rc));
    return dipp_say(detail, cap, 0, "slot %u deleted", slot);
}
