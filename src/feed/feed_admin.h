/* feed_admin.h -- list and garbage-collect feeds: what `aegis feed ls` and
 * `aegis feed gc` (src/cli/feed_cmd.c) call.
 *
 * Ownership: feed_list and feed_gc allocate *out with malloc; the caller
 * frees it with free(). */
#ifndef AEGIS_FEED_ADMIN_H
#define AEGIS_FEED_ADMIN_H

#include <stdio.h>

#include "feed.h"

typedef struct {
    int32_t pid;
    int alive;
    uint32_t batch_size; /* 0: whole producer batches */
    uint64_t epoch;      /* epoch it reads or waits for */
    uint64_t pos;        /* producer batch it reads next */
    uint64_t lag;        /* batches published that it has not read */
    uint64_t batches;    /* producer batches read so far */
    double idle_s;       /* since it last read or released a batch */
} feed_consumer_info;

typedef struct {
    char name[FEED_NAME_MAX + 1];
    char owner[32];       /* user name (or uid) owning the segment */
    int readable;         /* 0: this user may not open it (another user's);
                             nothing below is known */
    char corrupt[128];    /* "" or why the segment is not one a producer
                             made (short, or its header makes no sense):
                             nothing below is known */
    int ready;            /* 0: a half-made segment (creator died early) */
    int32_t producer_pid;
    int producer_alive;
    uint32_t slots;
    uint64_t bytes;       /* segment size */
    int closed;
    uint64_t head;        /* batches published, epoch markers included */
    uint64_t epoch;
    uint64_t epoch_index; /* batches published in the current epoch */
    int nconsumers;
    feed_consumer_info consumers[FEED_MAX_CONSUMERS];
    int removed;          /* feed_gc: it unlinked the segment */
    int gc_errno;         /* feed_gc: why unlinking a dead one failed */
} feed_info;

/* Every segment named /dev/shm/aegis-feed-*, read from a private copy of
 * its header (never mapped nor locked: its owner may truncate it, hold its
 * lock or write anything in it), so the counts of a feed being updated may
 * be momentarily inconsistent; one whose header makes no sense is listed
 * as corrupt. */
int feed_list(feed_info **out, size_t *n, feed_err *err);
/* Unlink the segments whose producer is dead, and half-made or corrupt ones
 * older than a few seconds. *out lists those, each with `removed` set only if this
 * call unlinked it (else gc_errno says why not), and the other users'
 * segments this user cannot open, which it leaves alone. */
int feed_gc(feed_info **out, size_t *n, feed_err *err);
/* Print a listing as a table. Its JSON lines are the CLI's (src/cli/
 * feed_json.h): built with jansson, which this library, linked into the
 * Python module too, does not take. */
void feed_print(FILE *f, const feed_info *feeds, size_t n);
/* Print what feed_gc did with each feed it returned: a line each. */
void feed_print_gc(FILE *f, const feed_info *feeds, size_t n);
/* What fi's producer is: "alive", "dead", "closed", "half-made",
 * "corrupt" or "unreadable" (a static string). */
const char *feed_producer_state(const feed_info *fi);
/* Why feed_gc left fi in place, written into buf; NULL when it removed
 * it. */
const char *feed_gc_failure(const feed_info *fi, char *buf, size_t len);

#endif
