/* pl_tlog.c -- a pipeline's trigger log (pl_tlog.h): read at open, its
 * torn tail cut, appended one synced line at a time.
 */
#include "pl_tlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *pl_dir(const char *state, const char *name, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s/pipelines/%s", state, name);
    return n > 0 && (size_t)n < size ? buf : NULL;
}

int pl_mkdirs(const char *path, char *err, size_t errlen) {
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1;; p++) {
        bool last = *p == '\0';
        if (*p != '/' && !last) continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            return -1;
        }
        if (last) return 0;
        *p = '/';
    }
}

/* The entry of trigger n, the table grown to hold it; NULL when out of
 * memory. */
static pl_trig *pl_tlog_at(pl_tlog *log, uint32_t n) {
    if (n >= log->cap) {
        size_t cap = log->cap ? log->cap : 16;
        while (cap <= n) cap *= 2;
        pl_trig *grown = realloc(log->trigs, cap * sizeof(*grown));
        if (!grown) return NULL;
        memset(grown + log->cap, 0, (cap - log->cap) * sizeof(*grown));
        log->trigs = grown;
        log->cap = cap;
    }
    if (n >= log->ntrigs) log->ntrigs = n + 1;
    return &log->trigs[n];
}

/* Whether a record of `word` may name trigger n: triggers are numbered
 * from 0 in the order they fire, so a fire or skip names a trigger the
 * log has or the next one, and any other record one it has. (A number
 * past them would also make the table that large.) */
static bool pl_tlog_number_ok(const pl_tlog *log, const char *word,
                              unsigned n) {
    bool fires = strcmp(word, "fire") == 0 || strcmp(word, "skip") == 0;
    return n < log->ntrigs || (fires && n == log->ntrigs);
}

/* One record line into the table: 0, -1 when it is not one, -2 when it
 * names a trigger out of order (pl_tlog_number_ok()). */
static int pl_tlog_apply(pl_tlog *log, const char *line) {
    char word[8], text[16];
    unsigned n;
    uint64_t u;
    int64_t i, p;
    double t;
    pl_trig *tr;
    if (sscanf(line, "start %lf", &t) == 1) {
        log->started = t;
        return 0;
    }
    if (sscanf(line, "%7s %u", word, &n) != 2)
        return -1;
    if (!pl_tlog_number_ok(log, word, n))
        return -2;
    if (!(tr = pl_tlog_at(log, n)))
        return -1;
    if ((strcmp(word, "fire") == 0 || strcmp(word, "skip") == 0) &&
        sscanf(line, "%*s %*u %" SCNu64, &u) == 1) {
        tr->fired = true;
        tr->skipped = word[0] == 's';
        tr->end = u;
    } else if (strcmp(word, "job") == 0 &&
               sscanf(line, "%*s %*u %" SCNd64 " %" SCNd64, &i, &p) == 2) {
        tr->job = i;
        tr->parent = p;
    } else if (strcmp(word, "end") == 0 &&
               sscanf(line, "%*s %*u %15s", text) == 1) {
        snprintf(tr->state, sizeof(tr->state), "%s", text);
    } else if (strcmp(word, "drop") == 0) {
        tr->dropped = true;
    } else {
        return -1;
    }
    return 0;
}

/* The longest record line (appends are formatted into this much). */
#define PL_TLOG_LINE 128

/* Why the whole line (newline included) of n bytes is no record, or NULL
 * when it may be one: a NUL byte or a length no record has is damage. */
static const char *pl_tlog_line_damage(const char *line, size_t n) {
    if (strlen(line) != n) return "holds a NUL byte";
    if (n >= PL_TLOG_LINE) return "longer than any record";
    return NULL;
}

/* One whole line into the table: 0, or -1 with "PATH:LINE: ..." in err. */
static int pl_tlog_take(pl_tlog *log, const char *line, size_t n, int lineno,
                        char *err, size_t errlen) {
    const char *damage = pl_tlog_line_damage(line, n);
    int rc = damage ? -1 : pl_tlog_apply(log, line);
    if (damage)
        snprintf(err, errlen, "%s:%d: %s", log->path, lineno, damage);
    else if (rc == -2)
        snprintf(err, errlen, "%s:%d: names a trigger out of order (the "
                 "lines above have %zu): %.60s", log->path, lineno,
                 log->ntrigs, line);
    else if (rc != 0)
        snprintf(err, errlen, "%s:%d: not a trigger log record: %.60s",
                 log->path, lineno, line);
    return rc == 0 ? 0 : -1;
}

/* Reads the whole file into the table; *whole: the bytes up to the last
 * newline. Only a last line without its newline is torn (a crash in its
 * write); any other bad line is refused, so that the writer's open never
 * cuts whole records after it. */
static int pl_tlog_read(pl_tlog *log, FILE *f, long *whole, char *err,
                        size_t errlen) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    long at = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) > 0 &&
           line[n - 1] == '\n') {
        rc = pl_tlog_take(log, line, (size_t)n, ++lineno, err, errlen);
        at += (long)n;
    }
    free(line);
    *whole = at;
    return rc;
}

static int pl_tlog_append(pl_tlog *log, char *err, size_t errlen,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int pl_tlog_append(pl_tlog *log, char *err, size_t errlen,
                          const char *fmt, ...) {
    char line[PL_TLOG_LINE];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (log->fd < 0 || n <= 0 || (size_t)n >= sizeof(line) ||
        write(log->fd, line, (size_t)n) != n || fsync(log->fd) != 0) {
        snprintf(err, errlen, "%s: cannot append: %s", log->path,
                 log->fd < 0 ? "opened read only" : strerror(errno));
        return -1;
    }
    return pl_tlog_apply(log, line) == 0 ? 0 : -1;
}

int pl_tlog_open(const char *path, bool writable, pl_tlog *log, char *err,
                 size_t errlen) {
    memset(log, 0, sizeof(*log));
    log->fd = -1;
    snprintf(log->path, sizeof(log->path), "%s", path);
    int fd = open(path, writable ? O_RDWR | O_CREAT | O_CLOEXEC
                                 : O_RDONLY | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(dup(fd), "r") : NULL;
    long whole = 0;
    if (!f || pl_tlog_read(log, f, &whole, err, errlen) != 0) {
        if (!f) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (f) fclose(f);
        if (fd >= 0) close(fd);
        pl_tlog_close(log);
        return -1;
    }
    fclose(f);
    if (!writable) {
        close(fd);
        return 0;
    }
    log->fd = fd;
    if (ftruncate(fd, whole) != 0 || lseek(fd, 0, SEEK_END) < 0 ||
        (whole == 0 && pl_tlog_append(log, err, errlen, "start %.3f\n",
                                      (double)time(NULL)) != 0)) {
        if (whole != 0) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        pl_tlog_close(log);
        return -1;
    }
    return 0;
}

void pl_tlog_close(pl_tlog *log) {
    if (log->fd >= 0) close(log->fd);
    free(log->trigs);
    log->fd = -1;
    log->trigs = NULL;
    log->ntrigs = log->cap = 0;
}

int pl_tlog_fire(pl_tlog *log, uint32_t n, uint64_t end, bool skipped,
                 char *err, size_t errlen) {
    return pl_tlog_append(log, err, errlen, "%s %u %" PRIu64 "\n",
                          skipped ? "skip" : "fire", n, end);
}

int pl_tlog_job(pl_tlog *log, uint32_t n, int64_t job, int64_t parent,
                char *err, size_t errlen) {
    return pl_tlog_append(log, err, errlen, "job %u %" PRId64 " %" PRId64 "\n",
                          n, job, parent);
}

int pl_tlog_end(pl_tlog *log, uint32_t n, const char *state, char *err,
                size_t errlen) {
    return pl_tlog_append(log, err, errlen, "end %u %.15s\n", n, state);
}

int pl_tlog_drop(pl_tlog *log, uint32_t n, char *err, size_t errlen) {
    return pl_tlog_append(log, err, errlen, "drop %u\n", n);
}
