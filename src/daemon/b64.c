/* b64.c -- base64 encoding and strict decoding (see b64.h). */
#include "b64.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encode(const void *in, size_t n, char *out) {
    const unsigned char *p = in;
    size_t at = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n) v |= p[i + 2];
        out[at++] = b64_alphabet[v >> 18];
        out[at++] = b64_alphabet[(v >> 12) & 63];
        out[at++] = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
        out[at++] = i + 2 < n ? b64_alphabet[v & 63] : '=';
    }
    out[at] = '\0';
    return at;
}

/* The value of a base64 character, or -1. */
static int b64_value(char c) {
    const char *at = c ? strchr(b64_alphabet, c) : NULL;
    return at ? (int)(at - b64_alphabet) : -1;
}

int b64_decode(const char *in, size_t n, void *out, size_t *outlen) {
    unsigned char *p = out;
    size_t at = 0;
    if (n % 4 != 0) return -1;
    for (size_t i = 0; i < n; i += 4) {
        /* '=' pads the last group only: one or two, at its end */
        bool last = i + 4 == n;
        int pad = last && in[i + 3] == '=' ? (in[i + 2] == '=' ? 2 : 1) : 0;
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
            int d = k >= 4 - pad ? 0 : b64_value(in[i + k]);
            if (d < 0) return -1;
            v = v << 6 | (uint32_t)d;
        }
        p[at++] = (unsigned char)(v >> 16);
        if (pad < 2) p[at++] = (unsigned char)(v >> 8);
        if (pad < 1) p[at++] = (unsigned char)v;
    }
    *outlen = at;
    return 0;
}
