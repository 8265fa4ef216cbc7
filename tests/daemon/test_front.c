/* test_front.c -- the front thread (front.h) on a real listening socket:
 * it answers `gpus` from the published copy, and hands every other
 * connection to the loop with its bytes unread: a request of another
 * kind, a `gpus` request while the copy is stale, the rest of a
 * connection after its `gpus` lines, a line not complete in time. A
 * client that leaves before its request is never handed over, and one
 * answered is served again but not spun on. The wake
 * callback writes to a pipe, which the test waits on as aegisd's loop
 * would on its async handle. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "front.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define ANSWER "{\"ok\":true,\"gpus\":[]}\n"
#define GPUS "{\"op\":\"gpus\"}\n"
#define LS "{\"op\":\"ls\"}\n"

typedef struct fixture {
    char dir[64];
    struct sockaddr_un addr;
    int listen_fd;
    int wake[2];
    d_front *front;
} fixture;

static void on_wake(void *arg) {
    fixture *f = arg;
    char byte = 1;
    (void)!write(f->wake[1], &byte, 1);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/aegis-front-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->addr.sun_family = AF_UNIX;
    snprintf(f->addr.sun_path, sizeof(f->addr.sun_path), "%s/s", f->dir);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&f->addr,
                          sizeof(f->addr)), 0);
    assert_int_equal(listen(f->listen_fd, 16), 0);
    assert_int_equal(pipe(f->wake), 0);
    char err[256];
    f->front = front_start(f->listen_fd, on_wake, f, err, sizeof(err));
    assert_non_null(f->front);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    front_stop(f->front);
    close(f->listen_fd);
    close(f->wake[0]);
    close(f->wake[1]);
    unlink(f->addr.sun_path);
    rmdir(f->dir);
    free(f);
    return 0;
}

static int connect_to(const fixture *f) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(fd, (const struct sockaddr *)&f->addr,
                             sizeof(f->addr)), 0);
    return fd;
}

static void send_text(int fd, const char *text) {
    assert_int_equal(send(fd, text, strlen(text), MSG_NOSIGNAL),
                     (ssize_t)strlen(text));
}

/* Reads exactly len bytes (a test's ctest timeout bounds the wait). */
static void read_exactly(int fd, char *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    buf[got] = '\0';
}

/* Asks `gpus` on connection c and checks the front's answer. */
static void ask_gpus(int c) {
    char buf[64];
    send_text(c, GPUS);
    read_exactly(c, buf, strlen(ANSWER));
    assert_string_equal(buf, ANSWER);
}

/* Waits for the front's wake, then takes the one connection handed over. */
static int take_one(fixture *f) {
    int fd, n;
    for (;;) {
        char byte;
        assert_int_equal(read(f->wake[0], &byte, 1), 1);
        n = front_take(f->front, &fd, 1);
        if (n == 1) return fd;
    }
}

/* Nothing handed over within the front's own wait and then some. */
static void assert_nothing_handed(fixture *f) {
    struct pollfd p = {.fd = f->wake[0], .events = POLLIN};
    assert_int_equal(poll(&p, 1, 3 * FRONT_WAIT_MS), 0);
}

static void test_gpus_answered(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    ask_gpus(c);
    close(c);
    assert_nothing_handed(f);
}

/* A client sends request: the loop gets its connection, the request in it
 * unread. */
static void assert_handed_unread(fixture *f, const char *request) {
    int c = connect_to(f);
    send_text(c, request);
    int s = take_one(f);
    char buf[64];
    read_exactly(s, buf, strlen(request));
    assert_string_equal(buf, request);
    close(s);
    close(c);
}

static void test_other_handed_unread(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    assert_handed_unread(f, LS);
}

static void test_stale_goes_to_loop(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    front_stale(f->front);
    assert_handed_unread(f, GPUS);
}

static void test_rest_after_gpus_handed(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    send_text(c, GPUS LS);
    char buf[64];
    read_exactly(c, buf, strlen(ANSWER));
    assert_string_equal(buf, ANSWER);
    int s = take_one(f);
    read_exactly(s, buf, strlen(LS));
    assert_string_equal(buf, LS);
    close(s);
    close(c);
}

/* A request and its newline written apart, as clients do: answered. */
static void test_line_in_two_writes(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    send_text(c, "{\"op\":\"gpus\"}");
    send_text(c, "\n");
    char buf[64];
    read_exactly(c, buf, strlen(ANSWER));
    assert_string_equal(buf, ANSWER);
    close(c);
    assert_nothing_handed(f);
}

static void test_partial_line_handed(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    send_text(c, "{\"op\":");
    int s = take_one(f);
    send_text(c, "\"gpus\"}\n");
    char buf[64];
    read_exactly(s, buf, strlen(GPUS));
    assert_string_equal(buf, GPUS);
    close(s);
    close(c);
}

/* The loop takes none (held): FRONT_QUEUE connections wait for it, the
 * next client is told aegisd is busy, and `gpus` is still answered. */
static void test_full_queue_told_busy(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int waiting[FRONT_QUEUE];
    for (int i = 0; i < FRONT_QUEUE; i++) {
        waiting[i] = connect_to(f);
        send_text(waiting[i], LS);
    }
    int c = connect_to(f);
    send_text(c, LS);
    char buf[256];
    ssize_t n = read(c, buf, sizeof(buf) - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "\"ok\":false,\"error\":\"server busy"));
    close(c);
    int g = connect_to(f);
    ask_gpus(g);
    close(g);
    for (int i = 0; i < FRONT_QUEUE; i++) close(waiting[i]);
}

/* A client that asks again on its connection after each answer is
 * answered each time (an answered connection is looked at again later,
 * not when it becomes readable: front.c's look()). */
static void test_gpus_asked_again(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    for (int i = 0; i < 3; i++) ask_gpus(c);
    close(c);
    assert_nothing_handed(f);
}

/* A client that keeps asking on its connection is answered until its time
 * in the front ends, then handed to the loop with its request unread: it
 * stayed in the front for as long as it asked within each recheck. */
static void test_asking_client_handed_in_time(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    char buf[64];
    /* each ask takes at least FRONT_ANSWERED_MS: far more than the front's
     * time had passed when the loop ends */
    for (int asked = 0; asked < 20 * FRONT_WAIT_MS; asked++) {
        send_text(c, GPUS);
        struct pollfd p[2] = {{.fd = c, .events = POLLIN},
                              {.fd = f->wake[0], .events = POLLIN}};
        assert_true(poll(p, 2, -1) > 0);
        /* an answer first: the front may have answered this ask and then,
         * its time up while this client was slow to ask again, handed the
         * connection over with nothing in it; the next ask is the loop's */
        if (p[0].revents) {
            read_exactly(c, buf, strlen(ANSWER));
            assert_string_equal(buf, ANSWER);
            continue;
        }
        int s = take_one(f);
        read_exactly(s, buf, strlen(GPUS));
        assert_string_equal(buf, GPUS);
        close(s);
        close(c);
        return;
    }
    fail_msg("still answered by the front after %d asks", 20 * FRONT_WAIT_MS);
}

static uint64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A client silent after its answer waits in the front until its time
 * there ends, then goes to the loop; the front sleeps meanwhile. Looked at
 * again and again instead, it took the front's whole CPU budget (a fifth
 * of a CPU) or, without the real-time class, a CPU's share. */
static void test_silent_after_answer_not_spun(void **state) {
    fixture *f = *state;
    front_publish(f->front, ANSWER, strlen(ANSWER));
    int c = connect_to(f);
    ask_gpus(c);
    uint64_t cpu_before = process_cpu_ns();
    int s = take_one(f); /* FRONT_WAIT_MS after the accept */
    uint64_t cpu_ms = (process_cpu_ns() - cpu_before) / 1000000u;
    assert_true(cpu_ms < FRONT_WAIT_MS / 10);
    close(s);
    close(c);
}

static void test_leaver_not_handed(void **state) {
    fixture *f = *state;
    close(connect_to(f));
    assert_nothing_handed(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gpus_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_handed_unread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_goes_to_loop, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_rest_after_gpus_handed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_line_in_two_writes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_partial_line_handed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_gpus_asked_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_asking_client_handed_in_time,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_after_answer_not_spun,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaver_not_handed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_queue_told_busy, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
