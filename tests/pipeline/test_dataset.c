/* test_dataset.c -- the dataset wing's storage under cmocka: the key
 * log's torn or corrupt tail cut and re-registered exactly, the binary,
 * CSV and one-per-file formats, bad records with their offsets, the size
 * limit, the watcher's lock and the zero-copy reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include <zlib.h>

#include "dataset.h"
#include "dataset_info.h"
#include "dsconf.h"
#include "keylog.h"
#include "records.h"
#include "mapguard.h"
#include "watch.h"

typedef struct fixture {
    char root[64], state[96], data[96];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    strcpy(f->root, "/tmp/aegis-dataset-XXXXXX");
    assert_non_null(mkdtemp(f->root));
    snprintf(f->state, sizeof(f->state), "%s/state", f->root);
    snprintf(f->data, sizeof(f->data), "%s/data", f->root);
    assert_int_equal(mkdir(f->data, 0700), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->root);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* Dataset "d" over f->data as c says. */
static void add_dataset(fixture *f, pl_dsconf c) {
    char dsdir[256], err[256];
    strcpy(c.name, "d");
    strcpy(c.dir, f->data);
    if (!c.pattern[0])
        strcpy(c.pattern, pl_format_default_pattern(c.format));
    if (!c.sep)
        c.sep = ',';
    snprintf(dsdir, sizeof(dsdir), "%s/datasets", f->state);
    mkdir(f->state, 0700);
    mkdir(dsdir, 0700);
    assert_int_equal(pl_dataset_dir(f->state, "d", dsdir, sizeof(dsdir)), 0);
    assert_int_equal(mkdir(dsdir, 0700), 0);
    assert_int_equal(pl_dsconf_save(dsdir, &c, err, sizeof(err)), 0);
}

static void write_file(fixture *f, const char *name, const void *data,
                       size_t len) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->data, name);
    FILE *fp = fopen(path, "a");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    fclose(fp);
}

/* n records of 12 bytes: int32 label i % 4, then float32 i and -i. */
static void write_records(fixture *f, const char *name, int first, int n) {
    for (int i = first; i < first + n; i++) {
        int32_t label = i % 4;
        float x[2] = {(float)i, (float)-i};
        unsigned char rec[12];
        memcpy(rec, &label, 4);
        memcpy(rec + 4, x, 8);
        write_file(f, name, rec, sizeof(rec));
    }
}

static const pl_dsconf binary12 = {.format = PL_FORMAT_BINARY,
                                   .record_size = 12, .label_size = 4,
                                   .classes = 4};

/* Runs one scan as a fresh watcher would; the samples registered. */
static int64_t scan_once(fixture *f) {
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    pl_watch_set_warnings(w, NULL);
    int64_t n = pl_watch_scan(w, err, sizeof(err));
    pl_watch_close(w);
    return n;
}

static pl_dataset *open_dataset(fixture *f) {
    pl_dataset *ds;
    char err[256];
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)), 0);
    return ds;
}

/* Every key's bytes hold feature x == key: nothing twice, nothing lost. */
static void assert_keys_in_order(fixture *f, uint64_t count) {
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_count(ds), count);
    for (uint64_t k = 0; k < count; k++) {
        float x[4];
        size_t dim;
        char err[256];
        assert_int_equal(pl_dataset_features(ds, k, x, 4, &dim, err,
                                             sizeof(err)), 0);
        assert_int_equal(dim, 2);
        assert_true(x[0] == (float)k);
        assert_int_equal(pl_dataset_samples(ds)[k].label, (int64_t)(k % 4));
    }
    pl_dataset_close(ds);
}

/* The size of the dataset's log (keys.log, files.log). */
static off_t log_size(fixture *f, const char *log) {
    char path[256];
    struct stat st;
    snprintf(path, sizeof(path), "%s/datasets/d/%s", f->state, log);
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void cut_keylog(fixture *f, off_t size) {
    char path[256];
    snprintf(path, sizeof(path), "%s/datasets/d/keys.log", f->state);
    assert_int_equal(truncate(path, size), 0);
}

static void flip_log_byte(fixture *f, const char *log, off_t at) {
    char path[256];
    unsigned char b;
    snprintf(path, sizeof(path), "%s/datasets/d/%s", f->state, log);
    int fd = open(path, O_RDWR);
    assert_int_equal(pread(fd, &b, 1, at), 1);
    b ^= 0x55;
    assert_int_equal(pwrite(fd, &b, 1, at), 1);
    close(fd);
}

/* A dataset of a.bin registered in two scans, 100 records then 50 more
 * (the file grows: a second block); keys.log's size after the first. */
static off_t two_blocks(fixture *f) {
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 100);
    assert_int_equal(scan_once(f), 100);
    off_t one_block = log_size(f, "keys.log");
    write_records(f, "a.bin", 100, 50);
    assert_int_equal(scan_once(f), 50);
    return one_block;
}

static void torn_tail_is_cut_and_registered_again(void **state) {
    fixture *f = *state;
    off_t one_block = two_blocks(f);
    /* a crash in the second append */
    cut_keylog(f, log_size(f, "keys.log") - 7);
    assert_int_equal(log_size(f, "keys.log") > one_block, 1);
    assert_keys_in_order(f, 100);      /* readers stop before the tear */
    assert_int_equal(scan_once(f), 50);
    assert_keys_in_order(f, 150);
    /* a corrupt last block */
    flip_log_byte(f, "keys.log", log_size(f, "keys.log") - 3);
    assert_int_equal(scan_once(f), 50);
    assert_keys_in_order(f, 150);
    assert_int_equal(scan_once(f), 0);
}

/* A watcher stopped between listing a file and registering its first
 * block leaves files.log ahead of keys.log: the next one registers those
 * files from their start. 300 files: more than the progress array's
 * first size, so a file the log names no progress of lies past it. */
static void listed_file_without_block_is_registered(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "f%03d.bin", i);
        write_records(f, name, i, 1);
    }
    assert_int_equal(scan_once(f), 300);
    cut_keylog(f, PL_KEYLOG_HEADER); /* every block gone, the list kept */
    assert_int_equal(scan_once(f), 300);
    assert_keys_in_order(f, 300);
}

/* A block damaged with whole blocks after it is no crash's tear: the
 * watcher refuses to start rather than cut those blocks (their samples
 * would be lost and their keys given to others), and readers say where
 * the damage is. */
static void damage_in_the_middle_is_not_cut(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    for (int i = 0; i < 3; i++) {
        write_records(f, "a.bin", 10 * i, 10);
        assert_int_equal(scan_once(f), 10);
    }
    off_t size = log_size(f, "keys.log");
    /* in the first block */
    flip_log_byte(f, "keys.log", PL_KEYLOG_HEADER + 50);
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "damaged at byte 16, with whole blocks"));
    assert_int_equal(log_size(f, "keys.log"), size);
    pl_dataset *ds;
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "keys.log: damaged at byte 16"));
    flip_log_byte(f, "keys.log", PL_KEYLOG_HEADER + 50); /* mended */
    assert_keys_in_order(f, 30);
}

/* files.log damaged in the middle, with whole entries after it, is no
 * crash's tear either: the watcher refused to start on keys.log's blocks
 * of the files past the damage, after it had cut them off files.log.
 * Now files.log is refused, and nothing is cut. */
static void file_table_damaged_in_the_middle_is_not_cut(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    const char *names[] = {"a.bin", "b.bin", "c.bin"};
    for (int i = 0; i < 3; i++) write_records(f, names[i], 10 * i, 10);
    assert_int_equal(scan_once(f), 30);
    off_t size = log_size(f, "files.log");
    flip_log_byte(f, "files.log", 16 + 12 + 5 + 12 + 1); /* b.bin's name */
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "files.log: damaged, with whole entries"));
    assert_int_equal(log_size(f, "files.log"), size);
    flip_log_byte(f, "files.log", 16 + 12 + 5 + 12 + 1); /* mended */
    assert_keys_in_order(f, 30);
}

/* files.log cut, emptied or removed under keys.log's blocks of its
 * files: readers stopped quietly at the first such block (`dataset show`
 * said 10 samples of 30, or none) while the watcher refused to start.
 * The watcher lists a file before its first block, so no crash-free or
 * torn state has a block past the table: readers refuse it too, naming
 * both logs. */
static void file_table_cut_under_its_blocks_refused(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    const char *names[] = {"a.bin", "b.bin", "c.bin"};
    for (int i = 0; i < 3; i++) write_records(f, names[i], 10 * i, 10);
    assert_int_equal(scan_once(f), 30);
    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/datasets/d/files.log", f->state);
    pl_dataset *ds = NULL;
    assert_int_equal(truncate(path, 16 + 12 + 5 + 4), 0); /* b.bin torn */
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "keys.log: the block at byte "));
    assert_non_null(strstr(err, "names file 1, past the 1 files of files.log "
                                "beside it: that table was cut or lost"));
    assert_int_equal(truncate(path, 0), 0);
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "names file 0, past the 0 files "));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "names file 0, past the 0 files "));
}

/* A valid entry of files.log naming a file outside the folder (the
 * watcher lists only the folder's own) is refused, not joined to it. */
static void file_outside_the_folder_refused(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 10);
    assert_int_equal(scan_once(f), 10);
    char path[256], err[256];
    snprintf(path, sizeof(path), "%s/datasets/d/files.log", f->state);
    const char name[] = "../x";
    uint32_t head[3] = {0, 1, sizeof(name) - 1};
    uLong crc = crc32(0L, (const Bytef *)&head[1], 2 * sizeof(uint32_t));
    head[0] = (uint32_t)crc32(crc, (const Bytef *)name, head[2]);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_int_equal(write(fd, head, sizeof(head)), (ssize_t)sizeof(head));
    assert_int_equal(write(fd, name, head[2]), (ssize_t)head[2]);
    close(fd);
    pl_dataset *ds;
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "files.log: an entry names no file of the "
                           "folder"));
}

/* Appends to keys.log a valid block of file 0 from key first: two
 * samples like s0 (not a run: their times differ), the second's key one
 * more, its bytes after the first's. */
static void append_block(fixture *f, uint64_t first, pl_sample s0) {
    char path[256], err[256];
    pl_sample s[2] = {s0, s0};
    s[1].key++;
    s[1].ts++;
    s[1].offset += s0.len;
    snprintf(path, sizeof(path), "%s/datasets/d/keys.log", f->state);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    /* no bad entries, NULL: its checksum took zlib's crc32 of NULL, which
     * is 0 whatever came before */
    assert_int_equal(pl_keylog_append(fd, path, 0, first, 24, s, 2, NULL, 0,
                                      err, sizeof(err)), 0);
    close(fd);
}

static void assert_open_fails(fixture *f, const char *what) {
    pl_dataset *ds = NULL;
    char err[256];
    assert_int_equal(pl_dataset_open(f->state, "d", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "keys.log: "));
    assert_non_null(strstr(err, what));
}

/* A valid block whose samples name another file or key than the block's
 * is refused: readers index files by them (out of bounds) and keys. */
static void stray_samples_refused(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 2);
    assert_int_equal(scan_once(f), 2);
    off_t size = log_size(f, "keys.log");
    pl_sample s0 = {.key = 2, .label = 1, .file = 7, .len = 12};
    append_block(f, 2, s0);
    assert_open_fails(f, "holds a sample of file 7 with key 2");
    cut_keylog(f, size);
    s0.file = 0;
    s0.key = 5;
    append_block(f, 2, s0);
    assert_open_fails(f, "holds a sample of file 0 with key 5");
    cut_keylog(f, size);
    s0.key = 2;
    append_block(f, 2, s0);
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_count(ds), 4); /* its own samples: read */
    pl_dataset_close(ds);
}

/* A sample whose offset and length wrap past 2^64 is said to lie past
 * its file's end, not read from wherever the sum points. */
static void wrapping_offset_refused(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 2);
    assert_int_equal(scan_once(f), 2);
    append_block(f, 2, (pl_sample){.key = 2, .label = 1, .len = 12,
                                   .offset = UINT64_MAX - 11});
    pl_dataset *ds = open_dataset(f);
    size_t len;
    char err[256];
    assert_null(pl_dataset_bytes(ds, 2, &len, err, sizeof(err)));
    assert_non_null(strstr(err, "a.bin: shorter than its registered"));
    assert_non_null(pl_dataset_bytes(ds, 1, &len, err, sizeof(err)));
    pl_dataset_close(ds);
}

/* A binary sample shorter than the record size (a damaged log) has no
 * features: they would be read past it. */
static void short_binary_sample_refused(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 2);
    assert_int_equal(scan_once(f), 2);
    append_block(f, 2, (pl_sample){.key = 2, .label = 1, .len = 4});
    pl_dataset *ds = open_dataset(f);
    float x[4];
    size_t dim;
    char err[256];
    assert_int_equal(pl_dataset_features(ds, 2, x, 4, &dim, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "keys.log: sample 2 of "));
    assert_non_null(strstr(err, "a.bin is 4 bytes, not the dataset's record "
                                "size 12"));
    assert_int_equal(pl_dataset_features(ds, 1, x, 4, &dim, err, sizeof(err)),
                     0);
    pl_dataset_close(ds);
}

/* keys.log found shorter than a reader has read (restored from an older
 * copy) is an error, not read from past its end. */
static void shrunk_keylog_said(void **state) {
    fixture *f = *state;
    off_t one_block = two_blocks(f);
    pl_dataset *ds = open_dataset(f);
    cut_keylog(f, one_block);
    char err[256];
    assert_int_equal(pl_dataset_refresh(ds, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "keys.log: shrank to "));
    pl_dataset_close(ds);
}

/* keys.log cut below its header, or deleted, after a reader read blocks
 * of it is an error too: read as "no watcher yet", the reader's samples
 * stood on a log that had none. */
static void keylog_cut_to_nothing_said(void **state) {
    fixture *f = *state;
    two_blocks(f);
    pl_dataset *ds = open_dataset(f);
    char err[256];
    cut_keylog(f, PL_KEYLOG_HEADER - 1);
    assert_int_equal(pl_dataset_refresh(ds, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "keys.log: shrank to 15 bytes"));
    char path[256];
    snprintf(path, sizeof(path), "%s/datasets/d/keys.log", f->state);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(pl_dataset_refresh(ds, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "keys.log is gone, after "));
    pl_dataset_close(ds);
}

/* A log of block heads, one every 40 bytes, each claiming the rest of it
 * with a wrong CRC: the search for whole blocks after the first bad one
 * CRC'd every claim (the square of the size, a minute at 4 MiB); now it
 * refuses the log at once. */
static void heads_claiming_the_rest_refused_fast(void **state) {
    (void)state;
    size_t n = 2u << 20;
    unsigned char *b = calloc(1, n);
    uint32_t fields[2] = {1, sizeof(pl_sample)};
    memcpy(b, PL_KEYLOG_MAGIC, 8);
    memcpy(b + 8, fields, sizeof(fields));
    for (size_t p = PL_KEYLOG_HEADER; p + 40 <= n; p += 40) {
        pl_block_head h = {.magic = PL_BLOCK_MAGIC, .crc = 1,
                           .count = (uint32_t)((n - p - 40) / 40)};
        memcpy(b + p, &h, sizeof(h));
    }
    uint64_t pos = PL_KEYLOG_HEADER, next_key = 0;
    char err[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(pl_keylog_scan(b, n, &pos, &next_key, NULL, NULL, err,
                                    sizeof(err)), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(err, "too many block heads after it"));
    assert_true(t1.tv_sec - t0.tv_sec < 2);
    free(b);
}

/* A valid-CRC run block of no samples (never written) with a whole block
 * after it is damage: the watcher refuses to start rather than cut the
 * log there. */
static void empty_run_block_not_cut(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 2);
    assert_int_equal(scan_once(f), 2);
    pl_block_head h = {.magic = PL_BLOCK_MAGIC, .first_key = 2, .done = 24,
                       .flags = PL_BLOCK_RUN};
    pl_run_head run = {.record_size = 12};
    uLong crc = crc32(0L, (const Bytef *)&h, sizeof(h));
    h.crc = (uint32_t)crc32(crc, (const Bytef *)&run, sizeof(run));
    char path[256], err[256];
    snprintf(path, sizeof(path), "%s/datasets/d/keys.log", f->state);
    FILE *fp = fopen(path, "a");
    fwrite(&h, sizeof(h), 1, fp);
    fwrite(&run, sizeof(run), 1, fp);
    fclose(fp);
    append_block(f, 2, (pl_sample){.key = 2, .label = 1, .len = 12});
    off_t size = log_size(f, "keys.log");
    pl_watch *w;
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "keys.log: damaged at byte "));
    assert_int_equal(log_size(f, "keys.log"), size);
}

static void read_byte(void *arg) {
    volatile const unsigned char *p = arg;
    (void)p[0];
}

/* A read of a mapping past its file's new end (the file cut while a
 * watcher reads it) ends only the guarded call; the next runs as usual. */
static void guarded_read_of_a_shrunk_file(void **state) {
    fixture *f = *state;
    char path[256], block[8192] = {0};
    write_file(f, "cut.csv", block, sizeof(block));
    snprintf(path, sizeof(path), "%s/cut.csv", f->data);
    int fd = open(path, O_RDONLY);
    unsigned char *base = mmap(NULL, sizeof(block), PROT_READ, MAP_SHARED,
                               fd, 0);
    close(fd);
    assert_true(base != MAP_FAILED);
    assert_int_equal(pl_map_guarded(read_byte, base + 4096), 0);
    assert_int_equal(truncate(path, 0), 0);
    assert_int_equal(pl_map_guarded(read_byte, base + 4096), -1);
    assert_int_equal(pl_map_guarded(read_byte, block), 0);
    munmap(base, sizeof(block));
}

/* A registered file found shorter than what was registered of it (cut,
 * or replaced by a shorter one) is said once and left alone: its new
 * bytes would be taken as records of the old. */
static void shrunk_file_said_and_left(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 5);
    char path[256], *said = NULL, err[256];
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/a.bin", f->data);
    pl_watch *w;
    FILE *warnings = open_memstream(&said, &len);
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    pl_watch_set_warnings(w, warnings);
    assert_int_equal(pl_watch_scan(w, err, sizeof(err)), 5);
    assert_int_equal(truncate(path, 12), 0);
    assert_int_equal(pl_watch_scan(w, err, sizeof(err)), 0);
    assert_int_equal(pl_watch_scan(w, err, sizeof(err)), 0);
    write_records(f, "a.bin", 1, 9); /* past the registered 60 bytes */
    assert_int_equal(pl_watch_scan(w, err, sizeof(err)), 0);
    pl_watch_close(w);
    fclose(warnings);
    const char *first = strstr(said, "a.bin: now 12 bytes, shorter than the "
                                     "60 registered");
    assert_non_null(first);
    assert_null(strstr(first + 1, "a.bin: now")); /* said once */
    free(said);
    assert_keys_in_order(f, 5);
}

static void binary_growing_file_and_truncated_record(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 10);
    write_file(f, "a.bin", "12345", 5); /* half a record, still written */
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    assert_int_equal(pl_watch_file(w, "a.bin", 0, err, sizeof(err)), 10);
    assert_int_equal(pl_watch_bad(w), 0);
    assert_int_equal(pl_watch_file(w, "a.bin", 1, err, sizeof(err)), 0);
    assert_int_equal(pl_watch_bad(w), 1); /* closed: the half is bad */
    pl_watch_close(w);
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_bad_count(ds), 1);
    assert_int_equal(pl_dataset_bad(ds)[0].offset, 120);
    assert_int_equal(pl_dataset_bad(ds)[0].reason, PL_BAD_TRUNCATED);
    assert_string_equal(pl_dataset_file_name(ds, 0), "a.bin");
    pl_dataset_close(ds);
}

static void binary_label_out_of_range(void **state) {
    fixture *f = *state;
    pl_dsconf c = binary12;
    c.record_size = 9;
    c.label_size = 1;
    add_dataset(f, c);
    unsigned char recs[3][9] = {{2}, {0xff}, {4}}; /* 2, -1, 4 */
    write_file(f, "a.bin", recs, sizeof(recs));
    assert_int_equal(scan_once(f), 1);
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_samples(ds)[0].label, 2);
    assert_int_equal(pl_dataset_bad_count(ds), 2);
    assert_int_equal(pl_dataset_bad(ds)[0].offset, 9);
    assert_int_equal(pl_dataset_bad(ds)[1].offset, 18);
    assert_int_equal(pl_dataset_bad(ds)[1].reason, PL_BAD_LABEL);
    pl_dataset_close(ds);
}

static const char csv_text[] =
    "ts;label;x;y\r\n"
    "100;1;0.5;2\r\n"
    "101;7;1;1\n"      /* label out of range: bad at 27 */
    "102;2\n"          /* too few fields: bad at 37 */
    "abc;3;1;1\n"      /* bad timestamp: bad at 43 */
    "104;1;;2\n"       /* an empty field: one feature short, bad at 53 */
    "103;0;-1;3";      /* no '\n': whole only once the file is complete */

static void csv_rows_and_bad_rows(void **state) {
    fixture *f = *state;
    pl_dsconf c = {.format = PL_FORMAT_CSV, .sep = ';', .header = 1,
                   .classes = 4};
    strcpy(c.label_column, "label");
    strcpy(c.ts_column, "0");
    add_dataset(f, c);
    write_file(f, "a.csv", csv_text, strlen(csv_text));
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    pl_watch_set_warnings(w, NULL);
    assert_int_equal(pl_watch_file(w, "a.csv", 0, err, sizeof(err)), 1);
    assert_int_equal(pl_watch_file(w, "a.csv", 1, err, sizeof(err)), 1);
    pl_watch_close(w);
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_count(ds), 2);
    const pl_sample *s = pl_dataset_samples(ds);
    assert_int_equal(s[0].ts, 100);
    assert_int_equal(s[1].ts, 103);
    assert_int_equal(s[1].label, 0);
    size_t len, dim;
    float x[4];
    const char *row = pl_dataset_bytes(ds, 0, &len, err, sizeof(err));
    assert_int_equal(len, 11); /* "100;1;0.5;2" without "\r\n" */
    assert_memory_equal(row, "100;1;0.5;2", 11);
    assert_int_equal(pl_dataset_features(ds, 1, x, 4, &dim, err,
                                         sizeof(err)), 0);
    assert_int_equal(dim, 2);
    assert_true(x[0] == -1.0f && x[1] == 3.0f);
    uint32_t want_reason[] = {PL_BAD_LABEL, PL_BAD_FIELDS, PL_BAD_TIMESTAMP,
                              PL_BAD_EMPTY_FIELD};
    uint64_t want_offset[] = {27, 37, 43, 53};
    assert_int_equal(pl_dataset_bad_count(ds), 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pl_dataset_bad(ds)[i].reason, want_reason[i]);
        assert_int_equal(pl_dataset_bad(ds)[i].offset, want_offset[i]);
    }
    pl_dataset_close(ds);
}

/* A row's features are its finite decimal numbers: hex, a space before,
 * '_', inf and nan are left out, as aegis_pipeline.py leaves them. */
static void csv_features_are_decimal(void **state) {
    (void)state;
    pl_dsconf c = {.format = PL_FORMAT_CSV, .sep = ','};
    pl_csv_cols cols = {.label = 0, .ts = -1};
    static const char row[] = "1,0x10, 5,1_000,inf,nan,1e39,-2.5e3,.5,7";
    float x[16];
    size_t dim;
    pl_csv_features(&c, &cols, (const unsigned char *)row, strlen(row), x, 16, &dim);
    assert_int_equal(dim, 3);
    assert_true(x[0] == -2500.0f && x[1] == 0.5f && x[2] == 7.0f);
}

static void make_fifo(fixture *f, const char *name) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->data, name);
    assert_int_equal(mkfifo(path, 0600), 0);
}

/* A FIFO among the files, or as a label file, is no data: the scan
 * passes over it instead of waiting in open() for a writer that never
 * comes. */
static void fifos_are_passed_over(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 3);
    make_fifo(f, "b.bin");
    assert_int_equal(scan_once(f), 3);
    assert_keys_in_order(f, 3);
}

static void fifo_label_is_passed_over(void **state) {
    fixture *f = *state;
    pl_dsconf c = {.format = PL_FORMAT_FILE, .classes = 4};
    strcpy(c.pattern, "*.img");
    add_dataset(f, c);
    write_file(f, "a.img", "pixels", 6);
    make_fifo(f, "a.img.label");
    assert_int_equal(scan_once(f), 0);
}

/* Runs one scan as scan_once does, what it said in said (len bytes). */
static int64_t scan_saying(fixture *f, char *said, size_t len) {
    pl_watch *w;
    char err[256];
    FILE *out = fmemopen(said, len, "w");
    assert_non_null(out);
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    pl_watch_set_warnings(w, out);
    int64_t n = pl_watch_scan(w, err, sizeof(err));
    pl_watch_close(w);
    fclose(out);
    return n;
}

/* f->data's file name, given to uid (the test runs as root). */
static void give(fixture *f, const char *name, uid_t uid) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->data, name);
    assert_int_equal(lchown(path, uid, (gid_t)-1), 0);
}

/* Whether said has "NAME: WHAT" in it. */
static int said_of(const char *said, const char *name, const char *what) {
    char line[256];
    snprintf(line, sizeof(line), "/%s: %s", name, what);
    return strstr(said, line) != NULL;
}

/* A CSV file starting with a UTF-8 byte order mark (Excel's "CSV
 * UTF-8") is read past it: with a header, its first name was
 * "\xEF\xBB\xBFts" and the file was passed over ("no column 'ts'");
 * without one, the first row's label was no number. */
static void csv_byte_order_mark_skipped(void **state) {
    fixture *f = *state;
    pl_dsconf c = {.format = PL_FORMAT_CSV, .sep = ',', .header = 1};
    strcpy(c.label_column, "label");
    strcpy(c.ts_column, "ts");
    add_dataset(f, c);
    static const char text[] = "\xEF\xBB\xBFts,label,x\n100,1,0.5\n";
    write_file(f, "bom.csv", text, strlen(text));
    char said[512] = "";
    assert_int_equal(scan_saying(f, said, sizeof(said)), 1);
    assert_string_equal(said, "");
    pl_dataset *ds = open_dataset(f);
    const pl_sample *s = pl_dataset_samples(ds);
    assert_int_equal(s[0].ts, 100);
    assert_int_equal(s[0].label, 1);
    float x[4];
    size_t dim;
    char err[256];
    assert_int_equal(pl_dataset_features(ds, 0, x, 4, &dim, err,
                                         sizeof(err)), 0);
    assert_int_equal(dim, 1);
    assert_true(x[0] == 0.5f);
    pl_dataset_close(ds);
    pl_csv_cols cols;
    c.header = 0;
    strcpy(c.label_column, "1");
    strcpy(c.ts_column, "0");
    static const char row[] = "\xEF\xBB\xBF" "7,2\n";
    assert_int_equal(pl_csv_columns(&c, (const unsigned char *)row,
                                    strlen(row), &cols, err, sizeof(err)), 0);
    assert_int_equal(cols.first_row, 3);
}

/* A header naming the label's or timestamp's column twice is said, the
 * file passed over: `ts,ts,label` took the first ts without a word. */
static void csv_column_named_twice_refused(void **state) {
    fixture *f = *state;
    pl_dsconf c = {.format = PL_FORMAT_CSV, .sep = ',', .header = 1};
    strcpy(c.label_column, "label");
    strcpy(c.ts_column, "ts");
    add_dataset(f, c);
    static const char text[] = "ts,ts,label\n100,200,1\n";
    write_file(f, "twice.csv", text, strlen(text));
    static const char other[] = "ts,label,x,x\n100,1,2,3\n";
    write_file(f, "fine.csv", other, strlen(other)); /* x: no column read */
    char said[512] = "";
    assert_int_equal(scan_saying(f, said, sizeof(said)), 1);
    assert_true(said_of(said, "twice.csv", "the header names column 'ts' "
                                           "twice (columns 0 and 1)"));
}

/* Other users' files are passed over, each saying whose it is: the name
 * of each user, or the number of one without a name, whatever the order
 * the scan meets them in (the name looked up once is the right one). */
static void others_files_are_named(void **state) {
    fixture *f = *state;
    if (geteuid() != 0)
        skip(); /* giving files away needs root */
    add_dataset(f, binary12);
    write_records(f, "a.bin", 0, 3);
    write_records(f, "b.bin", 3, 3);
    write_records(f, "c.bin", 6, 3);
    write_records(f, "d.bin", 9, 3);
    give(f, "b.bin", 1);
    give(f, "c.bin", 4242420);
    give(f, "d.bin", 1);
    const struct passwd *pw = getpwuid(1);
    char one[96], said[4096] = "";
    snprintf(one, sizeof(one), "owned by user %s,", pw ? pw->pw_name : "1");
    assert_int_equal(scan_saying(f, said, sizeof(said)), 3);
    assert_true(said_of(said, "b.bin", one));
    assert_true(said_of(said, "c.bin", "owned by user 4242420,"));
    assert_true(said_of(said, "d.bin", one));
    assert_keys_in_order(f, 3);
}

/* A label file is taken only as the data files are: another user's, or a
 * link (to a label of the owner's), leaves its sample waiting, said. */
static void others_labels_are_passed_over(void **state) {
    fixture *f = *state;
    if (geteuid() != 0)
        skip();
    pl_dsconf c = {.format = PL_FORMAT_FILE, .classes = 4};
    strcpy(c.pattern, "*.img");
    add_dataset(f, c);
    write_file(f, "a.img", "pixels", 6);
    write_file(f, "a.img.label", "1\n", 2);
    give(f, "a.img.label", 4242420);
    write_file(f, "b.img", "pixels", 6);
    write_file(f, "mine.txt", "2\n", 2);
    char link[256];
    snprintf(link, sizeof(link), "%s/b.img.label", f->data);
    assert_int_equal(symlink("mine.txt", link), 0);
    write_file(f, "c.img", "pixels", 6);
    write_file(f, "c.img.label", "3\n", 2);
    char said[4096] = "";
    assert_int_equal(scan_saying(f, said, sizeof(said)), 1);
    assert_true(said_of(said, "a.img.label", "owned by user 4242420,"));
    assert_true(said_of(said, "b.img.label", "a symbolic link"));
    pl_dataset *ds = open_dataset(f);
    assert_int_equal(pl_dataset_count(ds), 1);
    assert_int_equal(pl_dataset_samples(ds)[0].label, 3);
    pl_dataset_close(ds);
}

static void one_sample_per_file_waits_for_its_label(void **state) {
    fixture *f = *state;
    pl_dsconf c = {.format = PL_FORMAT_FILE, .classes = 4};
    strcpy(c.pattern, "*.img");
    add_dataset(f, c);
    write_file(f, "a.img", "pixels", 6);
    write_file(f, "a.img.label", "", 0); /* being written */
    write_file(f, "b.img", "more", 4);
    write_file(f, "b.img.label", "9\n", 2); /* out of range */
    write_file(f, "c.img", "", 0);          /* empty: no sample */
    write_file(f, "c.img.label", "1\n", 2);
    assert_int_equal(scan_once(f), 0);
    write_file(f, "a.img.label", "3\n", 2);
    assert_int_equal(scan_once(f), 1);
    assert_int_equal(scan_once(f), 0);
    pl_dataset *ds = open_dataset(f);
    size_t len;
    char err[256];
    const char *bytes = pl_dataset_bytes(ds, 0, &len, err, sizeof(err));
    assert_int_equal(len, 6);
    assert_memory_equal(bytes, "pixels", 6);
    assert_int_equal(pl_dataset_samples(ds)[0].label, 3);
    assert_int_equal(pl_dataset_bad_count(ds), 2);
    uint32_t reasons = 1u << pl_dataset_bad(ds)[0].reason |
                       1u << pl_dataset_bad(ds)[1].reason;
    assert_int_equal(reasons, 1u << PL_BAD_LABEL_FILE | 1u << PL_BAD_EMPTY);
    assert_null(pl_dataset_bytes(ds, 1, &len, err, sizeof(err)));
    assert_non_null(strstr(err, "no sample with key 1"));
    pl_dataset_close(ds);
}

static void size_limit_stops_registering(void **state) {
    fixture *f = *state;
    pl_dsconf c = binary12;
    c.max_bytes = 12 * 30;
    add_dataset(f, c);
    write_records(f, "a.bin", 0, 20);
    write_records(f, "b.bin", 20, 20);
    assert_int_equal(scan_once(f), 30);
    assert_int_equal(scan_once(f), 0);
    assert_keys_in_order(f, 30);
}

static void one_watcher_at_a_time(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    pl_watch *w, *other;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    assert_int_equal(pl_watch_open(f->state, "d", &other, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "another watcher"));
    pl_watch_close(w);
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    pl_watch_close(w);
}

/* The embeddable loop: a file closed in the folder is an event on the
 * descriptor, and its records are registered from it. */
static void events_for_an_outside_loop(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    pl_watch *w;
    char err[256];
    assert_int_equal(pl_watch_open(f->state, "d", &w, err, sizeof(err)), 0);
    int fd = pl_watch_start(w, err, sizeof(err));
    assert_true(fd >= 0);
    assert_int_equal(pl_watch_start(w, err, sizeof(err)), fd);
    assert_int_equal(pl_watch_scan(w, err, sizeof(err)), 0);
    write_records(f, "a.bin", 0, 7);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 30000), 1); /* bound: a loaded machine */
    assert_int_equal(pl_watch_events(w, err, sizeof(err)), 7);
    pl_watch_close(w);
    assert_keys_in_order(f, 7);
}

static void bad_configuration_named(void **state) {
    fixture *f = *state;
    pl_dsconf c = binary12;
    char err[256];
    c.record_size = 10; /* 4 + 6: not whole float32s */
    strcpy(c.dir, "/x");
    assert_int_equal(pl_dsconf_check(&c, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "record_size"));
    pl_dataset *ds;
    assert_int_equal(pl_dataset_open(f->state, "nope", &ds, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "dataset.json"));
    assert_int_equal(pl_dataset_open(f->state, "../x", &ds, err, sizeof(err)),
                     -1);
}

/* dataset.json with key set to the JSON text value is refused, naming
 * the key: record_size 2^32 + 9 was read as 9, classes "10" as 0 (any
 * label), header "yes" as false. */
static void dataset_json_values_checked(void **state) {
    fixture *f = *state;
    add_dataset(f, binary12);
    char dsdir[256], path[300], err[512];
    assert_int_equal(pl_dataset_dir(f->state, "d", dsdir, sizeof(dsdir)), 0);
    snprintf(path, sizeof(path), "%s/dataset.json", dsdir);
    const char *const bad[][2] = {{"record_size", "4294967305"},
                                  {"classes", "\"10\""},
                                  {"header", "\"yes\""},
                                  {"max_bytes", "-1"}};
    json_t *good = json_load_file(path, 0, NULL);
    assert_non_null(good);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        json_t *doc = json_deep_copy(good);
        json_object_set_new(doc, bad[i][0], json_loads(bad[i][1],
                                                       JSON_DECODE_ANY, NULL));
        assert_int_equal(json_dump_file(doc, path, 0), 0);
        json_decref(doc);
        pl_dsconf c;
        assert_int_equal(pl_dsconf_load(dsdir, &c, err, sizeof(err)), -1);
        if (!strstr(err, bad[i][0])) fail_msg("%s: %s", bad[i][0], err);
    }
    json_decref(good);
}

/* pl_dsconf_check() of a CSV dataset whose columns are as given;
 * expects it refused with want in the message, or accepted (want NULL). */
static void assert_columns(int header, const char *label, const char *ts,
                           const char *want) {
    pl_dsconf c = {.format = PL_FORMAT_CSV, .sep = ',', .header = header};
    strcpy(c.dir, "/x");
    strcpy(c.label_column, label);
    strcpy(c.ts_column, ts);
    char err[256] = "";
    assert_int_equal(pl_dsconf_check(&c, err, sizeof(err)), want ? -1 : 0);
    if (want)
        assert_non_null(strstr(err, want));
}

/* Columns that can never be found are refused when the dataset is made,
 * not found out by a watcher that registers nothing. */
static void csv_columns_checked(void **state) {
    (void)state;
    assert_columns(0, "-1", "", "label_column: -1 is not a column index");
    assert_columns(0, "0", "100000", "ts_column: 100000 is not a column");
    assert_columns(0, "0", "99999999999999999999", "not a column index");
    assert_columns(0, "label", "", "'label' is a column name");
    assert_columns(0, "2", "2", "ts_column: '2' is the label's column too");
    assert_columns(1, "label", "label", "the label's column too");
    assert_columns(1, "label", "ts", NULL);
    assert_columns(0, "3", "99999", NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(csv_columns_checked),
        cmocka_unit_test_setup_teardown(listed_file_without_block_is_registered,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(fifos_are_passed_over, setup, teardown),
        cmocka_unit_test_setup_teardown(others_files_are_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(others_labels_are_passed_over, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(fifo_label_is_passed_over, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(stray_samples_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(wrapping_offset_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(short_binary_sample_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(shrunk_keylog_said, setup, teardown),
        cmocka_unit_test_setup_teardown(keylog_cut_to_nothing_said, setup,
                                        teardown),
        cmocka_unit_test(heads_claiming_the_rest_refused_fast),
        cmocka_unit_test_setup_teardown(empty_run_block_not_cut, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(damage_in_the_middle_is_not_cut, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            file_table_damaged_in_the_middle_is_not_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(
            file_table_cut_under_its_blocks_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(file_outside_the_folder_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(dataset_json_values_checked, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(guarded_read_of_a_shrunk_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(shrunk_file_said_and_left, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(torn_tail_is_cut_and_registered_again,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            binary_growing_file_and_truncated_record, setup, teardown),
        cmocka_unit_test_setup_teardown(binary_label_out_of_range, setup,
                                        teardown),
        cmocka_unit_test(csv_features_are_decimal),
        cmocka_unit_test_setup_teardown(csv_byte_order_mark_skipped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(csv_column_named_twice_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(csv_rows_and_bad_rows, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            one_sample_per_file_waits_for_its_label, setup, teardown),
        cmocka_unit_test_setup_teardown(size_limit_stops_registering, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(one_watcher_at_a_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(events_for_an_outside_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bad_configuration_named, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
