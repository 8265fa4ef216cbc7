/* dsgen_write.c -- writes a synthetic stream (dsgen.h) as dataset files in
 * one of the formats the watcher reads, each file's mtime set to its last
 * sample's timestamp, and drift.json: the schedule the tests score
 * triggers against, and the `aegis dataset add` options that read it.
 *
 * The output folder may lie where others write (a shared scratch space),
 * so nothing is written by a path another user could redirect: the folder
 * is opened once, without following a symbolic link, and must be the
 * caller's and writable by no one else (then no one else can place a link
 * or a file in it); every file is opened relative to it, again without
 * following a link. */
#include "dsgen.h"
#include "feed_trust.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LABEL_SIZE 4 /* binary records: int32 label, little-endian */

typedef struct gen_out {
    const pl_gen_opts *o;
    pl_gen_state g;
    float *x;
    uint32_t dim;
    int dir;            /* o->out, opened and checked (open_out) */
    char *err;
    size_t errlen;
} gen_out;

static int fail_errno(gen_out *w, const char *what, const char *path) {
    snprintf(w->err, w->errlen, "%s %s: %s", what, path, strerror(errno));
    return -1;
}

/* The folder's file NAME, created or truncated for writing; a symbolic
 * link there is refused, not followed. NULL with w->err. */
static FILE *create_file(gen_out *w, const char *name, char *path,
                         size_t size) {
    snprintf(path, size, "%s/%s", w->o->out, name);
    int fd = openat(w->dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
                                      O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 && errno == ELOOP) {
        snprintf(w->err, w->errlen, "creating %s: a symbolic link is there; "
                 "it is not followed (remove it)", path);
        return NULL;
    }
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        snprintf(w->err, w->errlen, "creating %s: something other than a "
                 "file is there", path);
        return NULL;
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        fail_errno(w, "creating", path);
        if (fd >= 0) close(fd);
    }
    return f;
}

static int set_mtime(gen_out *w, FILE *f, const char *path, int64_t ts) {
    struct timespec times[2] = {{.tv_sec = ts}, {.tv_sec = ts}};
    if (fflush(f) != 0 || futimens(fileno(f), times) < 0)
        return fail_errno(w, "setting the mtime of", path);
    return 0;
}

static void put_binary(gen_out *w, FILE *f, int32_t label) {
    uint32_t u = (uint32_t)label;
    unsigned char le[LABEL_SIZE] = {u & 0xff, (u >> 8) & 0xff,
                                    (u >> 16) & 0xff, u >> 24};
    fwrite(le, 1, sizeof(le), f);
    fwrite(w->x, sizeof(float), w->dim, f); /* IEEE little-endian hosts */
}

static void put_csv_header(gen_out *w, FILE *f) {
    fputs("label,ts", f);
    for (uint32_t d = 0; d < w->dim; d++)
        fprintf(f, ",f%u", d);
    fputc('\n', f);
}

static void put_csv(gen_out *w, FILE *f, int32_t label, int64_t ts) {
    fprintf(f, "%d,%lld", label, (long long)ts);
    for (uint32_t d = 0; d < w->dim; d++)
        fprintf(f, ",%.6g", w->x[d]);
    fputc('\n', f);
}

static int64_t sample_ts(const pl_gen_opts *o, uint64_t i) {
    return o->start_ts + (int64_t)i * o->interval_s;
}

static int close_file(gen_out *w, FILE *f, const char *path, int64_t ts) {
    int bad = ferror(f) || set_mtime(w, f, path, ts) < 0;
    if (fclose(f) != 0 || bad)
        return fail_errno(w, "writing", path);
    return 0;
}

/* One file of samples [first, end) in the binary or CSV format. */
static int write_part(gen_out *w, uint32_t part, uint64_t first, uint64_t end) {
    const pl_gen_opts *o = w->o;
    int csv = o->format == PL_FORMAT_CSV;
    char name[64], path[4200];
    snprintf(name, sizeof(name), "part-%05u.%s", part, csv ? "csv" : "bin");
    FILE *f = create_file(w, name, path, sizeof(path));
    if (!f)
        return -1;
    if (csv)
        put_csv_header(w, f);
    for (uint64_t i = first; i < end; i++) {
        int32_t label;
        pl_gen_sample(&w->g, i, w->x, &label);
        if (csv)
            put_csv(w, f, label, sample_ts(o, i));
        else
            put_binary(w, f, label);
    }
    return close_file(w, f, path, sample_ts(o, end - 1));
}

/* One sample per file: s-KEY.bin (float32 features) and then, completing
 * the sample, s-KEY.bin.label (its label in decimal). */
static int write_single(gen_out *w, uint64_t i) {
    char name[64], path[4200], label_path[4300];
    int32_t label;
    pl_gen_sample(&w->g, i, w->x, &label);
    snprintf(name, sizeof(name), "s-%08llu.bin", (unsigned long long)i);
    FILE *f = create_file(w, name, path, sizeof(path));
    if (!f)
        return -1;
    fwrite(w->x, sizeof(float), w->dim, f);
    if (close_file(w, f, path, sample_ts(w->o, i)) < 0)
        return -1;
    strcat(name, ".label");
    if (!(f = create_file(w, name, label_path, sizeof(label_path))))
        return -1;
    fprintf(f, "%d\n", label);
    return close_file(w, f, label_path, sample_ts(w->o, i));
}

static int write_samples(gen_out *w) {
    const pl_gen_opts *o = w->o;
    if (o->format == PL_FORMAT_FILE) {
        for (uint64_t i = 0; i < o->samples; i++)
            if (write_single(w, i) < 0)
                return -1;
        return 0;
    }
    for (uint32_t p = 0; p < o->files; p++) {
        uint64_t first = o->samples * p / o->files;
        uint64_t end = o->samples * (p + 1) / o->files;
        if (end > first && write_part(w, p, first, end) < 0)
            return -1;
    }
    return 0;
}

static json_t *at_key(const pl_gen_opts *o, const char *type, uint64_t key) {
    return json_pack("{s:s, s:I, s:I}", "type", type, "key", (json_int_t)key,
                     "ts", (json_int_t)sample_ts(o, key));
}

static json_t *drift_points(const pl_gen_opts *o) {
    uint64_t n = o->samples;
    json_t *gradual = json_pack(
        "{s:s, s:I, s:I, s:I, s:I}", "type", "gradual",
        "start_key", (json_int_t)(n / 2), "end_key", (json_int_t)(5 * n / 8),
        "start_ts", (json_int_t)sample_ts(o, n / 2),
        "end_ts", (json_int_t)sample_ts(o, 5 * n / 8));
    return json_pack("[o, o, o]", at_key(o, "abrupt", n / 4), gradual,
                     at_key(o, "label_shift", 3 * n / 4));
}

/* The options of `aegis dataset add` that read what was written. */
static json_t *dataset_args(const pl_gen_opts *o, uint32_t record_size) {
    char args[256];
    if (o->format == PL_FORMAT_BINARY)
        snprintf(args, sizeof(args),
                 "--format binary --record-size %u --label-size %d "
                 "--classes %u", record_size, LABEL_SIZE, o->classes);
    else if (o->format == PL_FORMAT_CSV)
        snprintf(args, sizeof(args),
                 "--format csv --header --label-column label "
                 "--ts-column ts --classes %u", o->classes);
    else
        snprintf(args, sizeof(args), "--format file --classes %u", o->classes);
    return json_string(args);
}

/* The data files written: one a sample in the file format (and its
 * label file beside it), else --files. */
static uint64_t files_written(const pl_gen_opts *o) {
    return o->format == PL_FORMAT_FILE ? o->samples : o->files;
}

static int write_drift_json(gen_out *w) {
    const pl_gen_opts *o = w->o;
    uint32_t record_size = LABEL_SIZE + 4 * w->dim;
    json_t *doc = json_pack(
        "{s:s, s:s, s:I, s:I, s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:s, s:o, "
        "s:o}",
        "kind", o->kind == PL_GEN_IMAGE ? "image" : "tabular",
        "format", pl_format_name(o->format), "samples", (json_int_t)o->samples,
        "files", (json_int_t)files_written(o), "dim", (int)w->dim,
        "classes", (int)o->classes,
        "seed", (json_int_t)o->seed, "start_ts", (json_int_t)o->start_ts,
        "interval_s", (json_int_t)o->interval_s, "record_size",
        (int)record_size, "label_size", LABEL_SIZE, "drift_size",
        o->kind == PL_GEN_IMAGE
            ? "grating frequency +1.5 cycles, contrast -0.1, brightness +0.1 "
              "per concept step"
            : "every class mean moves 2 standard deviations in each pair of "
              "features per concept step (60 degree rotation at radius 2)",
        "drifts", drift_points(o), "dataset_add", dataset_args(o, record_size));
    char path[4200];
    FILE *f = create_file(w, "drift.json", path, sizeof(path));
    int rc = f ? json_dumpf(doc, f, JSON_INDENT(2) | JSON_SORT_KEYS) : -1;
    json_decref(doc);
    if (!f)
        return -1;
    int bad = rc < 0 || ferror(f);
    if (fclose(f) != 0 || bad)
        return fail_errno(w, "writing", path);
    return 0;
}

/* Whether the folder open as w->dir holds nothing: the files of a stream
 * written there before (part files past this one's --files, another
 * format's) would stay beside this one's, and a dataset added over it
 * would register them too. Its first entry is named. */
static int out_empty(gen_out *w) {
    int fd = dup(w->dir);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        if (fd >= 0) close(fd);
        return fail_errno(w, "listing", w->o->out);
    }
    struct dirent *e;
    while ((e = readdir(d)) && (!strcmp(e->d_name, ".") ||
                                !strcmp(e->d_name, "..")))
        ;
    if (e)
        snprintf(w->err, w->errlen, "%s: the folder holds files already (%s): "
                 "give a new or empty folder, so that no file of another "
                 "stream is left beside this one", w->o->out, e->d_name);
    closedir(d);
    return e ? -1 : 0;
}

/* o->out opened as w->dir: made when missing (0755, less the umask); a
 * folder there must be a folder, not a link to one, the caller's,
 * writable by no one else, and empty. */
static int open_out(gen_out *w) {
    const char *out = w->o->out;
    if (mkdir(out, 0755) < 0 && errno != EEXIST)
        return fail_errno(w, "creating", out);
    w->dir = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (w->dir < 0 && (errno == ELOOP || errno == ENOTDIR)) {
        snprintf(w->err, w->errlen, "%s: not a folder (a symbolic link is "
                 "not followed): give a folder of yours", out);
        return -1;
    }
    if (w->dir < 0 || fstat(w->dir, &st) < 0)
        return fail_errno(w, "opening", out);
    if (st.st_uid != geteuid()) {
        char who[64];
        feed_user_shown(st.st_uid, who, sizeof(who));
        snprintf(w->err, w->errlen, "%s: the folder belongs to user %s, not "
                 "to you: write the stream into a folder of yours", out, who);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(w->err, w->errlen, "%s: the folder is writable by others "
                 "(mode %04o): others could replace its files; chmod go-w "
                 "it, or give another folder", out,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return out_empty(w);
}

int pl_gen_write(const pl_gen_opts *o, char *err, size_t errlen) {
    gen_out w = {.o = o, .dim = pl_gen_dim(o), .dir = -1, .err = err,
                 .errlen = errlen};
    if (open_out(&w) < 0) {
        if (w.dir >= 0) close(w.dir);
        return PL_GEN_BAD_OUT;
    }
    if (!(w.x = malloc(sizeof(float) * w.dim))) {
        snprintf(err, errlen, "out of memory");
        close(w.dir);
        return -1;
    }
    pl_gen_init(&w.g, o);
    int rc = write_samples(&w);
    if (rc == 0)
        rc = write_drift_json(&w);
    free(w.x);
    close(w.dir);
    return rc;
}
