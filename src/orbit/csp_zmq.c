/* csp_zmq.c -- a CSP node on a ZMQ hub (csp_zmq.h), with libzmq. */
#include "csp_zmq.h"

#include <string.h>
#include <zmq.h>

#include "platform.h"

void csp_sub_prefix(uint8_t pri, uint16_t dst, uint8_t out[2]) {
    out[0] = (uint8_t)(pri << 6 | dst >> 8);
    out[1] = (uint8_t)dst;
}

static int subscribe(csp_node *n, int promisc) {
    if (promisc)
        return zmq_setsockopt(n->sub, ZMQ_SUBSCRIBE, NULL, 0);
    for (uint8_t pri = 0; pri < 4; pri++) {
        uint8_t mine[2], all[2];
        csp_sub_prefix(pri, n->addr, mine);
        csp_sub_prefix(pri, CSP_MAX_NODE, all);
        if (zmq_setsockopt(n->sub, ZMQ_SUBSCRIBE, mine, 2) ||
            zmq_setsockopt(n->sub, ZMQ_SUBSCRIBE, all, 2))
            return -1;
    }
    return 0;
}

int csp_node_open(csp_node *n, uint16_t addr, const char *hub_sub,
                  const char *hub_pub, int promisc) {
    int linger = 0;
    memset(n, 0, sizeof *n);
    n->addr = addr;
    n->ctx = zmq_ctx_new();
    n->pub = n->ctx ? zmq_socket(n->ctx, ZMQ_PUB) : NULL;
    n->sub = n->ctx ? zmq_socket(n->ctx, ZMQ_SUB) : NULL;
    if (!n->pub || !n->sub ||
        zmq_setsockopt(n->pub, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_connect(n->pub, hub_sub) || zmq_connect(n->sub, hub_pub) ||
        subscribe(n, promisc)) {
        csp_node_close(n);
        return -1;
    }
    return 0;
}

int csp_node_send(csp_node *n, uint16_t dst, uint8_t dport, uint8_t sport,
                  const void *data, size_t len) {
    uint8_t frame[CSP_HEADER_BYTES + CSP_MTU];
    csp_id id = {CSP_PRI_NORM, dport, sport, CSP_F_CRC32, dst, n->addr};
    int flen = csp_frame(&id, data, len, frame, sizeof frame);
    return flen < 0 || zmq_send(n->pub, frame, (size_t)flen, 0) != flen ? -1 : 0;
}

int csp_node_recv(csp_node *n, int timeout_ms, csp_id *id, uint8_t *data,
                  size_t cap, size_t *len) {
    uint8_t frame[CSP_HEADER_BYTES + CSP_MTU + 64];
    zmq_pollitem_t item = {n->sub, 0, ZMQ_POLLIN, 0};
    uint64_t end = plat_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    for (int wait = timeout_ms;;) {
        int rc = zmq_poll(&item, 1, wait);
        if (rc <= 0)
            return rc < 0 ? -1 : 0;
        int flen = zmq_recv(n->sub, frame, sizeof frame, 0);
        const uint8_t *body;
        if (flen >= 0 && (size_t)flen <= sizeof frame &&
            !csp_parse(frame, (size_t)flen, id, &body, len) && *len <= cap) {
            memcpy(data, body, *len);
            return 1;
        }
        /* damaged on the way, as good as lost: passed over within the
         * wait, which ends even while such frames keep coming */
        if (timeout_ms >= 0 && (wait = plat_ms_left(end)) == 0)
            return 0;
    }
}

void csp_node_close(csp_node *n) {
    if (n->pub)
        zmq_close(n->pub);
    if (n->sub)
        zmq_close(n->sub);
    if (n->ctx)
        zmq_ctx_term(n->ctx);
    memset(n, 0, sizeof *n);
}
