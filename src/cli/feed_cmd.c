/* feed_cmd.c -- `aegis feed ls|gc|start`: the shared data feeds on this
 * machine.
 *
 * Feeds live in /dev/shm, not in aegisd, so ls and gc read the segments
 * directly (src/feed/feed_admin.h) and work with or without the daemon;
 * ls adds the feeds aegisd manages when it runs. start registers a
 * feed's producer with aegisd: a submit of a job marked as the producer.
 */
#include "cli.h"
#include "client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "feed_admin.h"
#include "feed_json.h"
#include "text_safe.h"

static const char help[] =
"NAME\n"
"    aegis feed - list or clean up the shared data feeds, or start a\n"
"    feed's managed producer\n"
"\n"
"SYNOPSIS\n"
"    aegis feed ls [--json]\n"
"    aegis feed gc [--json]\n"
"    aegis feed start NAME [--gpus N] [--mem SIZE] [--socket PATH] -- CMD\n"
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
"        With aegisd running (its socket: --socket is not taken here,\n"
"        $AEGIS_SOCKET or the default), ls then lists the feeds it\n"
"        manages: each producer job, its state and its consumer jobs.\n"
"    start registers CMD as feed NAME's producer with aegisd, as a job of\n"
"        kind feed run as you, and prints its id. It sleeps until a job\n"
"        submitted with --feed NAME is queued; it is then queued just\n"
"        ahead of it and placed first (the feed's jobs wait for it:\n"
"        they read nothing without it), on N GPUs (default 1) with SIZE\n"
"        of GPU memory (as aegis submit --mem); the feed's jobs go\n"
"        beside it where the gates allow. If it fails or vanishes while\n"
"        jobs of the feed are queued or running it is started again (at\n"
"        most 3 times); once the last of them ends it is stopped (SIGTERM,\n"
"        SIGKILL 10 s later) and ends as done. A managed producer is its\n"
"        user's: each user may have one producer of a name (another\n"
"        user's of that name is no hindrance), and only its user's jobs\n"
"        wake it, or those of a user it trusts who trusts its user in\n"
"        turn: AEGIS_FEED_TRUST (user names or uids, comma-separated) in\n"
"        the environment of feed start names the users whose jobs may\n"
"        start it, and in a job's, the users whose feeds it reads. A job\n"
"        of feed NAME wakes its user's producer of NAME, else the oldest\n"
"        such trusted one; another user's that it may not wake is named\n"
"        in its events (aegis show). One user's feed has one producer\n"
"        at a time. In a spec, feed_producer: true with feed: NAME does\n"
"        the same.\n"
"\n"
"OPTIONS\n"
"    --json   one JSON object per feed and line\n"
"    --help   this text\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 /dev/shm could not be read, or aegisd failed; 2 bad\n"
"    usage, or a request aegisd refused.\n";

/* `aegis feed start NAME [OPTIONS] -- CMD`: aegis submit --feed NAME
 * --feed-producer, named feed:NAME. */
static int feed_start(int argc, char **argv) {
    if (argc < 4 || argv[2][0] == '-') {
        fputs("usage: aegis feed start NAME [--gpus N] [--mem SIZE] -- CMD "
              "(try 'aegis feed --help')\n", stderr);
        return CLI_USAGE;
    }
    char name[128];
    snprintf(name, sizeof(name), "feed:%s", argv[2]);
    char **sub = calloc((size_t)argc + 4, sizeof(*sub));
    if (!sub) return CLI_FAIL;
    const char *head[] = {"submit", "--name", name, "--feed", argv[2],
                          "--feed-producer"};
    int n = 0;
    for (size_t i = 0; i < sizeof(head) / sizeof(*head); i++)
        sub[n++] = (char *)head[i];
    for (int i = 3; i < argc; i++) sub[n++] = argv[i];
    int rc = cli_submit(n, sub);
    free(sub);
    return rc;
}

/* The feeds aegisd manages, from its job list: each producer, its state
 * and the unfinished jobs that read its feed. Quiet without aegisd. */
static void feed_print_managed(bool json) {
    const char *socket = client_socket(NULL);
    if (access(socket, F_OK) != 0) return;
    int rc;
    json_t *ans = client_call("feed", socket,
                              json_pack("{s:s, s:b}", "op", "ls", "all", 0),
                              &rc);
    json_t *jobs = json_object_get(ans, "jobs");
    size_t i, k;
    json_t *p, *j;
    bool header = false;
    json_array_foreach(jobs, i, p) {
        const char *kind = json_string_value(json_object_get(p, "kind"));
        if (!kind || strcmp(kind, "feed") != 0) continue;
        const char *feed = json_string_value(json_object_get(p, "feed"));
        json_t *consumers = json_array();
        json_array_foreach(jobs, k, j) {
            const char *f = json_string_value(json_object_get(j, "feed"));
            if (j != p && f && feed && strcmp(f, feed) == 0)
                json_array_append(consumers, json_object_get(j, "id"));
        }
        json_t *out = json_pack("{s:b, s:s?, s:O, s:O, s:o}", "managed", 1,
                                "feed", feed, "producer", json_object_get(p, "id"),
                                "state", json_object_get(p, "state"),
                                "consumers", consumers);
        if (json) {
            client_print_json(out);
        } else {
            if (!header) printf("\nmanaged by aegisd:\n%-20s %-8s %-8s %s\n",
                                "FEED", "PRODUCER", "STATE", "CONSUMERS");
            header = true;
            /* aegisd checks a feed's name; one from an older aegisd, or
             * a state it did not write, is shown safe all the same */
            char name[128], state[32];
            text_safe(name, sizeof(name), feed ? feed : "");
            const char *st = json_string_value(json_object_get(p, "state"));
            text_safe(state, sizeof(state), st ? st : "");
            printf("%-20s %-8lld %-8s", name,
                   (long long)json_integer_value(json_object_get(p, "id")),
                   state);
            json_array_foreach(json_object_get(out, "consumers"), k, j)
                printf("%s%lld", k ? "," : " ",
                       (long long)json_integer_value(j));
            printf("%s\n", json_array_size(consumers) ? "" : " -");
        }
        json_decref(out);
    }
    json_decref(ans);
}

/* One JSON object per feed and line: what gc did with it, or (ls) the
 * feed. */
static void feed_print_json(const feed_info *feeds, size_t n, bool gc) {
    for (size_t i = 0; i < n; i++) {
        json_t *row = (gc ? feed_gc_json : feed_json)(&feeds[i]);
        client_print_json_as(row, FEED_JSON_FLAGS);
        json_decref(row);
    }
}

/* Each feed's owner as text shows it (text_safe): a name from the user
 * database, which may hold what a terminal acts on. (Its name is one
 * feed_name_valid() took: letters, digits, '.', '_', '-'.) */
static void feed_make_safe(feed_info *feeds, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char owner[sizeof feeds[i].owner];
        text_safe(owner, sizeof owner, feeds[i].owner);
        memcpy(feeds[i].owner, owner, sizeof owner);
    }
}

int cli_feed(int argc, char **argv) {
    int json = argc == 3 && strcmp(argv[2], "--json") == 0;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
                      (argc == 3 && strcmp(argv[2], "--help") == 0))) {
        fputs(help, stdout);
        return CLI_OK;
    }
    if (argc >= 2 && strcmp(argv[1], "start") == 0)
        return feed_start(argc, argv);
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
    else if (json)
        feed_print_json(feeds, n, gc);
    else {
        feed_make_safe(feeds, n);
        (gc ? feed_print_gc : feed_print)(stdout, feeds, n);
    }
    free(feeds);
    if (ls) feed_print_managed(json);
    return CLI_OK;
}
