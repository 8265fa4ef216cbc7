/* metrics_http.c -- the HTTP endpoint of aegisd's metrics: a TCP server on
 * metrics_listen in aegisd's own libuv loop (no thread), answering
 * `GET /metrics` with the exposition of metrics.c, and nothing else.
 *
 * No client can stall or flood aegisd:
 * - the page is rendered at most once per metrics_cache_s, for whoever
 *   asked in that time, in a timer callback of its own once the loop
 *   turn's requests are read, never once per client. Every client is
 *   written the same bytes: one buffer counted by reference (m_page),
 *   which a client that does not read holds but never copies, so such
 *   clients cost at most the few pages rendered in a connection's life;
 * - the request is read into a fixed buffer (HTTP_REQ_MAX) and must be
 *   whole within METRICS_REQ_TIMEOUT_MS; every connection is closed after
 *   METRICS_CONN_TIMEOUT_MS whatever it does;
 * - past METRICS_MAX_CONNS connections a new one takes the slot of the one
 *   idle longest, so clients that hold connections open cannot lock the
 *   scrapers out.
 * One request per connection (Connection: close), judged by http_req.c as
 * its bytes come. After its answer a connection is shut down for writing
 * and read until the client hangs up, so that a client still sending (a
 * refused POST body, an oversized request) reads the answer rather than a
 * reset.
 */
#include "daemon.h"

#include "http_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connections served at once: scrapers open one or two. */
#define METRICS_MAX_CONNS 64
/* The time a client has to send its whole request. */
#define METRICS_REQ_TIMEOUT_MS 2000
/* A connection's whole life, request, answer and hang-up. */
#define METRICS_CONN_TIMEOUT_MS 10000

/* One answer's bytes, headers and body, shared by every connection that
 * writes it; freed with its last reference. */
typedef struct m_page {
    size_t refs, len;
    char bytes[];
} m_page;

typedef struct m_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t write;
    struct d_metrics_server *srv;
    m_page *page;               /* the answer being written (a reference) */
    uint64_t opened, active;    /* loop times of its accept and of its
                                   latest progress (bytes read, answer
                                   written) */
    char req[HTTP_REQ_MAX + 1]; /* one byte past the limit tells 431 */
    size_t len;
    bool answered;              /* judged: what it sends now is dropped */
    bool waiting;               /* for the next rendering of the page */
    int open_handles;           /* freed when both have closed */
    struct m_conn *prev, *next;
} m_conn;

typedef struct d_metrics_server {
    uv_tcp_t tcp;
    uv_timer_t render;          /* renders the page for waiting clients */
    d_daemon *d;
    m_page *page;               /* the latest rendering; NULL: none yet */
    uint64_t rendered_at;       /* its loop time */
    m_conn *conns;              /* newest first */
    int nconns;
    int open_handles;           /* freed when both have closed */
} d_metrics_server;

/* ---- pages --------------------------------------------------------------- */

static void m_page_unref(m_page *p) {
    if (p && --p->refs == 0) free(p);
}

/* The answer `status` with its body, as one new page; NULL when out of
 * memory. */
static m_page *m_page_of(int status, const char *body, size_t body_len) {
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
    m_page *p = malloc(sizeof(*p) + (size_t)n + body_len);
    if (!p) return NULL;
    p->refs = 1;
    p->len = (size_t)n + body_len;
    memcpy(p->bytes, head, (size_t)n);
    memcpy(p->bytes + n, body, body_len);
    return p;
}

/* An error's page: its status line as the body. */
static m_page *m_status_page(int status) {
    char line[64];
    snprintf(line, sizeof(line), "%d %s\n", status, http_req_reason(status));
    return m_page_of(status, line, strlen(line));
}

/* /metrics as d is now; a 500 page when out of memory. */
static m_page *m_render(d_daemon *d) {
    mtext t = {0};
    d_metrics_render(d, &t);
    m_page *p = t.failed ? m_status_page(500)
                         : m_page_of(200, t.buf ? t.buf : "", t.len);
    mtext_free(&t);
    return p;
}

/* ---- connections --------------------------------------------------------- */

static void on_conn_handle_closed(uv_handle_t *h) {
    m_conn *c = h->data;
    if (--c->open_handles == 0) free(c);
}

/* Closes c; a write in progress is cancelled and its callback, run before
 * the handles close, lets go of the page. */
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
    m_conn *c = req->handle->data;
    m_page_unref(c->page);
    c->page = NULL;
    if (status < 0) {
        m_conn_close(c);
        return;
    }
    c->active = uv_now(c->tcp.loop);
    uv_shutdown_t *sd = malloc(sizeof(*sd));
    if (!sd || uv_shutdown(sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(sd);
        m_conn_close(c);
    }
}

/* Writes page (NULL: out of memory) to c, holding a reference until it is
 * written, for what is left of the connection's life. */
static void m_conn_send(m_conn *c, m_page *page) {
    c->waiting = false;
    if (!page) {
        m_conn_close(c);
        return;
    }
    uint64_t age = uv_now(c->tcp.loop) - c->opened;
    uv_timer_start(&c->timer, on_conn_timeout,
                   age < METRICS_CONN_TIMEOUT_MS ? METRICS_CONN_TIMEOUT_MS - age
                                                 : 1, 0);
    page->refs++;
    c->page = page;
    uv_buf_t buf = uv_buf_init(page->bytes, (unsigned)page->len);
    if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
        m_page_unref(page);
        c->page = NULL;
        m_conn_close(c);
    }
}

/* Whether the latest rendering is younger than metrics_cache_s. */
static bool m_page_fresh(const d_metrics_server *srv) {
    uint64_t age = uv_now(srv->d->loop) - srv->rendered_at;
    return srv->page && age < (uint64_t)(srv->d->keys.metrics_cache_s * 1000);
}

/* Renders the page for the connections waiting for it. */
static void on_render(uv_timer_t *t) {
    d_metrics_server *srv = t->data;
    m_page_unref(srv->page);
    srv->page = m_render(srv->d);
    srv->rendered_at = uv_now(srv->d->loop);
    for (m_conn *c = srv->conns, *next; c; c = next) {
        next = c->next; /* sending may close c */
        if (c->waiting) m_conn_send(c, srv->page);
    }
}

/* Answers c's request, judged `status`: the latest rendering of /metrics
 * while fresh, else the next, rendered once this loop turn's requests
 * are all read; or the status's own page. */
static void m_conn_answer(m_conn *c, int status) {
    d_metrics_server *srv = c->srv;
    c->answered = true;
    if (status != 200) {
        m_page *p = m_status_page(status);
        m_conn_send(c, p);
        m_page_unref(p);
    } else if (m_page_fresh(srv)) {
        m_conn_send(c, srv->page);
    } else {
        c->waiting = true;
        if (!uv_is_active((uv_handle_t *)&srv->render))
            uv_timer_start(&srv->render, on_render, 0, 0);
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
    c->active = uv_now(s->loop);
    c->len += (size_t)n;
    int status = http_req_judge(c->req, c->len);
    if (status != 0) m_conn_answer(c, status);
}

/* The connection idle longest: its latest progress the oldest. */
static m_conn *m_conn_idlest(d_metrics_server *srv) {
    m_conn *idlest = NULL;
    for (m_conn *c = srv->conns; c; c = c->next) /* newest first */
        if (!idlest || c->active <= idlest->active) idlest = c;
    return idlest;
}

static void on_connection(uv_stream_t *server, int status) {
    d_metrics_server *srv = server->data;
    if (status < 0) return;
    if (srv->nconns >= METRICS_MAX_CONNS) m_conn_close(m_conn_idlest(srv));
    m_conn *c = calloc(1, sizeof(*c));
    if (!c) return; /* the connection waits in the backlog */
    c->srv = srv;
    uv_tcp_init(server->loop, &c->tcp);
    uv_timer_init(server->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    c->opened = c->active = uv_now(server->loop);
    c->next = srv->conns;
    if (c->next) c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        m_conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_conn_timeout, METRICS_REQ_TIMEOUT_MS, 0);
}

/* ---- the server ---------------------------------------------------------- */

static void on_server_handle_closed(uv_handle_t *h) {
    d_metrics_server *srv = h->data;
    if (--srv->open_handles > 0) return;
    m_page_unref(srv->page);
    free(srv);
}

static void m_server_close(d_metrics_server *srv) {
    uv_close((uv_handle_t *)&srv->tcp, on_server_handle_closed);
    uv_close((uv_handle_t *)&srv->render, on_server_handle_closed);
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
    uv_timer_init(d->loop, &srv->render);
    srv->tcp.data = srv->render.data = srv;
    srv->open_handles = 2;
    int rc = uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&sa, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&srv->tcp, 64, on_connection);
    if (rc != 0) {
        d_log("metrics_listen %s: %s: not serving /metrics",
              d->keys.metrics_listen, uv_strerror(rc));
        m_server_close(srv);
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
    m_server_close(srv);
    d->metrics = NULL;
}
