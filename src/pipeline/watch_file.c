/* watch_file.c -- registering what is new in one file of a dataset
 * (pl_watch_file): binary and CSV files from their progress on, a sample
 * of the one-per-file format once its label file is there. */
#include "watch_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LABEL_SUFFIX ".label"
#define LABEL_MAX 64

static void reset_found(pl_watch *w) {
    w->found.count = 0;
    w->found.nbad = 0;
}

/* One pass over base[done, size) by format; 1 when it moved on. */
static int find_records(pl_watch *w, const pl_csv_cols *cols,
                        const unsigned char *base, uint64_t size,
                        uint64_t done, int complete, int64_t mtime,
                        uint32_t file) {
    reset_found(w);
    if (w->conf.format == PL_FORMAT_BINARY)
        pl_binary_find(&w->conf, base, done, size, complete, mtime, file,
                       &w->found);
    else
        pl_csv_find(&w->conf, cols, base, done, size, complete, mtime, file,
                    &w->found);
    return w->found.done > done;
}

/* Registers base[done, size) of a binary or CSV file in blocks. */
static int64_t register_records(pl_watch *w, const char *name,
                                const unsigned char *base, uint64_t size,
                                int complete, int64_t mtime, char *err,
                                size_t errlen) {
    pl_csv_cols cols = {0};
    char why[256];
    if (w->conf.format == PL_FORMAT_CSV) {
        int rc = pl_csv_columns(&w->conf, base, size, &cols, why, sizeof(why));
        if (rc != 0) {
            if (rc < 0)
                pl_watch_warn(w, name, why);
            return 0;
        }
    }
    int64_t file = pl_watch_index(w, name, err, errlen);
    if (file < 0)
        return -1;
    uint64_t before = w->samples;
    while (!w->full && find_records(w, &cols, base, size, w->done[file],
                                    complete, mtime, (uint32_t)file))
        if (pl_watch_commit(w, (uint32_t)file, name, err, errlen) < 0)
            return -1;
    return (int64_t)(w->samples - before);
}

static int64_t register_mapped(pl_watch *w, const char *name, int fd,
                               const struct stat *st, int complete, char *err,
                               size_t errlen) {
    int64_t index = pl_filetab_find(&w->files, name);
    uint64_t size = (uint64_t)st->st_size;
    if (size == 0 || (index >= 0 && w->done[index] >= size))
        return 0;
    void *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        pl_watch_warn(w, name, strerror(errno));
        return 0;
    }
    int64_t n = register_records(w, name, base, size, complete,
                                 (int64_t)st->st_mtime, err, errlen);
    munmap(base, size);
    return n;
}

/* The label in the file NAME.label: 0, or -1 when it is not a number. */
static int read_label_file(pl_watch *w, const char *label_name,
                           int64_t *label) {
    char buf[LABEL_MAX + 1];
    int fd = openat(w->dir_fd, label_name, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, LABEL_MAX);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
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

/* One sample per file: registered once both NAME and NAME.label are. */
static int64_t register_single(pl_watch *w, const char *name, int fd,
                               const struct stat *st, char *err,
                               size_t errlen) {
    char label_name[4200];
    struct stat lst;
    int64_t label;
    snprintf(label_name, sizeof(label_name), "%s%s", name, LABEL_SUFFIX);
    if (pl_filetab_find(&w->files, name) >= 0 ||
        fstatat(w->dir_fd, label_name, &lst, 0) < 0)
        return 0;
    int64_t file = pl_watch_index(w, name, err, errlen);
    if (file < 0)
        return -1;
    reset_found(w);
    w->found.done = 1;
    if (st->st_size > UINT32_MAX)
        w->found.bads[w->found.nbad++] =
            (pl_bad_entry){.reason = PL_BAD_TOO_LONG};
    else if (read_label_file(w, label_name, &label) < 0 ||
             !pl_label_ok(&w->conf, label))
        w->found.bads[w->found.nbad++] =
            (pl_bad_entry){.reason = PL_BAD_LABEL_FILE};
    else
        w->found.samples[w->found.count++] = (pl_sample){
            .ts = st->st_mtime, .label = label, .file = (uint32_t)file,
            .len = (uint32_t)st->st_size};
    if (w->full || pl_watch_commit(w, (uint32_t)file, name, err, errlen) < 0)
        return w->full ? 0 : -1;
    return w->found.count;
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
    int fd = openat(w->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0) {
        if (errno != ENOENT) /* gone again: nothing to say */
            pl_watch_warn(w, name, strerror(errno));
        return 0;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd); /* a folder or device among the files: not data */
        return 0;
    }
    int64_t n = w->conf.format == PL_FORMAT_FILE
                    ? register_single(w, name, fd, &st, err, errlen)
                    : register_mapped(w, name, fd, &st, complete, err, errlen);
    close(fd);
    return n;
}
