/* bench_register.c -- registration against reading: the time the watcher
 * takes to register N fixed-size 160-byte records (Criteo's size) over F
 * files, against only reading the same files with read(), both from the
 * page cache. Prints the ratio (goal <= 2) and samples/s beside Modyn's
 * 80-100k rows/s (its issue #262: Postgres inserts of its selector).
 *
 * usage: bench-register [--records N] [--files F] [--dir DIR]
 * The files (N x 160 bytes) are written under DIR (default /tmp) and
 * removed at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dsconf.h"
#include "watch.h"

#define RECORD 160
#define LABEL 4
#define ROUNDS 3

/* Wall time, and the process's CPU time: on a loaded machine the second
 * is the fairer of the two (the goal is judged on the first, on a quiet
 * machine). */
typedef struct timing {
    double wall, cpu;
} timing;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static timing now(void) {
    return (timing){clock_s(CLOCK_MONOTONIC),
                    clock_s(CLOCK_PROCESS_CPUTIME_ID)};
}

static timing since(timing t0) {
    timing t = now();
    return (timing){t.wall - t0.wall, t.cpu - t0.cpu};
}

static void keep_best(timing *best, timing t) {
    best->wall = t.wall < best->wall ? t.wall : best->wall;
    best->cpu = t.cpu < best->cpu ? t.cpu : best->cpu;
}

static void die(const char *what, const char *path) {
    fprintf(stderr, "bench-register: %s %s: %s\n", what, path,
            strerror(errno));
    exit(1);
}

/* File f of the data: records labelled 0..1, features a counter. */
static void write_file(const char *path, long first, long count) {
    FILE *fp = fopen(path, "w");
    if (!fp)
        die("creating", path);
    unsigned char rec[RECORD];
    for (long i = first; i < first + count; i++) {
        int32_t label = (int32_t)(i & 1);
        float x = (float)i;
        memcpy(rec, &label, LABEL);
        for (size_t at = LABEL; at < RECORD; at += sizeof(x))
            memcpy(rec + at, &x, sizeof(x));
        fwrite(rec, 1, RECORD, fp);
    }
    if (fclose(fp) != 0)
        die("writing", path);
}

/* Reads every file once with read(): the reference. */
static timing read_all(const char *data, int files) {
    static char buf[1 << 20];
    timing t0 = now();
    for (int f = 0; f < files; f++) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/part-%05d.bin", data, f);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            die("opening", path);
        while (read(fd, buf, sizeof(buf)) > 0)
            ;
        close(fd);
    }
    return since(t0);
}

static void fresh_dataset(const char *root, const char *data) {
    char dsdir[4200], err[512], cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s/state && mkdir -p "
             "%s/state/datasets/b", root, root);
    if (system(cmd) != 0)
        die("making", root);
    snprintf(dsdir, sizeof(dsdir), "%s/state/datasets/b", root);
    pl_dsconf c = {.format = PL_FORMAT_BINARY, .record_size = RECORD,
                   .label_size = LABEL, .classes = 2, .sep = ','};
    strcpy(c.name, "b");
    snprintf(c.dir, sizeof(c.dir), "%s", data);
    strcpy(c.pattern, "*.bin");
    if (pl_dsconf_save(dsdir, &c, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench-register: %s\n", err);
        exit(1);
    }
}

/* One registration of the whole folder by a fresh watcher. */
static timing register_all(const char *root, const char *data, long want) {
    char state[4200], err[512];
    pl_watch *w;
    fresh_dataset(root, data);
    snprintf(state, sizeof(state), "%s/state", root);
    timing t0 = now();
    if (pl_watch_open(state, "b", &w, err, sizeof(err)) < 0 ||
        pl_watch_scan(w, err, sizeof(err)) != want) {
        fprintf(stderr, "bench-register: %s\n", err);
        exit(1);
    }
    pl_watch_close(w);
    return since(t0);
}

int main(int argc, char **argv) {
    static const struct option opts[] = {{"records", 1, 0, 'n'},
                                         {"files", 1, 0, 'f'},
                                         {"dir", 1, 0, 'd'},
                                         {0, 0, 0, 0}};
    long records = 10000000, files = 100;
    const char *base = "/tmp";
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 'n')
            records = atol(optarg);
        else if (c == 'f')
            files = atol(optarg);
        else if (c == 'd')
            base = optarg;
        else
            return 2;
    }
    if (records < files || files < 1) {
        fputs("bench-register: --records must be >= --files >= 1\n", stderr);
        return 2;
    }
    char root[4200], data[4300], cmd[4400];
    snprintf(root, sizeof(root), "%s/aegis-bench-register-XXXXXX", base);
    if (!mkdtemp(root))
        die("creating", root);
    snprintf(data, sizeof(data), "%s/data", root);
    mkdir(data, 0700);
    for (long f = 0; f < files; f++) {
        char path[4400];
        snprintf(path, sizeof(path), "%s/part-%05ld.bin", data, f);
        write_file(path, records * f / files,
                   records * (f + 1) / files - records * f / files);
    }
    timing best_read = {1e9, 1e9}, best_reg = {1e9, 1e9};
    read_all(data, (int)files); /* into the page cache */
    for (int r = 0; r < ROUNDS; r++) {
        keep_best(&best_read, read_all(data, (int)files));
        keep_best(&best_reg, register_all(root, data, records));
    }
    double ratio = best_reg.wall / best_read.wall;
    printf("registration of %ld %d-byte records in %ld files (best of %d, "
           "page cache)\n", records, RECORD, files, ROUNDS);
    printf("  read only  %8.3f s (CPU %.3f s)  %12.0f records/s\n",
           best_read.wall, best_read.cpu, records / best_read.wall);
    printf("  register   %8.3f s (CPU %.3f s)  %12.0f samples/s, Modyn "
           "80-100k rows/s: %.0fx\n", best_reg.wall, best_reg.cpu,
           records / best_reg.wall, records / best_reg.wall / 100000.0);
    printf("  ratio      %8.2f   (CPU %.2f)   goal <= 2.00: %s\n", ratio,
           best_reg.cpu / best_read.cpu, ratio <= 2.0 ? "met" : "NOT met");
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : 1;
}
