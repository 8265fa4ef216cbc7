/* test_feed.c -- unit tests of the feed library with real processes.
 *
 * Consumers and producers run in fork()ed children; the parent and children
 * synchronise through pipes and waitpid, never through sleeps. Every batch
 * carries sample ids, and rows of `x` hold a function of their id, so a
 * consumer can check that it saw each sample of an epoch exactly once and
 * that no slot was overwritten under it. */
#define _GNU_SOURCE /* setgroups */
#include <dirent.h>
#include <sched.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed.h"
#include "feed_admin.h"
#include "feed_shm.h"
#include "shm_count.h"

#define ROWS 128 /* producer batch size */
#define COLS 4
#define BATCHES 8 /* per epoch */
#define SAMPLES (ROWS * BATCHES)

static char name_buf[64];

static const char *feed_name(const char *what) {
    snprintf(name_buf, sizeof name_buf, "t%d-%s", (int)getpid(), what);
    return name_buf;
}

static int leaked_segments(void) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "aegis-feed-t%d-", (int)getpid());
    return shm_count(prefix);
}

/* How many of the feeds named in names[0..count) gc's answer says it
 * removed. Only those count: tests running beside this one leave their
 * own dead feeds in /dev/shm, which gc rightly removes too. */
static int removed_of(const feed_info *feeds, size_t n,
                      const char *const *names, int count) {
    int removed = 0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < count; k++)
            removed += !strcmp(feeds[i].name, names[k]) && feeds[i].removed;
    return removed;
}

static feed_config config(const char *name, uint32_t ahead, uint32_t replay,
                          uint32_t min_consumers) {
    return (feed_config){
        .name = name,
        .slots = 0,
        .slot_bytes = ROWS * (COLS * sizeof(float) + sizeof(int64_t)) + 256,
        .ahead = ahead,
        .replay = replay,
        .min_consumers = min_consumers,
    };
}

static feed_err publish_err; /* what the last publish() said */

/* Publish batch `index` of an epoch: ids are global sample ids. */
static int publish(feed_producer *p, int index, int timeout_ms) {
    static float x[ROWS][COLS];
    static int64_t ids[ROWS];
    for (int r = 0; r < ROWS; r++) {
        ids[r] = (int64_t)index * ROWS + r;
        for (int c = 0; c < COLS; c++) x[r][c] = (float)(ids[r] * 10 + c);
    }
    feed_tensor t[2] = {
        {.key = "x", .dtype = FEED_F32, .ndim = 2, .shape = {ROWS, COLS},
         .data = x, .nbytes = sizeof x},
        {.key = "ids", .dtype = FEED_I64, .ndim = 1, .shape = {ROWS},
         .data = ids, .nbytes = sizeof ids},
    };
    return feed_publish(p, t, 2, timeout_ms, &publish_err);
}

static void publish_epoch(feed_producer *p, int from) {
    feed_err err;
    for (int b = from; b < BATCHES; b++) assert_int_equal(publish(p, b, -1), 0);
    assert_int_equal(feed_end_epoch(p, -1, &err), 0);
}

/* Checks one consumer batch against its ids; returns 0 if it is intact. */
static int check_batch(const feed_batch *b, uint32_t batch_size,
                       unsigned char *seen) {
    const float *x = b->t[0].data;
    const int64_t *ids = b->t[1].data;
    if (b->ntensors != 2 || strcmp(b->t[1].key, "ids")) return 1;
    if (batch_size && b->rows != batch_size) return 2;
    if (b->t[0].shape[0] != (int64_t)b->rows) return 3;
    for (uint64_t r = 0; r < b->rows; r++) {
        if (ids[r] < 0 || ids[r] >= SAMPLES) return 4;
        if (seen[ids[r]]++) return 5; /* delivered twice */
        if (x[r * COLS + 1] != (float)(ids[r] * 10 + 1)) return 6;
    }
    return 0;
}

/* Child body: read `epochs` full epochs; exit status 0 only if every
 * sample of each was seen exactly once. `first_epoch` is what the child
 * must see first (late join). */
static int consume(const char *name, uint32_t batch_size, int epochs,
                   int first_epoch, int ready_fd) {
    feed_err err;
    feed_consumer *c = feed_attach(name, batch_size, 5000, &err);
    if (!c) return 10;
    if (ready_fd >= 0 && write(ready_fd, "r", 1) != 1) return 11;
    feed_batch b;
    for (int e = 0; e < epochs; e++) {
        unsigned char seen[SAMPLES] = {0};
        int rc, n = 0;
        while ((rc = feed_next(c, &b, -1, &err)) == FEED_OK) {
            if ((int)b.epoch != first_epoch + e) return 12;
            int bad = check_batch(&b, batch_size, seen);
            if (bad) return 20 + bad;
            n += (int)b.rows;
            feed_release(c, b.seq);
        }
        if (rc != FEED_EPOCH_END || n != SAMPLES) return 13;
    }
    feed_detach(c);
    return 0;
}

static pid_t spawn_consumer(const char *name, uint32_t batch_size,
                            int epochs, int first_epoch, int ready_fd) {
    pid_t pid = fork();
    if (pid == 0) _exit(consume(name, batch_size, epochs, first_epoch,
                                ready_fd));
    return pid;
}

static int exit_status(pid_t pid) {
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void await_byte(int fd) {
    char ch;
    assert_int_equal(read(fd, &ch, 1), 1);
}

static void test_mixed_batch_sizes_exactly_once(void **state) {
    const char *name = feed_name("mixed");
    feed_config cfg = config(name, 4, 0, 3);
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    pid_t kids[3] = {spawn_consumer(name, 32, 2, 0, -1),
                     spawn_consumer(name, 64, 2, 0, -1),
                     spawn_consumer(name, 128, 2, 0, -1)};
    publish_epoch(p, 0);
    publish_epoch(p, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(exit_status(kids[i]), 0);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* One consumer is there from the start; a second joins after `before`
 * batches of epoch 0 and must start with epoch `expect_first`. */
static void late_join(const char *what, int before, uint32_t replay,
                      int expect_first) {
    const char *name = feed_name(what);
    feed_config cfg = config(name, 8, replay, 1);
    feed_err err;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    pid_t early = spawn_consumer(name, 64, 2, 0, -1);
    for (int b = 0; b < before; b++) assert_int_equal(publish(p, b, -1), 0);
    pid_t late = spawn_consumer(name, 32, 2 - expect_first, expect_first,
                                ready[1]);
    await_byte(ready[0]);
    publish_epoch(p, before);
    publish_epoch(p, 0);
    assert_int_equal(exit_status(early), 0);
    assert_int_equal(exit_status(late), 0);
    feed_close(p);
    close(ready[0]);
    close(ready[1]);
    assert_int_equal(leaked_segments(), 0);
}

static void test_late_join_inside_window_replays(void **state) {
    late_join("inside", 3, 4, 0);
}

static void test_late_join_outside_window_waits(void **state) {
    late_join("outside", 5, 2, 1);
}

/* A producer of feed `name` (ahead, one consumer needed) and a consumer
 * attached to it. */
static void open_pair(const char *name, uint32_t ahead, feed_producer **p,
                      feed_consumer **c) {
    feed_config cfg = config(name, ahead, 0, 1);
    feed_err err;
    *p = feed_create(&cfg, &err);
    assert_non_null(*p);
    *c = feed_attach(name, 0, 0, &err);
    assert_non_null(*c);
}

static void test_backpressure_never_overwrites_a_hold(void **state) {
    const char *name = feed_name("hold");
    feed_err err;
    feed_producer *p;
    feed_consumer *c;
    open_pair(name, 3, &p, &c);
    feed_batch held, b;
    assert_int_equal(publish(p, 0, -1), 0);
    assert_int_equal(feed_next(c, &held, 0, &err), FEED_OK);
    assert_int_equal(publish(p, 1, -1), 0);
    assert_int_equal(publish(p, 2, -1), 0);
    /* batch 0 is held: a fourth batch would run 3 past it */
    assert_int_equal(publish(p, 3, 50), FEED_TIMEOUT);
    /* reading on does not free batch 0 while its view is held */
    assert_int_equal(feed_next(c, &b, 0, &err), FEED_OK);
    feed_release(c, b.seq);
    assert_int_equal(publish(p, 3, 50), FEED_TIMEOUT);

    feed_info *feeds;
    size_t n;
    assert_int_equal(feed_list(&feeds, &n, &err), 0);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(feeds[i].name, name)) continue;
        found = 1;
        assert_int_equal(feeds[i].nconsumers, 1);
        assert_int_equal(feeds[i].consumers[0].pos, 2);
        assert_int_equal(feeds[i].consumers[0].lag, 1);
    }
    free(feeds);
    assert_true(found);

    const int64_t *ids = held.t[1].data;
    assert_int_equal(ids[5], 5); /* still batch 0 */
    feed_release(c, held.seq);
    assert_int_equal(publish(p, 3, 1000), 0);
    feed_detach(c);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* A consumer that keeps a batch while it reads `ahead` more would wait for
 * ever for the next: the producer waits for it to release one. It gets
 * FEED_EHELD, naming the batch it holds, at once; after the release it
 * reads on. */
static void test_consumer_holding_too_many_is_told(void **state) {
    const char *name = feed_name("held");
    feed_err err;
    feed_producer *p;
    feed_consumer *c;
    open_pair(name, 3, &p, &c);
    feed_batch held, b;
    for (int i = 0; i < 3; i++) assert_int_equal(publish(p, i, 0), 0);
    assert_int_equal(feed_next(c, &held, 0, &err), FEED_OK);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(feed_next(c, &b, 0, &err), FEED_OK);
        feed_release(c, b.seq);
    }
    assert_int_equal(feed_next(c, &b, 2000, &err), FEED_EHELD);
    assert_non_null(strstr(err.msg, "still holds batch 0"));
    feed_release(c, held.seq);
    assert_int_equal(publish(p, 3, 0), 0);
    assert_int_equal(feed_next(c, &b, 0, &err), FEED_OK);
    feed_release(c, b.seq);
    feed_detach(c);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* A consumer that keeps the last batch of an epoch while it waits for the
 * next epoch (a Python loop's variables do) must not stall a feed of
 * ahead 2: the end-of-epoch marker between them is no batch. */
static void test_held_last_batch_of_epoch_does_not_stall(void **state) {
    const char *name = feed_name("edge");
    feed_err err;
    feed_producer *p;
    feed_consumer *c;
    open_pair(name, 2, &p, &c);
    feed_batch b;
    for (int i = 0; i < BATCHES; i++) {
        assert_int_equal(publish(p, i, 1000), 0);
        assert_int_equal(feed_next(c, &b, 0, &err), FEED_OK);
        if (i + 1 < BATCHES) feed_release(c, b.seq);
    }
    assert_int_equal(feed_end_epoch(p, 1000, &err), 0);
    feed_batch marker;
    assert_int_equal(feed_next(c, &marker, 0, &err), FEED_EPOCH_END);
    assert_int_equal(publish(p, 0, 1000), 0); /* b still held */
    feed_release(c, b.seq);
    feed_detach(c);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* Child: attach, take one batch and keep it, report, then wait forever. */
static void hold_and_hang(const char *name, int ready_fd) {
    feed_err err;
    feed_batch b;
    feed_consumer *c = feed_attach(name, 0, 5000, &err);
    if (!c || feed_next(c, &b, -1, &err) != FEED_OK) _exit(1);
    if (write(ready_fd, "h", 1) != 1) _exit(2);
    pause();
    _exit(3);
}

static void test_killed_consumer_releases_within_a_second(void **state) {
    const char *name = feed_name("killc");
    feed_config cfg = config(name, 2, 0, 1);
    feed_err err;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    pid_t kid = fork();
    if (kid == 0) hold_and_hang(name, ready[1]);
    assert_int_equal(publish(p, 0, -1), 0);
    await_byte(ready[0]);
    assert_int_equal(publish(p, 1, -1), 0);
    assert_int_equal(publish(p, 2, 50), FEED_TIMEOUT);
    assert_int_equal(feed_consumers(p), 1);
    kill(kid, SIGKILL); /* not reaped yet: a zombie must count as dead */
    pid_t late = spawn_consumer(name, 0, 1, 1, -1);
    struct timespec a, z;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(publish(p, 2, 1000), 0);
    clock_gettime(CLOCK_MONOTONIC, &z);
    double waited = (double)(z.tv_sec - a.tv_sec) +
                    (double)(z.tv_nsec - a.tv_nsec) / 1e9;
    assert_true(waited < 1.0);
    assert_int_equal(exit_status(kid), 100 + SIGKILL);
    publish_epoch(p, 3);
    publish_epoch(p, 0);
    assert_int_equal(exit_status(late), 0);
    feed_close(p);
    close(ready[0]);
    close(ready[1]);
    assert_int_equal(leaked_segments(), 0);
}

/* min_consumers gates the start only: once three consumers started the
 * feed, one of them killed mid-epoch must not stop the other two (issue 17
 * item 1). The timeouts turn a stall into a failure instead of a hang. */
static void test_dead_consumer_never_stalls_the_others(void **state) {
    const char *name = feed_name("gate");
    feed_config cfg = config(name, 4, 0, 3);
    feed_err err;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    pid_t kids[2] = {spawn_consumer(name, 32, 2, 0, -1),
                     spawn_consumer(name, 64, 2, 0, -1)};
    pid_t doomed = fork();
    if (doomed == 0) hold_and_hang(name, ready[1]);
    assert_int_equal(publish(p, 0, 5000), 0);
    await_byte(ready[0]);
    kill(doomed, SIGKILL);
    assert_int_equal(exit_status(doomed), 100 + SIGKILL);
    for (int b = 1; b < BATCHES; b++) assert_int_equal(publish(p, b, 5000), 0);
    assert_int_equal(feed_end_epoch(p, 5000, &err), 0);
    for (int b = 0; b < BATCHES; b++) assert_int_equal(publish(p, b, 5000), 0);
    assert_int_equal(feed_end_epoch(p, 5000, &err), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(exit_status(kids[i]), 0);
    feed_close(p);
    close(ready[0]);
    close(ready[1]);
    assert_int_equal(leaked_segments(), 0);
}

static double seconds_since(const struct timespec *a) {
    struct timespec z;
    clock_gettime(CLOCK_MONOTONIC, &z);
    return (double)(z.tv_sec - a->tv_sec) + (double)(z.tv_nsec - a->tv_nsec) / 1e9;
}

/* consumer_wait_ms bounds a producer's wait for its consumers, before the
 * start (min_consumers) and after the last one left, with a message that
 * says what it waited for (issue 17 item 4). */
static void test_producer_waiting_for_consumers_times_out(void **state) {
    const char *name = feed_name("lonely");
    feed_config cfg = config(name, 4, 0, 2);
    cfg.consumer_wait_ms = 300;
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    feed_consumer *c = feed_attach(name, 0, 0, &err);
    assert_non_null(c);
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(publish(p, 0, -1), FEED_ENOCONSUMER);
    assert_true(seconds_since(&a) < 3.0);
    assert_non_null(strstr(publish_err.msg, "1 of the 2 consumers"));
    feed_consumer *c2 = feed_attach(name, 0, 0, &err);
    assert_non_null(c2);
    assert_int_equal(publish(p, 0, -1), 0);
    feed_detach(c);
    feed_detach(c2);
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(publish(p, 1, -1), FEED_ENOCONSUMER);
    assert_true(seconds_since(&a) < 3.0);
    assert_non_null(strstr(publish_err.msg, "no consumer attached"));
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* The waiters of a futex word, as the lock shows them. */
static uint32_t waiters_on(feed_shm *h, const feed_futex *f) {
    feed_lock(h);
    uint32_t n = f->waiters;
    feed_unlock(h);
    return n;
}

/* A consumer asleep in feed_next is counted on the data word, so that
 * the publish it waits for wakes it (feed_wake calls FUTEX_WAKE only for
 * a count above 0), and no longer counted once woken; nobody is counted
 * on the space word while the producer has room. */
static void test_sleeping_consumer_is_counted_and_woken(void **state) {
    const char *name = feed_name("waiters");
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    pid_t kid = spawn_consumer(name, 0, 1, 0, -1);
    feed_map m;
    assert_int_equal(feed_shm_open(&m, name, FEED_OWNER_SELF, &err), 0);
    struct timespec a;
    clock_gettime(CLOCK_MONOTONIC, &a);
    while (waiters_on(m.hdr, &m.hdr->data) == 0 && seconds_since(&a) < 30.0)
        sched_yield();
    assert_int_equal(waiters_on(m.hdr, &m.hdr->data), 1);
    assert_int_equal(waiters_on(m.hdr, &m.hdr->space), 0);
    publish_epoch(p, 0);
    assert_int_equal(exit_status(kid), 0);
    assert_int_equal(waiters_on(m.hdr, &m.hdr->data), 0);
    feed_shm_unmap(&m);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* A consumer batch size larger than the producer's batches is refused at
 * attach, saying why; one that does not divide them is served in pieces
 * and a shorter rest, and len() counts them; len() follows the producer's
 * epoch (issue 17 items 3 and 5, review finding 5). */
static void test_batch_size_at_most_producer_batches(void **state) {
    const char *name = feed_name("rows");
    feed_config cfg = config(name, 4, 0, 1);
    cfg.batch_rows = ROWS;
    cfg.epoch_batches = BATCHES;
    cfg.epoch_rows = SAMPLES - 10; /* a short last batch */
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    assert_null(feed_attach(name, 2 * ROWS, 0, &err));
    assert_int_equal(err.code, FEED_EINVAL);
    assert_non_null(strstr(err.msg, "batch size 256 is larger than"));
    assert_non_null(strstr(err.msg, "producer_batch_size"));
    feed_consumer *whole = feed_attach(name, 0, 0, &err);
    feed_consumer *part = feed_attach(name, 64, 0, &err);
    feed_consumer *odd = feed_attach(name, 96, 0, &err);
    assert_non_null(whole);
    assert_non_null(part);
    assert_non_null(odd);
    assert_int_equal(feed_consumer_len(whole), BATCHES);
    assert_int_equal(feed_consumer_len(part), (SAMPLES - 10 + 63) / 64);
    /* 96 + 32 rows of each full batch; the last has 118: 96 + 22 */
    assert_int_equal(feed_consumer_len(odd), 2 * BATCHES);
    feed_detach(whole);
    feed_detach(part);
    feed_detach(odd);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* Child: create the feed, publish one batch, report, then wait forever.
 * With own_group it leads a process group, so its janitor can be killed
 * with it. */
static void produce_and_hang(const char *name, int ready_fd, int own_group) {
    feed_err err;
    if (own_group) setpgid(0, 0);
    feed_config cfg = config(name, 4, 0, 1);
    feed_producer *p = feed_create(&cfg, &err);
    if (!p) _exit(1);
    if (write(ready_fd, "p", 1) != 1) _exit(2);
    if (publish(p, 0, -1) != 0) _exit(3);
    pause();
    _exit(4);
}

static void test_killed_producer_is_an_error_not_a_hang(void **state) {
    const char *name = feed_name("killp");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t kid = fork();
    if (kid == 0) produce_and_hang(name, ready[1], 0);
    await_byte(ready[0]);
    feed_err err;
    feed_batch b;
    feed_consumer *c = feed_attach(name, 64, 5000, &err);
    assert_non_null(c);
    assert_int_equal(feed_next(c, &b, -1, &err), FEED_OK);
    feed_release(c, b.seq);
    assert_int_equal(feed_next(c, &b, -1, &err), FEED_OK);
    feed_release(c, b.seq);
    kill(kid, SIGKILL);
    assert_int_equal(exit_status(kid), 100 + SIGKILL);
    assert_int_equal(feed_next(c, &b, -1, &err), FEED_EPRODUCER);
    assert_non_null(strstr(err.msg, "died"));
    feed_detach(c);
    assert_int_equal(leaked_segments(), 0);
    close(ready[0]);
    close(ready[1]);
}

/* Waits for a segment to vanish: the janitor is not our child, so there is
 * no event to await; bounded at 2 s. */
static int vanishes(void) {
    for (int i = 0; i < 200 && leaked_segments(); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return leaked_segments() == 0;
}

static void test_janitor_cleans_after_producer_crash(void **state) {
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    const char *name = feed_name("janitor");
    pid_t kid = fork();
    if (kid == 0) produce_and_hang(name, ready[1], 0);
    await_byte(ready[0]);
    assert_int_equal(leaked_segments(), 1);
    kill(kid, SIGKILL);
    assert_int_equal(exit_status(kid), 100 + SIGKILL);
    assert_true(vanishes());
    close(ready[0]);
    close(ready[1]);
}

static void test_gc_removes_feed_of_dead_producer(void **state) {
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    const char *name = feed_name("gc");
    pid_t kid = fork();
    if (kid == 0) produce_and_hang(name, ready[1], 1);
    await_byte(ready[0]);
    kill(-kid, SIGKILL); /* producer and janitor die together */
    assert_int_equal(exit_status(kid), 100 + SIGKILL);
    feed_info *feeds;
    size_t n;
    feed_err err;
    assert_int_equal(leaked_segments(), 1);
    assert_int_equal(feed_gc(&feeds, &n, &err), 0);
    int removed = removed_of(feeds, n, &name, 1);
    free(feeds);
    assert_true(removed);
    assert_int_equal(leaked_segments(), 0);
    close(ready[0]);
    close(ready[1]);
}

static void test_second_live_producer_is_refused(void **state) {
    const char *name = feed_name("dup");
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    assert_null(feed_create(&cfg, &err));
    assert_int_equal(err.code, FEED_EEXIST);
    cfg.name = "bad/name";
    assert_null(feed_create(&cfg, &err));
    assert_int_equal(err.code, FEED_EINVAL);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* The segment of feed name, mapped writable, as anyone who may write it
 * (the producer's user) can. */
static feed_shm *map_segment(const char *name, size_t *size) {
    char path[128];
    struct stat st;
    feed_shm_path(path, sizeof path, name);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0 && fstat(fd, &st) == 0);
    *size = (size_t)st.st_size;
    feed_shm *h = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(h != MAP_FAILED);
    return h;
}

/* feed_next() of c fails with a message holding want. */
static void next_refused(feed_consumer *c, const char *want) {
    feed_batch b;
    feed_err err;
    assert_int_equal(feed_next(c, &b, 1000, &err), FEED_EINVAL);
    if (!strstr(err.msg, want)) fail_msg("'%s' lacks '%s'", err.msg, want);
}

/* Bytes written into a live segment's header or a batch's metadata are
 * refused by the consumer with a message, where a slot count of 0 was a
 * SIGFPE and a tensor count or offset a SIGSEGV: the geometry is kept as
 * checked at attach, and each batch's metadata is copied and checked. */
static void test_corrupt_metadata_is_an_error_not_a_crash(void **state) {
    const char *name = feed_name("corrupt");
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    feed_consumer *c = feed_attach(name, 0, 1000, &err);
    assert_non_null(c);
    assert_int_equal(publish(p, 0, 1000), 0);
    size_t size;
    feed_shm *h = map_segment(name, &size);
    feed_shm_slot *slot = &h->slots[0];
    uint32_t nslots = h->nslots, ntensors = slot->ntensors;
    uint64_t offset = slot->t[1].offset;
    h->nslots = 0;
    slot->ntensors = 100000;
    next_refused(c, "corrupt metadata (100000 tensors)");
    slot->ntensors = ntensors;
    slot->t[1].offset = h->slot_bytes;
    next_refused(c, "tensor 1: bytes outside the slot");
    slot->t[1].offset = offset;
    slot->t[0].dtype = 99;
    next_refused(c, "tensor 0: unknown dtype");
    slot->t[0].dtype = FEED_F32;
    /* a shape larger than its bytes: Python's views were read past them */
    slot->t[0].shape[1] = (int64_t)1 << 28;
    next_refused(c, "tensor 0: shape unlike its bytes");
    slot->t[0].shape[1] = COLS;
    h->nslots = nslots;
    feed_batch b;
    unsigned char seen[SAMPLES] = {0};
    assert_int_equal(feed_next(c, &b, 1000, &err), FEED_OK);
    assert_int_equal(check_batch(&b, 0, seen), 0);
    munmap(h, size);
    feed_detach(c);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* Batches written over one the consumer holds, by whoever may write the
 * segment (its producer waits for the release), are refused: each took a
 * place in the consumer's table of holds, sized for a producer that
 * waits, and the table overflowed. */
static void test_batch_over_a_hold_is_refused(void **state) {
    const char *name = feed_name("overhold");
    feed_producer *p;
    feed_consumer *c;
    open_pair(name, 2, &p, &c);
    assert_int_equal(publish(p, 0, -1), 0);
    size_t size;
    feed_shm *h = map_segment(name, &size);
    /* batch 0's metadata as batches 1 .. nslots - 1, each held */
    for (uint32_t seq = 1; seq < h->nslots; seq++) {
        h->slots[seq] = h->slots[0];
        h->slots[seq].seq = seq;
    }
    h->head = h->nslots;
    feed_batch b;
    feed_err err;
    for (uint32_t seq = 0; seq < h->nslots; seq++)
        if (feed_next(c, &b, 0, &err) != FEED_OK) fail_msg("%s", err.msg);
    /* then batch nslots, over batch 0 */
    h->slots[0].seq = h->nslots;
    h->head = h->nslots + 1;
    char want[64];
    snprintf(want, sizeof want, "batch %u was published over batch 0",
             h->nslots);
    next_refused(c, want);
    munmap(h, size);
    feed_detach(c);
    feed_close(p);
    assert_int_equal(leaked_segments(), 0);
}

/* Child: feed_create() on a private /dev/shm of 1 MiB; exits 0 when it
 * is refused for want of room, 77 when the mount cannot be made. */
static void create_on_small_shm(const char *name) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=1m") != 0)
        _exit(77);
    feed_config cfg = config(name, 4, 0, 1);
    cfg.slot_bytes = 8 << 20;
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    _exit(!p && err.code == FEED_ESYS && strstr(err.msg, "No space left")
              ? 0 : 1);
}

/* A feed larger than /dev/shm's room is refused when it is made, where
 * it killed the producer with SIGBUS at its first batch past the room
 * (the segment was only ftruncate'd). */
static void test_feed_without_room_is_refused(void **state) {
    if (geteuid() != 0) skip(); /* a private tmpfs needs root */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) create_on_small_shm(feed_name("roomless"));
    int status = exit_status(pid);
    if (status == 77) skip();
    assert_int_equal(status, 0);
}

/* Child: run as user from here on; exits 90 if that fails. */
static void become(const char *user) {
    struct passwd *pw = getpwnam(user);
    if (!pw || setgroups(0, NULL) || setgid(pw->pw_gid) ||
        setuid(pw->pw_uid))
        _exit(90);
}

/* Another user's feed, "bob" being nobody: a child that creates it (with
 * hold_lock, then holds its lock), opens it to everyone (chmod 0666, as
 * the bob did), reports on ready_fd and waits to be killed. */
static void others_feed(const char *name, int ready_fd, int hold_lock) {
    become("nobody");
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    char path[128];
    feed_map m = {0};
    if (!feed_create(&cfg, &err)) _exit(1);
    feed_shm_path(path, sizeof path, name);
    if (chmod(path, 0666) < 0) _exit(2);
    if (hold_lock && feed_shm_open(&m, name, FEED_OWNER_SELF, &err)) _exit(3);
    if (hold_lock) feed_lock(m.hdr);
    if (write(ready_fd, "b", 1) != 1) _exit(4);
    pause();
    _exit(5);
}

/* The others_feed child of the running test; its teardown ends it, so
 * that a failed check leaves no process behind. */
static pid_t bob;

static void start_others_feed(const char *name, int hold_lock) {
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    bob = fork();
    if (bob == 0) others_feed(name, ready[1], hold_lock);
    await_byte(ready[0]);
    close(ready[0]);
    close(ready[1]);
}

/* Ends others_feed: its janitor, left alive, removes the segment. */
static int stop_others_feed(void **state) {
    if (bob <= 0) return 0;
    kill(bob, SIGKILL);
    int status = exit_status(bob);
    bob = 0;
    return status == 100 + SIGKILL && vanishes() ? 0 : -1;
}

/* Child body, as "alice" (daemon): bob's feed is refused to her consumer
 * and to her producer, with his name in the message, unless she trusts
 * him. */
static int attach_to_others(const char *name) {
    become("daemon");
    feed_err err;
    feed_config cfg = config(name, 4, 0, 1);
    feed_consumer *c = feed_attach(name, 0, 1000, &err);
    if (c) return 10; /* poisoned: the bug */
    if (err.code != FEED_EPERM || !strstr(err.msg, "nobody")) return 11;
    if (feed_create(&cfg, &err)) return 12;
    if (err.code != FEED_EPERM || !strstr(err.msg, "nobody")) return 13;
    setenv("AEGIS_FEED_TRUST", "root,nobody", 1);
    c = feed_attach(name, 0, 1000, &err);
    if (!c) return 14;
    feed_detach(c);
    return 0;
}

static void test_others_feed_is_refused(void **state) {
    if (geteuid() != 0) skip(); /* needs two other users */
    const char *name = feed_name("others");
    start_others_feed(name, 0);
    pid_t alice = fork();
    if (alice == 0) _exit(attach_to_others(name));
    assert_int_equal(exit_status(alice), 0);
}

/* Child body: feed gc, under an alarm so that a hang fails the test. It
 * may neither remove name, a live feed, nor claim to have removed it. */
static int gc_leaves_live_feed(const char *name) {
    alarm(10);
    feed_err err;
    feed_info *feeds;
    size_t n;
    char path[128];
    struct stat st;
    if (feed_gc(&feeds, &n, &err) != FEED_OK) return 20;
    int claimed = removed_of(feeds, n, &name, 1);
    free(feeds);
    feed_shm_path(path, sizeof path, name);
    if (stat(path, &st) < 0) return 21;
    return claimed ? 22 : 0;
}

/* Child body: root's ls lists name, whose lock its producer holds, as
 * alive, with its header read (ahead 4: 5 slots), without waiting for the lock; then
 * gc_leaves_live_feed. */
static int admin_skips_held_lock(const char *name) {
    alarm(10);
    feed_err err;
    feed_info *feeds;
    size_t n;
    if (feed_list(&feeds, &n, &err) != FEED_OK) return 10;
    int listed = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(feeds[i].name, name))
            listed = feeds[i].producer_alive && feeds[i].slots == 4 + 1;
    free(feeds);
    return listed ? gc_leaves_live_feed(name) : 11;
}

static void test_admin_does_not_wait_for_a_held_lock(void **state) {
    if (geteuid() != 0) skip();
    const char *name = feed_name("locked");
    start_others_feed(name, 1);
    pid_t root = fork();
    if (root == 0) _exit(admin_skips_held_lock(name));
    assert_int_equal(exit_status(root), 0);
}

/* alice's gc must not claim bob's live feed, even one old enough to pass
 * for half-made when she cannot read it. */
static void test_gc_leaves_others_live_feed(void **state) {
    if (geteuid() != 0) skip();
    const char *name = feed_name("notmine");
    start_others_feed(name, 0);
    char path[128];
    feed_shm_path(path, sizeof path, name);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600},
                              {.tv_sec = time(NULL) - 3600}};
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
    pid_t alice = fork();
    if (alice == 0) {
        become("daemon");
        _exit(gc_leaves_live_feed(name));
    }
    assert_int_equal(exit_status(alice), 0);
}

/* Whether feed_list lists name with producer state `state`: what
 * `aegis feed ls` says of it ("producer" in --json), which has said
 * "corrupt" since feeds could be. */
static int listed_as(const char *name, const char *state) {
    feed_info *feeds;
    size_t n;
    feed_err err;
    int ok = 0;
    if (feed_list(&feeds, &n, &err) != FEED_OK) return 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(feeds[i].name, name))
            ok = !strcmp(feed_producer_state(&feeds[i]), state);
    free(feeds);
    return ok;
}

/* Unlinks every segment this test process made up (a failed check must
 * not leave one for the next test). */
static int unlink_test_segments(void **state) {
    char prefix[64], nm[300];
    snprintf(prefix, sizeof prefix, "aegis-feed-t%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            snprintf(nm, sizeof nm, "/%s", e->d_name);
            shm_unlink(nm);
        }
    if (d) closedir(d);
    return 0;
}

/* A segment no producer made: size bytes of `fill`, then (with magic) a
 * header that claims to be ready and size bytes long, as a user who
 * writes his own segment can make it. Returns its descriptor. */
static int forge_segment(const char *name, size_t size, int fill, int magic) {
    char nm[128];
    snprintf(nm, sizeof nm, "/" FEED_SHM_PREFIX "%s", name);
    int fd = shm_open(nm, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    unsigned char *bytes = malloc(size + 1);
    assert_non_null(bytes);
    memset(bytes, fill, size);
    uint64_t ready = FEED_MAGIC, total = size;
    if (magic && size >= sizeof ready)
        memcpy(bytes + offsetof(feed_shm, magic), &ready, sizeof ready);
    if (magic && size >= offsetof(feed_shm, total_bytes) + sizeof total)
        memcpy(bytes + offsetof(feed_shm, total_bytes), &total, sizeof total);
    assert_int_equal(pwrite(fd, bytes, size, 0), (ssize_t)size);
    free(bytes);
    return fd;
}

/* In a child that may crash: die of the signal, as the command would,
 * rather than run cmocka's handler, which would go on with the tests. */
static void crash_as_a_command(void) {
    signal(SIGBUS, SIG_DFL);
    signal(SIGSEGV, SIG_DFL);
}

/* Child body: ls and gc over forged segments end normally; ls calls the
 * short one and the garbage one corrupt, and the empty one half-made;
 * gc leaves them while young. */
static int admin_reads_forged(const char *const names[3]) {
    crash_as_a_command();
    alarm(10);
    if (!listed_as(names[0], "corrupt")) return 10;
    if (!listed_as(names[1], "corrupt")) return 11;
    if (!listed_as(names[2], "half-made")) return 12;
    feed_info *feeds;
    size_t n;
    feed_err err;
    if (feed_gc(&feeds, &n, &err) != FEED_OK) return 13;
    int removed = removed_of(feeds, n, names, 3);
    free(feeds);
    return removed ? 14 : 0;
}

static void test_admin_reports_corrupt_segments(void **state) {
    char shortn[64], garbage[64], empty[64], path[128];
    snprintf(shortn, sizeof shortn, "%s", feed_name("short"));
    snprintf(garbage, sizeof garbage, "%s", feed_name("garbage"));
    snprintf(empty, sizeof empty, "%s", feed_name("empty"));
    int fds[3] = {forge_segment(shortn, 64, 0, 1),
                  forge_segment(garbage, 1 << 20, 0xff, 1),
                  forge_segment(empty, 0, 0, 0)};
    const char *const names[3] = {shortn, garbage, empty};
    pid_t admin = fork();
    if (admin == 0) _exit(admin_reads_forged(names));
    assert_int_equal(exit_status(admin), 0);
    /* Old enough, none can be a creator at work: gc removes all three. */
    struct timespec old[2] = {{.tv_sec = time(NULL) - 3600},
                              {.tv_sec = time(NULL) - 3600}};
    for (int i = 0; i < 3; i++) {
        feed_shm_path(path, sizeof path, names[i]);
        assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
        close(fds[i]);
    }
    feed_info *feeds;
    size_t n;
    feed_err err;
    assert_int_equal(feed_gc(&feeds, &n, &err), 0);
    int removed = removed_of(feeds, n, names, 3);
    free(feeds);
    assert_int_equal(removed, 3);
    assert_int_equal(leaked_segments(), 0);
}

/* Child, the segment's owner turned hostile: creates the feed and holds
 * its lock, then, once a reader waits for that lock (or after half a
 * second, for a reader that never locks), cuts the segment to its first
 * page, which keeps the lock and loses the consumer table, and lets go.
 * Reports on ready_fd when the feed is made and on cut_fd once cut. */
static void cut_under_reader(const char *name, int ready_fd, int cut_fd) {
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    feed_map m = {0};
    char nm[128];
    snprintf(nm, sizeof nm, "/" FEED_SHM_PREFIX "%s", name);
    if (!feed_create(&cfg, &err)) _exit(1);
    int fd = shm_open(nm, O_RDWR, 0);
    if (fd < 0 || feed_shm_open(&m, name, FEED_OWNER_SELF, &err)) _exit(2);
    feed_lock(m.hdr);
    if (write(ready_fd, "c", 1) != 1) _exit(3);
    /* glibc's lock word gains FUTEX_WAITERS once someone sleeps on it. */
    volatile int *word = &m.hdr->lock.__data.__lock;
    uint64_t give_up = feed_now_ns() + 500 * 1000000ull;
    while (!(*word & (int)0x80000000) && feed_now_ns() < give_up)
        sched_yield();
    if (ftruncate(fd, sysconf(_SC_PAGESIZE)) < 0) _exit(4);
    feed_unlock(m.hdr);
    if (write(cut_fd, "t", 1) != 1) _exit(5);
    pause();
    _exit(6);
}

/* Child body, root: lists until the segment has been cut under it, and
 * then once more, which must call the feed corrupt. */
static int list_while_cut(const char *name, int cut_fd) {
    crash_as_a_command();
    alarm(10);
    char ch;
    fcntl(cut_fd, F_SETFL, O_NONBLOCK);
    for (;;) {
        int cut = read(cut_fd, &ch, 1) == 1;
        int corrupt = listed_as(name, "corrupt");
        if (cut) return corrupt ? 0 : 10;
    }
}

/* ls reads a segment its owner may truncate at any moment: that must not
 * kill it with SIGBUS. */
static void test_admin_survives_a_segment_cut_under_it(void **state) {
    const char *name = feed_name("cut");
    long page = sysconf(_SC_PAGESIZE);
    assert_true(offsetof(feed_shm, lock) + sizeof(pthread_mutex_t) <=
                (size_t)page);
    assert_true(sizeof(feed_shm) > (size_t)page);
    int ready[2], cut[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(cut), 0);
    bob = fork();
    if (bob == 0) cut_under_reader(name, ready[1], cut[1]);
    await_byte(ready[0]);
    pid_t root = fork();
    if (root == 0) _exit(list_while_cut(name, cut[0]));
    assert_int_equal(exit_status(root), 0);
    for (int i = 0; i < 2; i++) {
        close(ready[i]);
        close(cut[i]);
    }
}

/* Child body: with the driver library pointed at a missing file, a CUDA
 * tensor is refused with a message naming the file and dlopen (or, built
 * without CUDA, saying so), and the failed publish leaves the ring as it
 * was: the next host batch is sequence 0. */
static int cuda_refused(const char *name) {
    setenv("AEGIS_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    feed_config cfg = config(name, 4, 0, 1);
    feed_err err;
    feed_producer *p = feed_create(&cfg, &err);
    feed_consumer *c = p ? feed_attach(name, 0, 1000, &err) : NULL;
    if (!c) return 10;
    float x[ROWS];
    feed_tensor t = {.key = "x", .dtype = FEED_F32, .device = FEED_CUDA,
                     .ndim = 1, .shape = {ROWS}, .data = x,
                     .nbytes = sizeof x};
    if (feed_publish(p, &t, 1, 1000, &err) != FEED_ECUDA) return 11;
#ifdef FEED_TEST_WITH_CUDA
    if (!strstr(err.msg, "/nonexistent/libcuda.so.1: dlopen")) return 12;
#else
    if (!strstr(err.msg, "built without CUDA")) return 12;
#endif
    if (!strstr(err.msg, name)) return 13;
    feed_batch b;
    if (publish(p, 0, 1000) != FEED_OK) return 14;
    if (feed_next(c, &b, 1000, &err) != FEED_OK || b.seq != 0) return 15;
    feed_release(c, b.seq);
    feed_detach(c);
    feed_close(p);
    return 0;
}

static void test_cuda_without_driver_is_a_clear_error(void **state) {
    const char *name = feed_name("nocuda");
    pid_t pid = fork(); /* the driver is loaded once per process */
    if (pid == 0) _exit(cuda_refused(name));
    assert_int_equal(exit_status(pid), 0);
    assert_int_equal(leaked_segments(), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_without_driver_is_a_clear_error),
        cmocka_unit_test(test_mixed_batch_sizes_exactly_once),
        cmocka_unit_test(test_late_join_inside_window_replays),
        cmocka_unit_test(test_late_join_outside_window_waits),
        cmocka_unit_test(test_backpressure_never_overwrites_a_hold),
        cmocka_unit_test(test_held_last_batch_of_epoch_does_not_stall),
        cmocka_unit_test(test_consumer_holding_too_many_is_told),
        cmocka_unit_test(test_killed_consumer_releases_within_a_second),
        cmocka_unit_test(test_dead_consumer_never_stalls_the_others),
        cmocka_unit_test(test_producer_waiting_for_consumers_times_out),
        cmocka_unit_test(test_sleeping_consumer_is_counted_and_woken),
        cmocka_unit_test(test_batch_size_at_most_producer_batches),
        cmocka_unit_test(test_killed_producer_is_an_error_not_a_hang),
        cmocka_unit_test(test_janitor_cleans_after_producer_crash),
        cmocka_unit_test(test_gc_removes_feed_of_dead_producer),
        cmocka_unit_test(test_second_live_producer_is_refused),
        cmocka_unit_test(test_corrupt_metadata_is_an_error_not_a_crash),
        cmocka_unit_test(test_batch_over_a_hold_is_refused),
        cmocka_unit_test(test_feed_without_room_is_refused),
        cmocka_unit_test_teardown(test_others_feed_is_refused,
                                  stop_others_feed),
        cmocka_unit_test_teardown(test_admin_does_not_wait_for_a_held_lock,
                                  stop_others_feed),
        cmocka_unit_test_teardown(test_gc_leaves_others_live_feed,
                                  stop_others_feed),
        cmocka_unit_test_teardown(test_admin_reports_corrupt_segments,
                                  unlink_test_segments),
        cmocka_unit_test_teardown(test_admin_survives_a_segment_cut_under_it,
                                  stop_others_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
