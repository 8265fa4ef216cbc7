/* test_accept_cap.c -- accept_cap.c, which /metrics accepts through: how
 * many connections one loop turn accepts. A plain libuv TCP server takes
 * them; the loop is turned by hand, one UV_RUN_NOWAIT at a time, and what
 * still waits to be accepted is read where the kernel shows it: a
 * listening socket's rx_queue in /proc/net/tcp is its accept backlog. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "accept_cap.h"

/* Connections a flood opens: more than two turns' share, fewer than the
 * listen backlog (64), so none is refused by the kernel. */
#define FLOOD 40
#define PER_TURN 16

typedef struct server {
    uv_tcp_t tcp;
    accept_cap cap;
    int accepted;
    bool refuse;        /* take() fails, as when out of memory */
} server;

static void on_closed(uv_handle_t *h) { free(h); }

/* Accepts the connection the server's libuv stream holds, and closes it. */
static bool take(void *owner) {
    server *srv = owner;
    if (srv->refuse) return false;
    uv_tcp_t *c = malloc(sizeof(*c));
    uv_tcp_init(srv->tcp.loop, c);
    assert_int_equal(uv_accept((uv_stream_t *)&srv->tcp, (uv_stream_t *)c), 0);
    uv_close((uv_handle_t *)c, on_closed);
    srv->accepted++;
    return true;
}

static void on_connection(uv_stream_t *s, int status) {
    assert_int_equal(status, 0);
    accept_cap_offer(&((server *)s->data)->cap);
}

/* A TCP port on 127.0.0.1 free a moment ago. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* The accept backlog of the socket listening on 127.0.0.1:port. */
static int backlog_of(int port) {
    FILE *f = fopen("/proc/net/tcp", "r");
    assert_non_null(f);
    char line[512], want[32];
    snprintf(want, sizeof(want), "0100007F:%04X", port);
    int queued = -1;
    while (fgets(line, sizeof(line), f)) {
        char local[64], remote[64];
        unsigned state, tx, rx;
        if (sscanf(line, " %*d: %63s %63s %x %x:%x", local, remote, &state,
                   &tx, &rx) == 5 &&
            !strcmp(local, want) && state == 0x0A /* LISTEN */)
            queued = (int)rx;
    }
    fclose(f);
    return queued;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* A flood of connections is accepted PER_TURN a turn, the rest left in
 * the backlog for the next turns, until none is left; one the owner
 * cannot take is offered again later, not dropped. */
static void test_accepts_per_turn(void **state) {
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    server srv = {0};
    int port = free_port();
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", port, &sa);
    uv_tcp_init(&loop, &srv.tcp);
    srv.tcp.data = &srv;
    assert_int_equal(uv_tcp_bind(&srv.tcp, (struct sockaddr *)&sa, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv.tcp, 64, on_connection), 0);
    accept_cap_init(&srv.cap, &loop, PER_TURN, take, &srv);
    int fds[FLOOD];
    for (int i = 0; i < FLOOD; i++) fds[i] = connect_to(port);
    assert_int_equal(backlog_of(port), FLOOD);
    /* a turn takes PER_TURN; the end of each also takes the one libuv
     * held out of the backlog once the share was taken, which counts
     * toward the next turn's share */
    for (int turn = 1; turn <= 3; turn++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        int taken = turn * PER_TURN + 1 < FLOOD ? turn * PER_TURN + 1 : FLOOD;
        assert_int_equal(srv.accepted, taken);
        assert_int_equal(backlog_of(port), FLOOD - taken);
    }
    assert_false(srv.cap.deferred);
    /* the owner refuses: the connection waits, and is taken once it can */
    srv.refuse = true;
    int late = connect_to(port);
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_true(srv.cap.deferred);
    assert_int_equal(srv.accepted, FLOOD);
    srv.refuse = false;
    uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(srv.accepted, FLOOD + 1);
    assert_false(srv.cap.deferred);
    for (int i = 0; i < FLOOD; i++) close(fds[i]);
    close(late);
    accept_cap_close(&srv.cap, NULL);
    uv_close((uv_handle_t *)&srv.tcp, NULL);
    uv_run(&loop, UV_RUN_DEFAULT); /* until every handle has closed */
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts_per_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
