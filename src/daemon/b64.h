/* b64.h -- base64 (RFC 4648, padded), the form in which `log` answers
 * carry a job's output: JSON strings hold UTF-8 text, and a log is bytes
 * (NULs, binary, text cut mid-character).
 */
#ifndef AEGIS_B64_H
#define AEGIS_B64_H

#include <stddef.h>

/* Characters that encode n bytes (without the terminating NUL). */
#define B64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)

/* Encodes n bytes of in into out (B64_ENCODED_LEN(n) + 1 bytes, NUL
 * terminated); returns the characters written. */
size_t b64_encode(const void *in, size_t n, char *out);

/* Decodes the n characters of in into out (room for n / 4 * 3 bytes) and
 * sets *outlen. Returns 0, or -1 when in is not padded base64. */
int b64_decode(const char *in, size_t n, void *out, size_t *outlen);

#endif
