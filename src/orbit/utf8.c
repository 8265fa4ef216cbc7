/* utf8.c -- one UTF-8 character at a time (utf8.h), by RFC 3629's rules:
 * a decoder that took overlong forms or surrogates would let two byte
 * strings mean one text. */
#include "utf8.h"

size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp) {
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0) return 0;
    unsigned lead = s[0];
    size_t len = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2
               : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    uint32_t c = len == 1 ? lead : lead & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[k] & 0x3F);
    }
    if (c < least[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}
