/* jobargs.c -- the options, first line, out-of-memory message and stop
 * signals aegis-fakegpu and aegis-gpuburn share (jobargs.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobargs.h"

volatile sig_atomic_t job_stop;

int job_number(const char *prog, const char *opt, const char *val,
               double lo, double hi, double *out) {
    char *end = NULL;
    if (!val) {
        fprintf(stderr, "%s: %s needs a value\n", prog, opt);
        return -1;
    }
    errno = 0;
    *out = strtod(val, &end);
    if (errno || end == val || *end || !(*out >= lo && *out <= hi)) {
        fprintf(stderr, "%s: %s %s: want a number in %.10g..%.10g\n", prog, opt,
                val, lo, hi);
        return -1;
    }
    return 0;
}

/* A file option's value into *out. Returns 0, or -1 after saying on
 * stderr that `prog`'s option wants one. */
static int job_file(const char *prog, const char *opt, const char *val,
                    const char **out) {
    if (!val) {
        fprintf(stderr, "%s: %s needs a file\n", prog, opt);
        return -1;
    }
    *out = val;
    return 0;
}

int job_parse_args(const char *prog, int argc, char **argv, long max_mib,
                   job_args *args) {
    double mib = -1, secs = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        else if (!strcmp(a, "--oom-over"))
            args->oom_over = 1;
        else if (!strcmp(a, "--mib"))
            rc = job_number(prog, a, v, 1, (double)max_mib, &mib), i++;
        else if (!strcmp(a, "--seconds"))
            rc = job_number(prog, a, v, 0, 1e9, &secs), i++;
        else if (!strcmp(a, "--smact"))
            rc = job_number(prog, a, v, 0, 1, &args->smact), i++;
        else if (!strcmp(a, "--until"))
            rc = job_file(prog, a, v, &args->until), i++;
        else if (!strcmp(a, "--linger"))
            rc = job_file(prog, a, v, &args->linger), i++;
        else {
            fprintf(stderr, "%s: unknown option %s\n", prog, a);
            return -1;
        }
        if (rc < 0)
            return -1;
    }
    if (mib < 0 || secs < 0) {
        fprintf(stderr, "%s: --mib and --seconds are required\n", prog);
        return -1;
    }
    args->mib = (long)mib;
    args->seconds = secs;
    return 0;
}

/* The value of environment variable `name`, or "-". */
static const char *job_env(const char *name) {
    const char *v = getenv(name);
    return v ? v : "-";
}

void job_print_env(const char *prog) {
    printf("%s: devices=%s mps_pipe=%s threads=%s pinned=%s\n", prog,
           job_env("CUDA_VISIBLE_DEVICES"), job_env("CUDA_MPS_PIPE_DIRECTORY"),
           job_env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
           job_env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    fflush(stdout);
}

/* Writes a size as PyTorch's memory summaries do ("1.50 GiB"). */
static void job_size(char *buf, size_t len, double mib) {
    if (mib <= 0)
        snprintf(buf, len, "0 bytes");
    else if (mib >= 1024.0)
        snprintf(buf, len, "%.2f GiB", mib / 1024.0);
    else
        snprintf(buf, len, "%.2f MiB", mib);
}

void job_print_oom(int ordinal, double want_mib, double used_mib,
                   double cap_mib, double mine_mib) {
    char req[32], total[32], alloc[32], freem[32], mine[32];
    double avail = cap_mib - used_mib;
    job_size(req, sizeof req, want_mib);
    job_size(total, sizeof total, cap_mib);
    job_size(alloc, sizeof alloc, used_mib);
    job_size(freem, sizeof freem, avail > 0 ? avail : 0);
    job_size(mine, sizeof mine, mine_mib);
    fprintf(stderr,
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 42, in <module>\n"
            "    loss = model(batch).loss\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s "
            "(GPU %d; %s total capacity; %s already allocated; %s free; %s "
            "reserved in total by PyTorch)\n", req, ordinal, total, alloc,
            freem, mine);
}

static void job_on_signal(int sig) {
    job_stop = sig;
}

void job_catch_stop(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = job_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

double job_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleeping is the point here: it stands for the work a job does between
 * its GPU calls. */
void job_sleep_until(double until) {
    for (double left; !job_stop && (left = until - job_now()) > 0;) {
        struct timespec ts = {(time_t)left,
                              (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL); /* EINTR: a signal, checked by the loop */
    }
}

int job_released(const job_args *args) {
    return !args->until || access(args->until, F_OK) == 0;
}

void job_linger(const job_args *args) {
    if (!job_stop || !args->linger) return;
    const struct timespec step = {0, 100 * 1000 * 1000};
    while (access(args->linger, F_OK) != 0) nanosleep(&step, NULL);
}
