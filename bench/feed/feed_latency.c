/* feed_latency.c -- per-batch delivery latency of the feed alone: the time
 * from a producer's publish to a waiting consumer's feed_next returning it.
 *
 * The producer paces its batches so the consumer is asleep when each one
 * arrives: the figure includes the wake-up, the worst case for delivery.
 * Usage: feed-latency [batches] [batch_bytes] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feed.h"

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Child: read every batch, write each latency in ns to fd. */
static int consume(const char *name, int batches, int fd) {
    feed_err err;
    feed_batch b;
    feed_consumer *c = feed_attach(name, 0, 5000, &err);
    if (!c) return 1;
    for (int i = 0; i < batches; i++) {
        if (feed_next(c, &b, -1, &err) != FEED_OK) return 2;
        uint64_t lat = now_ns() - b.publish_ns;
        feed_release(c, b.seq);
        if (write(fd, &lat, sizeof lat) != sizeof lat) return 3;
    }
    feed_detach(c);
    return 0;
}

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 2000;
    size_t bytes = argc > 2 ? (size_t)atoll(argv[2]) : 4096;
    char name[64];
    snprintf(name, sizeof name, "latency-%d", (int)getpid());
    feed_config cfg = {.name = name, .slot_bytes = bytes, .ahead = 8,
                       .min_consumers = 1};
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    if (!p) {
        fprintf(stderr, "feed-latency: %s\n", err.msg);
        return 1;
    }
    int fds[2];
    if (pipe(fds) < 0) return 1;
    pid_t kid = fork();
    if (kid == 0) _exit(consume(name, batches, fds[1]));
    close(fds[1]);
    unsigned char *data = calloc(1, bytes);
    feed_tensor t = {.dtype = FEED_U8, .ndim = 1,
                     .shape = {(int64_t)bytes}, .data = data, .nbytes = bytes};
    uint64_t *lat = calloc((size_t)batches, sizeof *lat);
    for (int i = 0; i < batches; i++) {
        if (feed_publish(p, &t, 1, -1, &err) != FEED_OK) {
            fprintf(stderr, "feed-latency: %s\n", err.msg);
            return 1;
        }
        if (read(fds[0], &lat[i], sizeof lat[i]) != sizeof lat[i]) return 1;
        struct timespec pace = {0, 200 * 1000}; /* let the consumer sleep */
        nanosleep(&pace, NULL);
    }
    int st;
    waitpid(kid, &st, 0);
    feed_close(p);
    qsort(lat, (size_t)batches, sizeof *lat, cmp_u64);
    printf("feed delivery latency (%d batches of %zu B, consumer asleep): "
           "median %.1f us, p90 %.1f us, p99 %.1f us\n",
           batches, bytes, (double)lat[batches / 2] / 1e3,
           (double)lat[batches * 9 / 10] / 1e3,
           (double)lat[batches * 99 / 100] / 1e3);
    free(lat);
    free(data);
    return 0;
}
