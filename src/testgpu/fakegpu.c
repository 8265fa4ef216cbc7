/* fakegpu.c -- aegis-fakegpu, a stand-in training job for the test GPUs.
 *
 * It does what matters to a scheduler and nothing else: it takes memory on
 * the GPUs in CUDA_VISIBLE_DEVICES (an allocation file each, tgpu.h), keeps
 * them busy at a given SMACT for a while, and fails the way PyTorch does when
 * the memory is not there. "Does it fit?" and "take it" happen under the
 * state folder's lock, so two jobs started at once cannot both fit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tgpu.h"

static const char usage[] =
    "usage: aegis-fakegpu --mib M --seconds S [--smact X] [--oom-over]\n"
    "\n"
    "Behaves like a training job on the test GPUs: takes M MiB on each GPU in\n"
    "CUDA_VISIBLE_DEVICES (test GPU UUIDs or indexes), keeps them busy at\n"
    "SMACT X (0..1, default 0.5) for S seconds, then frees them and exits 0.\n"
    "When M MiB do not fit it prints PyTorch's CUDA out-of-memory error and\n"
    "exits 1. With --oom-over the job's peak comes later: halfway through it\n"
    "asks for M MiB more, and fails then if they do not fit (a job that is\n"
    "seen running on the GPU before it runs out of memory).\n"
    "SIGTERM frees the memory and exits 143 (SIGINT: 130).\n"
    "\n"
    "environment: AEGIS_TEST_GPU_DIR (required), AEGIS_TEST_GPUS (default "
    TGPU_DEFAULT_SHAPE ")\n";

typedef struct fake_job {
    long mib;
    double seconds;
    double smact;
    int oom_over;
    int ngpus;                      /* GPUs in CUDA_VISIBLE_DEVICES */
    int gpus[TGPU_MAX_GPUS];        /* their indexes, in CUDA order */
    long held;                      /* MiB held now on each of them */
    tgpu_config cfg;
} fake_job;

/* The signal that asked the job to stop, or 0. */
static volatile sig_atomic_t fake_stop;

static void fake_on_signal(int sig) {
    fake_stop = sig;
}

/* Parses a number option's value into *out within [lo, hi]. */
static int fake_number(const char *opt, const char *val, double lo, double hi,
                       double *out) {
    char *end = NULL;
    if (!val) {
        fprintf(stderr, "aegis-fakegpu: %s needs a value\n", opt);
        return -1;
    }
    errno = 0;
    *out = strtod(val, &end);
    if (errno || end == val || *end || *out < lo || *out > hi) {
        fprintf(stderr, "aegis-fakegpu: %s %s: want a number in %g..%g\n",
                opt, val, lo, hi);
        return -1;
    }
    return 0;
}

/* Fills the job from argv. Returns 0, 1 for --help, or -1 on bad usage. */
static int fake_parse_args(int argc, char **argv, fake_job *job) {
    double mib = -1, secs = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        else if (!strcmp(a, "--oom-over"))
            job->oom_over = 1;
        else if (!strcmp(a, "--mib"))
            rc = fake_number(a, v, 1, TGPU_MAX_MIB, &mib), i++;
        else if (!strcmp(a, "--seconds"))
            rc = fake_number(a, v, 0, 1e9, &secs), i++;
        else if (!strcmp(a, "--smact"))
            rc = fake_number(a, v, 0, 1, &job->smact), i++;
        else {
            fprintf(stderr, "aegis-fakegpu: unknown option %s\n", a);
            return -1;
        }
        if (rc < 0)
            return -1;
    }
    if (mib < 0 || secs < 0) {
        fprintf(stderr, "aegis-fakegpu: --mib and --seconds are required\n");
        return -1;
    }
    job->mib = (long)mib;
    job->seconds = secs;
    return 0;
}

/* Resolves CUDA_VISIBLE_DEVICES to GPU indexes. Returns 0, or -1 after
 * saying why: CUDA itself would see no GPU. */
static int fake_parse_devices(fake_job *job) {
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd || !*cvd) {
        fprintf(stderr, "RuntimeError: No CUDA GPUs are available "
                "(aegis-fakegpu: CUDA_VISIBLE_DEVICES is %s)\n",
                cvd ? "empty" : "not set");
        return -1;
    }
    char list[1024];
    snprintf(list, sizeof list, "%s", cvd);
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        int gpu = tgpu_find(&job->cfg, t);
        for (int k = 0; k < job->ngpus && gpu >= 0; k++)
            if (job->gpus[k] == gpu)
                gpu = -1; /* CUDA rejects a GPU listed twice */
        if (gpu < 0 || job->ngpus == TGPU_MAX_GPUS) {
            fprintf(stderr, "RuntimeError: CUDA error: invalid device ordinal "
                    "(aegis-fakegpu: CUDA_VISIBLE_DEVICES=%s: \"%s\" is not "
                    "one of %d test GPUs, or is listed twice)\n", cvd, t,
                    job->cfg.ngpus);
            return -1;
        }
        job->gpus[job->ngpus++] = gpu;
    }
    return 0;
}

/* Writes a size as PyTorch's memory summaries do ("1.50 GiB"). */
static void fake_size(char *buf, size_t len, double mib) {
    if (mib <= 0)
        snprintf(buf, len, "0 bytes");
    else if (mib >= 1024.0)
        snprintf(buf, len, "%.2f GiB", mib / 1024.0);
    else
        snprintf(buf, len, "%.2f MiB", mib);
}

/* Prints the error PyTorch prints when an allocation of `want` MiB fails on
 * CUDA device `ordinal` (its place in CUDA_VISIBLE_DEVICES). */
static void fake_print_oom(const fake_job *job, int ordinal, long want,
                           long used) {
    char req[32], total[32], alloc[32], freem[32], mine[32];
    long avail = job->cfg.mib - used;
    fake_size(req, sizeof req, (double)want);
    fake_size(total, sizeof total, (double)job->cfg.mib);
    fake_size(alloc, sizeof alloc, (double)used);
    fake_size(freem, sizeof freem, (double)(avail > 0 ? avail : 0));
    fake_size(mine, sizeof mine, (double)job->held);
    fprintf(stderr,
            "Traceback (most recent call last):\n"
            "  File \"train.py\", line 42, in <module>\n"
            "    loss = model(batch).loss\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s "
            "(GPU %d; %s total capacity; %s already allocated; %s free; %s "
            "reserved in total by PyTorch)\n", req, ordinal, total, alloc,
            freem, mine);
}

/* Takes `more` MiB on every GPU of the job, or none of them. Returns 0, or
 * -1 after printing the OOM error (or the I/O error) for the first GPU that
 * cannot give them. */
static int fake_allocate(fake_job *job, long more) {
    int lock = tgpu_lock(&job->cfg);
    if (lock < 0) {
        fprintf(stderr, "aegis-fakegpu: %s/lock: %s\n", job->cfg.dir,
                strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < job->ngpus && rc == 0; k++) {
        tgpu_usage u;
        if (tgpu_scan(&job->cfg, job->gpus[k], NULL, 0, &u) < 0) {
            fprintf(stderr, "aegis-fakegpu: %s: %s\n", job->cfg.dir,
                    strerror(errno));
            rc = -1;
        } else if (u.used_mib + more > job->cfg.mib) {
            fake_print_oom(job, k, more, u.used_mib);
            rc = -1;
        }
    }
    tgpu_alloc a = {getpid(), job->held + more, job->smact};
    for (int k = 0; k < job->ngpus && rc == 0; k++)
        if (tgpu_alloc_write(&job->cfg, job->gpus[k], &a) < 0) {
            fprintf(stderr, "aegis-fakegpu: %s: %s\n", job->cfg.dir,
                    strerror(errno));
            rc = -1;
        }
    if (rc == 0)
        job->held += more;
    close(lock);
    return rc;
}

static void fake_release(const fake_job *job) {
    for (int k = 0; k < job->ngpus; k++)
        tgpu_alloc_remove(&job->cfg, job->gpus[k], getpid());
}

static double fake_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleeps until `until` (fake_now time) or a stop signal. Sleeping is the
 * point here: it stands for the training the job would do. */
static void fake_work_until(double until) {
    for (double left; !fake_stop && (left = until - fake_now()) > 0;) {
        struct timespec ts = {(time_t)left,
                              (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL); /* EINTR: a signal, checked by the loop */
    }
}

/* Runs the job once its GPUs are known. Returns the exit status. */
static int fake_run(fake_job *job) {
    double start = fake_now();
    if (fake_allocate(job, job->mib) < 0)
        return 1;
    int status = 0;
    if (job->oom_over) {
        fake_work_until(start + job->seconds / 2);
        if (!fake_stop && fake_allocate(job, job->mib) < 0)
            status = 1;
    }
    if (status == 0)
        fake_work_until(start + job->seconds);
    fake_release(job);
    if (fake_stop)
        return 128 + fake_stop;
    return status;
}

int main(int argc, char **argv) {
    fake_job job = {.smact = 0.5};
    int rc = fake_parse_args(argc, argv, &job);
    if (rc != 0) {
        fputs(usage, rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    char err[512];
    if (tgpu_config_load(&job.cfg, err, sizeof err) < 0) {
        fprintf(stderr, "aegis-fakegpu: %s\n", err);
        return 2;
    }
    if (fake_parse_devices(&job) < 0)
        return 2;
    /* Handlers only set a flag; installed before the memory is taken so a
     * SIGTERM at any point still frees it. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fake_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return fake_run(&job);
}
