/* keylog.c -- the key log's blocks: checksummed appends and the scan that
 * finds where the valid log ends (keylog.h). */
#include "keylog.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

static const char *const reason_texts[] = {
    [PL_BAD_TRUNCATED] = "truncated record",
    [PL_BAD_FIELDS] = "wrong number of fields",
    [PL_BAD_LABEL] = "bad or out-of-range label",
    [PL_BAD_TIMESTAMP] = "bad timestamp",
    [PL_BAD_LABEL_FILE] = "missing or bad label file",
    [PL_BAD_TOO_LONG] = "sample longer than 4 GiB",
};

const char *pl_bad_reason_text(uint32_t reason) {
    if (reason == 0 || reason >= sizeof(reason_texts) / sizeof(*reason_texts))
        return "unknown";
    return reason_texts[reason];
}

static uint32_t block_crc(const pl_block_head *h, const void *samples,
                          const void *bads) {
    pl_block_head zeroed = *h;
    zeroed.crc = 0;
    uLong crc = crc32(0L, (const Bytef *)&zeroed, sizeof(zeroed));
    crc = crc32(crc, samples, (uInt)(h->count * sizeof(pl_sample)));
    return (uint32_t)crc32(crc, bads, (uInt)(h->nbad * sizeof(pl_bad_entry)));
}

static uint64_t block_size(const pl_block_head *h) {
    return sizeof(*h) + (uint64_t)h->count * sizeof(pl_sample) +
           (uint64_t)h->nbad * sizeof(pl_bad_entry);
}

/* Whether the block at p (left bytes to the end) is whole and valid. */
static int block_ok(const unsigned char *p, uint64_t left, uint64_t next_key) {
    pl_block_head h;
    if (left < sizeof(h))
        return 0;
    memcpy(&h, p, sizeof(h));
    if (h.magic != PL_BLOCK_MAGIC || h.first_key != next_key ||
        block_size(&h) > left)
        return 0;
    const unsigned char *samples = p + sizeof(h);
    return block_crc(&h, samples, samples + h.count * sizeof(pl_sample)) ==
           h.crc;
}

static int header_ok(const unsigned char *base, uint64_t size) {
    uint32_t fields[2];
    if (size < PL_KEYLOG_HEADER || memcmp(base, PL_KEYLOG_MAGIC, 8) != 0)
        return 0;
    memcpy(fields, base + 8, sizeof(fields));
    return fields[0] == 1 && fields[1] == sizeof(pl_sample);
}

int pl_keylog_scan(const unsigned char *base, uint64_t size, uint64_t *pos,
                   uint64_t *next_key, pl_block_visit visit, void *ctx,
                   char *err, size_t errlen) {
    if (!header_ok(base, size)) {
        snprintf(err, errlen, "not a key log (bad header)");
        return -1;
    }
    while (block_ok(base + *pos, size - *pos, *next_key)) {
        const pl_block_head *h = (const pl_block_head *)(base + *pos);
        const pl_sample *samples = (const pl_sample *)(h + 1);
        if (visit && visit(ctx, h, samples,
                           (const pl_bad_entry *)(samples + h->count)))
            return 0;
        *pos += block_size(h);
        *next_key += h->count;
    }
    return 0;
}

int pl_keylog_header(int fd, const char *path, char *err, size_t errlen) {
    unsigned char head[PL_KEYLOG_HEADER];
    uint32_t fields[2] = {1, sizeof(pl_sample)};
    ssize_t n = pread(fd, head, sizeof(head), 0);
    if (n == (ssize_t)sizeof(head)) {
        if (header_ok(head, sizeof(head)))
            return 0;
        snprintf(err, errlen, "%s: not a key log (bad header)", path);
        return -1;
    }
    /* Empty or a header torn by a crash at creation: write it again. */
    memcpy(head, PL_KEYLOG_MAGIC, 8);
    memcpy(head + 8, fields, sizeof(fields));
    if (ftruncate(fd, 0) < 0 || pwrite(fd, head, sizeof(head), 0) !=
                                    (ssize_t)sizeof(head)) {
        snprintf(err, errlen, "%s: writing the header: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int pl_keylog_append(int fd, const char *path, uint32_t file,
                     uint64_t first_key, uint64_t done,
                     const pl_sample *samples, uint32_t count,
                     const pl_bad_entry *bads, uint32_t nbad, char *err,
                     size_t errlen) {
    pl_block_head h = {.magic = PL_BLOCK_MAGIC, .count = count, .nbad = nbad,
                       .file = file, .first_key = first_key, .done = done};
    h.crc = block_crc(&h, samples, bads);
    struct iovec iov[3] = {
        {&h, sizeof(h)},
        {(void *)samples, count * sizeof(pl_sample)},
        {(void *)bads, nbad * sizeof(pl_bad_entry)}};
    ssize_t want = (ssize_t)block_size(&h);
    ssize_t n = writev(fd, iov, 3);
    if (n != want) {
        snprintf(err, errlen, "%s: appending a block: %s", path,
                 n < 0 ? strerror(errno) : "short write");
        return -1;
    }
    return 0;
}
