/* trace.c -- loading a trace CSV (see trace.h). */
#include "trace.h"

#include "csv.h"

#include <errno.h>
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

static int read_job(const csv_file *f, int c_submit, int c_work, int c_task,
                    int c_index, const cat_catalog *cat, trace_job *job,
                    char *err, size_t errlen) {
    double submit = -1;
    if (csv_double(f, c_submit, &submit, err, errlen) < 0) return -1;
    if (submit < 0) {
        snprintf(err, errlen, "%s:%d: field 'submit_time_s': '%s' is %s",
                 f->path, f->line, f->row[c_submit],
                 f->row[c_submit][0] ? "negative" : "empty");
        return -1;
    }
    job->submit_s = submit;
    if (c_index >= 0) {
        const char *text = f->row[c_index];
        char *stop;
        errno = 0;
        long long v = strtoll(text, &stop, 10);
        if (text[0] == '\0' || *stop != '\0' || errno || v < 0) {
            snprintf(err, errlen, "%s:%d: field 'job_index': '%.40s' is not "
                     "a job number", f->path, f->line, text);
            return -1;
        }
        job->index = v;
    }
    int col = c_work >= 0 && f->row[c_work][0] ? c_work : c_task;
    const char *name = col >= 0 ? f->row[col] : "";
    size_t len = strlen(name);
    if (col == c_task && col >= 0) name = task_stem(name, &len);
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

static int grow(trace *t, int *cap) {
    int bigger = *cap ? *cap * 2 : 1024;
    trace_job *more = realloc(t->jobs, (size_t)bigger * sizeof(*more));
    if (!more) return -1;
    t->jobs = more;
    *cap = bigger;
    return 0;
}

trace *trace_load(const char *path, const cat_catalog *cat, char *err,
                  size_t errlen) {
    csv_file *f = csv_open(path, err, errlen);
    if (!f) return NULL;
    int c_submit = csv_col(f, "submit_time_s"), c_work = csv_col(f, "workload");
    int c_task = csv_col(f, "task_path"), c_index = csv_col(f, "job_index");
    trace *t = calloc(1, sizeof(*t));
    int cap = 0, rc = 0;
    if (!t) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    } else if (c_submit < 0 || (c_work < 0 && c_task < 0)) {
        snprintf(err, errlen, "%s:%d: missing column '%s'", path, f->line,
                 c_submit < 0 ? "submit_time_s" : "workload (or task_path)");
        rc = -1;
    }
    while (rc == 0 && (rc = csv_next(f, err, errlen)) == 1) {
        if (t->count == cap && grow(t, &cap) < 0) {
            snprintf(err, errlen, "%s: out of memory", path);
            rc = -1;
            break;
        }
        trace_job *job = &t->jobs[t->count];
        job->index = t->count + 1;
        rc = read_job(f, c_submit, c_work, c_task, c_index, cat, job, err,
                      errlen);
        if (rc == 0) {
            if (job->work->num_gpus > t->max_gpus)
                t->max_gpus = job->work->num_gpus;
            t->count++;
        }
    }
    if (rc == 0 && t->count == 0) {
        snprintf(err, errlen, "%s: no jobs after the header", path);
        rc = -1;
    }
    csv_close(f);
    int64_t *rows = rc == 0 ? malloc((size_t)t->count * sizeof(*rows)) : NULL;
    if (rc == 0 && !rows) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    if (rc < 0) {
        trace_free(t);
        return NULL;
    }
    sort_jobs(t, rows);
    free(rows);
    return t;
}

void trace_free(trace *t) {
    if (!t) return;
    free(t->jobs);
    free(t);
}
