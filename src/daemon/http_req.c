/* http_req.c -- judging a request to aegisd's metrics endpoint: see
 * http_req.h. The request line is METHOD SP TARGET SP HTTP/1.x (RFC 9112
 * section 3); lines may end in CRLF or a bare LF, as the RFC lets a
 * server accept, and the header block ends with an empty line.
 */
#include "http_req.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

/* The version of a request line: 0 for HTTP/1.x, 505 for another
 * HTTP/M.N (a version this server does not speak), 400 for none. */
static int http_req_version(const char *v, size_t vlen) {
    bool digits = vlen == 8 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
                  v[7] >= '0' && v[7] <= '9';
    if (!digits || memcmp(v, "HTTP/", 5) != 0) return 400;
    return v[5] == '1' ? 0 : 505;
}

/* The path of an absolute-form target (RFC 9112 section 3.2.2, which a
 * server must accept: "http://host:9464/metrics"), its length in *len;
 * the target itself when it is not one. */
static const char *http_req_origin(const char *target, size_t *len) {
    static const char *const schemes[] = {"http://", "https://"};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(schemes[i]);
        if (*len <= k || strncasecmp(target, schemes[i], k) != 0) continue;
        const char *path = memchr(target + k, '/', *len - k);
        if (!path) path = target + *len; /* "http://host": no path */
        *len -= (size_t)(path - target);
        return path;
    }
    return target;
}

/* The status for a complete request line of n bytes (no line end). */
static int http_req_line(const char *line, size_t n) {
    const char *sp1 = memchr(line, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line))
                          : NULL;
    if (!sp1 || !sp2) return 400;
    const char *version = sp2 + 1;
    int bad_version = http_req_version(version, n - (size_t)(version - line));
    if (bad_version) return bad_version;
    for (const char *p = line; p < sp1; p++)
        if (*p < 'A' || *p > 'Z') return 400; /* methods are tokens */
    size_t tlen = (size_t)(sp2 - (sp1 + 1));
    const char *target = http_req_origin(sp1 + 1, &tlen);
    if (tlen == 0) return 404; /* an absolute form without a path */
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
    case 505: return "HTTP Version Not Supported";
    case 500: return "Internal Server Error";
    default: return "Bad Request";
    }
}
