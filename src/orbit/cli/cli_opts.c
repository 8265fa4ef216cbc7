/* cli_opts.c -- options the link commands share (cli_opts.h). */
#include "cli_opts.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

volatile int cli_stop;

/* A bound as the user would write it: a whole number in full (a version
 * limit of 4000000000, not %g's 4e+09), a fraction as %g has it (0.001). */
static void bound_text(double v, char *out, size_t cap) {
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v) /* in range before the cast */
        snprintf(out, cap, "%lld", (long long)v);
    else
        snprintf(out, cap, "%g", v);
}

int cli_number(const char *cmd, const char *opt, const char *s, double lo,
               double hi, double *v) {
    char *end, from[32], to[32];
    double x = strtod(s, &end);
    if (!*s || *end || !(x >= lo && x <= hi)) { /* NaN fails both */
        bound_text(lo, from, sizeof from);
        bound_text(hi, to, sizeof to);
        fprintf(stderr, "dipp %s: %s %s: not a number from %s to %s\n", cmd, opt, s, from,
                to);
        return -1;
    }
    *v = x;
    return 0;
}

int cli_whole(const char *cmd, const char *opt, const char *s, double lo,
              double hi, double *v) {
    if (cli_number(cmd, opt, s, lo, hi, v))
        return -1;
    if (*v == (double)(uint64_t)*v)
        return 0;
    fprintf(stderr, "dipp %s: %s %s: not a whole number\n", cmd, opt, s);
    return -1;
}

void cli_hub(unsigned port, char *sub, char *pub, int cap) {
    snprintf(sub, (size_t)cap, "tcp://127.0.0.1:%u", port);
    snprintf(pub, (size_t)cap, "tcp://127.0.0.1:%u", port + 1000);
}

static void on_signal(int sig) {
    (void)sig;
    cli_stop = 1;
}

void cli_on_stop(void) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
}
