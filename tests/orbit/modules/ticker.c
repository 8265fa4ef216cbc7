/* ticker.c -- test module: arms, on its first run, a timer whose signal
 * (SIGUSR1, every millisecond) has a handler. Between batches its
 * worker must hold that signal pending, never handle it: test_workers
 * reads the worker's pending signals while it waits. */
#define _POSIX_C_SOURCE 200809L /* sigaction, timer_create */
#include <signal.h>
#include <time.h>

#include "dipp_module.h"

static int armed;

static void on_tick(int sig) {
    (void)sig;
}

static int arm(void) {
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
    struct itimerspec every_ms = {{0, 1000000}, {0, 1000000}};
    struct sigaction on = {.sa_handler = on_tick, .sa_flags = SA_RESTART};
    timer_t t;
    if (sigaction(SIGUSR1, &on, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &t) != 0 ||
        timer_settime(t, 0, &every_ms, NULL) != 0)
        return -1;
    armed = 1;
    return 0;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    return !armed && arm() ? DIPP_ERR_NOMEM : DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("ticker", "1.0.0", run);
