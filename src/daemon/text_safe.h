/* text_safe.h -- what a terminal would act on rather than show, in text
 * another user wrote (a job's name or command): C0 and C1 controls, DEL,
 * bytes that start no UTF-8 character (RFC 3629: an overlong form, a
 * UTF-16 surrogate or a code point past U+10FFFF starts none, so an
 * overlong C0 0x9B is two such bytes, not CSI), and the bidirectional marks,
 * overrides and isolates (U+061C, U+200E, U+200F, U+202A..U+202E,
 * U+2066..U+2069) that reorder what follows them on screen. aegisd
 * refuses them in a job's name (proto.c); aegis shows each one already
 * stored as '?' (ls, show, report, top), and as its \uXXXX escape in
 * --json (text_code_point). Pure: no OS header, no allocation. */
#ifndef AEGIS_TEXT_SAFE_H
#define AEGIS_TEXT_SAFE_H

#include <stdbool.h>
#include <stddef.h>

/* The bytes of the UTF-8 character at s (1 to 4): 1 for a byte that
 * starts none. */
size_t text_char_len(const char *s);

/* Whether the character of len bytes at s (text_char_len) is one a
 * terminal would act on. */
bool text_is_control(const char *s, size_t len);

/* The code point of the character of len bytes at s (text_char_len);
 * a byte that starts none, its own value. */
unsigned long text_code_point(const char *s, size_t len);

/* src into dst (size bytes, NUL included), each such character as '?',
 * cut at a character's end when it does not fit. */
void text_safe(char *dst, size_t size, const char *src);

/* Whether every byte of s belongs to a UTF-8 character (text_char_len()):
 * text a JSON string can hold. */
bool text_is_utf8(const char *s);

/* src into dst as text_safe() does, but only each byte that starts no
 * UTF-8 character as '?': the text a JSON string can hold (jansson
 * refuses a whole string for one such byte), its controls kept for the
 * printer to escape (\uXXXX in --json, '?' in text). */
void text_as_utf8(char *dst, size_t size, const char *src);

#endif
