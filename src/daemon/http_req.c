/* http_req.c -- judging a request to aegisd's metrics endpoint: see
 * http_req.h. The request line is METHOD SP TARGET SP HTTP/1.x (RFC 9112
 * section 3); lines may end in CRLF or a bare LF, as the RFC lets a
 * server accept, and the header block ends with an empty line.
 */
#include "http_req.h"

#include <stdbool.h>
#include <string.h>

/* Where the header block ends (after its empty line), or NULL. */
static const char *http_req_end(const char *buf, size_t len) {
    for (size_t i = 0; i + 1 < len; i++) {
        if (buf[i] != '\n') continue;
        if (buf[i + 1] == '\n') return buf + i + 2;
        if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
            return buf + i + 3;
    }
    return NULL;
}

/* Whether the first n bytes of the request line are of one: visible
 * ASCII and single spaces (a line in progress may be cut anywhere). */
static bool http_req_line_chars(const char *line, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c == '\r' && i + 1 == n) continue; /* its CR, before LF */
        if (c < 0x20 || c > 0x7e) return false;
        if (c == ' ' && (i == 0 || line[i - 1] == ' ')) return false;
    }
    return true;
}

/* The status for a complete request line of n bytes (no line end). */
static int http_req_line(const char *line, size_t n) {
    const char *sp1 = memchr(line, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line))
                          : NULL;
    if (!sp1 || !sp2) return 400;
    const char *version = sp2 + 1;
    size_t vlen = n - (size_t)(version - line);
    if (vlen != 8 || memcmp(version, "HTTP/1.", 7) != 0 ||
        version[7] < '0' || version[7] > '9')
        return 400;
    for (const char *p = line; p < sp1; p++)
        if (*p < 'A' || *p > 'Z') return 400; /* methods are tokens */
    const char *target = sp1 + 1;
    size_t tlen = (size_t)(sp2 - target);
    if (target[0] != '/') return 400;
    if ((size_t)(sp1 - line) != 3 || memcmp(line, "GET", 3) != 0) return 405;
    /* the query string, if any, changes nothing */
    const char *query = memchr(target, '?', tlen);
    size_t plen = query ? (size_t)(query - target) : tlen;
    return plen == 8 && memcmp(target, "/metrics", 8) == 0 ? 200 : 404;
}

int http_req_judge(const char *buf, size_t len) {
    const char *eol = memchr(buf, '\n', len);
    size_t n = eol ? (size_t)(eol - buf) : len;
    if (!http_req_line_chars(buf, n)) return 400;
    if (eol) {
        if (n > 0 && buf[n - 1] == '\r') n--;
        int status = http_req_line(buf, n);
        if (status == 400) return 400;
        if (http_req_end(buf, len)) return status;
    }
    /* a header block still open past the limit */
    if (len > HTTP_REQ_MAX) return 431;
    return 0;
}

const char *http_req_reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    default: return "Bad Request";
    }
}
