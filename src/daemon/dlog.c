/* dlog.c -- aegisd's log lines (dlog.h): time, level, message, written
 * to stderr (a terminal, DIR/aegisd.log or the journal) whole, one
 * write() a line, so that lines of aegisd and of its children that share
 * the file never interleave inside a line. */
#include "dlog.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef enum dlog_level { DLOG_ERROR = 3, DLOG_WARNING = 4, DLOG_INFO = 6 }
    dlog_level;

typedef enum dlog_sink { SINK_TEXT, SINK_JOURNAL, SINK_JSON } dlog_sink;

static dlog_sink sink = SINK_TEXT;
static int copy_fd = -1;

int dlog_format_parse(const char *name, dlog_format *format) {
    if (strcmp(name, "text") == 0) *format = DLOG_TEXT;
    else if (strcmp(name, "json") == 0) *format = DLOG_JSON;
    else return -1;
    return 0;
}

/* Whether stderr is the journal's stream: systemd sets JOURNAL_STREAM to
 * its "DEVICE:INODE", which a stderr moved elsewhere no longer matches. */
static bool dlog_stderr_is_journal(void) {
    const char *stream = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    return stream && sscanf(stream, "%llu:%llu", &dev, &ino) == 2 &&
           fstat(STDERR_FILENO, &st) == 0 &&
           (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void dlog_setup(dlog_format format) {
    if (format == DLOG_JSON) sink = SINK_JSON;
    else sink = dlog_stderr_is_journal() ? SINK_JOURNAL : SINK_TEXT;
}

void dlog_copy_to(int fd) { copy_fd = fd; }

static const char *dlog_level_name(dlog_level level) {
    return level == DLOG_ERROR ? "error"
           : level == DLOG_WARNING ? "warning" : "info";
}

/* Now, in UTC, as 2026-12-04T04:30:00.123Z. */
static void dlog_time(char *out, size_t outlen) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, outlen, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, outlen - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* The record of one line of message in the sink's form; NULL when out of
 * memory. The caller frees it. */
static char *dlog_record(dlog_level level, const char *line) {
    char when[40], *out = NULL;
    if (sink == SINK_JOURNAL) {
        if (asprintf(&out, "<%d>%s\n", (int)level, line) < 0) out = NULL;
        return out;
    }
    dlog_time(when, sizeof(when));
    if (sink == SINK_TEXT) {
        if (asprintf(&out, "%s %s: %s\n", when, dlog_level_name(level),
                     line) < 0)
            out = NULL;
        return out;
    }
    json_t *rec = json_pack("{s:s, s:s, s:s?}", "time", when, "level",
                            dlog_level_name(level), "message", line);
    char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    json_decref(rec);
    if (text && asprintf(&out, "%s\n", text) < 0) out = NULL;
    free(text);
    return out;
}

/* Writes the message, one record per line of it. */
static void dlog_write(dlog_level level, const char *fmt, va_list ap) {
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    for (char *line = msg, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *rec = dlog_record(level, line);
        if (!rec) continue;         /* out of memory: the line is lost */
        /* a log that cannot be written has nowhere to say so */
        ssize_t written = write(STDERR_FILENO, rec, strlen(rec));
        if (copy_fd >= 0) written = write(copy_fd, rec, strlen(rec));
        (void)written;
        free(rec);
    }
}

void d_log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlog_write(DLOG_INFO, fmt, ap);
    va_end(ap);
}

void d_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlog_write(DLOG_WARNING, fmt, ap);
    va_end(ap);
}

void d_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    dlog_write(DLOG_ERROR, fmt, ap);
    va_end(ap);
}
