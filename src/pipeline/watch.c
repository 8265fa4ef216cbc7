/* watch.c -- the watcher's state and one file's registration (watch.h):
 * the log opened and its tail cut, each file's progress, new records found
 * (records.h) and appended as blocks (keylog.h). */
#include "watch_int.h"
#include "text_safe.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"

#define BLOCK_MAX 65536 /* samples per block: bounds the watcher's memory */

static int fail(char *err, size_t errlen, const char *what, const char *path) {
    snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
    return -1;
}

/* Grows the progress array to cover file, new entries 0 (nothing of
 * theirs registered). */
static int cover_file(pl_watch *w, uint32_t file) {
    if (file < w->done_cap)
        return 0;
    uint32_t cap = w->done_cap ? w->done_cap : 256;
    while (cap <= file)
        cap *= 2;
    uint64_t *grown = realloc(w->done, cap * sizeof(*grown));
    if (grown)
        w->done = grown;
    uint8_t *flags = grown ? realloc(w->shrunk, cap) : NULL;
    if (!flags)
        return -1;
    w->shrunk = flags;
    memset(grown + w->done_cap, 0, (cap - w->done_cap) * sizeof(*grown));
    memset(flags + w->done_cap, 0, cap - w->done_cap);
    w->done_cap = cap;
    return 0;
}

/* Records file's progress, growing the array to cover it. */
static int set_done(pl_watch *w, uint32_t file, uint64_t done) {
    if (cover_file(w, file) < 0)
        return -1;
    w->done[file] = done;
    return 0;
}

static void count_block(pl_watch *w, const pl_sample *samples, uint32_t count,
                        uint32_t nbad) {
    for (uint32_t i = 0; i < count; i++)
        w->bytes += samples[i].len;
    w->samples += count;
    w->nbad += nbad;
}

/* A block of the existing log: its file's progress. Stops (1) at a block
 * naming a file the table lacks, or when memory runs out: both errors,
 * not a place to cut the log (the blocks after it are valid). */
static int replay_block(void *ctx, const pl_block_head *h,
                        const pl_sample *samples, const pl_bad_entry *bads) {
    pl_watch *w = ctx;
    if (h->file >= w->files.count || set_done(w, h->file, h->done) < 0)
        return 1;
    count_block(w, samples, h->count, h->nbad);
    return 0;
}

/* Reads keys.log to its last valid block and cuts what follows. */
static int replay_log(pl_watch *w, char *err, size_t errlen) {
    struct stat st;
    if (fstat(w->keys_fd, &st) < 0)
        return fail(err, errlen, "reading", w->keys_path);
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED,
                      w->keys_fd, 0);
    if (base == MAP_FAILED)
        return fail(err, errlen, "mapping", w->keys_path);
    uint64_t pos = PL_KEYLOG_HEADER, next_key = 0;
    char why[256];
    int rc = pl_keylog_scan(base, (uint64_t)st.st_size, &pos, &next_key,
                            replay_block, w, why, sizeof(why));
    munmap(base, (size_t)st.st_size);
    if (rc == 1)
        snprintf(why, sizeof(why), "the block at byte %llu names a file "
                 "past the %u of files.log beside it, or memory ran out: "
                 "nothing of it is cut (restore both from one copy)",
                 (unsigned long long)pos, w->files.count);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", w->keys_path, why);
        return -1;
    }
    if ((uint64_t)st.st_size > pos && ftruncate(w->keys_fd, (off_t)pos) < 0)
        return fail(err, errlen, "cutting the torn tail of", w->keys_path);
    return 0;
}

static int open_logs(pl_watch *w, char *err, size_t errlen) {
    w->dir_fd = open(w->conf.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dir_fd < 0)
        return fail(err, errlen, "opening the dataset's folder", w->conf.dir);
    w->keys_fd = open(w->keys_path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC,
                      0644);
    if (w->keys_fd < 0)
        return fail(err, errlen, "opening", w->keys_path);
    if (flock(w->keys_fd, LOCK_EX | LOCK_NB) < 0) {
        snprintf(err, errlen, "%s: another watcher of dataset %s is running",
                 w->keys_path, w->conf.name);
        return -1;
    }
    w->files_fd = open(w->files_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (w->files_fd < 0)
        return fail(err, errlen, "opening", w->files_path);
    if (pl_keylog_header(w->keys_fd, w->keys_path, err, errlen) < 0 ||
        pl_filetab_refresh(&w->files, w->files_path, err, errlen) < 0)
        return -1;
    if (w->files.end && ftruncate(w->files_fd, (off_t)w->files.end) < 0)
        return fail(err, errlen, "cutting the torn tail of", w->files_path);
    if (replay_log(w, err, errlen) < 0)
        return -1;
    /* A file the table lists may have no block yet (the watcher stopped
     * between listing it and registering its first records): it starts
     * from 0, as every file the log names no progress of. */
    if (w->files.count && cover_file(w, w->files.count - 1) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

static int alloc_found(pl_watch *w) {
    w->found.cap = BLOCK_MAX;
    w->found.samples = malloc(BLOCK_MAX * sizeof(pl_sample));
    w->found.bads = malloc(BLOCK_MAX * sizeof(pl_bad_entry));
    return w->found.samples && w->found.bads ? 0 : -1;
}

int pl_watch_open(const char *state, const char *name, pl_watch **out,
                  char *err, size_t errlen) {
    pl_watch *w = calloc(1, sizeof(*w));
    if (!w || alloc_found(w) < 0) {
        pl_watch_close(w);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->keys_fd = w->files_fd = w->dir_fd = w->ino = -1;
    w->warn = stderr;
    pl_filetab_init(&w->files);
    if (pl_dataset_dir(state, name, w->dsdir, sizeof(w->dsdir)) < 0) {
        snprintf(err, errlen, "'%s' is not a dataset name", name);
    } else if (pl_dsconf_load(w->dsdir, &w->conf, err, errlen) == 0) {
        snprintf(w->keys_path, sizeof(w->keys_path), "%s/keys.log", w->dsdir);
        snprintf(w->files_path, sizeof(w->files_path), "%s/files.log",
                 w->dsdir);
        if (open_logs(w, err, errlen) == 0) {
            *out = w;
            return 0;
        }
    }
    pl_watch_close(w);
    return -1;
}

void pl_watch_close(pl_watch *w) {
    if (!w)
        return;
    int fds[] = {w->keys_fd, w->files_fd, w->dir_fd, w->ino};
    for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    pl_filetab_free(&w->files);
    free(w->done);
    free(w->shrunk);
    free(w->found.samples);
    free(w->found.bads);
    free(w->chunk);
    for (size_t i = 0; i < w->npassed; i++)
        free(w->passed[i]);
    free(w->passed);
    free(w);
}

void pl_watch_set_warnings(pl_watch *w, FILE *warn) { w->warn = warn; }

uint64_t pl_watch_samples(const pl_watch *w) { return w->samples; }
uint64_t pl_watch_bad(const pl_watch *w) { return w->nbad; }
uint64_t pl_watch_bytes(const pl_watch *w) { return w->bytes; }
uint32_t pl_watch_files(const pl_watch *w) { return w->files.count; }

/* The folder's and the file's names shown safe (text_safe.h): a file's
 * name is any bytes its owner chose, another user's too (a file passed
 * over). */
void pl_watch_warn(pl_watch *w, const char *name, const char *what) {
    char dir[4096], file[1024];
    if (!w->warn)
        return;
    text_safe(dir, sizeof(dir), w->conf.dir);
    text_safe(file, sizeof(file), name);
    fprintf(w->warn, "aegis dataset %s: %s/%s: %s\n", w->conf.name, dir, file, what);
}

void pl_watch_pass_over(pl_watch *w, const char *name, const char *what) {
    for (size_t i = 0; i < w->npassed; i++)
        if (strcmp(w->passed[i], name) == 0)
            return;
    pl_watch_warn(w, name, what);
    char **grown = realloc(w->passed, (w->npassed + 1) * sizeof(*grown));
    if (grown && (grown[w->npassed] = strdup(name)))
        w->npassed++;
    if (grown)
        w->passed = grown;
}

int pl_watch_shrunk(pl_watch *w, int64_t index, const char *name,
                    uint64_t size) {
    if (index < 0 || (!w->shrunk[index] && size >= w->done[index]))
        return 0;
    if (!w->shrunk[index]) {
        char what[256];
        snprintf(what, sizeof(what), "now %llu bytes, shorter than the %llu "
                 "registered: it was cut or replaced, so its samples no "
                 "longer match it, and nothing more of it is registered "
                 "(give new data a new name)", (unsigned long long)size,
                 (unsigned long long)w->done[index]);
        pl_watch_warn(w, name, what);
        w->shrunk[index] = 1;
    }
    return 1;
}

/* Cuts the pass at the dataset's size limit: keeps the samples that fit,
 * and sets the file's progress to the first one left out. */
static void apply_limit(pl_watch *w, pl_found *f, const char *name) {
    uint64_t bytes = w->bytes;
    for (uint32_t i = 0; i < f->count; i++) {
        if (bytes + f->samples[i].len > w->conf.max_bytes) {
            uint32_t keep_bad = 0;
            f->done = f->samples[i].offset;
            for (uint32_t b = 0; b < f->nbad; b++)
                if (f->bads[b].offset < f->done)
                    f->bads[keep_bad++] = f->bads[b];
            f->count = i;
            f->nbad = keep_bad;
            w->full = 1;
            pl_watch_warn(w, name, "the dataset's size limit is reached; "
                                   "nothing more is registered");
            return;
        }
        bytes += f->samples[i].len;
    }
}

int pl_watch_commit(pl_watch *w, uint32_t file, const char *name, char *err,
                    size_t errlen) {
    pl_found *f = &w->found;
    if (w->conf.max_bytes)
        apply_limit(w, f, name);
    for (uint32_t i = 0; i < f->count; i++)
        f->samples[i].key = w->samples + i;
    if (pl_keylog_append(w->keys_fd, w->keys_path, file, w->samples, f->done,
                         f->samples, f->count, f->bads, f->nbad, err,
                         errlen) < 0)
        return -1;
    if (set_done(w, file, f->done) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    count_block(w, f->samples, f->count, f->nbad);
    return 0;
}

int pl_watch_wanted(const pl_watch *w, const char *name) {
    size_t len = strlen(name);
    if (name[0] == '.' || (len > 4 && strcmp(name + len - 4, ".tmp") == 0))
        return 0;
    return fnmatch(w->conf.pattern, name, FNM_PERIOD) == 0;
}

int64_t pl_watch_index(pl_watch *w, const char *name, char *err,
                       size_t errlen) {
    int64_t index = pl_filetab_find(&w->files, name);
    if (index >= 0)
        return index;
    index = pl_filetab_add(&w->files, w->files_fd, w->files_path, name, err,
                           errlen);
    if (index >= 0 && set_done(w, (uint32_t)index, 0) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return index;
}
