/* dataset.c -- reading a registered dataset (dataset.h): the key log and
 * file table read as they grow, samples' bytes from memory-mapped files,
 * their features by format (records.h). */
#include "dataset.h"
#include "dataset_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filetab.h"
#include "keylog.h"
#include "records.h"

typedef struct mapping {
    void *base;
    size_t size;
} mapping;

typedef struct file_view {
    mapping map;         /* the newest mapping of the file */
    pl_csv_cols cols;
    int cols_ok;
} file_view;

struct pl_dataset {
    pl_dsconf conf;
    char dsdir[4200], keys_path[4300], files_path[4300];
    pl_filetab files;
    pl_sample *samples;
    uint64_t count, cap, bytes, log_pos;
    pl_bad *bads;
    uint64_t nbad, bad_cap;
    file_view *views;    /* by file index, grown with the table */
    uint32_t nviews;
    mapping *retired;    /* older mappings of grown files, kept till close */
    size_t nretired;
    char stop_why[512];  /* why take_block stopped the scan, "" to read on */
};

char *pl_state_dir(char *buf, size_t size) {
    const char *aegis = getenv("AEGIS_STATE_HOME");
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int n = aegis && *aegis ? snprintf(buf, size, "%s", aegis)
            : xdg && *xdg   ? snprintf(buf, size, "%s/aegis", xdg)
            : home && *home ? snprintf(buf, size, "%s/.local/state/aegis", home)
                            : -1;
    return n < 0 || (size_t)n >= size ? NULL : buf;
}

static int grow_samples(pl_dataset *ds, uint64_t more) {
    if (ds->count + more <= ds->cap)
        return 0;
    uint64_t cap = ds->cap ? ds->cap : 1024;
    while (cap < ds->count + more)
        cap *= 2;
    pl_sample *grown = realloc(ds->samples, cap * sizeof(*grown));
    if (!grown)
        return -1;
    ds->samples = grown;
    ds->cap = cap;
    return 0;
}

static int add_bads(pl_dataset *ds, const pl_block_head *h,
                    const pl_bad_entry *bads) {
    if (ds->nbad + h->nbad > ds->bad_cap) {
        uint64_t cap = (ds->bad_cap + h->nbad) * 2;
        pl_bad *grown = realloc(ds->bads, cap * sizeof(*grown));
        if (!grown)
            return -1;
        ds->bads = grown;
        ds->bad_cap = cap;
    }
    for (uint32_t i = 0; i < h->nbad; i++)
        ds->bads[ds->nbad++] = (pl_bad){
            .file = h->file, .reason = bads[i].reason, .offset = bads[i].offset};
    return 0;
}

static int grow_views(pl_dataset *ds) {
    if (ds->files.count <= ds->nviews)
        return 0;
    file_view *grown = realloc(ds->views, ds->files.count * sizeof(*grown));
    if (!grown)
        return -1;
    memset(grown + ds->nviews, 0,
           (ds->files.count - ds->nviews) * sizeof(*grown));
    ds->views = grown;
    ds->nviews = ds->files.count;
    return 0;
}

/* Whether the file table names file, which the block at ds->log_pos of
 * keys.log names. The watcher appends a file's entry to files.log before
 * the first block naming it, and files.log only grows (its start-up cut
 * takes only a torn entry, which no block can name). The table was read
 * before keys.log, so a watcher running meanwhile may have listed the
 * file since: files.log is read again, now that the block has been read,
 * and must then name it. If it does not, files.log was cut or lost (or
 * keys.log came from another copy): its samples would be cut off
 * quietly, so it is refused, as the watcher refuses it. */
static bool file_listed(pl_dataset *ds, uint32_t file) {
    char err[400] = "";
    if (file < ds->files.count)
        return true;
    if (pl_filetab_refresh(&ds->files, ds->files_path, err, sizeof(err)) < 0 ||
        grow_views(ds) < 0) {
        snprintf(ds->stop_why, sizeof(ds->stop_why), "reading it again for "
                 "the block at byte %llu: %s", (unsigned long long)ds->log_pos,
                 err[0] ? err : "out of memory");
        return false;
    }
    if (file < ds->files.count)
        return true;
    /* the caller names keys.log's path: files.log lies beside it */
    snprintf(ds->stop_why, sizeof(ds->stop_why), "the block at byte %llu "
             "names file %u, past the %u files of files.log beside it: that "
             "table was cut or lost (restore both from one copy)",
             (unsigned long long)ds->log_pos, file, ds->files.count);
    return false;
}

/* A block: its samples and bad records. Stops (1) with ds->stop_why at a
 * file the table lacks (file_listed) or when memory runs out. */
static int take_block(void *ctx, const pl_block_head *h,
                      const pl_sample *samples, const pl_bad_entry *bads) {
    pl_dataset *ds = ctx;
    if (!file_listed(ds, h->file))
        return 1;
    if (grow_samples(ds, h->count) < 0 || add_bads(ds, h, bads) < 0) {
        snprintf(ds->stop_why, sizeof(ds->stop_why), "out of memory reading "
                 "the block at byte %llu", (unsigned long long)ds->log_pos);
        return 1;
    }
    if (h->count) /* a block of bad records only: ds->samples may be NULL */
        memcpy(ds->samples + ds->count, samples,
               h->count * sizeof(*samples));
    for (uint32_t i = 0; i < h->count; i++)
        ds->bytes += samples[i].len;
    ds->count += h->count;
    return 0;
}

/* Whether keys.log, missing or `size` bytes long, is still to be written
 * by a first watcher: only while nothing of it has been read. Found so
 * after blocks were read, it was deleted or cut, and saying nothing would
 * leave the reader's samples standing on a log that no longer has them. */
static int log_not_yet(const pl_dataset *ds, bool missing, uint64_t size,
                       char *err, size_t errlen) {
    if (ds->log_pos <= PL_KEYLOG_HEADER)
        return 1;
    if (missing)
        snprintf(err, errlen, "%s is gone, after %llu bytes of it were read",
                 ds->keys_path, (unsigned long long)ds->log_pos);
    else
        snprintf(err, errlen, "%s: shrank to %llu bytes, shorter than the "
                 "%llu already read", ds->keys_path,
                 (unsigned long long)size, (unsigned long long)ds->log_pos);
    return 0;
}

static int read_log(pl_dataset *ds, char *err, size_t errlen) {
    int fd = open(ds->keys_path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENOENT)
        return log_not_yet(ds, true, 0, err, errlen) ? 0 : -1;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, errlen, "opening %s: %s", ds->keys_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((uint64_t)st.st_size < PL_KEYLOG_HEADER) {
        close(fd);
        return log_not_yet(ds, false, (uint64_t)st.st_size, err, errlen)
                   ? 0 : -1;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        snprintf(err, errlen, "mapping %s: %s", ds->keys_path, strerror(errno));
        return -1;
    }
    uint64_t next_key = ds->count;
    char why[512];
    ds->stop_why[0] = '\0';
    int rc = pl_keylog_scan(base, (uint64_t)st.st_size, &ds->log_pos,
                            &next_key, take_block, ds, why, sizeof(why));
    munmap(base, (size_t)st.st_size);
    if (rc < 0 || rc == 1)
        snprintf(err, errlen, "%s: %s", ds->keys_path,
                 rc < 0 ? why : ds->stop_why);
    return rc == 0 ? 0 : -1;
}

int pl_dataset_refresh(pl_dataset *ds, char *err, size_t errlen) {
    if (pl_filetab_refresh(&ds->files, ds->files_path, err, errlen) < 0)
        return -1;
    if (grow_views(ds) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return read_log(ds, err, errlen);
}

int pl_dataset_open(const char *state, const char *name, pl_dataset **out,
                    char *err, size_t errlen) {
    pl_dataset *ds = calloc(1, sizeof(*ds));
    if (!ds) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pl_filetab_init(&ds->files);
    ds->log_pos = PL_KEYLOG_HEADER;
    if (pl_dataset_dir(state, name, ds->dsdir, sizeof(ds->dsdir)) < 0) {
        snprintf(err, errlen, "'%s' is not a dataset name", name);
    } else if (pl_dsconf_load(ds->dsdir, &ds->conf, err, errlen) == 0) {
        snprintf(ds->keys_path, sizeof(ds->keys_path), "%s/keys.log",
                 ds->dsdir);
        snprintf(ds->files_path, sizeof(ds->files_path), "%s/files.log",
                 ds->dsdir);
        if (pl_dataset_refresh(ds, err, errlen) == 0) {
            *out = ds;
            return 0;
        }
    }
    pl_dataset_close(ds);
    return -1;
}

void pl_dataset_close(pl_dataset *ds) {
    if (!ds)
        return;
    for (uint32_t i = 0; i < ds->nviews; i++)
        if (ds->views[i].map.base)
            munmap(ds->views[i].map.base, ds->views[i].map.size);
    for (size_t i = 0; i < ds->nretired; i++)
        munmap(ds->retired[i].base, ds->retired[i].size);
    pl_filetab_free(&ds->files);
    free(ds->retired);
    free(ds->views);
    free(ds->samples);
    free(ds->bads);
    free(ds);
}

uint64_t pl_dataset_count(const pl_dataset *ds) { return ds->count; }
const pl_sample *pl_dataset_samples(const pl_dataset *ds) { return ds->samples; }
const pl_dsconf *pl_dataset_conf(const pl_dataset *ds) { return &ds->conf; }
uint32_t pl_dataset_file_count(const pl_dataset *ds) { return ds->files.count; }
const char *pl_dataset_file_name(const pl_dataset *ds, uint32_t i) {
    return i < ds->files.count ? ds->files.names[i] : "?";
}
uint64_t pl_dataset_bad_count(const pl_dataset *ds) { return ds->nbad; }
const pl_bad *pl_dataset_bad(const pl_dataset *ds) { return ds->bads; }
uint64_t pl_dataset_sample_bytes(const pl_dataset *ds) { return ds->bytes; }

/* Maps file i anew, keeping an older, smaller mapping until close:
 * pointers handed out from it stay valid. */
static int map_file(pl_dataset *ds, uint32_t i, char *err, size_t errlen) {
    char path[8400];
    snprintf(path, sizeof(path), "%s/%s", ds->conf.dir, ds->files.names[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *base = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0)
        base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    mapping *retired = base == MAP_FAILED ? NULL
                       : realloc(ds->retired, (ds->nretired + 1) *
                                                  sizeof(*retired));
    if (!retired) {
        snprintf(err, errlen, "mapping %s: %s", path,
                 errno ? strerror(errno) : "empty file");
        if (base != MAP_FAILED)
            munmap(base, (size_t)st.st_size);
        return -1;
    }
    ds->retired = retired;
    if (ds->views[i].map.base)
        ds->retired[ds->nretired++] = ds->views[i].map;
    ds->views[i].map = (mapping){base, (size_t)st.st_size};
    return 0;
}

/* Whether s lies within m, written so that a hostile offset near 2^64
 * cannot wrap the sum of offset and length below the size. */
static int within(const mapping *m, const pl_sample *s) {
    return m->base && s->offset <= m->size && s->len <= m->size - s->offset;
}

const void *pl_dataset_bytes(pl_dataset *ds, uint64_t key, size_t *len,
                             char *err, size_t errlen) {
    if (key >= ds->count) {
        snprintf(err, errlen, "dataset %s: no sample with key %llu (%llu "
                 "registered)", ds->conf.name, (unsigned long long)key,
                 (unsigned long long)ds->count);
        return NULL;
    }
    const pl_sample *s = &ds->samples[key];
    mapping *m = &ds->views[s->file].map;
    if (!within(m, s) && map_file(ds, s->file, err, errlen) < 0)
        return NULL;
    if (!within(m, s)) {
        snprintf(err, errlen, "%s/%s: shorter than its registered samples",
                 ds->conf.dir, ds->files.names[s->file]);
        return NULL;
    }
    *len = s->len;
    return (const unsigned char *)m->base + s->offset;
}

/* A binary sample's features: its features are read at the record's
 * layout, so a sample of another length (a damaged log) is refused rather
 * than read past. */
static int binary_features(pl_dataset *ds, uint64_t key,
                           const unsigned char *rec, size_t len, float *out,
                           size_t max, size_t *dim, char *err,
                           size_t errlen) {
    if (len != ds->conf.record_size) {
        snprintf(err, errlen, "%s: sample %llu of %s/%s is %zu bytes, not "
                 "the dataset's record size %u", ds->keys_path,
                 (unsigned long long)key, ds->conf.dir,
                 ds->files.names[ds->samples[key].file], len,
                 (unsigned)ds->conf.record_size);
        return -1;
    }
    pl_binary_features(&ds->conf, rec, out, max, dim);
    return 0;
}

int pl_dataset_features(pl_dataset *ds, uint64_t key, float *out, size_t max,
                        size_t *dim, char *err, size_t errlen) {
    size_t len;
    const unsigned char *rec = pl_dataset_bytes(ds, key, &len, err, errlen);
    if (!rec)
        return -1;
    if (ds->conf.format == PL_FORMAT_BINARY)
        return binary_features(ds, key, rec, len, out, max, dim, err, errlen);
    if (ds->conf.format != PL_FORMAT_CSV) {
        snprintf(err, errlen, "dataset %s: one sample per file has no "
                 "features", ds->conf.name);
        return -1;
    }
    file_view *v = &ds->views[ds->samples[key].file];
    if (!v->cols_ok && pl_csv_columns(&ds->conf, v->map.base, v->map.size,
                                      &v->cols, err, errlen) != 0)
        return -1;
    v->cols_ok = 1;
    pl_csv_features(&ds->conf, &v->cols, rec, len, out, max, dim);
    return 0;
}
