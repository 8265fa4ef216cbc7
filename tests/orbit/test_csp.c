/* test_csp.c -- the CSP 2.x layer against frames built by hand from the
 * layout docs/orbit.md writes down (not from any CSP code): header bits,
 * the CRC-32C trailer over header and data (and data alone, as older
 * nodes send it), and the ZMQ hub framing: one frame per message, nodes
 * subscribed to the 2-byte priority+destination prefix of their own
 * address. Also the link model's contact windows and loss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <zmq.h>

#include <cmocka.h>

#include "csp.h"
#include "csp_zmq.h"
#include "link_model.h"

/* priority 2, 162 <- 10, port 20 <- 33, CRC32 flag:
 * 10 00000010100010 00000000001010 010100 100001 000001 */
static const uint8_t hand_header[6] = {0x80, 0xA2, 0x00, 0x29, 0x48, 0x41};

static void test_header_bits(void **s) {
    (void)s;
    uint8_t frame[64];
    csp_id id = {CSP_PRI_NORM, 20, 33, CSP_F_CRC32, DIPP_NODE, GROUND_NODE};
    int n = csp_frame(&id, (const uint8_t *)"hi", 2, frame, sizeof frame);
    assert_int_equal(n, 6 + 2 + 4);
    assert_memory_equal(frame, hand_header, 6);
    uint32_t crc = csp_crc32c(frame, 8); /* header and data, big endian */
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8),
                     (uint8_t)crc};
    assert_memory_equal(frame + 8, be, 4);
    csp_id max = {3, 63, 63, 0x3E, CSP_MAX_NODE, CSP_MAX_NODE}; /* no CRC */
    assert_int_equal(csp_frame(&max, NULL, 0, frame, sizeof frame), 6);
    assert_memory_equal(frame, "\xFF\xFF\xFF\xFF\xFF\xFE", 6);
    max.dst = CSP_MAX_NODE + 1;
    assert_int_equal(csp_frame(&max, NULL, 0, frame, sizeof frame), -1);
}

static void test_crc32c_check_value(void **s) {
    (void)s; /* the catalogue's check value of CRC-32C */
    assert_int_equal(csp_crc32c((const uint8_t *)"123456789", 9), 0xE3069283u);
}

static void test_parse_hand_frames(void **s) {
    (void)s;
    uint8_t frame[16];
    memcpy(frame, hand_header, 6);
    memcpy(frame + 6, "hi", 2);
    uint32_t crc = csp_crc32c(frame + 6, 2); /* data only: an older sender */
    for (int k = 0; k < 4; k++)
        frame[8 + k] = (uint8_t)(crc >> (24 - 8 * k));
    csp_id id;
    const uint8_t *data;
    size_t len;
    assert_int_equal(csp_parse(frame, 12, &id, &data, &len), 0);
    assert_int_equal(id.pri, 2);
    assert_int_equal(id.dst, 162);
    assert_int_equal(id.src, 10);
    assert_int_equal(id.dport, 20);
    assert_int_equal(id.sport, 33);
    assert_int_equal(id.flags, CSP_F_CRC32);
    assert_int_equal(len, 2);
    assert_memory_equal(data, "hi", 2);
    frame[7] ^= 4; /* corrupted */
    assert_int_equal(csp_parse(frame, 12, &id, &data, &len), -1);
    assert_int_equal(csp_parse(frame, 5, &id, &data, &len), -1);
}

/* A hub played by the test on loopback: *in gets every frame the node
 * sends, what *out publishes reaches the node under its prefix, and n is
 * the node opened on them. */
static void test_hub_open(void *ctx, void **in, void **out, csp_node *n) {
    char sub_ep[64], pub_ep[64];
    size_t len = sizeof sub_ep;
    *in = zmq_socket(ctx, ZMQ_SUB), *out = zmq_socket(ctx, ZMQ_PUB);
    assert_int_equal(zmq_bind(*in, "tcp://127.0.0.1:*"), 0);
    zmq_getsockopt(*in, ZMQ_LAST_ENDPOINT, sub_ep, &len);
    len = sizeof pub_ep;
    assert_int_equal(zmq_bind(*out, "tcp://127.0.0.1:*"), 0);
    zmq_getsockopt(*out, ZMQ_LAST_ENDPOINT, pub_ep, &len);
    zmq_setsockopt(*in, ZMQ_SUBSCRIBE, NULL, 0);
    assert_int_equal(csp_node_open(n, GROUND_NODE, sub_ep, pub_ep, 0), 0);
}

/* A hub played by the test: it sees exactly the bytes a node sends, and
 * a frame it publishes reaches the node only under the node's prefix. */
static void test_zmq_hub_framing(void **s) {
    (void)s;
    void *ctx = zmq_ctx_new(), *in, *out;
    csp_node n;
    test_hub_open(ctx, &in, &out, &n);
    uint8_t got[64], frame[16], data[16];
    int r = -1;
    zmq_pollitem_t item = {in, 0, ZMQ_POLLIN, 0};
    for (int tries = 0; tries < 200 && r < 0; tries++) { /* until connected */
        assert_int_equal(csp_node_send(&n, DIPP_NODE, 20, 33, "hi", 2), 0);
        if (zmq_poll(&item, 1, 50) == 1)
            r = zmq_recv(in, got, sizeof got, 0);
    }
    assert_int_equal(r, 12);
    assert_memory_equal(got, hand_header, 6);
    /* hand-built frames to 162 (not this node) and to 10 */
    memcpy(frame, hand_header, 6);
    memcpy(frame + 6, "no", 2);
    uint8_t to_me[8] = {0x80, 0x0A, 0x02, 0x88, 0x88, 0x40}; /* 10 <- 162, 8 <- 33 */
    memcpy(to_me + 6, "ok", 2);
    csp_id id;
    size_t dlen = 0;
    int got_it = 0;
    for (int tries = 0; tries < 200 && !got_it; tries++) {
        zmq_send(out, frame, 8, 0);
        zmq_send(out, to_me, 8, 0);
        got_it = csp_node_recv(&n, 50, &id, data, sizeof data, &dlen);
    }
    assert_int_equal(got_it, 1);
    assert_int_equal(dlen, 2);
    assert_memory_equal(data, "ok", 2); /* never the frame to 162 */
    assert_int_equal(id.src, DIPP_NODE);
    assert_int_equal(id.dport, 8);
    csp_node_close(&n);
    zmq_close(in), zmq_close(out), zmq_ctx_term(ctx);
}

/* Frames to this node that fail their CRC, every 10 ms until the wait
 * under test is over (30 s at most), as a noisy link brings them:
 * csp_node_recv still returns once its own wait is up. It polled again
 * from the start after each one, so a steady trickle of damaged frames
 * held a ground's question (and the satellite's camera loop) for as long
 * as they came (found by flooding a hub with them). */
static atomic_bool flood_stop;

static void *flood(void *out) {
    uint8_t bad[12] = {0x80, 0x0A, 0x02, 0x88, 0x88, 0x41, 'n', 'o', 0, 0, 0, 0};
    for (int k = 0; k < 3000 && !atomic_load(&flood_stop); k++) {
        zmq_send(out, bad, sizeof bad, 0);
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return NULL;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void test_recv_wait_bounded_under_noise(void **s) {
    (void)s;
    void *ctx = zmq_ctx_new(), *in, *out;
    csp_node n;
    test_hub_open(ctx, &in, &out, &n);
    uint8_t to_me[8] = {0x80, 0x0A, 0x02, 0x88, 0x88, 0x40, 'o', 'k'}, data[16];
    csp_id id;
    size_t dlen;
    int got_it = 0;
    for (int tries = 0; tries < 200 && !got_it; tries++) { /* until subscribed */
        zmq_send(out, to_me, sizeof to_me, 0);
        got_it = csp_node_recv(&n, 50, &id, data, sizeof data, &dlen);
    }
    assert_int_equal(got_it, 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, flood, out), 0);
    /* a late copy of the frames sent while subscribing is taken first */
    long long start, took;
    int got;
    do {
        start = now_ms();
        got = csp_node_recv(&n, 200, &id, data, sizeof data, &dlen);
        took = now_ms() - start;
    } while (got == 1 && dlen == 2 && !memcmp(data, "ok", 2));
    atomic_store(&flood_stop, true);
    pthread_join(t, NULL);
    assert_int_equal(got, 0);
    /* 200 ms asked; the flood would have held it for its whole 30 s, and
     * a loaded machine adds far less than the 10 s allowed */
    assert_true(took < 10000);
    csp_node_close(&n);
    zmq_close(in), zmq_close(out), zmq_ctx_term(ctx);
}

static void test_link_windows_and_loss(void **s) {
    (void)s;
    link_cfg c = {9600, 0.1, 0.0, 100, 600000, 5400000};
    link_model l;
    link_model_init(&l, &c, 1);
    uint8_t frame[1200] = {0};
    uint64_t arrive, done, t = 0;
    int ok = 0;
    for (int k = 0; k < 500; k++, t = done) /* within the first pass */
        ok += link_model_send(&l, LINK_UP, t, frame, sizeof frame, &arrive, &done) == 0;
    assert_int_equal(done, 500u * 1000u); /* 1200 bytes at 9600 bit/s: 1 s */
    assert_in_range(ok, 420, 480);
    c.loss = 0; /* now only the windows lose frames */
    link_model_init(&l, &c, 1);
    assert_int_equal(link_model_send(&l, LINK_UP, 700000, frame, 10, &arrive, &done), -1);
    assert_int_equal(link_next_pass(&c, 700000), 5400000u);
    assert_int_equal(link_model_send(&l, LINK_UP, 5400000, frame, 10, &arrive, &done), 0);
    assert_int_equal(arrive, 5400000u + 9 + 100); /* 80 bits: 8.3 ms, + latency */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_bits),
        cmocka_unit_test(test_crc32c_check_value),
        cmocka_unit_test(test_parse_hand_frames),
        cmocka_unit_test(test_zmq_hub_framing),
        cmocka_unit_test(test_recv_wait_bounded_under_noise),
        cmocka_unit_test(test_link_windows_and_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
