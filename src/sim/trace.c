/* trace.c -- loading a trace CSV (see trace.h). */
#include "trace.h"

#include "csv.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The workload a task_path names: its basename without ".yaml". */
static const char *task_stem(const char *path, size_t *len) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".yaml") == 0) n -= 5;
    *len = n;
    return base;
}

/* Column indexes of the fields read; -1 for a column absent. */
typedef struct trace_columns {
    int submit, work, task, index;
} trace_columns;

/* A job number: plain digits (at most 18, so no overflow) are converted
 * here, several times faster than strtoll, which takes anything else.
 * Returns 0, or -1 for text that is not a non-negative integer. */
static int parse_job_number(const char *text, int64_t *out) {
    int64_t v = 0;
    int digits = 0;
    for (const char *p = text; *p >= '0' && *p <= '9' && digits < 18; p++) {
        v = v * 10 + (*p - '0');
        digits++;
    }
    if (digits > 0 && text[digits] == '\0') {
        *out = v;
        return 0;
    }
    char *stop;
    errno = 0;
    long long slow = strtoll(text, &stop, 10);
    if (text[0] == '\0' || *stop != '\0' || errno || slow < 0) return -1;
    *out = slow;
    return 0;
}

static int read_job(const csv_file *f, const trace_columns *c,
                    const cat_catalog *cat, trace_job *job, char *err,
                    size_t errlen) {
    double submit = -1;
    if (csv_double(f, c->submit, &submit, err, errlen) < 0) return -1;
    if (submit < 0) {
        snprintf(err, errlen, "%s:%d: field 'submit_time_s': '%s' is %s",
                 f->path, f->line, f->row[c->submit],
                 f->row[c->submit][0] ? "negative" : "empty");
        return -1;
    }
    job->submit_s = submit;
    if (c->index >= 0) {
        const char *text = f->row[c->index];
        if (parse_job_number(text, &job->index) < 0) {
            snprintf(err, errlen, "%s:%d: field 'job_index': '%.40s' is not "
                     "a job number", f->path, f->line, text);
            return -1;
        }
    }
    int col = c->work >= 0 && f->row[c->work][0] ? c->work : c->task;
    const char *name = col >= 0 ? f->row[col] : "";
    size_t len = strlen(name);
    if (col == c->task && col >= 0) name = task_stem(name, &len);
    job->work = cat_find(cat, name, len);
    if (!job->work) {
        snprintf(err, errlen, "%s:%d: field '%s': unknown workload '%.*s'",
                 f->path, f->line, col >= 0 ? f->cols[col] : "workload",
                 (int)(len > 80 ? 80 : len), name);
        return -1;
    }
    return 0;
}

static int by_submit_then_row(const void *a, const void *b) {
    const trace_job *x = a, *y = b;
    if (x->submit_s != y->submit_s) return x->submit_s < y->submit_s ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int is_sorted(const trace *t) {
    for (int i = 1; i < t->count; i++)
        if (t->jobs[i].submit_s < t->jobs[i - 1].submit_s) return 0;
    return 1;
}

/* Sorts stably. qsort is not stable, so ties fall back to the file row,
 * which needs the rows numbered first; a trace already in order (the
 * usual case) is not touched. */
static void sort_jobs(trace *t, int64_t *rows) {
    if (is_sorted(t)) return;
    for (int i = 0; i < t->count; i++) {
        int64_t index = t->jobs[i].index;
        t->jobs[i].index = i;
        rows[i] = index;
    }
    qsort(t->jobs, (size_t)t->count, sizeof(*t->jobs), by_submit_then_row);
    for (int i = 0; i < t->count; i++)
        t->jobs[i].index = rows[t->jobs[i].index];
}

/* Files smaller than this are read by one thread: below it a second
 * thread costs about what it saves. */
#define TRACE_SPLIT_BYTES (1 << 20)

/* The rows of one part of the file, read by one thread. */
typedef struct trace_part {
    csv_file *f;
    const trace_columns *cols;
    const cat_catalog *cat;
    trace_job *jobs;
    int count, cap, max_gpus;
    int rc;                     /* 0, or -1 with a message in err */
    char err[512];
} trace_part;

static void read_part(trace_part *p) {
    int rc;
    while ((rc = csv_next(p->f, p->err, sizeof(p->err))) == 1) {
        if (p->count == p->cap) {
            int bigger = p->cap ? p->cap * 2 : 1024;
            trace_job *more = realloc(p->jobs, (size_t)bigger * sizeof(*more));
            if (!more) {
                snprintf(p->err, sizeof(p->err), "%s: out of memory",
                         p->f->path);
                rc = -1;
                break;
            }
            p->jobs = more;
            p->cap = bigger;
        }
        trace_job *job = &p->jobs[p->count];
        job->index = p->count + 1;
        rc = read_job(p->f, p->cols, p->cat, job, p->err, sizeof(p->err));
        if (rc < 0) break;
        if (job->work->num_gpus > p->max_gpus)
            p->max_gpus = job->work->num_gpus;
        p->count++;
    }
    p->rc = rc < 0 ? -1 : 0;
}

static void *read_part_thread(void *part) {
    read_part(part);
    return NULL;
}

/* Reads the rows of f, the second half of a big file in a second thread:
 * parsing was most of the time a million-job trace took to load. */
static void read_parts(csv_file *f, trace_part *head, trace_part *tail) {
    csv_file tail_file;
    bool split = f->end - f->pos >= TRACE_SPLIT_BYTES;
    pthread_t thread;
    bool threaded = false;
    if (split) {
        csv_split(f, &tail_file);
        tail->f = &tail_file;
        threaded = pthread_create(&thread, NULL, read_part_thread, tail) == 0;
    }
    read_part(head);
    if (threaded) pthread_join(thread, NULL);
    else if (split) read_part(tail); /* no thread to be had: in turn */
    tail->f = NULL;
}

/* Appends tail's rows to head's, numbering them on from head's when the
 * file has no job_index. Returns -1 when out of memory. */
static int join_parts(trace_part *head, trace_part *tail, bool numbered) {
    if (tail->count == 0) return 0;
    size_t n = (size_t)head->count + (size_t)tail->count;
    trace_job *all = realloc(head->jobs, n * sizeof(*all));
    if (!all) return -1;
    memcpy(all + head->count, tail->jobs, (size_t)tail->count * sizeof(*all));
    if (!numbered)
        for (int i = head->count; i < (int)n; i++) all[i].index += head->count;
    head->jobs = all;
    head->count = (int)n;
    if (tail->max_gpus > head->max_gpus) head->max_gpus = tail->max_gpus;
    return 0;
}

trace *trace_load(const char *path, const cat_catalog *cat, char *err,
                  size_t errlen) {
    csv_file *f = csv_open(path, err, errlen);
    if (!f) return NULL;
    trace_columns cols = {csv_col(f, "submit_time_s"), csv_col(f, "workload"),
                          csv_col(f, "task_path"), csv_col(f, "job_index")};
    if (cols.submit < 0 || (cols.work < 0 && cols.task < 0)) {
        snprintf(err, errlen, "%s:%d: missing column '%s'", path, f->line,
                 cols.submit < 0 ? "submit_time_s" : "workload (or task_path)");
        csv_close(f);
        return NULL;
    }
    trace_part head = {.f = f, .cols = &cols, .cat = cat};
    trace_part tail = {.cols = &cols, .cat = cat};
    read_parts(f, &head, &tail);
    csv_close(f);
    /* The first fault in the file is the one reported. */
    int rc = head.rc < 0 ? head.rc : tail.rc;
    if (rc < 0) snprintf(err, errlen, "%s", head.rc < 0 ? head.err : tail.err);
    if (rc == 0 && join_parts(&head, &tail, cols.index >= 0) < 0) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    free(tail.jobs);
    trace *t = rc == 0 ? calloc(1, sizeof(*t)) : NULL;
    if (rc == 0 && head.count == 0) {
        snprintf(err, errlen, "%s: no jobs after the header", path);
        rc = -1;
    }
    int64_t *rows = rc == 0 ? malloc((size_t)head.count * sizeof(*rows)) : NULL;
    if (rc == 0 && (!t || !rows)) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    if (rc < 0) {
        free(head.jobs);
        free(t);
        free(rows);
        return NULL;
    }
    *t = (trace){.jobs = head.jobs, .count = head.count,
                 .max_gpus = head.max_gpus};
    sort_jobs(t, rows);
    free(rows);
    return t;
}

void trace_free(trace *t) {
    if (!t) return;
    free(t->jobs);
    free(t);
}
