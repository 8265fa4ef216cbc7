/* rogue_sat.c -- a node 162 that is its own hub and answers the ground's
 * telemetry questions (port 10, 'T') with the text a rogue or broken
 * node may send: terminal escapes, and a run record numbered 2^32 - 1,
 * whose successor wraps to 0; its procedure listings (port 24, 'L' seq
 * from) each list slot `from` with an escape and say there is more from
 * the next slot, and from slot 40 on from the same; a run ('X') is
 * answered in 3 bytes, too short for its code; and every 20 ms a stale answer on the
 * procedure port, which an upload's or an image's wait passes over.
 * For e2e_rogue_sat.sh: the ground must print none of the escapes, must
 * not ask for ever, and must end each wait on time.
 *
 * usage: rogue_sat PORT SECONDS (binds PORT and PORT + 1000 as a hub does) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "csp.h"
#include "proto.h"

static const char text[] = "frames=1\nlast_detail=\x1b]0;owned\x07\x1b[2J\n"
                           "dish.next=10\ndish.4294967295=\x1b[31m red\n";

int main(int argc, char **argv) {
    char in[64], out[64];
    if (argc != 3)
        return 2;
    snprintf(in, sizeof in, "tcp://127.0.0.1:%d", atoi(argv[1]));
    snprintf(out, sizeof out, "tcp://127.0.0.1:%d", atoi(argv[1]) + 1000);
    void *ctx = zmq_ctx_new(), *sub = zmq_socket(ctx, ZMQ_SUB), *pub = zmq_socket(ctx, ZMQ_PUB);
    if (zmq_setsockopt(sub, ZMQ_SUBSCRIBE, NULL, 0) || zmq_bind(sub, in) || zmq_bind(pub, out))
        return 1;
    printf("rogue_sat: hub %s\n", argv[1]);
    fflush(stdout);
    time_t end = time(NULL) + atoi(argv[2]);
    while (time(NULL) < end) {
        uint8_t frame[CSP_HEADER_BYTES + CSP_MTU], reply[CSP_MTU], back[CSP_HEADER_BYTES + CSP_MTU];
        zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
        /* numbered 0, which the ground never gives a question
         * (ground_seq), so it can never be taken for an answer */
        uint8_t stale[3] = {'A', 0, 0};
        csp_id sid = {CSP_PRI_NORM, DIPP_PORT_PROCS, DIPP_PORT_PROCS, CSP_F_CRC32, GROUND_NODE,
                      DIPP_NODE};
        int f = csp_frame(&sid, stale, sizeof stale, back, sizeof back);
        if (f > 0)
            zmq_send(pub, back, (size_t)f, 0);
        if (zmq_poll(&item, 1, 20) <= 0)
            continue;
        int n = zmq_recv(sub, frame, sizeof frame, 0);
        csp_id id;
        const uint8_t *msg;
        size_t len;
        if (n < 0 || (size_t)n > sizeof frame || csp_parse(frame, (size_t)n, &id, &msg, &len) ||
            len < 3)
            continue;
        size_t rlen;
        if (id.dport == DIPP_PORT_PARAM && msg[0] == 'T') {
            reply[0] = 'V', memcpy(reply + 1, msg + 1, 2);
            memcpy(reply + 3, text, sizeof text - 1);
            rlen = 3 + sizeof text - 1;
        } else if (id.dport == DIPP_PORT_PROCS && msg[0] == 'L') {
            /* a step on up to slot 40, then slot 40 again and again */
            unsigned from = len >= 4 ? msg[3] : 0;
            reply[0] = 'A', memcpy(reply + 1, msg + 1, 2);
            memset(reply + 3, 0, 4);
            rlen = 7 + (size_t)snprintf((char *)reply + 7, sizeof reply - 7,
                                        "slot %u: \x1b[2J v1\nmore from slot %u\n", from,
                                        from < 40 ? from + 1 : from);
        } else if (id.dport == DIPP_PORT_PROCS && msg[0] == 'X') {
            /* a run answered with its number but no room for a code */
            reply[0] = 'A', memcpy(reply + 1, msg + 1, 2);
            rlen = 3;
        } else {
            continue;
        }
        csp_id rid = {CSP_PRI_NORM, id.sport, id.dport, CSP_F_CRC32, id.src, DIPP_NODE};
        f = csp_frame(&rid, reply, rlen, back, sizeof back);
        if (f > 0)
            zmq_send(pub, back, (size_t)f, 0);
    }
    zmq_close(sub), zmq_close(pub);
    zmq_ctx_term(ctx);
    return 0;
}
