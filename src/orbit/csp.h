/* csp.h -- CSP 2.x packets as they travel (docs/orbit.md, "The link"):
 * a 6-byte big-endian header (priority 2 bits, destination 14, source 14,
 * destination port 6, source port 6, flags 6) and the data, with an
 * optional CRC-32C of header and data appended big endian (flag CRC32).
 * Written from libcsp's documented layout, not its code. */
#ifndef DIPP_CSP_H
#define DIPP_CSP_H

#include <stddef.h>
#include <stdint.h>

#define CSP_HEADER_BYTES 6
#define CSP_MTU 2048 /* data bytes a ZMQ hub frame carries at most */
#define CSP_DATA_MAX (CSP_MTU - 4) /* with the CRC-32C after them */
#define CSP_MAX_NODE 16383 /* 14 bits; also the broadcast address */
#define CSP_MAX_PORT 63

enum csp_prio { CSP_PRI_CRITICAL = 0, CSP_PRI_HIGH = 1, CSP_PRI_NORM = 2, CSP_PRI_LOW = 3 };
enum csp_flag { CSP_F_CRC32 = 0x01, CSP_F_RDP = 0x02, CSP_F_HMAC = 0x08, CSP_F_FRAG = 0x10 };

/* libcsp's service ports, and the ones this DIPP serves (its choice). */
enum csp_port {
    CSP_PORT_CMP = 0, CSP_PORT_PING = 1, CSP_PORT_PS = 2, CSP_PORT_MEMFREE = 3,
    CSP_PORT_REBOOT = 4, CSP_PORT_BUF_FREE = 5, CSP_PORT_UPTIME = 6,
    DIPP_PORT_PARAM = 10,  /* get and set parameters, telemetry */
    DIPP_PORT_UPLOAD = 20, /* manifests, chunks, key rotations */
    DIPP_PORT_IMAGES = 22, /* the downlink of processed images */
    DIPP_PORT_PROCS = 24,  /* DISH procedures: list, run, delete */
};

/* Node addresses: the flight DIPP's, and a ground station's. */
#define DIPP_NODE 162
#define GROUND_NODE 10

typedef struct csp_id {
    uint8_t pri, dport, sport, flags;
    uint16_t dst, src;
} csp_id;

/* Frame of id and data into frame (cap bytes), with the CRC-32C when
 * id->flags has CSP_F_CRC32: its length, or -1 when a field is out of
 * range or it does not fit. */
int csp_frame(const csp_id *id, const uint8_t *data, size_t len, uint8_t *frame,
              size_t cap);
/* Reads a frame: 0 with id, *data and *len (in frame, the CRC removed and
 * checked, over header and data or, as older nodes do, the data alone),
 * or -1 when short or its CRC fails. */
int csp_parse(const uint8_t *frame, size_t flen, csp_id *id, const uint8_t **data,
              size_t *len);
/* CRC-32C (Castagnoli, reflected), as CSP's CRC32 flag uses. */
uint32_t csp_crc32c(const uint8_t *p, size_t n);

#endif
