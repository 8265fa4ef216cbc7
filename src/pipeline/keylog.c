/* keylog.c -- the key log's blocks: checksummed appends and the scan that
 * finds where the valid log ends (keylog.h). */
#include "keylog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
    [PL_BAD_EMPTY_FIELD] = "empty field",
    [PL_BAD_EMPTY] = "empty sample file",
};

const char *pl_bad_reason_text(uint32_t reason) {
    if (reason == 0 || reason >= sizeof(reason_texts) / sizeof(*reason_texts))
        return "unknown";
    return reason_texts[reason];
}

/* A run's labels are padded to 8 bytes, so every block, sample and bad
 * record in the log lies 8-byte aligned (the readers cast the mapping). */
static uint64_t samples_size(const pl_block_head *h) {
    uint64_t labels = ((uint64_t)h->count * sizeof(int32_t) + 7) & ~7ull;
    return h->flags & PL_BLOCK_RUN ? sizeof(pl_run_head) + labels
                                   : (uint64_t)h->count * sizeof(pl_sample);
}

static uint64_t block_size(const pl_block_head *h) {
    return sizeof(*h) + samples_size(h) +
           (uint64_t)h->nbad * sizeof(pl_bad_entry);
}

/* crc carried over len bytes at p: zlib's crc32() of a NULL buffer is
 * its initial value whatever crc was, so none is given it. */
static uLong crc_more(uLong crc, const void *p, size_t len) {
    return len ? crc32(crc, p, (uInt)len) : crc;
}

static uint32_t block_crc(const pl_block_head *h, const void *samples,
                          const void *bads) {
    pl_block_head zeroed = *h;
    zeroed.crc = 0;
    uLong crc = crc32(0L, (const Bytef *)&zeroed, sizeof(zeroed));
    crc = crc_more(crc, samples, samples_size(h));
    return (uint32_t)crc_more(crc, bads, h->nbad * sizeof(pl_bad_entry));
}

/* Whether the block at p (left bytes to the end) is whole and its
 * checksum right; its head into *h. */
static int block_whole(const unsigned char *p, uint64_t left,
                       pl_block_head *h) {
    if (left < sizeof(*h))
        return 0;
    memcpy(h, p, sizeof(*h));
    /* a run of no samples is never written (readers expand a run into a
     * buffer of count samples, none for 0) */
    if (h->magic != PL_BLOCK_MAGIC || (h->flags & ~PL_BLOCK_RUN) ||
        (h->flags & PL_BLOCK_RUN && h->count == 0) || block_size(h) > left)
        return 0;
    const unsigned char *samples = p + sizeof(*h);
    return block_crc(h, samples, samples + samples_size(h)) == h->crc;
}

/* Whether the block at p is whole, valid and the next: its first key
 * next_key. */
static int block_ok(const unsigned char *p, uint64_t left, uint64_t next_key) {
    pl_block_head h;
    return block_whole(p, left, &h) && h.first_key == next_key;
}

/* What lies past the bad block at pos: 0 nothing whole (a torn tail),
 * 1 a whole block, 2 heads claiming more bytes than a torn tail's check
 * may read. A crash tears only the end of the log (blocks are appended),
 * so for 1 the log was damaged in the middle: cutting it there would drop
 * registered samples and later give their keys to others. Blocks lie
 * 8-byte aligned. Each candidate costs a CRC of the block it claims, so
 * heads claiming the rest of the file, one every 8 bytes, would cost the
 * square of its size: a block past pos holds keys from next_key on, which
 * rules out others cheaply, and the CRCs are held to a budget whose
 * excess (no torn tail reads like that) is 2, refused like damage. */
static int whole_block_after(const unsigned char *base, uint64_t size,
                             uint64_t pos, uint64_t next_key) {
    pl_block_head h;
    uint64_t budget = 16 * (size - pos) + (1u << 20);
    for (uint64_t p = pos + 8; p + sizeof(h) <= size; p += 8) {
        memcpy(&h, base + p, sizeof(h));
        if (h.magic != PL_BLOCK_MAGIC || h.first_key < next_key)
            continue;
        uint64_t claimed = block_size(&h);
        if (claimed > size - p) /* not whole: no CRC to compute */
            continue;
        if (claimed > budget)
            return 2;
        budget -= claimed;
        if (block_whole(base + p, size - p, &h))
            return 1;
    }
    return 0;
}

/* A run block's samples as pl_samples, into *buf (grown as needed). */
static const pl_sample *expand_run(const pl_block_head *h,
                                   const unsigned char *payload,
                                   pl_sample **buf, uint32_t *cap) {
    pl_run_head run;
    memcpy(&run, payload, sizeof(run));
    if (h->count > *cap) {
        pl_sample *grown = realloc(*buf, h->count * sizeof(*grown));
        if (!grown)
            return NULL;
        *buf = grown;
        *cap = h->count;
    }
    const unsigned char *labels = payload + sizeof(run);
    for (uint32_t i = 0; i < h->count; i++) {
        int32_t label;
        memcpy(&label, labels + i * sizeof(label), sizeof(label));
        (*buf)[i] = (pl_sample){
            .key = h->first_key + i, .ts = run.ts, .label = label,
            .file = h->file, .len = run.record_size,
            .offset = run.first_offset + (uint64_t)i * run.record_size};
    }
    return *buf;
}

/* The first of a block's samples that is not its own (of another file, or
 * keyed other than first_key + i), or count when all are. Readers index
 * files and keys by them, so a stray one would send them out of bounds;
 * a run block's samples are its own by making. */
static uint32_t stray_sample(const pl_block_head *h,
                             const pl_sample *samples) {
    uint32_t i = 0;
    while (i < h->count && samples[i].file == h->file &&
           samples[i].key == h->first_key + i)
        i++;
    return i;
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
    if (*pos > size) { /* replaced by an older copy, say */
        snprintf(err, errlen, "shrank to %llu bytes, shorter than the %llu "
                 "already read", (unsigned long long)size,
                 (unsigned long long)*pos);
        return -1;
    }
    pl_sample *expanded = NULL;
    uint32_t cap = 0;
    int stop = 0;
    while (!stop && block_ok(base + *pos, size - *pos, *next_key)) {
        const pl_block_head *h = (const pl_block_head *)(base + *pos);
        const unsigned char *payload = (const unsigned char *)(h + 1);
        const pl_sample *samples =
            h->flags & PL_BLOCK_RUN
                ? expand_run(h, payload, &expanded, &cap)
                : (const pl_sample *)payload;
        uint32_t stray = samples ? stray_sample(h, samples) : 0;
        if (!samples)
            snprintf(err, errlen, "out of memory expanding the block at "
                     "byte %llu", (unsigned long long)*pos);
        else if (stray < h->count)
            snprintf(err, errlen, "the block at byte %llu (file %u, keys "
                     "from %llu) holds a sample of file %u with key %llu: "
                     "the log is corrupt (restore it from a copy)",
                     (unsigned long long)*pos, h->file,
                     (unsigned long long)h->first_key, samples[stray].file,
                     (unsigned long long)samples[stray].key);
        if (!samples || stray < h->count) {
            free(expanded);
            return -1;
        }
        stop = (visit && visit(ctx, h, samples,
                               (const pl_bad_entry *)(payload +
                                                      samples_size(h))));
        if (!stop) {
            *pos += block_size(h);
            *next_key += h->count;
        }
    }
    free(expanded);
    int after = !stop && *pos < size
                    ? whole_block_after(base, size, *pos, *next_key) : 0;
    if (after) {
        snprintf(err, errlen, "damaged at byte %llu, with %s after it: the "
                 "log is corrupt, not torn by a crash, so nothing of it is "
                 "read or cut (restore it from a copy)",
                 (unsigned long long)*pos,
                 after == 1 ? "whole blocks" : "too many block heads");
        return -1;
    }
    return stop;
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

/* Whether samples make a run: one after another, of one size and time,
 * labels that fit in int32. */
static int is_run(const pl_sample *samples, uint32_t count) {
    for (uint32_t i = 0; i < count; i++)
        if (samples[i].len != samples[0].len ||
            samples[i].ts != samples[0].ts ||
            samples[i].offset != samples[0].offset +
                                     (uint64_t)i * samples[0].len ||
            samples[i].label != (int32_t)samples[i].label)
            return 0;
    return count > 0;
}

/* The run payload of samples, malloc'd; NULL when memory runs out. */
static unsigned char *run_payload(const pl_sample *samples, uint32_t count) {
    pl_run_head run = {.first_offset = samples[0].offset,
                       .ts = samples[0].ts, .record_size = samples[0].len};
    size_t labels = (count * sizeof(int32_t) + 7) & ~(size_t)7;
    unsigned char *p = calloc(1, sizeof(run) + labels);
    if (!p)
        return NULL;
    memcpy(p, &run, sizeof(run));
    for (uint32_t i = 0; i < count; i++) {
        int32_t label = (int32_t)samples[i].label;
        memcpy(p + sizeof(run) + i * sizeof(label), &label, sizeof(label));
    }
    return p;
}

int pl_keylog_append(int fd, const char *path, uint32_t file,
                     uint64_t first_key, uint64_t done,
                     const pl_sample *samples, uint32_t count,
                     const pl_bad_entry *bads, uint32_t nbad, char *err,
                     size_t errlen) {
    pl_block_head h = {.magic = PL_BLOCK_MAGIC, .count = count, .nbad = nbad,
                       .file = file, .first_key = first_key, .done = done};
    unsigned char *run = is_run(samples, count) ? run_payload(samples, count)
                                                : NULL;
    h.flags = run ? PL_BLOCK_RUN : 0;
    const void *payload = run ? (const void *)run : (const void *)samples;
    h.crc = block_crc(&h, payload, bads);
    struct iovec iov[3] = {
        {&h, sizeof(h)},
        {(void *)payload, samples_size(&h)},
        {(void *)bads, nbad * sizeof(pl_bad_entry)}};
    ssize_t want = (ssize_t)block_size(&h);
    ssize_t n = writev(fd, iov, 3);
    free(run);
    if (n != want) {
        snprintf(err, errlen, "%s: appending a block: %s", path,
                 n < 0 ? strerror(errno) : "short write");
        return -1;
    }
    return 0;
}
