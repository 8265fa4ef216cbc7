/* feed_cmd.c -- `aegis feed ls|gc`: the shared data feeds on this machine.
 *
 * Feeds live in /dev/shm, not in aegisd, so these read the segments
 * directly (src/feed/feed_admin.h) and work with or without the daemon.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_admin.h"

static const char help[] =
"NAME\n"
"    aegis feed - list or clean up the shared data feeds\n"
"\n"
"SYNOPSIS\n"
"    aegis feed ls [--json]\n"
"    aegis feed gc [--json]\n"
"\n"
"DESCRIPTION\n"
"    A feed is one data pipeline whose batches collocated training jobs\n"
"    read from shared memory (/dev/shm/aegis-feed-NAME) without a copy;\n"
"    see the aegis_feed Python module.\n"
"\n"
"    ls  lists every feed: its owner, its producer and whether it is\n"
"        alive, the epoch and batches published, and per consumer its pid,\n"
"        batch size, position, lag (batches published and not yet read)\n"
"        and idle time, read without waiting for the feed's lock (so the\n"
"        counts of a feed in use may be a moment apart). Another user's\n"
"        feed that you may not open is listed as unreadable, one whose\n"
"        segment no producer could have made as corrupt, with why.\n"
"    gc  removes the feeds whose producer died (a normal exit, or the\n"
"        producer's janitor, removes them already; gc is for a crash of\n"
"        every party) and half-made or corrupt ones a few seconds old, and\n"
"        names what it removed. It names too what it left: other users'\n"
"        feeds you may not open, and dead ones it could not remove (only\n"
"        root may remove another user's). Live feeds are kept, and not\n"
"        named.\n"
"\n"
"OPTIONS\n"
"    --json   one JSON object per feed and line\n"
"    --help   this text\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 /dev/shm could not be read; 2 bad usage.\n";

int cli_feed(int argc, char **argv) {
    int json = argc == 3 && strcmp(argv[2], "--json") == 0;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                      (argc == 3 && strcmp(argv[2], "--help") == 0))) {
        fputs(help, stdout);
        return CLI_OK;
    }
    int gc = argc >= 2 && strcmp(argv[1], "gc") == 0;
    int ls = argc >= 2 && strcmp(argv[1], "ls") == 0;
    if ((!gc && !ls) || argc > 3 || (argc == 3 && !json)) {
        fputs("usage: aegis feed ls|gc [--json] (try 'aegis feed --help')\n",
              stderr);
        return CLI_USAGE;
    }
    feed_info *feeds;
    size_t n;
    feed_err err;
    int rc = gc ? feed_gc(&feeds, &n, &err) : feed_list(&feeds, &n, &err);
    if (rc != FEED_OK) {
        fprintf(stderr, "aegis feed %s: %s\n", argv[1], err.msg);
        return CLI_FAIL;
    }
    if (n == 0 && !json)
        printf(gc ? "nothing to remove\n" : "no feeds\n");
    else if (gc)
        feed_print_gc(stdout, feeds, n, json);
    else
        feed_print(stdout, feeds, n, json);
    free(feeds);
    return CLI_OK;
}
