/* http_req.h -- judging an HTTP/1.x request as aegisd's metrics endpoint
 * reads it: only `GET /metrics` is served. The request is judged from its
 * bytes so far, so a junk or oversized one is refused as soon as it shows,
 * without waiting for the rest; no header is interpreted (the answer is
 * the same whatever they say), and a body is never read.
 */
#ifndef AEGIS_HTTP_REQ_H
#define AEGIS_HTTP_REQ_H

#include <stddef.h>

/* Bytes a request line and its headers may take: a scraper sends a few
 * hundred; past this the request is refused with 431. */
#define HTTP_REQ_MAX 8192

/* The status to answer once the request's header block has ended (200,
 * 404, 405), or as soon as it is known to be bad (400, 431, 505 for an
 * HTTP version other than 1.x); 0 while more bytes are needed to tell. */
int http_req_judge(const char *buf, size_t len);

/* The reason phrase of a status http_req_judge() returns, or of 500. */
const char *http_req_reason(int status);

#endif
