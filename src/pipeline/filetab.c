/* filetab.c -- the file table (filetab.h): files.log read and appended,
 * with a hash of the names so the watcher finds a file's index at once. */
#include "filetab.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define HEADER 16
#define ENTRY_HEAD 12

void pl_filetab_init(pl_filetab *t) { memset(t, 0, sizeof(*t)); }

void pl_filetab_free(pl_filetab *t) {
    for (uint32_t i = 0; i < t->count; i++)
        free(t->names[i]);
    free(t->names);
    free(t->slots);
    pl_filetab_init(t);
}

static uint32_t hash_name(const char *name) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    return h;
}

static void slot_put(pl_filetab *t, uint32_t index) {
    uint32_t mask = t->nslots - 1, s = hash_name(t->names[index]) & mask;
    while (t->slots[s])
        s = (s + 1) & mask;
    t->slots[s] = index + 1;
}

/* Keeps the hash at most half full. */
static int grow(pl_filetab *t) {
    if (t->count == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        char **names = realloc(t->names, cap * sizeof(*names));
        if (!names)
            return -1;
        t->names = names;
        t->cap = cap;
    }
    if ((t->count + 1) * 2 <= t->nslots)
        return 0;
    uint32_t nslots = t->nslots ? t->nslots * 2 : 128;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -1;
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    for (uint32_t i = 0; i < t->count; i++)
        slot_put(t, i);
    return 0;
}

static int insert(pl_filetab *t, const char *name, size_t len) {
    char *copy = malloc(len + 1);
    if (!copy || grow(t) < 0) {
        free(copy);
        return -1;
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    t->names[t->count] = copy;
    slot_put(t, t->count++);
    return 0;
}

int64_t pl_filetab_find(const pl_filetab *t, const char *name) {
    if (!t->nslots)
        return -1;
    uint32_t mask = t->nslots - 1, s = hash_name(name) & mask;
    for (; t->slots[s]; s = (s + 1) & mask)
        if (strcmp(t->names[t->slots[s] - 1], name) == 0)
            return t->slots[s] - 1;
    return -1;
}

static uint32_t entry_crc(uint32_t index, const char *name, uint32_t len) {
    uint32_t fields[2] = {index, len};
    uLong crc = crc32(0L, (const Bytef *)fields, sizeof(fields));
    return (uint32_t)crc32(crc, (const Bytef *)name, len);
}

/* Whether head and the left bytes after it make a whole entry of that
 * index. */
static bool entry_whole(const uint32_t head[3], uint32_t index,
                        const char *name, size_t left) {
    return head[1] == index && head[2] > 0 && head[2] <= 4096 &&
           left >= head[2] && entry_crc(head[1], name, head[2]) == head[0];
}

/* Whether a name can be one of the folder's files, as the watcher lists
 * them: with a NUL, a slash, "." or "..", joined to the folder it would
 * name another file, or one outside it. */
static bool name_ok(const char *name, uint32_t len) {
    return !memchr(name, '\0', len) && !memchr(name, '/', len) &&
           !(len == 1 && name[0] == '.') &&
           !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* Whether a whole entry of a later index lies in buf past the bad one at
 * at. A crash tears only the end of the table (entries are appended), so
 * then it was damaged in the middle, and cutting it there would drop
 * files that keys.log names. Entries are not aligned: each offset is a
 * candidate, its CRC taken only where its index could follow, within a
 * budget whose excess (no torn tail reads like that) counts as damage. */
static bool whole_entry_after(const pl_filetab *t, const unsigned char *buf,
                              size_t size, size_t at) {
    uint64_t budget = 16 * (uint64_t)(size - at) + (1u << 20);
    for (size_t p = at + 1; size - p >= ENTRY_HEAD; p++) {
        uint32_t head[3];
        memcpy(head, buf + p, sizeof(head));
        size_t left = size - p - ENTRY_HEAD;
        if (head[1] <= t->count || head[1] - t->count > size - at ||
            head[2] == 0 || head[2] > left)
            continue;
        if (head[2] > budget)
            return true;
        budget -= head[2];
        if (entry_whole(head, head[1], (const char *)buf + p + ENTRY_HEAD,
                        left))
            return true;
    }
    return false;
}

/* Parses entries of buf[0, size) (the file from t->end) into t; returns
 * the bytes of whole valid entries. *why is NULL where what follows them
 * is a torn tail, else says why the table cannot be read on. */
static size_t parse_entries(pl_filetab *t, const unsigned char *buf,
                            size_t size, const char **why) {
    size_t at = 0;
    *why = NULL;
    while (size - at >= ENTRY_HEAD) {
        uint32_t head[3];
        memcpy(head, buf + at, sizeof(head));
        const char *name = (const char *)buf + at + ENTRY_HEAD;
        if (!entry_whole(head, t->count, name, size - at - ENTRY_HEAD))
            break;
        if (!name_ok(name, head[2])) {
            *why = "an entry names no file of the folder (a NUL, a slash, "
                   ". or ..): the table is corrupt";
            return at;
        }
        if (insert(t, name, head[2]) < 0) {
            *why = "out of memory";
            return at;
        }
        at += ENTRY_HEAD + head[2];
    }
    if (at < size && whole_entry_after(t, buf, size, at))
        *why = "damaged, with whole entries after it: the table is corrupt, "
               "not torn by a crash, so nothing of it is cut (restore it "
               "and keys.log from one copy)";
    return at;
}

static int read_new(pl_filetab *t, int fd, const char *path, char *err,
                    size_t errlen) {
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < t->end) {
        snprintf(err, errlen, "%s: %s", path,
                 errno ? strerror(errno) : "shrank");
        return -1;
    }
    size_t size = (size_t)((uint64_t)st.st_size - t->end);
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf || pread(fd, buf, size, (off_t)t->end) != (ssize_t)size) {
        free(buf);
        snprintf(err, errlen, "reading %s: %s", path, strerror(errno));
        return -1;
    }
    const char *why;
    t->end += parse_entries(t, buf, size, &why);
    free(buf);
    if (why) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    return 0;
}

static int check_header(pl_filetab *t, int fd, const char *path, char *err,
                        size_t errlen) {
    char head[HEADER];
    ssize_t n = pread(fd, head, sizeof(head), 0);
    if (n < (ssize_t)sizeof(head))
        return 1; /* empty, or torn at creation: no entries yet */
    if (memcmp(head, PL_FILETAB_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a file table (bad header)", path);
        return -1;
    }
    t->end = HEADER;
    return 0;
}

int pl_filetab_refresh(pl_filetab *t, const char *path, char *err,
                       size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "opening %s: %s", path, strerror(errno));
        return -1;
    }
    int rc = t->end ? 0 : check_header(t, fd, path, err, errlen);
    if (rc == 0)
        rc = read_new(t, fd, path, err, errlen);
    close(fd);
    return rc < 0 ? -1 : 0;
}

/* The header of an empty (or torn-at-creation) table. */
static int write_header(pl_filetab *t, int fd, const char *path, char *err,
                        size_t errlen) {
    char head[HEADER] = PL_FILETAB_MAGIC;
    uint32_t version = 1;
    memcpy(head + 8, &version, sizeof(version));
    if (ftruncate(fd, 0) < 0 ||
        pwrite(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
        snprintf(err, errlen, "%s: writing the header: %s", path,
                 strerror(errno));
        return -1;
    }
    t->end = HEADER;
    return 0;
}

int64_t pl_filetab_add(pl_filetab *t, int fd, const char *path,
                       const char *name, char *err, size_t errlen) {
    uint32_t len = (uint32_t)strlen(name);
    if (!t->end && write_header(t, fd, path, err, errlen) < 0)
        return -1;
    unsigned char entry[ENTRY_HEAD + 4096];
    uint32_t head[3] = {entry_crc(t->count, name, len), t->count, len};
    if (len == 0 || len > 4096) {
        snprintf(err, errlen, "%s: file name '%s' is too long", path, name);
        return -1;
    }
    memcpy(entry, head, sizeof(head));
    memcpy(entry + ENTRY_HEAD, name, len);
    ssize_t n = pwrite(fd, entry, ENTRY_HEAD + len, (off_t)t->end);
    if (n != (ssize_t)(ENTRY_HEAD + len) || insert(t, name, len) < 0) {
        snprintf(err, errlen, "%s: appending '%s': %s", path, name,
                 n < 0 ? strerror(errno) : "short write or out of memory");
        return -1;
    }
    t->end += ENTRY_HEAD + len;
    return t->count - 1;
}
