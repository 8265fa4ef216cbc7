/* text_safe.c -- controls and bidirectional formatting in another user's
 * text, found and replaced (text_safe.h). */
#include "text_safe.h"

#include <string.h>

size_t text_char_len(const char *text) {
    const unsigned char *s = (const unsigned char *)text;
    size_t n = *s < 0xc0 ? 1 : *s < 0xe0 ? 2 : *s < 0xf0 ? 3 : 4;
    for (size_t i = 1; i < n; i++)
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
    if (len == 2) return (s[0] & 0x1fUL) << 6 | (s[1] & 0x3fUL);
    if (len == 3)
        return (s[0] & 0x0fUL) << 12 | (s[1] & 0x3fUL) << 6 | (s[2] & 0x3fUL);
    return s[0];
}

void text_safe(char *dst, size_t size, const char *src) {
    size_t at = 0;
    if (size == 0) return;
    while (*src) {
        size_t len = text_char_len(src);
        bool control = text_is_control(src, len);
        size_t out = control ? 1 : len;
        if (at + out >= size) break;
        if (control) dst[at] = '?';
        else memcpy(dst + at, src, len);
        at += out;
        src += len;
    }
    dst[at] = '\0';
}
