/* csp.c -- CSP 2.x headers and the CRC-32C trailer (csp.h). */
#include "csp.h"

#include <string.h>

uint32_t csp_crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t k = 0; k < n; k++) {
        c ^= p[k];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

static void put_be(uint8_t *p, uint64_t v, int bytes) {
    for (int k = bytes - 1; k >= 0; k--, v >>= 8)
        p[k] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++)
        v = v << 8 | p[k];
    return v;
}

int csp_frame(const csp_id *id, const uint8_t *data, size_t len, uint8_t *frame,
              size_t cap) {
    size_t crc = id->flags & CSP_F_CRC32 ? 4 : 0;
    if (id->pri > 3 || id->dst > CSP_MAX_NODE || id->src > CSP_MAX_NODE ||
        id->dport > CSP_MAX_PORT || id->sport > CSP_MAX_PORT || id->flags > 0x3F ||
        len + crc > CSP_MTU || CSP_HEADER_BYTES + len + crc > cap)
        return -1;
    uint64_t h = (uint64_t)id->pri << 46 | (uint64_t)id->dst << 32 |
                 (uint64_t)id->src << 18 | (uint64_t)id->dport << 12 |
                 (uint64_t)id->sport << 6 | id->flags;
    put_be(frame, h, CSP_HEADER_BYTES);
    if (len)
        memcpy(frame + CSP_HEADER_BYTES, data, len);
    if (crc)
        put_be(frame + CSP_HEADER_BYTES + len,
               csp_crc32c(frame, CSP_HEADER_BYTES + len), 4);
    return (int)(CSP_HEADER_BYTES + len + crc);
}

static int crc_ok(const uint8_t *frame, size_t flen) {
    uint32_t want = (uint32_t)get_be(frame + flen - 4, 4);
    return csp_crc32c(frame, flen - 4) == want ||
           csp_crc32c(frame + CSP_HEADER_BYTES, flen - 4 - CSP_HEADER_BYTES) == want;
}

int csp_parse(const uint8_t *frame, size_t flen, csp_id *id, const uint8_t **data,
              size_t *len) {
    if (flen < CSP_HEADER_BYTES)
        return -1;
    uint64_t h = get_be(frame, CSP_HEADER_BYTES);
    id->pri = (uint8_t)(h >> 46 & 3u), id->dst = (uint16_t)(h >> 32 & 0x3FFFu);
    id->src = (uint16_t)(h >> 18 & 0x3FFFu), id->dport = (uint8_t)(h >> 12 & 0x3Fu);
    id->sport = (uint8_t)(h >> 6 & 0x3Fu), id->flags = (uint8_t)(h & 0x3Fu);
    size_t crc = id->flags & CSP_F_CRC32 ? 4 : 0;
    if (flen < CSP_HEADER_BYTES + crc || (crc && !crc_ok(frame, flen)))
        return -1;
    *data = frame + CSP_HEADER_BYTES;
    *len = flen - CSP_HEADER_BYTES - crc;
    return 0;
}
