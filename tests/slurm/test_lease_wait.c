/* test_lease_wait.c -- the Slurm plugin's wait for a lease (lease_wait.c)
 * without Slurm: how often a waiting task asks whether its job still runs.
 * Each ask is a call to slurmctld, so the asks grow apart: 3 s, doubling,
 * never more than 30 s apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lease_wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void test_check_steps(void **state) {
    (void)state;
    double step = LEASE_WAIT_CHECK_S;
    static const double want[] = {6, 12, 24, 30, 30};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        step = lease_check_step(step);
        assert_true(step == want[i]);
    }
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* still()'s calls: when each came (seconds into the wait); the second
 * says stop. */
typedef struct asks {
    double start, at[2];
    int n;
} asks;

static bool still_once(void *arg) {
    asks *a = arg;
    a->at[a->n++] = mono_s() - a->start;
    return a->n < 2;
}

/* A listening socket with a queue of backlog connections, that never
 * accepts, at sa in the new folder dir (a mkdtemp template): its
 * descriptor. */
static int listen_never_accepting(char *dir, struct sockaddr_un *sa,
                                  int backlog) {
    assert_non_null(mkdtemp(dir));
    *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
    snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/aegis.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)sa, sizeof(*sa)), 0);
    assert_int_equal(listen(lfd, backlog), 0);
    return lfd;
}

static void unlisten(int lfd, const char *dir, const struct sockaddr_un *sa) {
    close(lfd);
    unlink(sa->sun_path);
    rmdir(dir);
}

/* A wait that gets no answer (an aegisd that never accepts: the request
 * lies in the socket's queue) asks 3 s in, then 6 s after: the second
 * step is the first doubled, not 3 s again. Only lower bounds: a loaded
 * machine makes the asks late, never early. */
static void test_wait_backs_off(void **state) {
    (void)state;
    char dir[] = "/tmp/aegis-lease-XXXXXX";
    struct sockaddr_un sa;
    int lfd = listen_never_accepting(dir, &sa, 1);
    asks a = {.start = mono_s()};
    json_t *answer = NULL;
    char err[256] = "";
    lease_wait_end end = lease_wait(sa.sun_path, json_pack("{s:s}", "op",
                                                           "lease"),
                                    still_once, &a, &answer, err, sizeof(err));
    assert_int_equal(end, LEASE_STOPPED);
    assert_null(answer);
    assert_int_equal(a.n, 2);
    assert_true(a.at[0] >= LEASE_WAIT_CHECK_S - 0.01);
    assert_true(a.at[1] - a.at[0] >= 2 * LEASE_WAIT_CHECK_S - 0.01);
    unlisten(lfd, dir, &sa);
}

static bool still_not(void *arg) {
    ++*(int *)arg;
    return false;
}

/* A listener whose queue of connections is full (a stopped aegisd): the
 * wait's connect gives up at still()'s first step and, the job gone, the
 * wait ends. A blocking connect waited there for ever. */
static void test_connect_queue_full(void **state) {
    (void)state;
    char dir[] = "/tmp/aegis-lease-XXXXXX";
    struct sockaddr_un sa;
    int lfd = listen_never_accepting(dir, &sa, 0);
    int held[8], nheld = 0;
    for (; nheld < 8; nheld++) {
        held[nheld] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(held[nheld], (struct sockaddr *)&sa, sizeof(sa)) != 0)
            break;
    }
    assert_true(nheld < 8); /* the queue is full */
    int asked = 0;
    json_t *answer = NULL;
    char err[256] = "";
    lease_wait_end end = lease_wait(sa.sun_path, json_pack("{s:s}", "op",
                                                           "lease"),
                                    still_not, &asked, &answer, err,
                                    sizeof(err));
    assert_int_equal(end, LEASE_STOPPED);
    assert_int_equal(asked, 1);
    assert_non_null(strstr(err, "took no connection"));
    for (int i = 0; i <= nheld && i < 8; i++) close(held[i]);
    unlisten(lfd, dir, &sa);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_steps),
        cmocka_unit_test(test_wait_backs_off),
        cmocka_unit_test(test_connect_queue_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
