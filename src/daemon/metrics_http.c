/* metrics_http.c -- the HTTP endpoint of aegisd's metrics: a TCP server on
 * metrics_listen in aegisd's own libuv loop (no thread), answering
 * `GET /metrics` with the exposition of metrics.c, and nothing else.
 *
 * No client can stall or flood aegisd:
 * - the page is rendered at most once per metrics_cache_s, when a client
 *   asks for it, in a timer callback of its own once the loop turn's
 *   requests are read, never once per client; at most METRICS_PAGES_PER_S
 *   pages are written a second, later requests waiting their turn. Every
 *   client is written the same bytes: one buffer counted by reference
 *   (m_page), which a client that does not read holds but never copies,
 *   so such clients cost at most the few pages rendered in a connection's
 *   life;
 * - the request is read into a fixed buffer (HTTP_REQ_MAX) and must be
 *   whole within METRICS_REQ_TIMEOUT_MS; every connection is closed after
 *   METRICS_CONN_TIMEOUT_MS whatever it does;
 * - clients are told apart by address: the waiting request of the
 *   address served least this second goes first, and past
 *   METRICS_MAX_CONNS connections one of the address holding the most is
 *   closed (the one idle longest, else the newest waiting), so clients
 *   that hold connections open, or ask in a loop, cannot lock out a
 *   scraper from another address;
 * - at most METRICS_ACCEPTS_PER_TURN connections are accepted a loop
 *   turn (accept_cap.h): a connect flood is not accepted and closed in one
 *   long run that keeps aegisd's other clients waiting.
 * One request per connection (Connection: close), judged by http_req.c as
 * its bytes come. After its answer a connection is shut down for writing
 * and read until the client hangs up, so that a client still sending (a
 * refused POST body, an oversized request) reads the answer rather than a
 * reset. A client may hang up its side first (`nc -N`, shutdown(SHUT_WR)):
 * a whole request is still answered, a cut one with 400, and the
 * connection closes once the answer is written.
 */
#include "daemon.h"

#include "accept_cap.h"
#include "http_req.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Connections served at once: scrapers open one or two. */
#define METRICS_MAX_CONNS 64
/* The time a client has to send its whole request. */
#define METRICS_REQ_TIMEOUT_MS 2000
/* A connection's whole life, request, answer and hang-up. */
#define METRICS_CONN_TIMEOUT_MS 10000
/* Pages written a second at most: no scraper gets a newer page by asking
 * more often than metrics_cache_s (1 s by default), and past this rate
 * clients that loop only cost aegisd copies of the same bytes into their
 * sockets. The requests beyond it wait (without cost) for the next
 * second. */
#define METRICS_PAGES_PER_S 64
/* Connections accepted in one loop turn at most (see the top). */
#define METRICS_ACCEPTS_PER_TURN 16
/* An answer is written in pieces of this size, so that a client reading
 * it shows progress (m_conn_victim) and one that does not, none. */
#define METRICS_WRITE_CHUNK 65536

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
    size_t sent;                /* its bytes handed to libuv so far */
    uint64_t opened, active;    /* loop times of its accept and of its
                                   latest progress (bytes read, answer
                                   written) */
    uint8_t peer[16];           /* the client's address (IPv4 mapped) */
    char req[HTTP_REQ_MAX + 1]; /* one byte past the limit tells 431 */
    size_t len;
    bool answered;              /* judged: what it sends now is dropped */
    bool waiting;               /* for the page (on_serve) */
    bool hung_up;               /* the client sends no more (read EOF) */
    int open_handles;           /* freed when both have closed */
    struct m_conn *prev, *next;
} m_conn;

typedef struct d_metrics_server {
    uv_tcp_t tcp;
    uv_timer_t serve;           /* serves the page to waiting clients */
    accept_cap accepting;       /* METRICS_ACCEPTS_PER_TURN a turn */
    d_daemon *d;
    m_page *page;               /* the latest rendering; NULL: none yet */
    uint64_t rendered_at;       /* its loop time */
    uint64_t second_at;         /* loop time the current second began */
    int served;                 /* pages served in it */
    struct m_peer_pages {       /* to each address, in it */
        uint8_t peer[16];
        int pages;
    } peers[METRICS_PAGES_PER_S];
    int npeers;
    m_conn *conns;              /* newest first */
    int nconns;
    int open_handles;           /* freed when all three have closed */
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

/* After the whole answer: a client that has hung up already is done
 * with, the others are told the answer has ended. */
static void m_conn_finish(m_conn *c) {
    if (c->hung_up) {
        m_conn_close(c);
        return;
    }
    uv_shutdown_t *sd = malloc(sizeof(*sd));
    if (!sd || uv_shutdown(sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        free(sd);
        m_conn_close(c);
    }
}

static void m_conn_write_next(m_conn *c);

/* A piece of the answer written: the client reads, so it is not idle. */
static void on_written(uv_write_t *req, int status) {
    m_conn *c = req->handle->data;
    if (status < 0) {
        m_page_unref(c->page);
        c->page = NULL;
        m_conn_close(c);
        return;
    }
    c->active = uv_now(c->tcp.loop);
    m_conn_write_next(c);
}

/* Writes the next METRICS_WRITE_CHUNK of c's page; once all is written,
 * lets go of the page and finishes the connection. */
static void m_conn_write_next(m_conn *c) {
    size_t left = c->page->len - c->sent;
    if (left == 0) {
        m_page_unref(c->page);
        c->page = NULL;
        m_conn_finish(c);
        return;
    }
    size_t n = left < METRICS_WRITE_CHUNK ? left : METRICS_WRITE_CHUNK;
    uv_buf_t buf = uv_buf_init(c->page->bytes + c->sent, (unsigned)n);
    c->sent += n;
    if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0) {
        m_page_unref(c->page);
        c->page = NULL;
        m_conn_close(c);
    }
}

/* Writes page (NULL: out of memory) to c, holding a reference until it is
 * written. */
static void m_conn_send(m_conn *c, m_page *page) {
    c->waiting = false;
    if (!page) {
        m_conn_close(c);
        return;
    }
    page->refs++;
    c->page = page;
    c->active = uv_now(c->tcp.loop);
    m_conn_write_next(c);
}

/* Whether the latest rendering is younger than metrics_cache_s. */
static bool m_page_fresh(const d_metrics_server *srv) {
    uint64_t age = uv_now(srv->d->loop) - srv->rendered_at;
    return srv->page && age < (uint64_t)(srv->d->keys.metrics_cache_s * 1000);
}

/* The page, rendered again when older than metrics_cache_s. */
static m_page *m_page_now(d_metrics_server *srv) {
    if (!m_page_fresh(srv)) {
        m_page_unref(srv->page);
        srv->page = m_render(srv->d);
        srv->rendered_at = uv_now(srv->d->loop);
    }
    return srv->page;
}

static bool m_conn_any_waiting(const d_metrics_server *srv) {
    for (const m_conn *c = srv->conns; c; c = c->next)
        if (c->waiting) return true;
    return false;
}

/* Pages served this second to the address peer. */
static int m_peer_pages(const d_metrics_server *srv, const uint8_t *peer) {
    for (int i = 0; i < srv->npeers; i++)
        if (!memcmp(srv->peers[i].peer, peer, sizeof(srv->peers[i].peer)))
            return srv->peers[i].pages;
    return 0;
}

/* One more page served this second to peer: at most METRICS_PAGES_PER_S
 * a second, so there is room for its entry. */
static void m_peer_served(d_metrics_server *srv, const uint8_t *peer) {
    for (int i = 0; i < srv->npeers; i++)
        if (!memcmp(srv->peers[i].peer, peer, sizeof(srv->peers[i].peer))) {
            srv->peers[i].pages++;
            return;
        }
    assert(srv->npeers < METRICS_PAGES_PER_S);
    struct m_peer_pages *e = &srv->peers[srv->npeers++];
    memcpy(e->peer, peer, sizeof(e->peer));
    e->pages = 1;
}

/* The waiting connection to serve next: of the address served least this
 * second, the one waiting longest; NULL when none waits. */
static m_conn *m_conn_next_waiting(d_metrics_server *srv) {
    m_conn *next = NULL;
    int next_pages = 0;
    for (m_conn *c = srv->conns; c; c = c->next) { /* newest first */
        if (!c->waiting) continue;
        int pages = m_peer_pages(srv, c->peer);
        if (!next || pages <= next_pages) next = c, next_pages = pages;
    }
    return next;
}

/* Serves the waiting connections (m_conn_next_waiting), as many as this
 * second's METRICS_PAGES_PER_S allow; the others wait for the next
 * second. */
static void on_serve(uv_timer_t *t) {
    d_metrics_server *srv = t->data;
    uint64_t now = uv_now(srv->d->loop);
    if (now - srv->second_at >= 1000) {
        srv->second_at = now;
        srv->served = srv->npeers = 0;
    }
    m_conn *c;
    while (srv->served < METRICS_PAGES_PER_S &&
           (c = m_conn_next_waiting(srv))) {
        m_peer_served(srv, c->peer);
        m_conn_send(c, m_page_now(srv));
        srv->served++;
    }
    if (m_conn_any_waiting(srv))
        uv_timer_start(&srv->serve, on_serve, srv->second_at + 1000 - now, 0);
}

/* Answers c's request, judged `status`: the page of /metrics, from the
 * serving timer once this loop turn's requests are all read, or the
 * status's own page. The 2 s to send a request are over: the connection
 * has what is left of its life. */
static void m_conn_answer(m_conn *c, int status) {
    d_metrics_server *srv = c->srv;
    c->answered = true;
    uint64_t age = uv_now(c->tcp.loop) - c->opened;
    uv_timer_start(&c->timer, on_conn_timeout,
                   age < METRICS_CONN_TIMEOUT_MS ? METRICS_CONN_TIMEOUT_MS - age
                                                 : 1, 0);
    if (status != 200) {
        m_page *p = m_status_page(status);
        m_conn_send(c, p);
        m_page_unref(p);
        return;
    }
    c->waiting = true;
    if (!uv_is_active((uv_handle_t *)&srv->serve))
        uv_timer_start(&srv->serve, on_serve, 0, 0);
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

/* The client has hung up its side. Once answered, or having sent
 * nothing, the connection is done with; a request cut short is a bad one
 * (400), and one whose answer is on its way (or waits its turn) gets it. */
static void m_conn_hung_up(m_conn *c) {
    c->hung_up = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    if (c->waiting || c->page) return;
    if (c->answered || c->len == 0) {
        m_conn_close(c);
        return;
    }
    m_conn_answer(c, 400);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    m_conn *c = s->data;
    if (n == UV_EOF) {
        m_conn_hung_up(c);
        return;
    }
    if (n < 0) { /* the client reset the connection */
        m_conn_close(c);
        return;
    }
    if (n == 0 || c->answered) return;
    c->active = uv_now(s->loop);
    c->len += (size_t)n;
    int status = http_req_judge(c->req, c->len);
    if (status != 0) m_conn_answer(c, status);
}

/* Connections from the address peer. */
static int m_peer_conns(const d_metrics_server *srv, const uint8_t *peer) {
    int n = 0;
    for (const m_conn *c = srv->conns; c; c = c->next)
        n += !memcmp(c->peer, peer, sizeof(c->peer));
    return n;
}

/* Whether a is a better connection to close than b (NULL): of an address
 * holding more connections; then one not waiting for aegisd's answer
 * (they did their part) before one that waits; then the one idle longest
 * (its latest progress the oldest), or among waiting ones the newest. */
static bool m_conn_rather_closed(const d_metrics_server *srv, const m_conn *a,
                                 const m_conn *b) {
    if (!b) return true;
    int na = m_peer_conns(srv, a->peer), nb = m_peer_conns(srv, b->peer);
    if (na != nb) return na > nb;
    if (a->waiting != b->waiting) return !a->waiting;
    /* ties (one loop turn accepts many): the older, listed later */
    return a->waiting ? a->opened > b->opened : a->active <= b->active;
}

/* Past METRICS_MAX_CONNS, the connection to close for a new one. */
static m_conn *m_conn_victim(const d_metrics_server *srv) {
    m_conn *victim = NULL;
    for (m_conn *c = srv->conns; c; c = c->next)
        if (m_conn_rather_closed(srv, c, victim)) victim = c;
    return victim;
}

/* The client's address as 16 bytes, IPv4 mapped; zeros if unknown. */
static void m_conn_peer(m_conn *c) {
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    memset(c->peer, 0, sizeof(c->peer));
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) != 0) return;
    if (sa.ss_family == AF_INET6) {
        memcpy(c->peer, &((struct sockaddr_in6 *)&sa)->sin6_addr, 16);
        /* one host has a /64 to itself: its addresses are one client */
        if (!IN6_IS_ADDR_V4MAPPED((struct in6_addr *)c->peer))
            memset(c->peer + 8, 0, 8);
    } else if (sa.ss_family == AF_INET) {
        c->peer[10] = c->peer[11] = 0xff;
        memcpy(c->peer + 12, &((struct sockaddr_in *)&sa)->sin_addr, 4);
    }
}

/* Accepts the connection libuv holds; past METRICS_MAX_CONNS, closes one
 * of the address holding the most (m_conn_victim), which may be this
 * one. Returns false when out of memory: the connection is still held. */
static bool m_accept(void *server) {
    d_metrics_server *srv = server;
    uv_loop_t *loop = srv->d->loop;
    m_conn *c = calloc(1, sizeof(*c));
    if (!c) return false;
    c->srv = srv;
    uv_tcp_init(loop, &c->tcp);
    uv_timer_init(loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->open_handles = 2;
    c->opened = c->active = uv_now(loop);
    c->next = srv->conns;
    if (c->next) c->next->prev = c;
    srv->conns = c;
    srv->nconns++;
    if (uv_accept((uv_stream_t *)&srv->tcp, (uv_stream_t *)&c->tcp) != 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        m_conn_close(c);
        return true;
    }
    m_conn_peer(c);
    uv_timer_start(&c->timer, on_conn_timeout, METRICS_REQ_TIMEOUT_MS, 0);
    if (srv->nconns > METRICS_MAX_CONNS) m_conn_close(m_conn_victim(srv));
    return true;
}

static void on_connection(uv_stream_t *server, int status) {
    d_metrics_server *srv = server->data;
    if (status == 0) accept_cap_offer(&srv->accepting);
}

/* ---- the server ---------------------------------------------------------- */

static void m_server_handle_closed(d_metrics_server *srv) {
    if (--srv->open_handles > 0) return;
    m_page_unref(srv->page);
    free(srv);
}

static void on_server_handle_closed(uv_handle_t *h) {
    m_server_handle_closed(h->data);
}

static void on_accepting_closed(uv_handle_t *h) {
    accept_cap *a = h->data;
    m_server_handle_closed(a->owner);
}

static void m_server_close(d_metrics_server *srv) {
    uv_close((uv_handle_t *)&srv->tcp, on_server_handle_closed);
    uv_close((uv_handle_t *)&srv->serve, on_server_handle_closed);
    accept_cap_close(&srv->accepting, on_accepting_closed);
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
    uv_timer_init(d->loop, &srv->serve);
    srv->tcp.data = srv->serve.data = srv;
    accept_cap_init(&srv->accepting, d->loop, METRICS_ACCEPTS_PER_TURN,
                    m_accept, srv);
    srv->open_handles = 3;
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
