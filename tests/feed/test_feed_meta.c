/* test_feed_meta.c -- what a producer tells its consumers beside batches
 * (user_meta) and how it sees them (feed_peers and the consumers' ids):
 * the TensorSocket names in the Python module rest on both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed.h"

static char name_buf[64];

static const char *feed_name(const char *what) {
    snprintf(name_buf, sizeof name_buf, "m%d-%s", (int)getpid(), what);
    return name_buf;
}

static feed_config config(const char *name, const char *meta) {
    return (feed_config){.name = name, .slot_bytes = 4096, .ahead = 2,
                         .min_consumers = 1, .user_meta = meta,
                         .user_meta_len = meta ? strlen(meta) : 0};
}

static void test_consumers_read_the_producers_meta(void **state) {
    (void)state;
    const char *meta = "{\"data_loader_len\": 7}";
    feed_err err;
    feed_config cfg = config(feed_name("meta"), meta);
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    feed_consumer *c = feed_attach(cfg.name, 0, 1000, &err);
    assert_non_null(c);
    char got[FEED_META_MAX];
    assert_int_equal(feed_user_meta(c, got), strlen(meta));
    assert_memory_equal(got, meta, strlen(meta));
    feed_detach(c);
    feed_close(p);
}

static void test_meta_longer_than_the_limit_is_refused(void **state) {
    (void)state;
    char meta[FEED_META_MAX + 2];
    memset(meta, 'x', sizeof meta - 1);
    meta[sizeof meta - 1] = '\0';
    feed_err err;
    feed_config cfg = config(feed_name("long"), meta);
    assert_null(feed_create(&cfg, &err));
    assert_int_equal(err.code, FEED_EINVAL);
    assert_non_null(strstr(err.msg, "user_meta"));
}

/* Each consumer's id is its own, and the producer lists it, with its
 * batch size, for as long as it is attached. */
static void test_producer_lists_its_consumers_by_id(void **state) {
    (void)state;
    feed_err err;
    feed_config cfg = config(feed_name("peers"), NULL);
    feed_producer *p = feed_create(&cfg, &err);
    assert_non_null(p);
    feed_consumer *a = feed_attach(cfg.name, 0, 1000, &err);
    feed_consumer *b = feed_attach(cfg.name, 4, 1000, &err);
    assert_non_null(a);
    assert_non_null(b);
    uint8_t ida[FEED_ID_BYTES], idb[FEED_ID_BYTES];
    feed_consumer_id(a, ida);
    feed_consumer_id(b, idb);
    assert_memory_not_equal(ida, idb, FEED_ID_BYTES);
    feed_peer peers[FEED_MAX_CONSUMERS];
    assert_int_equal(feed_peers(p, peers, FEED_MAX_CONSUMERS), 2);
    assert_memory_equal(peers[0].id, ida, FEED_ID_BYTES);
    assert_memory_equal(peers[1].id, idb, FEED_ID_BYTES);
    assert_int_equal(peers[0].pid, getpid());
    assert_int_equal(peers[1].batch_size, 4);
    assert_int_equal(feed_peers(p, peers, 1), 1); /* max is kept */
    feed_detach(a);
    assert_int_equal(feed_peers(p, peers, FEED_MAX_CONSUMERS), 1);
    assert_memory_equal(peers[0].id, idb, FEED_ID_BYTES);
    feed_detach(b);
    feed_close(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consumers_read_the_producers_meta),
        cmocka_unit_test(test_meta_longer_than_the_limit_is_refused),
        cmocka_unit_test(test_producer_lists_its_consumers_by_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
