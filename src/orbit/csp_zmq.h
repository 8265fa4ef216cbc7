/* csp_zmq.h -- a CSP node on a ZMQ hub, as libcsp's zmqhub interface
 * connects: a PUB socket to the hub's subscribe port (6000 by default)
 * and a SUB socket to its publish port (7000), one CSP frame per ZMQ
 * message with nothing around it; the node subscribes to the 2-byte
 * prefixes (priority and destination, big endian) of its own address and
 * of the broadcast address, at each priority. */
#ifndef DIPP_CSP_ZMQ_H
#define DIPP_CSP_ZMQ_H

#include <stddef.h>
#include <stdint.h>

#include "csp.h"

#define CSP_HUB_SUB_PORT 6000 /* the hub takes frames here */
#define CSP_HUB_PUB_PORT 7000 /* and gives them out here */

typedef struct csp_node {
    void *ctx, *pub, *sub;
    uint16_t addr;
} csp_node;

/* Connects node addr to a hub whose subscribe and publish endpoints are
 * given ("tcp://127.0.0.1:6000", "tcp://127.0.0.1:7000"); promisc takes
 * every frame. 0 or -1. */
int csp_node_open(csp_node *n, uint16_t addr, const char *hub_sub,
                  const char *hub_pub, int promisc);
/* Sends data to dst:dport from sport (CRC32 flag set). 0 or -1. */
int csp_node_send(csp_node *n, uint16_t dst, uint8_t dport, uint8_t sport,
                  const void *data, size_t len);
/* Waits up to timeout_ms (< 0: for ever) for a frame: 1 with id and
 * data (len bytes, at most cap), 0 on timeout, -1 on error. A frame that
 * fails its parse is skipped, within the same wait. */
int csp_node_recv(csp_node *n, int timeout_ms, csp_id *id, uint8_t *data,
                  size_t cap, size_t *len);
void csp_node_close(csp_node *n);
/* The 2-byte subscription prefix of frames to dst at priority pri. */
void csp_sub_prefix(uint8_t pri, uint16_t dst, uint8_t out[2]);

#endif
