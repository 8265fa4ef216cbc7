/* watch.h -- the watcher of a dataset: registers the samples of the files
 * that arrive in its folder, appending them to its key log (keylog.h) and
 * file table (filetab.h). One watcher per dataset (it holds a lock on
 * keys.log); it runs as the dataset's owner (`aegis dataset watch`, or a
 * pipeline's supervisor).
 *
 * Files are read when closed after writing (IN_CLOSE_WRITE) or moved into
 * the folder (IN_MOVED_TO), and by a periodic scan, the safety net for
 * missed events, which also takes the new whole records of files still
 * growing. Only whole records and lines are taken until the file is
 * complete (PL_SETTLE_S).
 * Names starting with '.' or ending in ".tmp" are never read (write there,
 * then rename). Bad records are logged and skipped, never fatal.
 */
#ifndef AEGIS_PL_WATCH_H
#define AEGIS_PL_WATCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct pl_watch pl_watch;

/* A file unchanged this long is complete: its last CSV line may then lack
 * its '\n', and a partial record at its end is bad. Until then only whole
 * lines and records are taken. */
#define PL_SETTLE_S 60

/* Opens dataset NAME under STATE for registering: takes the lock, cuts a
 * torn tail off keys.log and files.log, and reads each file's progress.
 * 0, or -1 with err (another watcher holds the lock, the log is not a
 * key log, ...). */
int pl_watch_open(const char *state, const char *name, pl_watch **out,
                  char *err, size_t errlen);
void pl_watch_close(pl_watch *w);

/* Where warnings about single files go (default stderr; NULL: nowhere). */
void pl_watch_set_warnings(pl_watch *w, FILE *warn);

/* Registers what is new in file NAME of the folder (complete: nothing
 * more will be written to it). The number of samples registered, or -1 with err
 * when the log cannot be written (a bad or unreadable file is not an
 * error: it is logged or warned about). */
int64_t pl_watch_file(pl_watch *w, const char *name, int complete, char *err,
                      size_t errlen);

/* Registers what is new in every file of the folder, in name order. */
int64_t pl_watch_scan(pl_watch *w, char *err, size_t errlen);

/* For a caller with its own event loop (a pipeline's supervisor): starts
 * watching the folder and returns the inotify descriptor to poll for
 * reading (the same one on later calls), or -1 with err. Scan once after
 * it (pl_watch_scan), then call pl_watch_events whenever it is readable,
 * and pl_watch_scan every few seconds as the safety net. */
int pl_watch_start(pl_watch *w, char *err, size_t errlen);
/* Registers the files named by the events waiting (a scan instead after
 * an overflow of the event queue). Samples registered, or -1 with err. */
int64_t pl_watch_events(pl_watch *w, char *err, size_t errlen);

/* Watches the folder until *stop is set (by a signal handler): inotify
 * events, and a scan at the start and every interval_s. Prints a line to
 * progress (when not NULL) after each pass that registered something.
 * 0 once stopped, or -1 with err. */
int pl_watch_run(pl_watch *w, double interval_s, volatile sig_atomic_t *stop,
                 FILE *progress, char *err, size_t errlen);

/* Samples registered so far, bad records, sample bytes, files. */
uint64_t pl_watch_samples(const pl_watch *w);
uint64_t pl_watch_bad(const pl_watch *w);
uint64_t pl_watch_bytes(const pl_watch *w);
uint32_t pl_watch_files(const pl_watch *w);

#endif
