/* test_feed_json.c -- cmocka tests of `aegis feed ls|gc --json`'s rows
 * (feed_json.c): a feed's owner, a name from the user database, may hold
 * a quote or bytes that are not UTF-8, and the line must still be JSON
 * that reads back. Such a user cannot be made on the test machine, so the
 * rows are built from a feed_info as feed_list() fills it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "feed_json.h"

#include <stdlib.h>
#include <string.h>

/* A user name with a quote, a backslash and a byte that starts no UTF-8
 * character, as the user database may hold. */
static const char odd_owner[] = "o\"bri\\en\xff";

/* A live feed of odd_owner's with one consumer. */
static void odd_feed(feed_info *fi) {
    memset(fi, 0, sizeof(*fi));
    strcpy(fi->name, "frames");
    strcpy(fi->owner, odd_owner);
    fi->readable = fi->ready = fi->producer_alive = 1;
    fi->producer_pid = 42;
    fi->head = 7;
    fi->nconsumers = 1;
    fi->consumers[0] = (feed_consumer_info){.pid = 43, .alive = 1, .lag = 2,
                                            .idle_s = 0.1004};
}

/* row printed as the CLI prints it, then read back: what a script that
 * reads the line gets. NULL when the line is not JSON. */
static json_t *printed_and_read(json_t *row) {
    assert_non_null(row);
    char *line = json_dumps(row, FEED_JSON_FLAGS);
    assert_non_null(line);
    json_error_t err;
    json_t *back = json_loads(line, 0, &err);
    free(line);
    json_decref(row);
    return back;
}

static const char *field(json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

/* ls: the row reads back whole, the owner's quote kept and its stray
 * byte as '?'. */
static void test_ls_odd_owner(void **state) {
    (void)state;
    feed_info fi;
    odd_feed(&fi);
    json_t *back = printed_and_read(feed_json(&fi));
    assert_non_null(back);
    assert_string_equal(field(back, "owner"), "o\"bri\\en?");
    assert_string_equal(field(back, "name"), "frames");
    assert_string_equal(field(back, "producer"), "alive");
    assert_true(json_is_null(json_object_get(back, "corrupt")));
    assert_int_equal(json_integer_value(json_object_get(back, "published")), 7);
    json_t *c = json_array_get(json_object_get(back, "consumers"), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "pid")), 43);
    assert_int_equal(json_integer_value(json_object_get(c, "lag")), 2);
    assert_true(json_is_true(json_object_get(c, "alive")));
    assert_true(json_real_value(json_object_get(c, "idle_s")) == 0.1);
    json_decref(back);
}

/* gc: a feed left in place names its owner in "error" too. */
static void test_gc_odd_owner(void **state) {
    (void)state;
    feed_info fi;
    odd_feed(&fi);
    fi.readable = 0;
    json_t *back = printed_and_read(feed_gc_json(&fi));
    assert_non_null(back);
    assert_string_equal(field(back, "owner"), "o\"bri\\en?");
    assert_true(json_is_false(json_object_get(back, "removed")));
    assert_string_equal(field(back, "error"),
                        "user o\"bri\\en?'s, which you may not open");
    json_decref(back);
    fi.removed = 1;
    back = printed_and_read(feed_gc_json(&fi));
    assert_non_null(back);
    assert_true(json_is_true(json_object_get(back, "removed")));
    assert_null(json_object_get(back, "error"));
    json_decref(back);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ls_odd_owner),
        cmocka_unit_test(test_gc_odd_owner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
