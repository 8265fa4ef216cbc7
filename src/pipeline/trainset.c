/* trainset.c -- writing and reading a trigger's training set (trainset.h).
 *
 * The writer streams the set through a small buffer (trainset_writer.h),
 * so a set of any size costs one pass and no copy; the file appears under
 * its name only once it is whole and on disk (temporary name, fsync,
 * rename, fsync of the folder).
 */
#include "trainset.h"
#include "trainset_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trainset.c writes its little-endian layout from host integers"
#endif

typedef struct trainset_header {
    char magic[8];
    uint64_t count;
    uint64_t seed;
    uint32_t trigger;
    uint32_t reserved;
} trainset_header;

_Static_assert(sizeof(trainset_header) == 32, "trainset header layout");

/* Items per write: 64 KiB, big enough that system calls do not show. */
#define TRAINSET_CHUNK 4096

struct pl_trainset_writer {
    int fd;
    uLong items_crc;             /* CRC-32 of the items written so far */
    uint64_t count;              /* items written so far */
    size_t nbuf;                 /* items waiting in buf */
    pl_trainset_item buf[TRAINSET_CHUNK];
    char path[4096];             /* where the set goes */
    char tmp[4104];              /* path.tmp, while it is written */
};

static int fail_errno(char *err, size_t errlen, const char *path,
                      const char *what)
{
    snprintf(err, errlen, "%s: %s: %s", path, what, strerror(errno));
    return -1;
}

static int write_all(int fd, const void *buf, size_t len, const char *path,
                     char *err, size_t errlen)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno(err, errlen, path, "write");
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int flush_items(pl_trainset_writer *w, char *err, size_t errlen)
{
    size_t bytes = w->nbuf * sizeof w->buf[0];
    w->items_crc = crc32_z(w->items_crc, (const Bytef *)w->buf, bytes);
    w->nbuf = 0;
    return write_all(w->fd, w->buf, bytes, w->tmp, err, errlen);
}

pl_trainset_writer *pl_trainset_begin(const char *path, char *err,
                                      size_t errlen)
{
    pl_trainset_writer *w = calloc(1, sizeof *w);
    if (!w || strlen(path) >= sizeof w->path) {
        snprintf(err, errlen, "%s: %s", path, w ? "path too long" : "out of memory");
        free(w);
        return NULL;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
    w->items_crc = crc32(0, NULL, 0);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    /* The header's place, filled in by pl_trainset_finish. */
    trainset_header blank = {0};
    if (w->fd < 0 || write_all(w->fd, &blank, sizeof blank, w->tmp, err, errlen) < 0) {
        if (w->fd < 0)
            fail_errno(err, errlen, w->tmp, "create");
        pl_trainset_abort(w);
        return NULL;
    }
    return w;
}

int pl_trainset_add(pl_trainset_writer *w, uint64_t key, float weight,
                    char *err, size_t errlen)
{
    w->buf[w->nbuf++] = (pl_trainset_item){key, weight, 0};
    w->count++;
    return w->nbuf == TRAINSET_CHUNK ? flush_items(w, err, errlen) : 0;
}

void pl_trainset_abort(pl_trainset_writer *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->tmp);
    }
    free(w);
}

/* The header at the front and the checksum at the end: the CRC of the
 * whole file is the header's combined with the items' (zlib's
 * crc32_combine), so the items are not read back. */
static int write_ends(pl_trainset_writer *w, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen)
{
    trainset_header h = {.count = w->count, .seed = seed, .trigger = trigger};
    memcpy(h.magic, PL_TRAINSET_MAGIC, sizeof h.magic);
    uLong crc = crc32_combine(crc32_z(crc32(0, NULL, 0), (const Bytef *)&h, sizeof h),
                              w->items_crc,
                              (z_off_t)(w->count * sizeof(pl_trainset_item)));
    uint32_t trailer = (uint32_t)crc;
    if (write_all(w->fd, &trailer, sizeof trailer, w->tmp, err, errlen) < 0)
        return -1;
    if (pwrite(w->fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return fail_errno(err, errlen, w->tmp, "write header");
    return 0;
}

/* Makes the rename durable: fsync of the folder that holds PATH. */
static int sync_parent(const char *path, char *err, size_t errlen)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    const char *dir = dirname(buf);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fail_errno(err, errlen, dir, "open folder");
    int rc = fsync(fd);
    close(fd);
    return rc < 0 ? fail_errno(err, errlen, dir, "fsync folder") : 0;
}

int pl_trainset_finish(pl_trainset_writer *w, uint64_t seed, uint32_t trigger,
                       char *err, size_t errlen)
{
    if (flush_items(w, err, errlen) < 0 ||
        write_ends(w, seed, trigger, err, errlen) < 0)
        goto fail;
    if (fsync(w->fd) < 0) {
        fail_errno(err, errlen, w->tmp, "fsync");
        goto fail;
    }
    int rc = close(w->fd);
    w->fd = -1;
    if (rc < 0 || rename(w->tmp, w->path) < 0) {
        fail_errno(err, errlen, w->path, rc < 0 ? "close" : "rename into place");
        unlink(w->tmp);
        goto fail;
    }
    rc = sync_parent(w->path, err, errlen);
    free(w);
    return rc;
fail:
    pl_trainset_abort(w);
    return -1;
}

int pl_trainset_write(const char *path, const pl_trainset_item *items,
                      size_t count, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen)
{
    pl_trainset_writer *w = pl_trainset_begin(path, err, errlen);
    if (!w)
        return -1;
    for (size_t i = 0; i < count; i++)
        if (pl_trainset_add(w, items[i].key, items[i].weight, err, errlen) < 0) {
            pl_trainset_abort(w);
            return -1;
        }
    return pl_trainset_finish(w, seed, trigger, err, errlen);
}

/* The whole file in memory: a set is read once, at a training's start. */
static int slurp(const char *path, unsigned char **data, size_t *size,
                 char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail_errno(err, errlen, path, "open");
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return fail_errno(err, errlen, path, "stat");
    }
    *size = (size_t)st.st_size;
    *data = malloc(*size ? *size : 1);
    if (!*data) {
        close(fd);
        snprintf(err, errlen, "%s: out of memory for %zu bytes", path, *size);
        return -1;
    }
    size_t got = 0;
    while (got < *size) {
        ssize_t n = read(fd, *data + got, *size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    int saved = errno;
    close(fd);
    if (got == *size)
        return 0;
    free(*data);
    errno = saved;
    return fail_errno(err, errlen, path, "read (file shrank while read?)");
}

/* Checks the header, size and checksum of a file's bytes. */
static int check_set(const char *path, const unsigned char *data, size_t size,
                     trainset_header *h, char *err, size_t errlen)
{
    if (size < sizeof *h + sizeof(uint32_t)) {
        snprintf(err, errlen, "%s: %zu bytes, shorter than a training set's "
                 "header and checksum", path, size);
        return -1;
    }
    memcpy(h, data, sizeof *h);
    if (memcmp(h->magic, PL_TRAINSET_MAGIC, sizeof h->magic) != 0) {
        snprintf(err, errlen, "%s: not a training set (bad magic)", path);
        return -1;
    }
    size_t items = (size - sizeof *h - sizeof(uint32_t)) / sizeof(pl_trainset_item);
    if (h->count != items ||
        size != sizeof *h + items * sizeof(pl_trainset_item) + sizeof(uint32_t)) {
        snprintf(err, errlen, "%s: header says %llu items but the file holds "
                 "%zu bytes (truncated or extended)", path,
                 (unsigned long long)h->count, size);
        return -1;
    }
    uint32_t stored;
    memcpy(&stored, data + size - sizeof stored, sizeof stored);
    uLong crc = crc32_z(crc32(0, NULL, 0), data, size - sizeof stored);
    if ((uint32_t)crc != stored) {
        snprintf(err, errlen, "%s: checksum mismatch (file corrupted)", path);
        return -1;
    }
    return 0;
}

int pl_trainset_read(const char *path, pl_trainset_item **items,
                     size_t *count, uint64_t *seed, uint32_t *trigger,
                     char *err, size_t errlen)
{
    unsigned char *data;
    size_t size;
    trainset_header h;
    if (slurp(path, &data, &size, err, errlen) < 0)
        return -1;
    if (check_set(path, data, size, &h, err, errlen) < 0) {
        free(data);
        return -1;
    }
    size_t bytes = h.count * sizeof(pl_trainset_item);
    /* The items move to the front of the buffer the file was read into,
     * so a 10M-key set is not held twice. */
    memmove(data, data + sizeof h, bytes);
    *items = (pl_trainset_item *)data;
    *count = h.count;
    *seed = h.seed;
    *trigger = h.trigger;
    return 0;
}
