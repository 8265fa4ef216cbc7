/* test_sat_ping.c -- the satellite's ping service (CSP port 1) without a
 * link: each ping is echoed whole in a frame the link carries (the
 * 2048-byte MTU, with the CRC the satellite's node appends), or, when its
 * echo could not fit, not answered and counted in the telemetry
 * (pings_too_long), never handed to the node to fail unseen. The ping
 * port reads nothing of the board: a sat with only its DISH runtime (for
 * the telemetry), on the in-memory file system, serves it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csp.h"
#include "faultfs.h"
#include "sat.h"

static sat s; /* no update store, no ring, no procedures */

static int setup(void **state) {
    (void)state;
    faultfs_install();
    sat_dish_open(&s.dish, "/store", 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    faultfs_uninstall();
    return 0;
}

/* What the satellite answered to the last ping. */
static struct {
    unsigned answers;
    size_t len;
    int framed; /* the answer fits a frame as csp_node_send makes it */
    uint8_t msg[CSP_MTU + 64];
} got;

static void on_reply(void *ctx, uint8_t port, const uint8_t *msg, size_t len) {
    static uint8_t frame[CSP_HEADER_BYTES + CSP_MTU];
    (void)ctx;
    csp_id id = {CSP_PRI_NORM, port, CSP_PORT_PING, CSP_F_CRC32, GROUND_NODE, DIPP_NODE};
    got.answers++;
    got.len = len;
    got.framed = csp_frame(&id, msg, len, frame, sizeof frame) > 0;
    memcpy(got.msg, msg, len < sizeof got.msg ? len : sizeof got.msg);
}

/* Pings the satellite with len bytes (a pattern) from port 33. */
static void ping(size_t len, uint8_t *msg) {
    csp_id id = {CSP_PRI_NORM, CSP_PORT_PING, 33, 0, DIPP_NODE, GROUND_NODE};
    for (size_t k = 0; k < len; k++)
        msg[k] = (uint8_t)(k * 7 + 1);
    memset(&got, 0, sizeof got);
    sat_handle(&s, &id, msg, len, on_reply, NULL);
}

/* The telemetry's pings_too_long, or -1 when it has none. */
static long too_long(void) {
    static char text[CSP_MTU];
    sat_telemetry(&s, text, sizeof text);
    const char *at = strstr(text, "\npings_too_long=");
    return at ? strtol(at + strlen("\npings_too_long="), NULL, 10) : -1;
}

/* Up to CSP_DATA_MAX bytes: echoed whole, to the asker's port. */
static void test_echo_fits(void **state) {
    (void)state;
    static uint8_t msg[CSP_MTU];
    static const size_t lens[] = {1, 3, 1000, CSP_DATA_MAX};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        ping(lens[i], msg);
        assert_int_equal(got.answers, 1);
        assert_int_equal(got.len, lens[i]);
        assert_true(got.framed);
        assert_memory_equal(got.msg, msg, lens[i]);
    }
    assert_int_equal(too_long(), 0);
}

/* 2045 to 2048 bytes (a node that sends without the CRC, or one over the
 * MTU): its echo with the CRC cannot fit a frame, so it is not answered,
 * and counted. Before, it was handed to the node, whose send failed
 * unseen. */
static void test_echo_too_long(void **state) {
    (void)state;
    static uint8_t msg[CSP_MTU + 64];
    long before = too_long();
    for (size_t len = CSP_DATA_MAX + 1; len <= CSP_MTU + 64; len++) {
        ping(len, msg);
        if (got.answers)
            print_error("a ping of %zu bytes answered with %zu bytes%s\n", len, got.len,
                        got.framed ? "" : ", which fit no frame");
        assert_int_equal(got.answers, 0);
    }
    assert_int_equal(too_long(), before + (CSP_MTU + 64 - CSP_DATA_MAX));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_fits),
        cmocka_unit_test(test_echo_too_long),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
