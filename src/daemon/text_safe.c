/* text_safe.c -- controls and bidirectional formatting in another user's
 * text, found and replaced (text_safe.h). */
#include "text_safe.h"

#include <string.h>

/* The range RFC 3629 allows for the second byte after lead byte b (the
 * later ones are always 80..BF): narrower after E0 and F0 (no overlong
 * form), ED (no UTF-16 surrogate) and F4 (nothing above U+10FFFF). *n
 * is the character's length, 0 for a byte that may not lead one (80..C1:
 * a continuation or an overlong 2-byte form; F5..FF). */
static void utf8_lead(unsigned char b, size_t *n, unsigned char *lo,
                      unsigned char *hi) {
    *lo = 0x80;
    *hi = 0xbf;
    *n = b < 0x80 ? 1 : b < 0xc2 ? 0 : b < 0xe0 ? 2 : b < 0xf0 ? 3
       : b < 0xf5 ? 4 : 0;
    if (b == 0xe0) *lo = 0xa0;
    else if (b == 0xed) *hi = 0x9f;
    else if (b == 0xf0) *lo = 0x90;
    else if (b == 0xf4) *hi = 0x8f;
}

/* Only well-formed UTF-8 is a character: a terminal that decodes an
 * overlong C0 0x9B as U+009B (CSI) would act on it, and surrogates or
 * code points past U+10FFFF have no meaning to show. */
size_t text_char_len(const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    size_t n;
    unsigned char lo, hi;
    utf8_lead(*s, &n, &lo, &hi);
    if (n == 0) return 1;
    if (n > 1 && (s[1] < lo || s[1] > hi)) return 1;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 1;
    return n;
}

/* U+200E, U+200F (e2 80 8e/8f), U+202A..U+202E (e2 80 aa..ae) and
 * U+2066..U+2069 (e2 81 a6..a9); the third mark, U+061C, has two bytes
 * (text_is_control). */
static bool is_bidi(const unsigned char *s) {
    if (s[0] != 0xe2) return false;
    if (s[1] == 0x80) return s[2] == 0x8e || s[2] == 0x8f ||
                             (s[2] >= 0xaa && s[2] <= 0xae);
    return s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9;
}

bool text_is_control(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    if (len == 3) return is_bidi(s);
    if (len == 2) /* C1, and the Arabic letter mark U+061C (d8 9c) */
        return (s[0] == 0xc2 && s[1] < 0xa0) || (s[0] == 0xd8 && s[1] == 0x9c);
    return len == 1 && (*s < 0x20 || *s >= 0x7f);      /* C0, DEL, stray */
}

unsigned long text_code_point(const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    if (len < 2 || len > 4) return s[0];
    /* the lead byte keeps 7 - len bits, each later byte 6 */
    unsigned long cp = s[0] & (0x7fUL >> len);
    for (size_t i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3fUL);
    return cp;
}

/* A character of len bytes at s that is no character at all: a byte
 * that starts none (text_char_len() gives those 1, and a character of one
 * byte is ASCII). */
static bool not_utf8(const char *s, size_t len) {
    return len == 1 && (unsigned char)*s >= 0x80;
}

bool text_is_utf8(const char *s) {
    for (size_t len; *s; s += len) {
        len = text_char_len(s);
        if (not_utf8(s, len)) return false;
    }
    return true;
}

/* src into dst (size bytes), each character `replace` picks as '?', cut
 * at a character's end: text_safe() and text_as_utf8(). */
static void replace_chars(char *dst, size_t size, const char *src,
                          bool (*replace)(const char *, size_t)) {
    size_t at = 0;
    if (size == 0) return;
    while (*src) {
        size_t len = text_char_len(src);
        bool replaced = replace(src, len);
        size_t out = replaced ? 1 : len;
        if (at + out >= size) break;
        if (replaced) dst[at] = '?';
        else memcpy(dst + at, src, len);
        at += out;
        src += len;
    }
    dst[at] = '\0';
}

void text_safe(char *dst, size_t size, const char *src) {
    replace_chars(dst, size, src, text_is_control);
}

void text_as_utf8(char *dst, size_t size, const char *src) {
    replace_chars(dst, size, src, not_utf8);
}
