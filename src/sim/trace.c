/* trace.c -- loading a trace CSV (see trace.h). */
#include "trace.h"

#include "csv.h"
#include "prefault.h"
#include "trace_repeat.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A field where it lies in the file's buffer, not NUL-terminated. */
typedef struct span {
    const char *text;
    size_t len;
} span;

/* The workload a task_path names: its basename without ".yaml". */
static span task_stem(span path) {
    const char *base = path.text + path.len;
    while (base > path.text && base[-1] != '/') base--;
    size_t n = path.len - (size_t)(base - path.text);
    if (n > 5 && memcmp(base + n - 5, ".yaml", 5) == 0) n -= 5;
    return (span){base, n};
}

/* What the fast path (read_plain_row) does with a column's field. */
enum { ROLE_SKIP, ROLE_SUBMIT, ROLE_INDEX, ROLE_WORK, ROLE_TASK, ROLE_USER,
       ROLE_FEED, ROLE_LOAD, ROLE_LIMIT, ROLE_OWN };

/* Column indexes of the fields read; -1 for a column absent. */
typedef struct trace_columns {
    int submit, work, task, index, user, feed, load, limit;
    job_columns own;            /* the per-job columns (job_columns.h) */
    unsigned char role[CSV_MAX_FIELDS]; /* ROLE_ of each column */
} trace_columns;

/* The column a row's workload comes from: workload, or task_path where
 * workload is absent or empty; -1 when neither is there. */
static int workload_column(const trace_columns *c, span work) {
    return c->work >= 0 && work.len > 0 ? c->work : c->task;
}

/* The workload name in a row's workload or task_path field, as
 * workload_column() picks; an empty name when neither is there. */
static span workload_name(const trace_columns *c, span work, span task) {
    int col = workload_column(c, work);
    if (col < 0) return (span){"", 0};
    return col == c->work ? work : task_stem(task);
}

/* The rows of one part of the file, read by one thread. */
typedef struct trace_part {
    csv_file *f;
    const trace_columns *cols;
    const cat_catalog *cat;
    trace_job *jobs;
    int count, cap, max_gpus;
    /* Whether a job came before the one above it: a trace in order (the
     * usual case) is not sorted, and is seen to be as it is read, not in
     * a pass over the jobs after. */
    bool unsorted;
    double last_submit;         /* of the job last read */
    /* The names of users and feeds its rows hold, numbered in this part:
     * join_parts() renumbers the second half's as the first half's. */
    sim_names users, feeds;
    job_works own;              /* its rows' own workloads */
    int rc;                     /* 0, or -1 with a message in err */
    char err[512];
    /* The second half only, until settle_lines(): the first half, read in
     * head_thread when head_threaded, whose last line number its own are
     * counted on from. */
    struct trace_part *head;
    pthread_t head_thread;
    bool head_threaded;
} trace_part;

/* The number of the user named by the len bytes at name into *id: 0 for
 * the anonymous user (an empty cell or "-"). Returns -1 when out of
 * memory. */
static int user_id(trace_part *p, const char *name, size_t len, uint32_t *id) {
    *id = 0;
    if (len == 0 || (len == 1 && name[0] == '-')) return 0;
    return names_intern(&p->users, name, len, id);
}

/* The number of the feed named by the len bytes at name; 0 for none. */
static int feed_id(trace_part *p, const char *name, size_t len, uint32_t *id) {
    *id = 0;
    return len > 0 ? names_intern(&p->feeds, name, len, id) : 0;
}

/* Whether the user cell text (len bytes) is no name (trace_user_name()
 * has the rule), saying why in why. The cell is quoted only where it
 * prints as it is. */
static bool user_fault(const char *text, size_t len, char *why,
                       size_t whylen) {
    if (len > TRACE_USER_MAX) {
        snprintf(why, whylen, "%zu bytes, longer than the %d a name may have",
                 len, TRACE_USER_MAX);
        return true;
    }
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(why, whylen, "control character 0x%02x at byte %zu",
                     c, i + 1);
            return true;
        }
        spaces += c == ' ';
    }
    const char *fault =
        len > 0 && spaces == len ? "is blank (an empty cell is the anonymous "
                                   "user \"-\")"
        : len > 0 && (text[0] == ' ' || text[len - 1] == ' ')
            ? "begins or ends with a space"
            : NULL;
    if (fault) {
        snprintf(why, whylen, "'%s' %s", text, fault);
        return true;
    }
    /* jansson's check: the name goes out in JSON (aegis sim --json). */
    json_t *utf8 = json_stringn(text, len);
    bool fine = utf8 != NULL;
    json_decref(utf8);
    if (!fine) snprintf(why, whylen, "not UTF-8 text");
    return !fine;
}

/* Reads the user cell of p's current row into job; -1 with a message in
 * p->err for a cell that is no name, or when out of memory. */
static int read_user(trace_part *p, trace_job *job) {
    const csv_file *f = p->f;
    const char *text = p->cols->user >= 0 ? f->row[p->cols->user] : "";
    size_t len = strlen(text);
    char why[128];
    if (user_fault(text, len, why, sizeof(why))) {
        snprintf(p->err, sizeof(p->err), "%s:%d: field 'user': %s", f->path,
                 f->line, why);
        return -1;
    }
    if (user_id(p, text, len, &job->user) < 0) {
        snprintf(p->err, sizeof(p->err), "%s: out of memory", f->path);
        return -1;
    }
    return 0;
}

/* The digits of a job number at text (at most 18, so no overflow) into
 * *out; returns the byte after them, or NULL when there are none or more. */
static const char *job_number_digits(const char *text, int64_t *out) {
    uint64_t v;
    const char *stop = csv_digits(text, &v);
    if (stop == text || stop - text > 18) return NULL;
    *out = (int64_t)v;
    return stop;
}

/* A job number, field col of f's current row: plain digits are converted
 * by job_number_digits(), several times faster than strtoll, which takes
 * anything else. Returns 0, -1 for text that is not a non-negative
 * integer, or -2 for digits past INT64_MAX (a number, only too large). */
static int parse_job_number(const csv_file *f, int col, int64_t *out) {
    const char *text = f->row[col];
    int64_t v;
    const char *stop = job_number_digits(text, &v);
    if (stop && *stop == '\0') {
        *out = v;
        return 0;
    }
    char *end;
    errno = 0;
    long long slow = strtoll(text, &end, 10);
    if (text[0] != '\0' && *end == '\0' && errno == ERANGE && slow > 0)
        return -2;
    if (text[0] == '\0' || *end != '\0' || errno || slow < 0) return -1;
    *out = slow;
    return 0;
}

/* The field of column col of f's current row; empty when col is -1. */
static span field(const csv_file *f, int col) {
    const char *text = col >= 0 ? f->row[col] : "";
    return (span){text, strlen(text)};
}

/* Sets job's workload: base (NULL: the row names none), or one of its
 * own where the row gives per-job figures or names no workload. Returns
 * -1 with a message in p->err for a fault in them. */
static int own_workload(trace_part *p, trace_job *job,
                        const cat_workload *base) {
    job->work = base;
    if (base && !job_columns_given(&p->cols->own, p->f)) return 0;
    cat_workload *w = job_works_add(&p->own);
    if (!w) {
        snprintf(p->err, sizeof(p->err), "%s: out of memory", p->f->path);
        return -1;
    }
    job->work = w;
    return job_columns_read(&p->cols->own, p->f, base, w, p->err,
                            sizeof(p->err));
}

/* Reads p's current row, split by csv_next(), into job: the general path,
 * which names every fault. */
static int read_job(trace_part *p, trace_job *job) {
    const csv_file *f = p->f;
    const trace_columns *c = p->cols;
    char *err = p->err;
    size_t errlen = sizeof(p->err);
    double submit = -1;
    if (csv_double(f, c->submit, &submit, err, errlen) < 0) return -1;
    if (submit < 0) {
        snprintf(err, errlen, "%s:%d: field 'submit_time_s': '%s' is %s",
                 f->path, f->line, f->row[c->submit],
                 f->row[c->submit][0] ? "negative" : "empty");
        return -1;
    }
    if (submit > TRACE_MAX_SUBMIT_S) {
        snprintf(err, errlen, "%s:%d: field 'submit_time_s': '%.40s' is over "
                 "%.15g s, the latest a trace may hold", f->path, f->line,
                 f->row[c->submit], TRACE_MAX_SUBMIT_S);
        return -1;
    }
    job->submit_s = submit;
    if (c->index >= 0) {
        int rc = parse_job_number(f, c->index, &job->index);
        if (rc < 0) { /* quoted only here: this runs once a job */
            char shown[80];
            csv_quote(f->row[c->index], shown, sizeof(shown));
            if (rc == -2)
                snprintf(err, errlen, "%s:%d: field 'job_index': %s is over "
                         "%lld, the largest job number", f->path, f->line,
                         shown, LLONG_MAX);
            else
                snprintf(err, errlen, "%s:%d: field 'job_index': %s is not "
                         "a job number", f->path, f->line, shown);
            return -1;
        }
    }
    if (read_user(p, job) < 0) return -1;
    span feed = field(f, c->feed);
    if (feed_id(p, feed.text, feed.len, &job->feed) < 0) {
        snprintf(err, errlen, "%s: out of memory", f->path);
        return -1;
    }
    double load = 0;
    if (c->load >= 0 && f->row[c->load][0] &&
        csv_double(f, c->load, &load, err, errlen) < 0)
        return -1;
    if (!(load >= 0 && load <= TRACE_MAX_LOAD_CPUS)) {
        snprintf(err, errlen, "%s:%d: field 'load_cpus': '%.40s' is not "
                 "0..%.15g cores", f->path, f->line, f->row[c->load],
                 TRACE_MAX_LOAD_CPUS);
        return -1;
    }
    job->load_cpus = (float)load;
    double limit = 0;
    if (csv_bounded(f, c->limit, 0, TRACE_MAX_LIMIT_S, &limit, err,
                    errlen) < 0)
        return -1;
    job->time_limit_s = (float)limit;
    span work = field(f, c->work);
    span name = workload_name(c, work, field(f, c->task));
    /* An empty name is a job of its own where the trace has the columns
     * to give one. */
    bool named = name.len > 0 || !job_columns_any(&c->own);
    const cat_workload *base = named ? cat_find(p->cat, name.text, name.len)
                                     : NULL;
    if (named && !base) {
        int col = workload_column(c, work);
        char near[256];
        cat_suggest(p->cat, name.text, name.len, near, sizeof(near));
        snprintf(err, errlen, "%s:%d: field '%s': unknown workload '%.*s'%s",
                 f->path, f->line, col >= 0 ? f->cols[col] : "workload",
                 (int)(name.len > 80 ? 80 : name.len), name.text, near);
        return -1;
    }
    return own_workload(p, job, base);
}

/* Whether the bytes from s to stop are a user name taken as it is:
 * no byte past '~' (one to check for UTF-8, or DEL), no more than
 * TRACE_USER_MAX. csv_plain_end() has stopped at the other faults. */
static bool plain_user(const char *s, const char *stop) {
    if (stop - s > TRACE_USER_MAX) return false;
    for (; s < stop; s++)
        if ((unsigned char)*s > '~') return false;
    return true;
}

static bool field_empty(const char *s) {
    return *s == ',' || *s == '\n' || *s == '\r';
}

/* The optional number at s, 0 where the field is empty, into *out;
 * NULL when it is not plain or not in [0, hi] (read_job names it). */
static const char *plain_optional(const char *s, double hi, float *out) {
    double v = 0;
    if (!field_empty(s)) s = csv_plain_number(s, &v);
    if (!s || !(v >= 0 && v <= hi)) return NULL;
    *out = (float)v;
    return s;
}

/* Parses the field at s as its column's role asks, into job or names;
 * returns the byte it stopped at, or NULL when the field is not plain. */
static const char *plain_field(trace_part *p, int role, const char *s,
                               const char *end, trace_job *job,
                               span names[2]) {
    if (role == ROLE_SUBMIT) {
        double v;
        s = csv_plain_number(s, &v);
        /* read_job names the fault */
        if (!s || v < 0 || v > TRACE_MAX_SUBMIT_S) return NULL;
        job->submit_s = v;
        return s;
    }
    if (role == ROLE_INDEX) return job_number_digits(s, &job->index);
    if (role == ROLE_LOAD)
        return plain_optional(s, TRACE_MAX_LOAD_CPUS, &job->load_cpus);
    if (role == ROLE_LIMIT)
        return plain_optional(s, TRACE_MAX_LIMIT_S, &job->time_limit_s);
    /* a job's own figures: read_job's, where the row gives any */
    if (role == ROLE_OWN) return field_empty(s) ? s : NULL;
    const char *stop = csv_plain_end(s, end);
    size_t len = (size_t)(stop - s);
    /* A name is interned only whole: one that stops short (at a space,
     * say) is read_job's. read_job reports running out of memory. */
    bool whole = stop < end && (*stop == ',' || *stop == '\n' ||
                                *stop == '\r');
    if (role == ROLE_USER)
        return whole && plain_user(s, stop) &&
                       user_id(p, s, len, &job->user) == 0 ? stop : NULL;
    if (role == ROLE_FEED)
        return whole && feed_id(p, s, len, &job->feed) == 0 ? stop : NULL;
    if (role != ROLE_SKIP) names[role - ROLE_WORK] = (span){s, len};
    return stop;
}

/* The fast path: reads the row at f->pos in place, without writing to the
 * buffer, when it is plain -- the header's field count, numbers in
 * csv_plain_number's form, a known workload, a '\n' line end. Returns 1
 * when it took the row, 0 for any other line (a comment, a blank line,
 * the end, a fault), which read_job takes after csv_next(): both read a
 * plain row alike, and only they name faults. */
static int read_plain_row(trace_part *p, trace_job *job) {
    csv_file *f = p->f;
    const trace_columns *c = p->cols;
    const char *s = f->pos, *end = f->end;
    if (s == end || *s == '#') return 0;
    job->user = 0;
    job->feed = 0;
    job->load_cpus = 0;
    job->time_limit_s = 0;
    span names[2] = {{"", 0}, {"", 0}};
    for (int col = 0;; col++) {
        s = plain_field(p, c->role[col], s, end, job, names);
        if (!s || s == end) return 0;
        if (col == f->ncols - 1) break;
        if (*s != ',') return 0;
        s++;
    }
    if (*s == '\r') s++;
    if (s == end || *s != '\n') return 0;
    span name = workload_name(c, names[0], names[1]);
    job->work = cat_find(p->cat, name.text, name.len);
    if (!job->work) return 0;
    csv_skip_row(f, s + 1);
    return 1;
}

static int by_submit_then_row(const void *a, const void *b) {
    const trace_job *x = a, *y = b;
    if (x->submit_s != y->submit_s) return x->submit_s < y->submit_s ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Sorts stably. qsort is not stable, so ties fall back to the file row,
 * which needs the rows numbered first. Returns -1 when out of memory. */
static int sort_jobs(trace_job *jobs, int count) {
    int64_t *rows = malloc((size_t)count * sizeof(*rows));
    if (!rows) return -1;
    for (int i = 0; i < count; i++) {
        rows[i] = jobs[i].index;
        jobs[i].index = i;
    }
    qsort(jobs, (size_t)count, sizeof(*jobs), by_submit_then_row);
    for (int i = 0; i < count; i++) jobs[i].index = rows[jobs[i].index];
    free(rows);
    return 0;
}

/* Marks the columns read_plain_row() parses; the rest it skips. */
static void set_roles(trace_columns *c) {
    const job_columns *o = &c->own;
    const int cols[] = {c->submit, c->index, c->work, c->task, c->user,
                        c->feed, c->load, c->limit, o->num_gpus, o->mem,
                        o->peak, o->duration, o->smact, o->smocc, o->drama};
    const unsigned char roles[] = {ROLE_SUBMIT, ROLE_INDEX, ROLE_WORK,
                                   ROLE_TASK, ROLE_USER, ROLE_FEED, ROLE_LOAD,
                                   ROLE_LIMIT, ROLE_OWN, ROLE_OWN, ROLE_OWN,
                                   ROLE_OWN, ROLE_OWN, ROLE_OWN, ROLE_OWN};
    for (size_t i = 0; i < sizeof(cols) / sizeof(*cols); i++)
        if (cols[i] >= 0) c->role[cols[i]] = roles[i];
}

/* Files smaller than this are read by one thread: below it a second
 * thread costs about what it saves. */
#define TRACE_SPLIT_BYTES (1 << 20)


/* Room for one more job in p; -1 with a message when out of memory. */
static int make_room(trace_part *p) {
    if (p->count < p->cap) return 0;
    int bigger = p->cap ? p->cap * 2 : 1024;
    trace_job *more = realloc(p->jobs, (size_t)bigger * sizeof(*more));
    if (!more) {
        snprintf(p->err, sizeof(p->err), "%s: out of memory", p->f->path);
        return -1;
    }
    p->jobs = more;
    p->cap = bigger;
    return 0;
}

/* The second half's line numbers count from the cut until the first half
 * is read. Only csv_next() and read_job() use them, in messages, so before
 * either reads a row of the second half, this waits for the first and
 * numbers on from its last line: counting the first half's lines up front
 * was a tenth of the load. Returns -1 when the first half failed: its
 * fault is the one reported, and the second need not be read on. */
static int settle_lines(trace_part *p) {
    trace_part *head = p->head;
    if (!head) return 0;
    p->head = NULL;
    if (p->head_threaded) pthread_join(p->head_thread, NULL);
    if (head->rc < 0) return -1;
    p->f->line += head->f->line;
    return 0;
}

/* Room for the rows of bytes of text at line_bytes a row, a sixteenth
 * more to spare, on huge pages where the system has them: the 24 MB of a
 * million jobs took 6000 page faults, a fifth of the load's CPU time.
 * make_room still grows the array where this falls short. */
static void reserve(trace_part *p, double line_bytes, ptrdiff_t bytes) {
    double rows = (double)bytes / line_bytes * (17.0 / 16) + 64;
    if (rows > INT_MAX) return;
    size_t size = (size_t)rows * sizeof(*p->jobs);
    p->jobs = malloc(size);
    if (!p->jobs) return;
    p->cap = (int)rows;
    prefault_huge(p->jobs, size);
}

/* Reads p's rows: the plain ones in place, any other through csv_next(). */
static void read_part(trace_part *p) {
    int rc;
    while ((rc = make_room(p)) == 0) {
        trace_job *job = &p->jobs[p->count];
        job->index = p->count + 1;
        if (!read_plain_row(p, job)) {
            if ((rc = settle_lines(p)) < 0) break;
            rc = csv_next(p->f, p->err, sizeof(p->err));
            if (rc <= 0) break;
            rc = read_job(p, job);
            if (rc < 0) break;
        }
        if (job->work->num_gpus > p->max_gpus)
            p->max_gpus = job->work->num_gpus;
        /* Not negative: the first job is never before "the one above". */
        p->unsorted |= job->submit_s < p->last_submit;
        p->last_submit = job->submit_s;
        p->count++;
    }
    p->rc = rc < 0 ? -1 : 0;
}

static void *read_part_thread(void *part) {
    read_part(part);
    return NULL;
}

/* Reads the rows of f, the first half of a big file in a second thread:
 * parsing was most of the time a million-job trace took to load. */
static void read_parts(csv_file *f, trace_part *head, trace_part *tail) {
    double line_bytes = csv_line_bytes(f);
    /* All rows: join_parts() appends the tail's to the head's. */
    reserve(head, line_bytes, f->end - f->pos);
    if (f->end - f->pos < TRACE_SPLIT_BYTES) {
        read_part(head);
        return;
    }
    csv_file tail_file;
    csv_split(f, &tail_file);
    reserve(tail, line_bytes, tail_file.end - tail_file.pos);
    tail->f = &tail_file;
    tail->head = head;
    tail->head_threaded =
        pthread_create(&tail->head_thread, NULL, read_part_thread, head) == 0;
    if (!tail->head_threaded) read_part(head); /* no thread to be had */
    read_part(tail);
    settle_lines(tail); /* joins the thread where the tail did not */
    tail->f = NULL;
}

/* The numbers in into of the names of from, numbered there, adding
 * those into lacks: map[id] for from's id, map[0] = 0. NULL when out of
 * memory; the caller frees it. */
static uint32_t *merge_names(sim_names *into, const sim_names *from) {
    uint32_t *map = malloc(((size_t)from->count + 1) * sizeof(*map));
    if (map && names_merge(into, from, map) < 0) {
        free(map);
        return NULL;
    }
    return map;
}

/* Appends tail's rows to head's, numbering them on from head's when the
 * file has no job_index, and their users and feeds as head numbers them.
 * Returns -1 when out of memory. */
static int join_parts(trace_part *head, trace_part *tail, bool numbered) {
    if (tail->count == 0) return 0;
    size_t n = (size_t)head->count + (size_t)tail->count;
    uint32_t *users = merge_names(&head->users, &tail->users);
    uint32_t *feeds = users ? merge_names(&head->feeds, &tail->feeds) : NULL;
    trace_job *all = feeds ? realloc(head->jobs, n * sizeof(*all)) : NULL;
    if (!all) {
        free(users);
        free(feeds);
        return -1;
    }
    memcpy(all + head->count, tail->jobs, (size_t)tail->count * sizeof(*all));
    for (int i = head->count; i < (int)n; i++) {
        if (!numbered) all[i].index += head->count;
        all[i].user = users[all[i].user];
        all[i].feed = feeds[all[i].feed];
    }
    free(users);
    free(feeds);
    job_works_join(&head->own, &tail->own);
    head->unsorted |= tail->unsorted ||
                      all[head->count].submit_s < head->last_submit;
    head->last_submit = tail->last_submit;
    head->jobs = all;
    head->count = (int)n;
    if (tail->max_gpus > head->max_gpus) head->max_gpus = tail->max_gpus;
    return 0;
}

/* The line of the file's row-th data row (from 0), found by reading the
 * file again: only a message needs it, and jobs do not keep their lines. */
static int row_line(const char *path, int row) {
    char err[256];
    csv_file *f = csv_open(path, err, sizeof(err));
    int line = 0;
    for (int i = 0; f && i <= row && csv_next(f, err, sizeof(err)) == 1; i++)
        line = f->line;
    csv_close(f);
    return line;
}

int trace_job_line(const char *path, int64_t index) {
    char err[256];
    csv_file *f = csv_open(path, err, sizeof(err));
    int col = f ? csv_col(f, "job_index") : -1, line = 0;
    for (int64_t row = 1; f && csv_next(f, err, sizeof(err)) == 1; row++) {
        int64_t number = row;
        if (col >= 0 && parse_job_number(f, col, &number) < 0) continue;
        if (number == index) {
            line = f->line;
            break;
        }
    }
    csv_close(f);
    return line;
}

/* Refuses jobs, in file order, that share a job_index, naming both lines.
 * Returns 0, or -1 with a message in err. */
static int check_numbers_differ(const char *path, const trace_part *p,
                                char *err, size_t errlen) {
    int first, second;
    int found = trace_find_repeat(p->jobs, p->count, &first, &second);
    if (found < 0) snprintf(err, errlen, "%s: out of memory", path);
    if (found > 0)
        snprintf(err, errlen, "%s:%d: field 'job_index': %lld repeats line %d",
                 path, row_line(path, second),
                 (long long)p->jobs[second].index, row_line(path, first));
    return found ? -1 : 0;
}

trace *trace_load(const char *path, const cat_catalog *cat, char *err,
                  size_t errlen) {
    csv_file *f = csv_open(path, err, errlen);
    if (!f) return NULL;
    trace_columns cols = {csv_col(f, "submit_time_s"), csv_col(f, "workload"),
                          csv_col(f, "task_path"), csv_col(f, "job_index"),
                          csv_col(f, "user"), csv_col(f, "feed"),
                          csv_col(f, "load_cpus"), csv_col(f, "time_limit_s"),
                          {0}, {0}};
    job_columns_find(f, &cols.own);
    if (cols.submit < 0 ||
        (cols.work < 0 && cols.task < 0 && cols.own.duration < 0)) {
        snprintf(err, errlen, "%s:%d: missing column '%s'", path, f->line,
                 cols.submit < 0 ? "submit_time_s"
                                 : "workload (or task_path, or duration_s)");
        csv_close(f);
        return NULL;
    }
    set_roles(&cols);
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
    names_free(&tail.users);
    names_free(&tail.feeds);
    job_works_free(&tail.own); /* joined into head's, unless it failed */
    names_free(&head.feeds); /* their numbers are all a replay needs */
    if (rc == 0 && cols.index >= 0)
        rc = check_numbers_differ(path, &head, err, errlen);
    trace *t = rc == 0 ? calloc(1, sizeof(*t)) : NULL;
    if (rc == 0 && head.count == 0) {
        snprintf(err, errlen, "%s: no jobs after the header", path);
        rc = -1;
    }
    if (rc == 0 && (!t || (head.unsorted &&
                           sort_jobs(head.jobs, head.count) < 0))) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    }
    if (rc < 0) {
        free(head.jobs);
        names_free(&head.users);
        job_works_free(&head.own);
        free(t);
        return NULL;
    }
    *t = (trace){.jobs = head.jobs, .count = head.count,
                 .max_gpus = head.max_gpus, .has_users = cols.user >= 0,
                 .users = head.users, .own = head.own};
    return t;
}

const char *trace_user_name(const trace *t, uint32_t id) {
    return id ? names_get(&t->users, id) : "-";
}

void trace_free(trace *t) {
    if (!t) return;
    free(t->jobs);
    names_free(&t->users);
    job_works_free(&t->own);
    free(t);
}
