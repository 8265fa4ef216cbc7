/* faultfs.c -- the power-cut fault layer (faultfs.h). Files are inodes
 * with a written and a synced copy of their bytes; names map to an inode
 * as written and as synced. Every primitive (create, write, fsync,
 * rename, unlink, folder fsync) is one step; the cut happens as a step
 * starts, so that step and all after it do nothing. One folder level is
 * enough for the stores: a folder's fsync syncs every name. */
#include "faultfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform.h"

#define FF_FILES 256

typedef struct ff_data {
    uint8_t *bytes;
    size_t len;
} ff_data;

typedef struct ff_inode {
    int used;
    ff_data written, synced;
} ff_inode;

typedef struct ff_name {
    char path[600];
    int written, synced; /* inode, or -1 */
} ff_name;

static ff_inode inode[FF_FILES];
static ff_name names[FF_FILES];
static uint64_t steps, cut_at;
static int off;

static void data_set(ff_data *d, const ff_data *from) {
    free(d->bytes);
    d->bytes = from->len ? malloc(from->len) : NULL;
    if (from->len)
        memcpy(d->bytes, from->bytes, from->len);
    d->len = from->len;
}

/* One step; -EIO once the power is off. */
static int step(void) {
    if (!off && ++steps == cut_at)
        off = 1;
    return off ? -EIO : 0;
}

static ff_name *name_at(const char *path, int create) {
    ff_name *free_slot = NULL;
    for (int k = 0; k < FF_FILES; k++) {
        if (names[k].path[0] && strcmp(names[k].path, path) == 0)
            return &names[k];
        if (!names[k].path[0] && !free_slot)
            free_slot = &names[k];
    }
    if (!create || !free_slot)
        return NULL;
    snprintf(free_slot->path, sizeof free_slot->path, "%s", path);
    free_slot->written = free_slot->synced = -1;
    return free_slot;
}

static int referenced(int ino) {
    for (int k = 0; k < FF_FILES; k++)
        if (names[k].path[0] && (names[k].written == ino || names[k].synced == ino))
            return 1;
    return 0;
}

static int inode_new(void) {
    for (int k = 0; k < FF_FILES; k++)
        if (!inode[k].used || !referenced(k)) {
            ff_data none = {NULL, 0};
            inode[k].used = 1;
            data_set(&inode[k].written, &none);
            data_set(&inode[k].synced, &none);
            return k;
        }
    return -1;
}

static int ff_read(const char *path, uint8_t **data, size_t *len) {
    ff_name *n = name_at(path, 0);
    if (off)
        return -EIO;
    if (!n || n->written < 0)
        return -ENOENT;
    const ff_data *d = &inode[n->written].written;
    *data = malloc(d->len + 1);
    if (!*data)
        return -ENOMEM;
    if (d->len) /* an empty file has no bytes to copy (and may hold none) */
        memcpy(*data, d->bytes, d->len);
    (*data)[d->len] = 0;
    *len = d->len;
    return 0;
}

static int sync_names(void) {
    int rc = step();
    for (int k = 0; !rc && k < FF_FILES; k++)
        names[k].synced = names[k].written;
    return rc;
}

static int sync_file(int ino) {
    int rc = step();
    if (!rc)
        data_set(&inode[ino].synced, &inode[ino].written);
    return rc;
}

static int create(const char *path, int *ino) {
    ff_name *n = name_at(path, 1);
    int rc = step();
    if (!rc && (!n || (*ino = inode_new()) < 0))
        rc = -ENOSPC;
    if (!rc)
        n->written = *ino;
    return rc;
}

static int write_at(int ino, uint64_t at, const void *data, size_t len) {
    int rc = step();
    ff_data *d = &inode[ino].written;
    if (!rc && at + len > d->len) {
        d->bytes = realloc(d->bytes, at + len);
        memset(d->bytes + d->len, 0, at + len - d->len);
        d->len = at + len;
    }
    if (!rc && len)
        memcpy(d->bytes + at, data, len);
    return rc;
}

static int ff_replace(const char *dir, const char *name, const void *data,
                      size_t len) {
    char tmp[600], dst[600];
    int ino, rc;
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    if ((rc = create(tmp, &ino)) || (rc = write_at(ino, 0, data, len)) ||
        (rc = sync_file(ino)) || (rc = step()))
        return rc;
    name_at(dst, 1)->written = ino; /* the rename */
    name_at(tmp, 0)->written = -1;
    return sync_names();
}

static int ff_write_synced(const char *dir, const char *name, uint64_t at,
                           const void *data, size_t len) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ff_name *n = name_at(path, 0);
    int ino = n ? n->written : -1, created = ino < 0, rc = 0;
    if ((created && (rc = create(path, &ino))) || (rc = write_at(ino, at, data, len)) ||
        (rc = sync_file(ino)))
        return rc;
    return created ? sync_names() : 0;
}

static int ff_remove(const char *dir, const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ff_name *n = name_at(path, 0);
    if (off)
        return -EIO;
    if (!n || n->written < 0)
        return 0;
    int rc = step();
    if (!rc)
        n->written = -1;
    return rc ? rc : sync_names();
}

static const plat_fs faultfs = {ff_read, ff_replace, ff_write_synced, ff_remove};

void faultfs_install(void) {
    for (int k = 0; k < FF_FILES; k++) {
        free(inode[k].written.bytes);
        free(inode[k].synced.bytes);
        memset(&inode[k], 0, sizeof inode[k]);
        names[k].path[0] = 0;
    }
    steps = cut_at = 0;
    off = 0;
    plat_fs_use(&faultfs);
}

void faultfs_uninstall(void) {
    plat_fs_use(NULL);
}

void faultfs_cut_at(uint64_t n) {
    cut_at = n ? steps + n : 0;
}

uint64_t faultfs_steps(void) {
    return steps;
}

int faultfs_off(void) {
    return off;
}

void faultfs_power_up(void) {
    for (int k = 0; k < FF_FILES; k++) {
        names[k].written = names[k].synced;
        if (inode[k].used)
            data_set(&inode[k].written, &inode[k].synced);
    }
    steps = cut_at = 0;
    off = 0;
}
