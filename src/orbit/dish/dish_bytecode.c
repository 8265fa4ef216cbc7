/* dish_bytecode.c -- the pieces of the bytecode format everyone shares:
 * the opcode table, little-endian fields, the image's CRC-32. */
#include "dish.h"

#include <stdio.h>

const dish_opinfo dish_ops[DISH_NOPS] = {
#define DISH_INFO(n, b, po, pu, f) {#n, b, po, pu, f},
    DISH_OPS(DISH_INFO)
#undef DISH_INFO
};

/* The table is built on first use rather than kept as 1 KiB of constants
 * in the source; both ground and board call this rarely. */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

uint32_t dish_crc32(const uint8_t *p, size_t n) {
    if (!crc_table[1])
        crc_init();
    uint32_t c = 0xFFFFFFFFu;
    for (size_t k = 0; k < n; k++)
        c = crc_table[(c ^ p[k]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint16_t dish_get16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}

int32_t dish_get32(const uint8_t *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    return u <= INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

void dish_put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void dish_put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

void dish_fix_str(int32_t v, char *buf, size_t cap) {
    int64_t a = v < 0 ? -(int64_t)v : v;
    int64_t frac = ((a & 0xFFFF) * 100000 + 32768) >> 16;
    int64_t whole = (a >> 16) + frac / 100000;
    frac %= 100000;
    int n = snprintf(buf, cap, "%s%lld.%05lld", v < 0 ? "-" : "", (long long)whole,
                     (long long)frac);
    /* trim zeros, keep one digit after the point */
    while (n > 2 && (size_t)n < cap && buf[n - 1] == '0' && buf[n - 2] != '.')
        buf[--n] = 0;
}
