/* test_units.c -- unit tests of the simulator's parts that need no core:
 * CSV, catalog and trace reading, the model, the event heap and the
 * dispatcher. Inputs are written to temporary files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "catalog.h"
#include "csv.h"
#include "dispatch.h"
#include "heap.h"
#include "model.h"
#include "prefault.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char err[512];

/* The temporary files the tests wrote, removed when the group ends. */
static char temp_paths[128][32];
static int ntemp;

/* Writes text to a fresh temporary file; returns its path. */
static const char *write_temp(const char *text, size_t len) {
    assert_true(ntemp < 128);
    char *path = temp_paths[ntemp++];
    strcpy(path, "/tmp/aegis_sim_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

static int remove_temps(void **state) {
    (void)state;
    for (int i = 0; i < ntemp; i++) unlink(temp_paths[i]);
    return 0;
}

#define TEMP(text) write_temp(text, sizeof(text) - 1)

static const char catalog_text[] =
    "# comment\n"
    "name,num_gpus,solo_duration_s,peak_memory_mib,"
    "peak_memory_full_run_gpu_b_mib,avg_smact,horus_mib,lucid_ss\n"
    "small,1,100,1000,,0.5,900,0\n"
    "big,2,200,30000,428,0.9,,2\r\n";

static void test_csv_rows(void **state) {
    const char *path = TEMP("# c\na,b\n1,x\n\n# mid\n,y\r\n");
    csv_file *f = csv_open(path, err, sizeof(err));
    assert_non_null(f);
    assert_int_equal(csv_col(f, "b"), 1);
    assert_int_equal(csv_col(f, "z"), -1);
    double v = -1;
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(f->line, 3);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), 0);
    assert_true(v == 1);
    assert_string_equal(f->row[1], "x");
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(f->line, 6);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), 1);
    assert_string_equal(f->row[1], "y");
    assert_int_equal(csv_next(f, err, sizeof(err)), 0);
    csv_close(f);
    unlink(path);
}

/* As a spreadsheet saves CSV: a byte order mark, quoted names and
 * fields, a quote doubled, a comma in a quoted field; a quote that does
 * not close on its line, or text after it, is refused. */
static void test_csv_quoted(void **state) {
    const char *path = TEMP("\xef\xbb\xbf\"a\",b\r\n\"x, \"\"y\"\"\",\"\"\r\n"
                            "\"open,1\n\"z\"q,2\n");
    csv_file *f = csv_open(path, err, sizeof(err));
    assert_non_null(f);
    assert_int_equal(csv_col(f, "a"), 0);
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_string_equal(f->row[0], "x, \"y\"");
    assert_string_equal(f->row[1], "");
    for (int line = 3; line <= 4; line++) {
        assert_int_equal(csv_next(f, err, sizeof(err)), -1);
        char want[64];
        snprintf(want, sizeof(want), ":%d: a quoted field does not end", line);
        assert_non_null(strstr(err, want));
    }
    csv_close(f);
}

/* A pipe has no size to read at once: the buffer grows as the rows come,
 * here past its first 64 KiB. */
static void test_csv_from_pipe(void **state) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        FILE *out = fdopen(fds[1], "w");
        fputs("n\n", out);
        for (int i = 0; i < 30000; i++) fprintf(out, "%d\n", i);
        _exit(fclose(out) == 0 ? 0 : 1);
    }
    close(fds[1]);
    char path[32];
    snprintf(path, sizeof(path), "/dev/fd/%d", fds[0]);
    csv_file *f = csv_open(path, err, sizeof(err));
    assert_non_null(f);
    int rows = 0;
    double v = -1;
    while (csv_next(f, err, sizeof(err)) == 1) {
        assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), 0);
        assert_true(v == rows++);
    }
    assert_int_equal(rows, 30000);
    csv_close(f);
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_csv_errors(void **state) {
    const char *path = TEMP("a,b\n1\n");
    csv_file *f = csv_open(path, err, sizeof(err));
    assert_int_equal(csv_next(f, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: too few fields"));
    csv_close(f);
    path = write_temp("a\n\0\n", 4);
    assert_null(csv_open(path, err, sizeof(err)));
    assert_non_null(strstr(err, ":2: binary file"));
    assert_null(csv_open("/", err, sizeof(err)));
    assert_string_equal(err, "/: a directory, not a CSV file");
    path = TEMP("# only a comment\n");
    assert_null(csv_open(path, err, sizeof(err)));
    assert_non_null(strstr(err, "empty file"));
    path = TEMP("a\n1e999\n");
    f = csv_open(path, err, sizeof(err));
    double v;
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), -1);
    /* a number past a double's range is one, only too large: "not a
     * number" sent the user looking for a typo */
    assert_non_null(strstr(err, ":2: field 'a': '1e999' is too large a "
                                "number (over 1.8e+308)"));
    csv_close(f);
    path = TEMP("a\n-1e-999\n");
    f = csv_open(path, err, sizeof(err));
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: field 'a': '-1e-999' is too close to 0 "
                                "(under 2.2e-308)"));
    csv_close(f);
    /* 400 digits: shown cut to 40, so the count says it was longer */
    char digits[420] = "a\n";
    memset(digits + 2, '7', 400);
    strcpy(digits + 402, "\n");
    f = csv_open(write_temp(digits, strlen(digits)), err, sizeof(err));
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: field 'a': '7777777777777777777777777777777777777777'"
                                "... (400 bytes) is too large a number"));
    csv_close(f);
    /* the cut falls between characters: 'x' and 30 two-byte 'é' cut at 40
     * bytes would leave half an 'é' (a lone C3) in the message */
    char accents[80] = "x", shown[80];
    for (int i = 0; i < 30; i++) strcat(accents, "\xc3\xa9");
    csv_quote(accents, shown, sizeof(shown));
    assert_string_equal(shown, "'x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                               "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                               "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                               "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9'... (61 bytes)");
    /* lines ended by CR alone (classic Mac OS) are one line: named, not
     * "no jobs after the header" or a column of the next line's text */
    assert_null(csv_open(TEMP("a,b\r1,2\r"), err, sizeof(err)));
    assert_non_null(strstr(err, ":1: a carriage return inside the header "
                                "line: lines ended by CR alone"));
    f = csv_open(TEMP("a,b\n1,2\r3,4\n"), err, sizeof(err));
    assert_int_equal(csv_next(f, err, sizeof(err)), -1);
    assert_non_null(strstr(err, ":2: a carriage return inside the line: "
                                "lines ended by CR alone"));
    csv_close(f);
    /* decimal only (strtod took hex, a leading space and nan); -0 is 0 */
    path = TEMP("a\n0x10\n 5\nnan\n-0\n1.5e3\n");
    f = csv_open(path, err, sizeof(err));
    for (int row = 2; row <= 4; row++) {
        assert_int_equal(csv_next(f, err, sizeof(err)), 1);
        assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "is not a number"));
    }
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), 0);
    assert_false(signbit(v));
    assert_int_equal(csv_next(f, err, sizeof(err)), 1);
    assert_int_equal(csv_double(f, 0, &v, err, sizeof(err)), 0);
    assert_true(v == 1500.0);
    csv_close(f);
}

/* A file big enough to be mapped and searched in two halves: the first
 * NUL byte is the one named, in either half. */
static void test_csv_binary_big(void **state) {
    const int lines = 300000; /* of 4 bytes: 1.2 MB */
    size_t len = (size_t)lines * 4;
    char *text = malloc(len);
    assert_non_null(text);
    for (int i = 0; i < lines; i++) memcpy(text + 4 * i, "a,1\n", 4);
    text[4 * (lines - 10) + 1] = '\0';
    assert_null(csv_open(write_temp(text, len), err, sizeof(err)));
    char where[32];
    snprintf(where, sizeof(where), ":%d: binary file", lines - 9);
    assert_non_null(strstr(err, where));
    text[4 * 20] = '\0';
    assert_null(csv_open(write_temp(text, len), err, sizeof(err)));
    assert_non_null(strstr(err, ":21: binary file"));
    free(text);
}

static void test_catalog(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    assert_non_null(cat);
    assert_int_equal(cat->count, 2);
    const cat_workload *big = cat_find(cat, "bigger", 3);
    assert_non_null(big);
    assert_string_equal(big->name, "big");
    assert_int_equal(big->num_gpus, 2);
    assert_true(big->peak_b_mib == 428);
    assert_true(big->est_mib[CAT_EST_HORUS] == -1);
    assert_int_equal(big->sharing_score, 2);
    const cat_workload *small = cat_find(cat, "small", 5);
    assert_true(small->peak_b_mib == 1000);
    assert_true(small->est_mib[CAT_EST_HORUS] == 900);
    assert_null(cat_find(cat, "smal", 4));
    cat_free(cat);
}

static void test_catalog_errors(void **state) {
    assert_null(cat_load(TEMP("name,num_gpus,solo_duration_s,peak_memory_mib\n"
                              "a,1,10,5\na,1,10,5\n"), err, sizeof(err)));
    assert_non_null(strstr(err, "'a' is listed twice"));
    assert_null(cat_load(TEMP("name,num_gpus,solo_duration_s,peak_memory_mib\n"
                              "a,9,10,5\n"), err, sizeof(err)));
    assert_non_null(strstr(err, ":2: field 'num_gpus': 9 is outside"));
    assert_null(cat_load(TEMP("name,num_gpus,solo_duration_s\na,1,10\n"), err,
                         sizeof(err)));
    assert_non_null(strstr(err, "missing column 'peak_memory_mib'"));
    /* Lucid's sharing score is 0, 1 or 2: 0.99 was taken as 0 */
    assert_null(cat_load(TEMP("name,num_gpus,solo_duration_s,peak_memory_mib,"
                              "lucid_ss\na,1,10,5,0.99\n"), err, sizeof(err)));
    assert_non_null(strstr(err, ":2: field 'lucid_ss'"));
}

static void test_trace_sorted_stably(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    trace *t = trace_load(TEMP("workload,submit_time_s,task_path\n"
                               "big,5,\n"
                               "small,1,\n"
                               ",5,a/b/small.yaml\n"
                               "small,0.5,\n"), cat, err, sizeof(err));
    assert_non_null(t);
    assert_int_equal(t->count, 4);
    assert_int_equal(t->max_gpus, 2);
    const int64_t order[] = {4, 2, 1, 3};
    for (int i = 0; i < 4; i++) assert_int_equal(t->jobs[i].index, order[i]);
    assert_string_equal(t->jobs[3].work->name, "small");
    trace_free(t);
    cat_free(cat);
}

static void test_trace_job_index(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    trace *t = trace_load(TEMP("job_index,submit_time_s,workload\n"
                               "7,0,small\n"), cat, err, sizeof(err));
    assert_int_equal(t->jobs[0].index, 7);
    trace_free(t);
    /* a plain row's "-0" is 0, as any other row's (it was -0.0, which
     * --json printed as -0.000) */
    t = trace_load(TEMP("job_index,submit_time_s,workload\n"
                        "7,-0,small\n"), cat, err, sizeof(err));
    assert_non_null(t);
    assert_false(signbit(t->jobs[0].submit_s));
    trace_free(t);
    assert_null(trace_load(TEMP("job_index,submit_time_s,workload\n"
                                "x,0,small\n"), cat, err, sizeof(err)));
    assert_non_null(strstr(err, ":2: field 'job_index'"));
    /* 40 digits are a number, one too large for a job number */
    assert_null(trace_load(TEMP("job_index,submit_time_s,workload\n"
                                "1234567890123456789012345678901234567890,0,small\n"),
                           cat, err, sizeof(err)));
    assert_non_null(strstr(err, ":2: field 'job_index': "
                                "'1234567890123456789012345678901234567890' is over "
                                "9223372036854775807, the largest job number"));
    cat_free(cat);
}

/* Users are told apart by their names, exactly: "costarring" and
 * "liquid" once shared a 32-bit hash, and so one user's limits. An empty
 * cell and "-" are the anonymous user, as a trace without the column. */
static void test_trace_users_apart(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    trace *t = trace_load(TEMP("submit_time_s,workload,user\n"
                               "0,small,costarring\n"
                               "1,small,liquid\n"
                               "2,small,costarring\n"
                               "3,small,\n"
                               "4,small,-\n"
                               "5,small,Ann Lee\n"), cat, err, sizeof(err));
    assert_non_null(t);
    assert_int_not_equal(t->jobs[0].user, t->jobs[1].user);
    assert_int_equal(t->jobs[0].user, t->jobs[2].user);
    assert_int_equal(t->jobs[3].user, t->jobs[4].user);
    assert_int_not_equal(t->jobs[3].user, t->jobs[0].user);
    assert_int_not_equal(t->jobs[5].user, t->jobs[0].user);
    const char *names[] = {"costarring", "liquid", "costarring", "-", "-",
                           "Ann Lee"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(trace_user_name(t, t->jobs[i].user), names[i]);
    assert_true(t->has_users);
    trace_free(t);
    cat_free(cat);
}

/* A file read in two halves numbers a user alike in both: every job of
 * user u<k> has one number, and k its own. */
static void test_trace_users_across_cut(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    const int rows = 100000, users = 5000;
    size_t cap = 64 + (size_t)rows * 32, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "submit_time_s,workload,user\n");
    for (int i = 0; i < rows; i++)
        len += (size_t)snprintf(text + len, cap - len, "%d,small,u%d\n", i,
                                (i * 7919) % users);
    trace *t = trace_load(write_temp(text, len), cat, err, sizeof(err));
    free(text);
    assert_non_null(t);
    assert_int_equal(t->users.count, users);
    uint32_t *id_of = calloc(users, sizeof(*id_of));
    assert_non_null(id_of);
    char name[16];
    for (int i = 0; i < rows; i++) {
        int k = (i * 7919) % users;
        snprintf(name, sizeof(name), "u%d", k);
        assert_string_equal(trace_user_name(t, t->jobs[i].user), name);
        if (!id_of[k]) id_of[k] = t->jobs[i].user;
        assert_int_equal(t->jobs[i].user, id_of[k]);
    }
    free(id_of);
    trace_free(t);
    cat_free(cat);
}

/* A user cell that cannot be a name is refused, naming file, line and
 * column: blank, a control character, a space at either end, more than
 * TRACE_USER_MAX bytes, not UTF-8. 64 bytes pass. */
static void test_trace_user_refused(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    const char *bad[] = {"  ", "a\tb", "\x7f", " alice", "alice ",
                         "\xff\xfe",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                         "aaaaaaaaaaaaaaa"};
    char text[256];
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        int len = snprintf(text, sizeof(text),
                           "submit_time_s,workload,user\n0,small,ok\n"
                           "1,small,%s\n", bad[i]);
        err[0] = '\0';
        trace *t = trace_load(write_temp(text, (size_t)len), cat, err,
                              sizeof(err));
        if (t) fail_msg("user '%s' was taken", bad[i]);
        assert_non_null(strstr(err, ":3: field 'user': "));
    }
    int len = snprintf(text, sizeof(text), "submit_time_s,workload,user\n"
                       "0,small,%.64s\n", bad[6]);
    trace *t = trace_load(write_temp(text, (size_t)len), cat, err, sizeof(err));
    assert_non_null(t);
    trace_free(t);
    cat_free(cat);
}

/* A trace of `rows` jobs, big enough (over 1 MiB) to be read in two
 * threads: a comment line after the header and another before row
 * `note_row` (0 for none), "big" as the last job, and rows `bad_row` and
 * `bad_row2` (1-based, 0 for none) an unknown workload. */
static const char *big_trace(int rows, int note_row, int bad_row,
                             int bad_row2) {
    size_t cap = 64 + (size_t)rows * 32, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "workload,submit_time_s\n# note\n");
    for (int i = 1; i <= rows; i++) {
        const char *name = i == bad_row || i == bad_row2 ? "nope"
                         : i == rows                     ? "big"
                                                         : "small";
        len += (size_t)snprintf(text + len, cap - len, "%s%s,%d.5%s",
                                i == note_row ? "# mid\n" : "", name, i,
                                i % 1000 == 0 ? "\r\n" : "\n");
    }
    const char *path = write_temp(text, len);
    free(text);
    return path;
}

/* Both halves of a file read in two threads: numbered on across the cut,
 * a fault in the second half reported with its line in the file (also
 * after a comment line there), the first half's fault before the
 * second's. */
static void test_trace_read_in_two(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    const int rows = 120000;
    trace *t = trace_load(big_trace(rows, rows - 20, 0, 0), cat, err,
                          sizeof(err));
    assert_non_null(t);
    assert_int_equal(t->count, rows);
    assert_int_equal(t->max_gpus, 2);
    for (int i = 0; i < rows; i++) {
        assert_int_equal(t->jobs[i].index, i + 1);
        assert_true(t->jobs[i].submit_s == i + 1.5);
    }
    trace_free(t);
    char where[32];
    assert_null(trace_load(big_trace(rows, 0, rows - 10, 0), cat, err,
                           sizeof(err)));
    snprintf(where, sizeof(where), ":%d: field 'workload'", rows - 10 + 2);
    assert_non_null(strstr(err, where));
    assert_null(trace_load(big_trace(rows, rows - 20, rows - 10, 0), cat, err,
                           sizeof(err)));
    snprintf(where, sizeof(where), ":%d: field 'workload'", rows - 10 + 3);
    assert_non_null(strstr(err, where));
    assert_null(trace_load(big_trace(rows, 0, 10, rows - 10), cat, err,
                           sizeof(err)));
    assert_non_null(strstr(err, ":12: field 'workload'"));
    cat_free(cat);
}

/* Writes `rows` jobs of one length, the first `late` of them (1-based
 * row < late) submitted after all the others. */
static const char *cut_trace(int rows, int late) {
    size_t cap = 64 + (size_t)rows * 24, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "workload,submit_time_s\n");
    for (int i = 1; i <= rows; i++)
        len += (size_t)snprintf(text + len, cap - len, "small,%07d\n",
                                i < late ? rows + i : i);
    const char *path = write_temp(text, len);
    free(text);
    return path;
}

/* Halves each in order, the second before the first: the load sees the
 * fault in order at the cut and sorts. */
static void test_trace_sorted_across_cut(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    const int rows = 100000;
    /* The row the second half starts at: rows are all as long, so where
     * csv_split cuts does not depend on their times. */
    csv_file *f = csv_open(cut_trace(rows, 0), err, sizeof(err));
    assert_non_null(f);
    csv_file tail;
    csv_split(f, &tail);
    int first = 1;
    for (const char *p = f->pos; p < tail.pos; p++) first += *p == '\n';
    csv_close(f);
    trace *t = trace_load(cut_trace(rows, first), cat, err, sizeof(err));
    assert_non_null(t);
    for (int i = 0; i < rows; i++)
        assert_int_equal(t->jobs[i].index, (i + first - 1) % rows + 1);
    trace_free(t);
    cat_free(cat);
}

/* Per-job columns (job_columns.h): a row that names no workload is its
 * own, with the documented defaults; a row over a catalog workload keeps
 * the catalog's figures but those it gives; mem_mib is a declaration,
 * every estimator's figure; time_limit_s is read by both readers. */
static void test_trace_job_columns(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    trace *t = trace_load(TEMP("submit_time_s,workload,num_gpus,mem_mib,"
                               "peak_mib,duration_s,smact,time_limit_s\n"
                               "0,,2,20000,,600,,3600\n"
                               "1,small,,,,50,0.9,\n"
                               "2,small,,,,,,7200\n"
                               "3,,,,8000,60,,\n"), cat, err, sizeof(err));
    assert_non_null(t);
    const cat_workload *own = t->jobs[0].work, *over = t->jobs[1].work;
    assert_string_equal(own->name, JOB_OWN_NAME);
    assert_int_equal(own->num_gpus, 2);
    assert_true(own->declared);
    for (int e = 0; e < CAT_NEST; e++) assert_true(own->est_mib[e] == 20000);
    assert_true(own->peak_mib == 20000 && own->peak_b_mib == 20000);
    assert_true(own->solo_s == 600 && own->smact == JOB_DEFAULT_SMACT);
    assert_true(own->drama == JOB_DEFAULT_DRAMA && own->util_pct < 0);
    assert_true(t->jobs[0].time_limit_s == 3600);
    assert_string_equal(over->name, "small");
    assert_true(over->solo_s == 50 && over->smact == 0.9);
    assert_true(over->peak_mib == 1000 && over->est_mib[CAT_EST_HORUS] == 900);
    assert_false(over->declared);
    /* a plain row (the fast reader's) is the catalog's own entry */
    assert_ptr_equal(t->jobs[2].work, cat_find(cat, "small", 5));
    assert_true(t->jobs[2].time_limit_s == 7200);
    assert_false(t->jobs[3].work->declared);
    assert_true(t->jobs[3].work->est_mib[CAT_EST_HORUS] < 0);
    assert_true(t->jobs[3].work->peak_mib == 8000);
    assert_int_equal(t->max_gpus, 2);
    trace_free(t);
    cat_free(cat);
}

/* Rows with their own workloads in both halves of a file read in two
 * threads: each keeps its own figures once the halves are joined. */
static void test_trace_job_columns_in_two(void **state) {
    cat_catalog *cat = cat_load(TEMP(catalog_text), err, sizeof(err));
    const int rows = 100000; /* 1.6 MB: over TRACE_SPLIT_BYTES */
    size_t cap = 64 + (size_t)rows * 40, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "submit_time_s,workload,duration_s\n");
    for (int i = 0; i < rows; i++)
        len += (size_t)snprintf(text + len, cap - len, "%d,small,%d\n", i,
                                i + 1);
    trace *t = trace_load(write_temp(text, len), cat, err, sizeof(err));
    free(text);
    assert_non_null(t);
    for (int i = 0; i < rows; i++) assert_true(t->jobs[i].work->solo_s == i + 1);
    trace_free(t);
    cat_free(cat);
}

/* An OOM's cost (docs/model.md): 10.3 s up to an 18 GiB peak, 2.19 s a
 * GiB above, up to the GPU's memory: a peak past it crashes when the GPU
 * is full. */
static void test_model_crash(void **state) {
    sim_model m;
    sim_model_default(&m);
    assert_float_equal(sim_model_crash_s(&m, 7000, 40960), 10.3, 1e-12);
    assert_float_equal(sim_model_crash_s(&m, 18432, 40960), 10.3, 1e-12);
    assert_float_equal(sim_model_crash_s(&m, 18432 + 10 * 1024, 40960),
                       10.3 + 21.9, 1e-9);
    assert_float_equal(sim_model_crash_s(&m, 1e9, 40960),
                       10.3 + 2.19 * 22, 1e-9);
    assert_int_equal(sim_model_set(&m, "oom_crash_s", "-1", err, sizeof(err)),
                     -1);
}

static void test_model(void **state) {
    sim_model m;
    sim_model_default(&m);
    /* Alone: no co-runner load and no co-runner DRAMA, whatever the SMACT. */
    assert_true(sim_model_slowdown(&m, 0.9, 0.9, 0, 0) == 1);
    assert_int_equal(sim_model_set(&m, "beta", "1", err, sizeof(err)), 0);
    assert_int_equal(sim_model_set(&m, "threshold", "0.5", err, sizeof(err)), 0);
    assert_int_equal(sim_model_set(&m, "delta", "0.5", err, sizeof(err)), 0);
    assert_int_equal(sim_model_set(&m, "gamma", "0", err, sizeof(err)), 0);
    /* L = 1.5: excess 1.0; the light job (0.5) bears the heavy one's share
     * (2/3) of it, the heavy one (1.0) only the light one's (1/3). */
    assert_float_equal(sim_model_slowdown(&m, 1.5, 0.5, 0.2, 1), 1 + 2.0 / 3 + 0.1,
                       1e-12);
    assert_float_equal(sim_model_slowdown(&m, 1.5, 1.0, 0.2, 1), 1 + 1.0 / 3 + 0.1,
                       1e-12);
    /* Below the threshold only DRAMA contention slows it. */
    assert_float_equal(sim_model_slowdown(&m, 0.4, 0.2, 0.2, 1), 1.1, 1e-12);
    /* Crowding counts co-runners beyond the first. */
    assert_int_equal(sim_model_set(&m, "gamma", "0.1", err, sizeof(err)), 0);
    assert_float_equal(sim_model_slowdown(&m, 0.4, 0.2, 0.2, 3), 1.3, 1e-12);
    assert_int_equal(sim_model_set(&m, "alpha", "1", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "'alpha'"));
    assert_int_equal(sim_model_set(&m, "beta", "-1", err, sizeof(err)), -1);
    assert_float_equal(sim_model_power_w(&m, 0), 55, 1e-12);
    assert_float_equal(sim_model_power_w(&m, 0.5), 227.5, 1e-12);
    assert_float_equal(sim_model_power_w(&m, 3), 400, 1e-12);
}

static void test_heap_order(void **state) {
    sim_heap h = {0};
    const double times[] = {5, 1, 3, 1, 2, 5, 0.5};
    for (int i = 0; i < 7; i++)
        assert_int_equal(sim_heap_push(&h, times[i], SIM_EV_WAKEUP, i), 0);
    const int expect[] = {6, 1, 3, 4, 2, 0, 5};
    for (int i = 0; i < 7; i++) {
        sim_event ev;
        sim_heap_pop(&h, &ev);
        assert_int_equal(ev.id, expect[i]);
    }
    assert_int_equal(h.count, 0);
    sim_heap_free(&h);
}

/* Id and kind share a node's key with the sequence number: the largest id
 * must come back whole, with its kind, in push order among equal times. */
static void test_heap_packs_id_and_kind(void **state) {
    sim_heap h = {0};
    assert_int_equal(sim_heap_push(&h, 1, SIM_EV_WAKEUP, INT32_MAX), 0);
    assert_int_equal(
        sim_heap_push_ordered(&h, 1, SIM_EV_ACTIVATE, INT32_MAX - 1), 0);
    assert_int_equal(sim_heap_push(&h, 1, SIM_EV_WAKEUP, 0), 0);
    const int32_t ids[] = {INT32_MAX, INT32_MAX - 1, 0};
    const sim_event_kind kinds[] = {SIM_EV_WAKEUP, SIM_EV_ACTIVATE,
                                    SIM_EV_WAKEUP};
    for (int i = 0; i < 3; i++) {
        sim_event ev;
        sim_heap_pop(&h, &ev);
        assert_int_equal(ev.id, ids[i]);
        assert_int_equal(ev.kind, kinds[i]);
        assert_true(ev.t == 1);
    }
    sim_heap_free(&h);
}

/* Mapping pages in the second thread leaves what they hold alone, and
 * finishing twice is harmless. */
static void test_prefault_keeps_contents(void **state) {
    size_t bytes = (size_t)8 << 20;
    unsigned char *data = malloc(bytes);
    assert_non_null(data);
    for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 7 + 1);
    prefault pf;
    prefault_start(&pf, data, bytes);
    prefault_finish(&pf);
    prefault_finish(&pf);
    for (size_t i = 0; i < bytes; i++)
        if (data[i] != (unsigned char)(i * 7 + 1)) fail_msg("byte %zu", i);
    free(data);
}

/* Two servers of 2 GPUs: each job goes where the outstanding work (GPUs x
 * solo time / 2 per second) runs out first, ties to the lower index. */
static void test_dispatch(void **state) {
    (void)state;
    cat_workload one = {.num_gpus = 1, .solo_s = 100};
    cat_workload two = {.num_gpus = 2, .solo_s = 100};
    trace_job rows[] = {
        {.submit_s = 0, .work = &one},   /* tie: 0; 0 runs out at 50 */
        {.submit_s = 0, .work = &two},   /* 1 (0 < 50); runs out at 100 */
        {.submit_s = 10, .work = &one},  /* 0 (50 < 100); now 100 too */
        {.submit_s = 200, .work = &one}, /* both idle, tie: 0, until 250 */
        {.submit_s = 200, .work = &one}, /* 1 (100 < 250) */
    };
    trace t = {.jobs = rows, .count = 5, .max_gpus = 2};
    sim_dispatch d;
    assert_int_equal(sim_dispatch_plan(&d, &t, 2, 2), 0);
    int32_t start[] = {0, 3, 5}, ids[] = {0, 2, 3, 1, 4};
    assert_memory_equal(d.start, start, sizeof(start));
    assert_memory_equal(d.ids, ids, sizeof(ids));
    sim_dispatch_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_csv_quoted),
        cmocka_unit_test(test_csv_from_pipe),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_binary_big),
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_catalog_errors),
        cmocka_unit_test(test_trace_sorted_stably),
        cmocka_unit_test(test_trace_job_index),
        cmocka_unit_test(test_trace_users_apart),
        cmocka_unit_test(test_trace_users_across_cut),
        cmocka_unit_test(test_trace_user_refused),
        cmocka_unit_test(test_trace_read_in_two),
        cmocka_unit_test(test_trace_sorted_across_cut),
        cmocka_unit_test(test_trace_job_columns),
        cmocka_unit_test(test_trace_job_columns_in_two),
        cmocka_unit_test(test_model_crash),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_heap_order),
        cmocka_unit_test(test_heap_packs_id_and_kind),
        cmocka_unit_test(test_prefault_keeps_contents),
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, remove_temps);
}
