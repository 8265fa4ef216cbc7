/* utf8.h -- one UTF-8 character at a time (utf8.c): definitions hold
 * UTF-8 text, as the YAML they are written in does. */
#ifndef DIPP_UTF8_H
#define DIPP_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length of the UTF-8 character at s (at most n bytes), its code
 * point in *cp; 0 where s holds none: a stray or missing continuation
 * byte, an overlong form, a surrogate, or past U+10FFFF. */
size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

#endif
