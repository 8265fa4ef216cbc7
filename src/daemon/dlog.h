/* dlog.h -- aegisd's log lines: one line per event, with its time and its
 * level, in the form the reader expects:
 *
 *   text     2026-12-04T04:30:00.123Z info: serving /run/aegis.sock ...
 *            (a terminal, or DIR/aegisd.log)
 *   journal  <6>serving /run/aegis.sock ...
 *            (stderr is systemd's journal, as JOURNAL_STREAM says: journald
 *            stamps the time, and reads the level from the <N> prefix)
 *   json     {"time": "...", "level": "info", "message": "..."}
 *            (--log-format json, for a log shipper; under journald too)
 *
 * A message with newlines is logged as one line each, so that no line of
 * the log is without its time and level.
 */
#ifndef AEGIS_DLOG_H
#define AEGIS_DLOG_H

#include <stdbool.h>

typedef enum dlog_format { DLOG_TEXT, DLOG_JSON } dlog_format;

/* "text" or "json" into *format: 0, or -1 for another name. */
int dlog_format_parse(const char *name, dlog_format *format);
/* Chooses how lines are written from now on: format, or the journal's
 * plain lines when format is text and stderr is the journal. Called again
 * after stderr is moved (to DIR/aegisd.log). */
void dlog_setup(dlog_format format);
/* Also writes each line to fd from now on (-1: no longer), e.g. the log
 * file while a terminal is still stderr. */
void dlog_copy_to(int fd);

/* Logs a line at level info, warning or error (syslog's 6, 4 and 3). */
void d_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void d_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void d_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
