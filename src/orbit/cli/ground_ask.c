/* ground_ask.c -- how the ground waits for node 162 (ground.h): a
 * question's sequence number, and the wait for its answer. --timeout-ms
 * is the whole wait: a command that hears no answer for that long says
 * "no answer". The link loses frames, so within that wait the question
 * is asked again, evenly, at most --retry-ms apart. */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "errors.h"
#include "ground.h"
#include "platform.h"
#include "proto.h"

/* 0 is never one: it marks "not started" here. */
uint16_t ground_seq(void) {
    static uint16_t seq;
    if (!seq)
        seq = (uint16_t)(1 + randombytes_uniform(65535));
    uint16_t now = seq++;
    if (!seq)
        seq = 1;
    return now;
}

unsigned ground_asks(const ground *g) {
    return (unsigned)((g->timeout_ms + g->retry_ms - 1) / g->retry_ms);
}

/* The whole wait shared evenly, so that the last ask does not end past
 * --timeout-ms: 10000 at most 3000 apart is 4 asks of 2500 ms. */
int ground_ask_ms(const ground *g) {
    return g->timeout_ms / (int)ground_asks(g);
}

void ground_no_answer(const ground *g, const char *what) {
    printf("%s: no answer from node %d in %d ms (asked %u times; --timeout-ms "
           "sets the wait)\n", what, DIPP_NODE, g->timeout_ms, ground_asks(g));
}

/* Whether reply[0..got) on port answers msg[0..len): of type want, and
 * for the same sequence number (bytes 1-2) when msg has one. */
static int answers(const csp_id *id, uint8_t port, const uint8_t *msg, size_t len,
                   uint8_t want, const uint8_t *reply, size_t got) {
    return id->dport == port && got >= 3 && reply[0] == want &&
           (len < 3 || memcmp(reply + 1, msg + 1, 2) == 0);
}

/* Waits until the clock reads `end` for the answer to msg: its length, or
 * -1. Other frames (a late answer to another question) do not lengthen
 * the wait. */
static long await_answer(ground *g, uint64_t end, uint8_t port, const uint8_t *msg,
                         size_t len, uint8_t want, uint8_t *reply, size_t cap) {
    for (int left; (left = plat_ms_left(end)) > 0;) {
        csp_id id;
        size_t got;
        if (csp_node_recv(&g->node, left, &id, reply, cap, &got) != 1)
            return -1;
        if (answers(&id, port, msg, len, want, reply, got))
            return (long)got;
    }
    return -1;
}

long ground_ask(ground *g, uint8_t port, const uint8_t *msg, size_t len,
                uint8_t want, uint8_t *reply, size_t cap) {
    unsigned asks = ground_asks(g);
    for (unsigned t = 0; t < asks; t++) {
        /* the same bytes each time, so a late answer to an earlier ask
         * of this question is taken */
        csp_node_send(&g->node, DIPP_NODE, port, port, msg, len);
        uint64_t end = plat_now_ms() + (uint64_t)ground_ask_ms(g);
        long got = await_answer(g, end, port, msg, len, want, reply, cap);
        if (got >= 0)
            return got;
    }
    return -1;
}

int ground_ask_text(ground *g, uint8_t port, ground_signer *sg, uint8_t *msg, size_t len,
                    const char *what, uint8_t *reply, char **text) {
    proto_put16(msg + 1, ground_seq());
    if (sg)
        len = ground_sign(sg, port, msg, len);
    long n = ground_ask(g, port, msg, len, 'A', reply, CSP_MTU);
    if (n < 0) {
        ground_no_answer(g, what);
        return EXIT_BAD;
    }
    if (n < 7) { /* the seq matched, but no room for the code */
        printf("%s: a malformed answer from node %d (%ld bytes, under 7)\n", what, DIPP_NODE, n);
        return EXIT_BAD;
    }
    reply[n] = 0;
    uint32_t code = proto_get32(reply + 3);
    *text = (char *)reply + 7;
    proto_printable(*text, strlen(*text), 1);
    if (code) {
        printf("%s refused: error %u (%s): %s\n", what, dipp_error_number((int)code, 0, 0),
               dipp_code_name((int)code), *text);
        return EXIT_BAD;
    }
    return 0;
}
