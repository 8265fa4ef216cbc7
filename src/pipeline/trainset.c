/* trainset.c -- writing and reading a trigger's training set (trainset.h).
 *
 * The writer streams the set through a small buffer, so a set of any size
 * costs one pass and no copy of the caller's array; the file appears under
 * its name only once it is whole and on disk (temporary name, fsync,
 * rename, fsync of the folder).
 */
#include "trainset.h"

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

/* A file being written: its descriptor, running CRC and name for errors. */
typedef struct ts_out {
    int fd;
    uLong crc;
    const char *path;
} ts_out;

static int fail_errno(char *err, size_t errlen, const char *path,
                      const char *what)
{
    snprintf(err, errlen, "%s: %s: %s", path, what, strerror(errno));
    return -1;
}

static int out_write(ts_out *out, const void *buf, size_t len, char *err,
                     size_t errlen)
{
    out->crc = crc32_z(out->crc, buf, len);
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(out->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return fail_errno(err, errlen, out->path, "write");
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The items, with their reserved field written as 0 whatever the caller's
 * array holds, so the file matches its layout. */
static int write_items(ts_out *out, const pl_trainset_item *items,
                       size_t count, char *err, size_t errlen)
{
    pl_trainset_item chunk[TRAINSET_CHUNK];
    for (size_t done = 0; done < count;) {
        size_t n = count - done < TRAINSET_CHUNK ? count - done : TRAINSET_CHUNK;
        for (size_t i = 0; i < n; i++)
            chunk[i] = (pl_trainset_item){items[done + i].key,
                                          items[done + i].weight, 0};
        if (out_write(out, chunk, n * sizeof chunk[0], err, errlen) < 0)
            return -1;
        done += n;
    }
    return 0;
}

static int write_body(ts_out *out, const pl_trainset_item *items,
                      size_t count, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen)
{
    trainset_header h = {.count = count, .seed = seed, .trigger = trigger};
    memcpy(h.magic, PL_TRAINSET_MAGIC, sizeof h.magic);
    if (out_write(out, &h, sizeof h, err, errlen) < 0 ||
        write_items(out, items, count, err, errlen) < 0)
        return -1;
    uint32_t crc = (uint32_t)out->crc;
    return out_write(out, &crc, sizeof crc, err, errlen);
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

int pl_trainset_write(const char *path, const pl_trainset_item *items,
                      size_t count, uint64_t seed, uint32_t trigger,
                      char *err, size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    ts_out out = {.crc = crc32(0, NULL, 0), .path = tmp};
    out.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out.fd < 0)
        return fail_errno(err, errlen, tmp, "create");
    int rc = write_body(&out, items, count, seed, trigger, err, errlen);
    if (rc == 0 && fsync(out.fd) < 0)
        rc = fail_errno(err, errlen, tmp, "fsync");
    if (close(out.fd) < 0 && rc == 0)
        rc = fail_errno(err, errlen, tmp, "close");
    if (rc == 0 && rename(tmp, path) < 0)
        rc = fail_errno(err, errlen, path, "rename into place");
    if (rc < 0) {
        unlink(tmp);
        return -1;
    }
    return sync_parent(path, err, errlen);
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
