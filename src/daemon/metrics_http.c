/* metrics_http.c -- the HTTP endpoint of aegisd's metrics: a TCP server on
 * metrics_listen in aegisd's own libuv loop (no thread), answering
 * `GET /metrics` with the exposition of metrics.c, and nothing else.
 *
 * One request per connection (Connection: close), judged by http_req.c
 * as its bytes come. No client can hold aegisd: the request is read into
 * a fixed buffer (HTTP_REQ_MAX), the answer is written without waiting for
 * the client to read it, every connection is closed after
 * METRICS_CONN_TIMEOUT_MS whatever it does, and past METRICS_MAX_CONNS
 * connections new ones are closed at once. After its answer a connection
 * is shut down for writing and read until the client hangs up, so that a
 * client still sending (a refused POST body, an oversized request) reads
 * the answer rather than a reset.
 */
#include "daemon.h"

#include "http_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connections served at once: scrapers open one or two. */
#define METRICS_MAX_CONNS 64
/* A connection's whole life, request, answer and hang-up. */
#define METRICS_CONN_TIMEOUT_MS 10000

typedef struct m_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    struct d_metrics_server *srv;
    char req[HTTP_REQ_MAX + 1]; /* one byte past the limit tells 431 */
    size_t len;
    bool answered;
    int open_handles;           /* freed when both have closed */
    struct m_conn *prev, *next;
} m_conn;

typedef struct d_metrics_server {
    uv_tcp_t tcp;
    d_daemon *d;
    m_conn *conns;
    int nconns;
} d_metrics_server;

typedef struct m_write {
    uv_write_t req;
    char *text;
} m_write;

static void on_conn_handle_closed(uv_handle_t *h) {
    m_conn *c = h->data;
    if (--c->open_handles == 0) free(c);
}

static void m_conn_close(m_conn *c) {
    if (uv_is_closing((uv_handle_t *)&c->tcp)) return;
    d_metrics_server *srv = c->srv;
    if (c->prev) c->prev->next = c->next;
    else srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    srv->nconns--;
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_conn_timeout(uv_timer_t *t) {
    m_conn_close(t->data);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
    free(req); /* the client's hang-up (read EOF) closes the connection */
}

static void on_written(uv_write_t *req, int status) {
    m_write *w = (m_write *)req;
    m_conn *c = req->handle->data;
    free(w->text);
    free(w);
    if (status < 0) {
        m_conn_close(c);
        return;
    }
    uv_shutdown_t *sd = malloc(sizeof(*sd));
    if (!sd || uv_shutdown(sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(sd);
        m_conn_close(c);
    }
}

/* The whole answer to a request judged `status`: headers and body (the
 * exposition, or a line saying what the status means). */
static char *m_answer(d_daemon *d, int status, size_t *len) {
    mtext metrics = {0};
    if (status == 200) d_metrics_render(d, &metrics);
    if (metrics.failed) status = 500; /* out of memory */
    char line[64];
    snprintf(line, sizeof(line), "%d %s\n", status, http_req_reason(status));
    const char *body = status == 200 ? (metrics.buf ? metrics.buf : "") : line;
    size_t body_len = status == 200 ? metrics.len : strlen(line);
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Content-Length: %zu\r\n"
                     "%s"
                     "Connection: close\r\n\r\n",
                     status, http_req_reason(status),
                     status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
                                   : "text/plain; charset=utf-8",
                     body_len, status == 405 ? "Allow: GET\r\n" : "");
    char *text = malloc((size_t)n + body_len);
    if (text) {
        memcpy(text, head, (size_t)n);
        memcpy(text + n, body, body_len);
        *len = (size_t)n + body_len;
    }
    mtext_free(&metrics);
    return text;
}

static void m_conn_answer(m_conn *c, int status) {
    c->answered = true;
    size_t len = 0;
    m_write *w = malloc(sizeof(*w));
    char *text = w ? m_answer(c->srv->d, status, &len) : NULL;
    if (!text) {
        free(w);
        m_conn_close(c);
        return;
    }
    w->text = text;
    uv_buf_t buf = uv_buf_init(text, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
        free(text);
        free(w);
        m_conn_close(c);
    }
}

/* The request goes into its buffer; after the answer, what the client
 * still sends is read into this one and dropped. */
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
    static char dropped[65536];
    m_conn *c = h->data;
    if (c->answered || c->len >= sizeof(c->req))
        *buf = uv_buf_init(dropped, sizeof(dropped));
    else
        *buf = uv_buf_init(c->req + c->len,
                           (unsigned)(sizeof(c->req) - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    m_conn *c = s->data;
    if (n < 0) { /* EOF, or the client reset the connection */
        m_conn_close(c);
        return;
    }
    if (n == 0 || c->answered) return;
    c->len += (size_t)n;
    int status = http_req_judge(c->req, c->len);
    if (status != 0) m_conn_answer(c, status);
}

static void on_connection(uv_stream_t *server, int status) {
    d_metrics_server *srv = server->data;
    if (status < 0) return;
    m_conn *c = calloc(1, sizeof(*c));
    if (!c) return; /* the connection waits in the backlog */
    c->srv = srv;
    uv_tcp_init(server->loop, &c->tcp);
    uv_timer_init(server->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    c->next = srv->conns;
    if (c->next) c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        srv->nconns > METRICS_MAX_CONNS ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        m_conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_conn_timeout, METRICS_CONN_TIMEOUT_MS, 0);
}

static void on_server_closed(uv_handle_t *h) {
    free(h->data);
}

int d_metrics_open(d_daemon *d) {
    if (!d->keys.metrics_listen[0]) return 0;
    struct sockaddr_storage sa;
    char err[256];
    if (config_listen_addr(d->keys.metrics_listen, &sa, err, sizeof(err)) != 0) {
        d_log("%s", err);
        return -1;
    }
    d_metrics_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        d_log("metrics_listen %s: out of memory", d->keys.metrics_listen);
        return -1;
    }
    srv->d = d;
    uv_tcp_init(d->loop, &srv->tcp);
    srv->tcp.data = srv;
    int rc = uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&sa, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&srv->tcp, 64, on_connection);
    if (rc != 0) {
        d_log("metrics_listen %s: %s: not serving /metrics",
              d->keys.metrics_listen, uv_strerror(rc));
        uv_close((uv_handle_t *)&srv->tcp, on_server_closed);
        return -1;
    }
    d->metrics = srv;
    d_log("serving metrics on http://%s/metrics", d->keys.metrics_listen);
    return 0;
}

void d_metrics_close(d_daemon *d) {
    d_metrics_server *srv = d->metrics;
    if (!srv) return;
    while (srv->conns) m_conn_close(srv->conns);
    uv_close((uv_handle_t *)&srv->tcp, on_server_closed);
    d->metrics = NULL;
}
