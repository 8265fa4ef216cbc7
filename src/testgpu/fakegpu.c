/* fakegpu.c -- aegis-fakegpu, a stand-in training job for the test GPUs.
 *
 * It does what matters to a scheduler and nothing else: it takes memory on
 * the GPUs in CUDA_VISIBLE_DEVICES (an allocation file each, tgpu.h), keeps
 * them busy at a given SMACT for a while, and fails the way PyTorch does when
 * the memory is not there. "Does it fit?" and "take it" happen under the
 * state folder's lock, so two jobs started at once cannot both fit.
 *
 * A MIG device in CUDA_VISIBLE_DEVICES (MIG-aegis-test-<gpu>-<gi>-<ci>,
 * made through the test NVML library) gives the job that instance's
 * memory and no more: its allocation is charged to its GPU instance on the
 * parent GPU, so the parent's process list shows it. Under MPS (the
 * CUDA_MPS_* variables) it is a client of the control daemon
 * (aegis-fake-mps-control): it connects to its socket and waits, as CUDA
 * initialisation does, until the daemon serves it, which it does not while
 * its server is another user's; it then shows in NVML's MPS process list,
 * not the compute one. It honours the pinned memory limit as CUDA does (an
 * OOM past it), and says what it was given on its first line of stdout,
 * for tests to read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "jobargs.h"
#include "tgpu.h"

static const char usage[] =
    "usage: aegis-fakegpu --mib M --seconds S [--smact X] [--oom-over]\n"
    "                     [--until FILE] [--linger FILE]\n"
    "\n"
    "Behaves like a training job on the test GPUs: takes M MiB on each GPU in\n"
    "CUDA_VISIBLE_DEVICES (test GPU UUIDs or indexes), keeps them busy at\n"
    "SMACT X (0..1, default 0.5) for S seconds, then frees them and exits 0.\n"
    "When M MiB do not fit it prints PyTorch's CUDA out-of-memory error and\n"
    "exits 1. With --oom-over the job's peak comes later: halfway through it\n"
    "asks for M MiB more, and fails then if they do not fit (a job that is\n"
    "seen running on the GPU before it runs out of memory). With --until\n"
    "FILE it runs on past S seconds until FILE exists (a test's release);\n"
    "with --oom-over too, it asks for its M MiB more only once FILE exists\n"
    "(a test's \"grow now\", once it has seen the job at its first size).\n"
    "SIGTERM frees the memory and exits 143 (SIGINT: 130); with --linger\n"
    "FILE, only once FILE exists (a job that saves a checkpoint as it stops\n"
    "holds its memory until then).\n"
    "\n"
    "CUDA_VISIBLE_DEVICES may name MIG devices (MIG-aegis-test-G-I-C) the\n"
    "test NVML library made: the job then has that instance's memory.\n"
    "Under MPS, CUDA_MPS_PIPE_DIRECTORY must hold a running control\n"
    "daemon's socket (else it exits 1); the job waits there while the\n"
    "daemon serves another user's clients. CUDA_MPS_ACTIVE_THREAD_PERCENTAGE\n"
    "must be 1..100, and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (\"0=4000M,1=2G\")\n"
    "caps its memory per device. Its first stdout line says what it got:\n"
    "  aegis-fakegpu: devices=... mps_pipe=DIR|- threads=PCT|- pinned=...|-\n"
    "\n"
    "environment: AEGIS_TEST_GPU_DIR (required), AEGIS_TEST_GPUS (default "
    TGPU_DEFAULT_SHAPE ")\n";

typedef struct fake_job {
    job_args a;                     /* --mib, --seconds, --smact... */
    int ngpus;                      /* GPUs in CUDA_VISIBLE_DEVICES */
    int gpus[TGPU_MAX_GPUS];        /* their indexes, in CUDA order */
    int mig_gi[TGPU_MAX_GPUS];      /* the MIG instance given; 0: none */
    int mig_ci[TGPU_MAX_GPUS];      /* with mig_gi: its compute instance */
    long cap[TGPU_MAX_GPUS];        /* memory each device has, MiB */
    long pinned[TGPU_MAX_GPUS];     /* MPS pinned limit, MiB; 0: none */
    long held;                      /* MiB held now on each of them */
    int mps;                        /* an MPS client (served by now) */
    tgpu_config cfg;
} fake_job;

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
        int gpu = -1, gi = 0, ci = 0;
        long cap = job->cfg.mib;
        if (strncmp(t, "MIG-", 4) == 0) {
            if (tgpu_mig_find(&job->cfg, t, &gpu, &gi, &ci, &cap) < 0)
                gpu = -1;
        } else {
            gpu = tgpu_find(&job->cfg, t);
        }
        for (int k = 0; k < job->ngpus && gpu >= 0; k++)
            if (job->gpus[k] == gpu && job->mig_gi[k] == gi)
                gpu = -1; /* CUDA rejects a device listed twice */
        if (gpu < 0 || job->ngpus == TGPU_MAX_GPUS) {
            fprintf(stderr, "RuntimeError: CUDA error: invalid device ordinal "
                    "(aegis-fakegpu: CUDA_VISIBLE_DEVICES=%s: \"%s\" is not "
                    "one of %d test GPUs or their MIG devices, or is listed "
                    "twice)\n", cvd, t, job->cfg.ngpus);
            return -1;
        }
        job->mig_gi[job->ngpus] = gi;
        job->mig_ci[job->ngpus] = ci;
        job->cap[job->ngpus] = cap;
        job->gpus[job->ngpus++] = gpu;
    }
    return 0;
}

/* Reads CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<ordinal>=<n>[M|G],...") into
 * job->pinned. Returns 0, or -1 after saying which entry is bad. */
static int fake_parse_pinned(fake_job *job, const char *spec) {
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", spec);
    for (char *t = strtok_r(list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        int ordinal = -1, used = 0;
        long n = 0;
        char unit = 'M';
        int got = sscanf(t, "%d=%ld%n%c", &ordinal, &n, &used, &unit);
        if (got < 2 || ordinal < 0 || ordinal >= job->ngpus || n <= 0 ||
            (unit != 'M' && unit != 'G') ||
            (got == 3 && t[used + 1] != '\0')) {
            fprintf(stderr, "aegis-fakegpu: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="
                    "%s: bad entry \"%s\" (want <ordinal>=<n>M or G for one "
                    "of %d devices)\n", spec, t, job->ngpus);
            return -1;
        }
        job->pinned[ordinal] = unit == 'G' ? n * 1024 : n;
    }
    return 0;
}

/* Connects to the MPS control daemon of pipe_dir as a client and waits
 * until it serves this process: at once, unless its server is another
 * user's (then until that server's clients are all gone). The connection
 * stays open for the job's life; its end tells the daemon the client is
 * gone. Returns 0, or -1 after saying why (CUDA fails to start the
 * client). */
static int fake_mps_client(const char *pipe_dir) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/control", pipe_dir);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    char answer[16] = "";
    ssize_t n = -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        send(fd, "mps-client", 10, 0) == 10) {
        while ((n = recv(fd, answer, sizeof answer - 1, 0)) < 0 &&
               errno == EINTR) {
        }
    }
    if (n == 5 && memcmp(answer, "ready", 5) == 0)
        return 0; /* fd kept open: this process is the client */
    fprintf(stderr, "RuntimeError: CUDA error: MPS client failed to connect "
            "to the MPS control daemon or the MPS server (aegis-fakegpu: "
            "%s: %s)\n", a.sun_path, n == 0 ? "the daemon hung up"
            : strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Checks and reports the MPS environment, and becomes an MPS client when
 * it says so. Returns 0, or -1 after saying what is wrong (exit 1: CUDA
 * would fail to start the client). */
static int fake_check_mps(fake_job *job) {
    const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    const char *pct = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    const char *pinned = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
    job_print_env("aegis-fakegpu");
    fflush(stdout); /* said before a wait for the server */
    double v = 0;
    if (pct && job_number("aegis-fakegpu", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                           pct, 1, 100, &v) < 0)
        return -1;
    if (pinned && fake_parse_pinned(job, pinned) < 0)
        return -1;
    if (!pipe_dir)
        return 0;
    job->mps = 1;
    return fake_mps_client(pipe_dir);
}

/* Memory other jobs use on device k of the job: its whole GPU's, or only
 * its MIG instance's. Returns 0, or -1 with errno set. */
static int fake_used(const fake_job *job, int k, long *used) {
    static tgpu_alloc allocs[TGPU_MAX_ALLOCS];
    tgpu_usage u;
    int n = tgpu_scan(&job->cfg, job->gpus[k], allocs, TGPU_MAX_ALLOCS, &u);
    if (n < 0)
        return -1;
    *used = u.used_mib;
    if (job->mig_gi[k] == 0)
        return 0;
    *used = 0;
    for (int i = 0; i < n; i++)
        if (allocs[i].mig_gi == job->mig_gi[k])
            *used += allocs[i].mib;
    return 0;
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
        long used = 0;
        if (fake_used(job, k, &used) < 0) {
            fprintf(stderr, "aegis-fakegpu: %s: %s\n", job->cfg.dir,
                    strerror(errno));
            rc = -1;
        } else if (used + more > job->cap[k]) {
            job_print_oom(k, (double)more, (double)used, (double)job->cap[k],
                          (double)job->held);
            rc = -1;
        } else if (job->pinned[k] > 0 && job->held + more > job->pinned[k]) {
            /* MPS refuses past the pinned limit as if the device were full */
            job_print_oom(k, (double)more, (double)job->held,
                          (double)job->pinned[k], (double)job->held);
            rc = -1;
        }
    }
    for (int k = 0; k < job->ngpus && rc == 0; k++) {
        tgpu_alloc a = {getpid(), job->held + more, job->a.smact,
                        job->mig_gi[k], job->mig_ci[k], job->mps};
        if (tgpu_alloc_write(&job->cfg, job->gpus[k], &a) < 0) {
            fprintf(stderr, "aegis-fakegpu: %s: %s\n", job->cfg.dir,
                    strerror(errno));
            rc = -1;
        }
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

/* With --until, holds the job as it is until its file exists (or a stop
 * signal comes). */
static void fake_hold(const fake_job *job) {
    while (!job_stop && !job_released(&job->a))
        job_sleep_until(job_now() + 0.1);
}

/* Runs the job once its GPUs are known. Returns the exit status. */
static int fake_run(fake_job *job) {
    double start = job_now();
    if (fake_allocate(job, job->a.mib) < 0)
        return 1;
    int status = 0;
    if (job->a.oom_over) {
        job_sleep_until(start + job->a.seconds / 2);
        fake_hold(job);
        if (!job_stop && fake_allocate(job, job->a.mib) < 0)
            status = 1;
    }
    if (status == 0) {
        job_sleep_until(start + job->a.seconds);
        fake_hold(job);
    }
    job_linger(&job->a);
    fake_release(job);
    if (job_stop)
        return 128 + job_stop;
    return status;
}

int main(int argc, char **argv) {
    fake_job job = {.a.smact = 0.5};
    int rc = job_parse_args("aegis-fakegpu", argc, argv, TGPU_MAX_MIB, &job.a);
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
    if (fake_check_mps(&job) < 0)
        return 1;
    job_catch_stop();
    return fake_run(&job);
}
