/* watch_file.c -- registering what is new in one file of a dataset
 * (pl_watch_file): binary files read and CSV files mapped from their
 * progress on, a sample of the one-per-file format once its label file
 * is there.
 *
 * Only the dataset's owner's files are taken, and no symbolic link is
 * followed: the data folder may be one others can write to (a shared
 * folder), and what they put there must not become the owner's samples,
 * nor a link make the owner's private files readable as samples (by
 * those the dataset is shared with). The watcher runs as the owner, so
 * the owner is its effective user. Each file is opened as job_file.h
 * opens a job's output, which asks the same: no link followed, no wait
 * on a FIFO, a regular file of its owner, judged by what was opened. */
#include "watch_int.h"
#include "feed_trust.h"
#include "job_file.h"
#include "mapguard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LABEL_SUFFIX ".label"
#define LABEL_MAX 64
#define CHUNK_BYTES (512u << 10) /* stays in the cache while parsed */

static void reset_found(pl_watch *w) {
    w->found.count = 0;
    w->found.nbad = 0;
}

/* Registers base[done, size) of a CSV file in blocks. */
static int64_t register_rows(pl_watch *w, const char *name,
                             const unsigned char *base, uint64_t size,
                             int complete, int64_t mtime, char *err,
                             size_t errlen) {
    pl_csv_cols cols = {0};
    char why[256];
    int rc = pl_csv_columns(&w->conf, base, size, &cols, why, sizeof(why));
    if (rc != 0) {
        if (rc < 0)
            pl_watch_warn(w, name, why);
        return 0;
    }
    int64_t file = pl_watch_index(w, name, err, errlen);
    if (file < 0)
        return -1;
    uint64_t before = w->samples;
    for (uint64_t done = w->done[file]; !w->full; done = w->done[file]) {
        reset_found(w);
        pl_csv_find(&w->conf, &cols, base, done, size, complete, mtime,
                    (uint32_t)file, &w->found);
        if (w->found.done == done)
            break;
        if (pl_watch_commit(w, (uint32_t)file, name, err, errlen) < 0)
            return -1;
    }
    return (int64_t)(w->samples - before);
}

/* Whether a file of size bytes (index in the table, -1 when new) holds
 * nothing to register: empty, no longer than its progress, or shorter
 * than it (pl_watch_shrunk()). */
static int nothing_new(pl_watch *w, int64_t index, const char *name,
                       uint64_t size) {
    return pl_watch_shrunk(w, index, name, size) || size == 0 ||
           (index >= 0 && w->done[index] >= size);
}

/* register_rows() of a mapping, as pl_map_guarded() runs it. */
typedef struct rows_call {
    pl_watch *w;
    const char *name;
    const unsigned char *base;
    uint64_t size;
    int complete;
    int64_t mtime;
    char *err;
    size_t errlen;
    int64_t n;
} rows_call;

static void register_rows_call(void *arg) {
    rows_call *c = arg;
    c->n = register_rows(c->w, c->name, c->base, c->size, c->complete,
                         c->mtime, c->err, c->errlen);
}

/* CSV files are mapped: rows of any length, the header at the start. A
 * file cut shorter while it is read (its writer rewrote it in place) is
 * left with a warning: what was registered of it stays as it was. */
static int64_t register_csv(pl_watch *w, const char *name, int fd,
                            const struct stat *st, int complete, char *err,
                            size_t errlen) {
    int64_t index = pl_filetab_find(&w->files, name);
    uint64_t size = (uint64_t)st->st_size;
    if (nothing_new(w, index, name, size))
        return 0;
    void *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        pl_watch_warn(w, name, strerror(errno));
        return 0;
    }
    rows_call c = {w, name, base, size, complete, (int64_t)st->st_mtime, err,
                   errlen, 0};
    if (pl_map_guarded(register_rows_call, &c) < 0) {
        pl_watch_warn(w, name, "cut shorter while it was read; what was "
                               "registered of it before stays");
        c.n = 0;
    }
    munmap(base, size);
    return c.n;
}

/* The read buffer of binary files: whole records, about CHUNK_BYTES. */
static size_t chunk_size(pl_watch *w) {
    size_t rs = w->conf.record_size;
    size_t want = rs < CHUNK_BYTES ? CHUNK_BYTES / rs * rs : rs;
    if (w->chunk_cap < want) {
        free(w->chunk);
        w->chunk = malloc(want);
        w->chunk_cap = w->chunk ? want : 0;
    }
    return w->chunk_cap;
}

/* Finds the records of file[done, done + n), read into w->chunk; the
 * offsets are the file's. */
static void find_in_chunk(pl_watch *w, uint64_t done, size_t n, int last,
                          int64_t mtime, uint32_t file) {
    reset_found(w);
    pl_binary_find(&w->conf, w->chunk, 0, n, last, mtime, file, &w->found);
    for (uint32_t i = 0; i < w->found.count; i++)
        w->found.samples[i].offset += done;
    for (uint32_t i = 0; i < w->found.nbad; i++)
        w->found.bads[i].offset += done;
    w->found.done += done;
}

/* Binary files are read in chunks rather than mapped: the scan reads one
 * label per record, and a mapping costs a cache miss and a TLB miss for
 * each, where read() streams the file (registration then costs little
 * more than reading the file: bench/pipeline/bench_register.c). */
static int64_t register_binary(pl_watch *w, const char *name, int fd,
                               const struct stat *st, int complete, char *err,
                               size_t errlen) {
    int64_t index = pl_filetab_find(&w->files, name);
    uint64_t size = (uint64_t)st->st_size, before = w->samples;
    if (nothing_new(w, index, name, size))
        return 0;
    size_t chunk = chunk_size(w);
    if (!chunk) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if ((index = pl_watch_index(w, name, err, errlen)) < 0)
        return -1;
    for (uint64_t done = w->done[index]; !w->full && done < size;
         done = w->done[index]) {
        size_t want = size - done < chunk ? (size_t)(size - done) : chunk;
        ssize_t n = pread(fd, w->chunk, want, (off_t)done);
        if (n <= 0) {
            pl_watch_warn(w, name, n < 0 ? strerror(errno) : "shrank");
            break;
        }
        find_in_chunk(w, done, (size_t)n, complete && done + n == size,
                      (int64_t)st->st_mtime, (uint32_t)index);
        if (w->found.done == done) /* a partial record: wait for more */
            break;
        if (pl_watch_commit(w, (uint32_t)index, name, err, errlen) < 0)
            return -1;
    }
    return (int64_t)(w->samples - before);
}

/* The label in the label file open on fd: 0, 1 when the file is still
 * empty (being written: the sample waits for it), or -1 when it is not a
 * number. */
static int read_label(int fd, int64_t *label) {
    char buf[LABEL_MAX + 1];
    ssize_t n = read(fd, buf, LABEL_MAX);
    if (n <= 0)
        return n == 0 ? 1 : -1;
    buf[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    while (*end == '\n' || *end == '\r' || *end == ' ')
        end++;
    if (errno || end == buf || *end != '\0')
        return -1;
    *label = v;
    return 0;
}

/* The name of user uid, looked up once while the files the scan passes
 * over are that user's, not once a file each scan (a lookup may ask a
 * directory server). */
static const char *other_user(pl_watch *w, uid_t uid) {
    if (!w->other_name[0] || w->other_uid != uid) {
        feed_user_shown(uid, w->other_name, sizeof(w->other_name));
        w->other_uid = uid;
    }
    return w->other_name;
}

/* Opens the data folder's file name if it is the owner's regular file,
 * its fstat in *st; else says why, where that is news, and returns -1:
 * a link or another user's file is passed over (said once), a file gone
 * again or not a regular file (a folder, a FIFO) is not data. */
static int open_owners(pl_watch *w, const char *name, struct stat *st) {
    int fd = job_file_open_stat(w->dir_fd, name, geteuid(), NULL, st);
    if (fd >= 0)
        return fd;
    if (errno == ELOOP) {
        pl_watch_pass_over(w, name, "a symbolic link: not followed, "
                           "passed over");
    } else if (errno == EPERM) {
        char what[160];
        snprintf(what, sizeof(what), "owned by user %s, not by the "
                 "dataset's owner: passed over", other_user(w, st->st_uid));
        pl_watch_pass_over(w, name, what);
    } else if (errno != ENOENT && errno != EINVAL) {
        pl_watch_warn(w, name, strerror(errno));
    }
    return -1;
}

/* One sample per file: registered once both NAME and NAME.label are. */
static int64_t register_single(pl_watch *w, const char *name,
                               const struct stat *st, char *err,
                               size_t errlen) {
    char label_name[4400];
    struct stat lst;
    int64_t label;
    int n = snprintf(label_name, sizeof(label_name), "%s%s", name,
                     LABEL_SUFFIX);
    if (n < 0 || (size_t)n >= sizeof(label_name) ||
        pl_filetab_find(&w->files, name) >= 0)
        return 0;
    int fd = open_owners(w, label_name, &lst);
    if (fd < 0)
        return 0;
    int label_rc = read_label(fd, &label);
    close(fd);
    if (label_rc == 1)
        return 0;
    int64_t file = pl_watch_index(w, name, err, errlen);
    if (file < 0)
        return -1;
    reset_found(w);
    w->found.done = 1;
    if (st->st_size > UINT32_MAX)
        w->found.bads[w->found.nbad++] =
            (pl_bad_entry){.reason = PL_BAD_TOO_LONG};
    else if (st->st_size == 0)
        w->found.bads[w->found.nbad++] = (pl_bad_entry){.reason = PL_BAD_EMPTY};
    else if (label_rc < 0 || !pl_label_ok(&w->conf, label))
        w->found.bads[w->found.nbad++] =
            (pl_bad_entry){.reason = PL_BAD_LABEL_FILE};
    else
        w->found.samples[w->found.count++] = (pl_sample){
            .ts = st->st_mtime, .label = label, .file = (uint32_t)file,
            .len = (uint32_t)st->st_size};
    if (pl_watch_commit(w, (uint32_t)file, name, err, errlen) < 0)
        return -1;
    return w->found.count; /* 0 when the size limit left it out */
}

/* The data file an event's name stands for: NAME.label stands for NAME in
 * the one-per-file format. */
static const char *data_name(const pl_watch *w, const char *name, char *buf,
                             size_t size) {
    size_t len = strlen(name), slen = strlen(LABEL_SUFFIX);
    if (w->conf.format != PL_FORMAT_FILE || len <= slen ||
        strcmp(name + len - slen, LABEL_SUFFIX) != 0)
        return name;
    if (len - slen >= size)
        return NULL;
    memcpy(buf, name, len - slen);
    buf[len - slen] = '\0';
    return buf;
}

int64_t pl_watch_file(pl_watch *w, const char *name, int complete, char *err,
                      size_t errlen) {
    char buf[4200];
    name = data_name(w, name, buf, sizeof(buf));
    if (!name || w->full || !pl_watch_wanted(w, name))
        return 0;
    struct stat st;
    int fd = open_owners(w, name, &st);
    if (fd < 0)
        return 0;
    int64_t n =
        w->conf.format == PL_FORMAT_FILE
            ? register_single(w, name, &st, err, errlen)
        : w->conf.format == PL_FORMAT_BINARY
            ? register_binary(w, name, fd, &st, complete, err, errlen)
            : register_csv(w, name, fd, &st, complete, err, errlen);
    close(fd);
    return n;
}
