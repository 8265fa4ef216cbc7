/* jobargs.h -- what the two stand-in training jobs share: aegis-fakegpu
 * (on the test GPUs) and aegis-gpuburn (on a real GPU) take the same
 * options, print the same first line and fail the way PyTorch does, so a
 * test or an example switches between them by the program name alone.
 */
#ifndef AEGIS_JOBARGS_H
#define AEGIS_JOBARGS_H

#include <signal.h>

typedef struct job_args {
    long mib;           /* --mib: MiB to take on each device */
    double seconds;     /* --seconds: how long to run */
    double smact;       /* --smact: 0..1, default 0.5 */
    int oom_over;       /* --oom-over: ask for mib more halfway through
                         * (and, with --until, once its file exists) */
    const char *until;  /* --until: past --seconds, run until it exists */
    const char *linger; /* --linger: once stopped, hold on until it exists */
} job_args;

/* Parses a number option's value into *out within [lo, hi]. Returns 0, or
 * -1 after saying on stderr what `prog` wanted. */
int job_number(const char *prog, const char *opt, const char *val,
               double lo, double hi, double *out);

/* Fills args from argv (--mib and --seconds required, --mib at most
 * max_mib). Returns 0, 1 for --help, or -1 after saying what is wrong. */
int job_parse_args(const char *prog, int argc, char **argv, long max_mib,
                   job_args *args);

/* Prints the first stdout line both jobs print, what CUDA was given:
 *   PROG: devices=... mps_pipe=DIR|- threads=PCT|- pinned=...|- */
void job_print_env(const char *prog);

/* Prints the error PyTorch prints when an allocation of want_mib fails on
 * CUDA device `ordinal`: cap_mib total, used_mib in use, mine_mib the
 * job's own. */
void job_print_oom(int ordinal, double want_mib, double used_mib,
                   double cap_mib, double mine_mib);

/* The signal that asked the job to stop, or 0; job_catch_stop() makes
 * SIGTERM and SIGINT set it (and nothing else), before memory is taken so
 * that a stop at any point still frees it. */
extern volatile sig_atomic_t job_stop;
void job_catch_stop(void);

/* Seconds on a monotonic clock. */
double job_now(void);

/* Sleeps until job_now() reaches `until` or a stop signal comes. */
void job_sleep_until(double until);

/* Whether the job may go on from where it waits (its --seconds over, or
 * --oom-over's halfway point): no --until, or its file exists (a test's
 * "you may go on now", which a loaded machine cannot outrun as it can a
 * duration). */
int job_released(const job_args *args);

/* After a stop signal, with --linger FILE, waits until FILE exists before
 * the job frees its memory: a training job saving a checkpoint as it
 * stops still holds its GPU memory (SIGKILL ends the wait). */
void job_linger(const job_args *args);

#endif
