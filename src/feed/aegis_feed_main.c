/* aegis_feed_main.c -- the standalone `aegis-feed` tool: `ls` and `gc` over
 * the feeds in /dev/shm, until the `aegis feed` subcommands replace it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_admin.h"

static int usage(FILE *f, int rc) {
    fprintf(f,
            "usage: aegis-feed ls [--json]   list feeds, consumers, lag\n"
            "       aegis-feed gc [--json]   remove feeds whose producer "
            "died\n");
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) return usage(stderr, 2);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return usage(stdout, 0);
    int json = 0;
    if (argc == 3) {
        if (!strcmp(argv[2], "--help")) return usage(stdout, 0);
        if (strcmp(argv[2], "--json")) return usage(stderr, 2);
        json = 1;
    }
    int gc = !strcmp(argv[1], "gc");
    if (!gc && strcmp(argv[1], "ls")) return usage(stderr, 2);
    feed_info *feeds;
    size_t n;
    feed_err err;
    int rc = gc ? feed_gc(&feeds, &n, &err) : feed_list(&feeds, &n, &err);
    if (rc != FEED_OK) {
        fprintf(stderr, "aegis-feed: %s\n", err.msg);
        return 1;
    }
    if (gc && !json)
        for (size_t i = 0; i < n; i++) printf("removed %s\n", feeds[i].name);
    else
        feed_print(stdout, feeds, n, json);
    free(feeds);
    return 0;
}
