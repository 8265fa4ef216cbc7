/* ticker.c -- test module: arms a timer on its first run whose signal
 * handler counts ticks every millisecond, and fails (701) if more than two
 * were handled between the end of its last run and the start of this one.
 * Its worker must be stopped between calls, so that no code of the module
 * runs between batches. Two are allowed: one may come after the run
 * returned but before its worker was stopped, and one is held and handled
 * as the next call starts. */
#define _POSIX_C_SOURCE 200809L /* sigaction, timer_create */
#include <signal.h>
#include <time.h>

#include "dipp_module.h"

static volatile sig_atomic_t ticks;
static sig_atomic_t ticks_at_end;
static int armed;

static void on_tick(int sig) {
    (void)sig;
    ticks++;
}

static int arm(void) {
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
    struct itimerspec every_ms = {{0, 1000000}, {0, 1000000}};
    struct sigaction on = {.sa_handler = on_tick, .sa_flags = SA_RESTART};
    timer_t t;
    if (sigaction(SIGUSR1, &on, NULL) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &t) != 0 || timer_settime(t, 0, &every_ms, NULL))
        return -1;
    armed = 1;
    return 0;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    if (!armed && arm())
        return DIPP_ERR_NOMEM;
    int between = ticks - ticks_at_end;
    ticks_at_end = ticks;
    return between > 2 ? 1 : DIPP_OK;
}

DIPP_MODULE_NO_PARAMS("ticker", "1.0.0", run);
