/* test_tel.c -- the NVML and DCGM loaders (tel.h) against
 * libaegis-testnvml.so and libaegis-testdcgm.so, with aegis-fakegpu
 * processes as the jobs on their GPUs.
 *
 * Every test gets a fresh state folder and two 1000 MiB GPUs. Waiting for a
 * job to show up polls tel_read() against a deadline: the job's start is an
 * event the test awaits, not a delay it guesses.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tel.h"
#include "tel_mig.h"
#include "tmpdir.h"

/* How long a started job may take to appear in the process list. It is
 * milliseconds unloaded; the margin is for sanitizer builds on busy CI. */
#define AWAIT_SECONDS 10.0

typedef struct fixture {
    char dir[64];           /* AEGIS_TEST_GPU_DIR */
    char errfile[96];       /* the last job's stderr */
    tel_state *tel;
    pid_t jobs[8];          /* started and not yet waited for */
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (tmpdir_make_gpus(f->dir, sizeof f->dir, "aegis-tel", "2x1000") < 0)
        return -1;
    snprintf(f->errfile, sizeof f->errfile, "%s.stderr", f->dir);
    unsetenv("AEGIS_NVML_LIBRARY");
    unsetenv("AEGIS_DCGM_LIBRARY");
    unsetenv("AEGIS_DCGM_HOSTENGINE");
    unsetenv("AEGIS_TEST_DCGM_FAIL");
    unsetenv("AEGIS_TEST_DCGM_PROF_HELD");
    unsetenv("AEGIS_TEST_NVML_DRIVER");
    unsetenv("AEGIS_TEST_NVML_SAMPLE_MS");
    unsetenv("AEGIS_TEST_NVML_STALE_SAMPLES");
    unsetenv("AEGIS_TEST_NVML_UNPRIVILEGED");
    unsetenv("AEGIS_TEST_GPU_MODEL");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tel_close(f->tel);
    /* A test that failed half-way leaves its jobs running: stop them. */
    for (int i = 0; i < 8; i++)
        if (f->jobs[i] > 0) {
            kill(f->jobs[i], SIGKILL);
            waitpid(f->jobs[i], NULL, 0);
        }
    tmpdir_remove(f->dir);
    unlink(f->errfile);
    free(f);
    return 0;
}

static tel_state *open_nvml(fixture *f, const char *lib) {
    char err[512] = "";
    f->tel = tel_open(lib, err, sizeof err);
    if (!f->tel)
        fail_msg("tel_open: %s", err);
    return f->tel;
}

static void read_gpu(tel_state *tel, int gpu, tel_gpu_reading *r) {
    char err[512] = "";
    if (tel_read(tel, gpu, r, err, sizeof err) != 0)
        fail_msg("tel_read(%d): %s", gpu, err);
}

/* Starts aegis-fakegpu with CUDA_VISIBLE_DEVICES=cvd (NULL: unset) and the
 * given arguments, its stderr to f->errfile. */
static pid_t start_job(fixture *f, const char *cvd, ...) {
    char *argv[16] = {"aegis-fakegpu"};
    va_list ap;
    va_start(ap, cvd);
    for (int i = 1; i < 15 && (argv[i] = va_arg(ap, char *)) != NULL; i++)
        ;
    va_end(ap);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(f->errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(126);
        if (cvd)
            setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        execv(TEL_TEST_FAKEGPU, argv);
        _exit(127);
    }
    for (int i = 0; i < 8; i++)
        if (f->jobs[i] == 0) {
            f->jobs[i] = pid;
            break;
        }
    return pid;
}

/* Waits for the job and returns its exit status (-1: killed by a signal). */
static int job_status(fixture *f, pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    for (int i = 0; i < 8; i++)
        if (f->jobs[i] == pid)
            f->jobs[i] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int errfile_has(const fixture *f, const char *text) {
    char buf[4096] = "";
    FILE *fp = fopen(f->errfile, "r");
    if (!fp)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return strstr(buf, text) != NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The index of pid in r's process list, or -1. */
static int find_proc(const tel_gpu_reading *r, pid_t pid) {
    for (int i = 0; i < r->nprocs; i++)
        if (r->procs[i].pid == pid)
            return i;
    return -1;
}

/* Reads GPU gpu until pid is in its process list; fails the test at the
 * deadline. Returns pid's index in r->procs. */
static int await_job(tel_state *tel, int gpu, pid_t pid, tel_gpu_reading *r) {
    double deadline = now_s() + AWAIT_SECONDS;
    for (;;) {
        read_gpu(tel, gpu, r);
        int i = find_proc(r, pid);
        if (i >= 0) {
            /* The job may have appeared between this reading's memory
             * query and its process list: read once more, all after it. */
            read_gpu(tel, gpu, r);
            return find_proc(r, pid);
        }
        if (now_s() > deadline)
            fail_msg("job %ld not on GPU %d after %.0f s", (long)pid, gpu,
                     AWAIT_SECONDS);
        nap_ms(10);
    }
}

static void test_open_missing_library(void **state) {
    char err[512] = "";
    assert_null(tel_open("/nonexistent/libnvidia-ml.so.1", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/libnvidia-ml.so.1"));
    assert_non_null(strstr(err, "dlopen"));
}

/* A library that loads but is not NVML: the error names the missing call. */
static void test_open_not_nvml(void **state) {
    char err[512] = "";
    assert_null(tel_open("libm.so.6", err, sizeof err));
    assert_non_null(strstr(err, "libm.so.6"));
    assert_non_null(strstr(err, "nvmlInit_v2"));
}

static void test_open_from_environment(void **state) {
    fixture *f = *state;
    char err[512] = "";
    setenv("AEGIS_NVML_LIBRARY", TEL_TEST_NVML, 1);
    f->tel = tel_open(NULL, err, sizeof err);
    assert_non_null(f->tel);
    assert_int_equal(tel_gpu_count(f->tel), 2);
}

static void test_gpus_listed_idle(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    assert_int_equal(tel_gpu_count(tel), 2);
    assert_string_equal(tel_gpu_uuid(tel, 0), "GPU-aegis-test-0000-0");
    assert_string_equal(tel_gpu_uuid(tel, 1), "GPU-aegis-test-0000-1");
    assert_string_equal(tel_gpu_name(tel, 1),
                        "aegis test GPU: NVIDIA A100-SXM4-40GB");
    assert_null(tel_gpu_uuid(tel, 2));

    tel_gpu_reading r;
    read_gpu(tel, 1, &r);
    assert_true(r.r.used_mib == 0.0);
    assert_true(r.r.total_mib == 1000.0);
    assert_true(r.r.util == 0.0);
    assert_true(r.r.smact == CORE_UNKNOWN && r.r.smocc == CORE_UNKNOWN &&
                r.r.drama == CORE_UNKNOWN);
    assert_true(r.power_w == 55.0);
    assert_true(r.energy_j >= 0.0);
    assert_int_equal(r.nprocs, 0);

    char err[512] = "";
    assert_int_equal(tel_read(tel, 2, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "GPU 2"));
}

/* A job's memory, SMACT and pid show on its GPU only, and go when it is
 * stopped; the energy counter grows while it runs. */
static void test_job_seen_then_freed(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t pid = start_job(f, "GPU-aegis-test-0000-1", "--mib", "600",
                          "--seconds", "60", "--smact", "0.5", NULL);
    tel_gpu_reading r, other;
    int i = await_job(tel, 1, pid, &r);
    assert_true(r.r.used_mib == 600.0);
    assert_true(r.procs[i].used_mib == 600.0);
    assert_true(r.procs[i].sm_util == 50.0);
    assert_true(r.r.util == 0.5);
    assert_true(r.power_w == 55.0 + 345.0 * 0.5);
    read_gpu(tel, 0, &other);
    assert_true(other.r.used_mib == 0.0);
    assert_int_equal(find_proc(&other, pid), -1);

    double e0 = r.energy_j;
    nap_ms(50);
    read_gpu(tel, 1, &r);
    assert_true(r.energy_j > e0);

    kill(pid, SIGTERM);
    assert_int_equal(job_status(f, pid), 143);
    read_gpu(tel, 1, &r);
    assert_true(r.r.used_mib == 0.0);
    assert_int_equal(r.nprocs, 0);
    assert_true(r.power_w == 55.0);
}

/* A job killed with SIGKILL leaves its file; the next reader drops it. */
static void test_dead_job_ignored(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(job_status(f, pid), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/gpu0.%ld", f->dir, (long)pid);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("500 0.5000\n", fp);
    fclose(fp);

    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    assert_true(r.r.used_mib == 0.0);
    assert_int_equal(r.nprocs, 0);
    assert_int_equal(access(path, F_OK), -1);
}

/* A second job that does not fit beside the first fails as PyTorch does;
 * so does one bigger than the GPU. GPUs given by index work too. */
static void test_job_out_of_memory(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t first = start_job(f, "0", "--mib", "600", "--seconds", "60", NULL);
    tel_gpu_reading r;
    await_job(tel, 0, first, &r);

    pid_t second = start_job(f, "GPU-aegis-test-0000-0", "--mib", "600",
                             "--seconds", "60", NULL);
    assert_int_equal(job_status(f, second), 1);
    assert_true(errfile_has(f, "torch.OutOfMemoryError: CUDA out of memory. "
                               "Tried to allocate 600.00 MiB (GPU 0;"));
    read_gpu(tel, 0, &r);
    assert_true(r.r.used_mib == 600.0);
    assert_int_equal(find_proc(&r, second), -1);

    pid_t huge = start_job(f, "1", "--mib", "1001", "--seconds", "60", NULL);
    assert_int_equal(job_status(f, huge), 1);
    assert_true(errfile_has(f, "CUDA out of memory"));

    kill(first, SIGTERM);
    assert_int_equal(job_status(f, first), 143);
}

/* --oom-over: the job is seen on the GPU first, then fails at its peak,
 * freeing what it held. */
static void test_job_oom_after_start(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t pid = start_job(f, "1", "--mib", "600", "--seconds", "4",
                          "--oom-over", NULL);
    tel_gpu_reading r;
    int i = await_job(tel, 1, pid, &r);
    assert_true(r.procs[i].used_mib == 600.0);
    assert_int_equal(job_status(f, pid), 1);
    assert_true(errfile_has(f, "CUDA out of memory. Tried to allocate "
                               "600.00 MiB (GPU 0;"));
    read_gpu(tel, 1, &r);
    assert_true(r.r.used_mib == 0.0);
}

/* The unversioned process list (two-field entries) and a GPU without power
 * or energy readings: the job is still seen, the readings are unknown. */
static void test_old_driver(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML_OLD);
    pid_t pid = start_job(f, "1", "--mib", "600", "--seconds", "60", NULL);
    tel_gpu_reading r;
    int i = await_job(tel, 1, pid, &r);
    assert_true(r.procs[i].used_mib == 600.0);
    assert_true(r.r.used_mib == 600.0);
    assert_true(r.procs[i].sm_util == CORE_UNKNOWN);
    assert_true(r.power_w == CORE_UNKNOWN);
    assert_true(r.energy_j == CORE_UNKNOWN);
    kill(pid, SIGTERM);
    assert_int_equal(job_status(f, pid), 143);
}

/* Fills GPU 0 with n live allocations of 10 MiB, each held by a child that
 * dies within 30 s even if the test does not stop it. */
/* Writes `text` as holder pid's allocation file on GPU 0. */
static void write_holder(const fixture *f, pid_t pid, const char *text) {
    char path[128];
    snprintf(path, sizeof path, "%s/gpu0.%ld", f->dir, (long)pid);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* n processes that sleep for at most 30 s, each holding the allocation
 * `text` on GPU 0. */
static void start_holding(const fixture *f, pid_t *pids, int n,
                          const char *text) {
    for (int i = 0; i < n; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            alarm(30);
            pause();
            _exit(0);
        }
        write_holder(f, pids[i], text);
    }
}

static void start_holders(const fixture *f, pid_t *pids, int n) {
    start_holding(f, pids, n, "10 0.0100\n");
}

static void stop_holders(pid_t *pids, int n) {
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
}

/* More processes than TEL_MAX_PROCS: the loader asks again with room for
 * all, keeps TEL_MAX_PROCS and counts the rest; memory covers them all. */
static void check_many_procs(fixture *f, const char *lib) {
    enum { N = TEL_MAX_PROCS + 6 };
    pid_t pids[N];
    start_holders(f, pids, N);
    tel_state *tel = open_nvml(f, lib);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    stop_holders(pids, N);
    assert_int_equal(r.nprocs, TEL_MAX_PROCS);
    assert_int_equal(tel_dropped_procs(tel), 6);
    assert_true(r.r.used_mib == 10.0 * N);
    for (int i = 0; i < r.nprocs; i++)
        assert_true(r.procs[i].used_mib == 10.0);
    read_gpu(tel, 0, &r);
    assert_int_equal(r.nprocs, 0);
}

static void test_many_procs(void **state) {
    check_many_procs(*state, TEL_TEST_NVML);
}

static void test_many_procs_old_driver(void **state) {
    check_many_procs(*state, TEL_TEST_NVML_OLD);
}

/* n holders on GPU 0 of a library acting as driver `driver`: each is
 * listed once, by its own pid, with its own 10 MiB. */
static void check_procs_listed(fixture *f, const char *driver, int n) {
    pid_t pids[TEL_MAX_PROCS];
    assert_true(n <= TEL_MAX_PROCS);
    setenv("AEGIS_TEST_NVML_DRIVER", driver, 1);
    start_holders(f, pids, n);
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    assert_string_equal(tel_driver_version(tel), driver);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    stop_holders(pids, n);
    assert_int_equal(r.nprocs, n);
    for (int i = 0; i < n; i++) {
        int k = find_proc(&r, pids[i]);
        if (k < 0)
            fail_msg("driver %s: holder %d (pid %ld) not listed", driver, i,
                     (long)pids[i]);
        assert_true(r.procs[k].used_mib == 10.0);
    }
}

/* Drivers 535.43.02 to 535.86.x fill 32-byte entries behind _v3: read
 * with the 24-byte layout, every entry after the first is garbage. */
static void test_driver_535_process_list(void **state) {
    check_procs_listed(*state, "535.54.03", 3);
}

/* ... and past 48 processes a 64-entry buffer of 24 bytes overflows. */
static void test_driver_535_many_processes(void **state) {
    check_procs_listed(*state, "535.54.03", 50);
}

/* The same on the drivers before and after, whose _v3 is 24 bytes. */
static void test_driver_550_process_list(void **state) {
    check_procs_listed(*state, "550.54.15", 50);
}

/* MPS clients are in NVML's MPS list, not the compute list: a reading
 * joins both, so two plain processes and two MPS clients are all listed,
 * each with its own memory. */
static void check_mps_clients(fixture *f, const char *lib) {
    pid_t plain[2], mps[2];
    start_holding(f, plain, 2, "10 0.0100\n");
    start_holding(f, mps, 2, "20 0.0100 mps\n");
    tel_state *tel = open_nvml(f, lib);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    stop_holders(plain, 2);
    stop_holders(mps, 2);
    assert_int_equal(r.nprocs, 4);
    for (int i = 0; i < 2; i++) {
        int k = find_proc(&r, plain[i]), m = find_proc(&r, mps[i]);
        assert_true(k >= 0 && m >= 0);
        assert_true(r.procs[k].used_mib == 10.0);
        assert_true(r.procs[m].used_mib == 20.0);
    }
}

static void test_mps_clients_listed(void **state) {
    check_mps_clients(*state, TEL_TEST_NVML);
}

static void test_mps_clients_listed_old_driver(void **state) {
    check_mps_clients(*state, TEL_TEST_NVML_OLD);
}

/* A sample over 100% is garbage a driver gives now and then: dropped, not
 * read as a busy process. With no other sample, the process is idle. */
static void test_proc_util_over_100_dropped(void **state) {
    fixture *f = *state;
    pid_t odd, busy;
    start_holding(f, &odd, 1, "10 2.5000\n");
    start_holding(f, &busy, 1, "10 0.4000\n");
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    stop_holders(&odd, 1);
    stop_holders(&busy, 1);
    assert_true(r.procs[find_proc(&r, busy)].sm_util == 40.0);
    assert_true(r.procs[find_proc(&r, odd)].sm_util == 0.0);
}

/* A sample no newer than the last one read is dropped, not taken again:
 * the process keeps its reading from the first (a driver that answers
 * with the period's samples whatever lastSeenTimeStamp says; a period of
 * an hour, so both reads are in one). */
static void test_proc_util_stale_dropped(void **state) {
    fixture *f = *state;
    setenv("AEGIS_TEST_NVML_SAMPLE_MS", "3600000", 1);
    setenv("AEGIS_TEST_NVML_STALE_SAMPLES", "1", 1);
    pid_t p;
    start_holding(f, &p, 1, "10 0.7000\n");
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    assert_true(r.procs[find_proc(&r, p)].sm_util == 70.0);
    write_holder(f, p, "10 0.2000\n");
    read_gpu(tel, 0, &r);
    stop_holders(&p, 1);
    assert_true(r.procs[find_proc(&r, p)].sm_util == 70.0);
}

/* A job that runs no kernels has no NVML sample (NOT_FOUND when it is the
 * only one): its utilization is a known 0, beside a busy job's 30. */
static void test_proc_util_idle_job(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t idle = start_job(f, "0", "--mib", "100", "--seconds", "60",
                           "--smact", "0", NULL);
    tel_gpu_reading r;
    int i = await_job(tel, 0, idle, &r);
    assert_true(r.procs[i].sm_util == 0.0);
    pid_t busy = start_job(f, "0", "--mib", "100", "--seconds", "60",
                           "--smact", "0.3", NULL);
    int b = await_job(tel, 0, busy, &r);
    i = find_proc(&r, idle);
    assert_true(r.procs[b].sm_util == 30.0);
    assert_true(r.procs[i].sm_util == 0.0);
    kill(idle, SIGTERM);
    kill(busy, SIGTERM);
    assert_int_equal(job_status(f, idle), 143);
    assert_int_equal(job_status(f, busy), 143);
}

/* NVML samples each process once a period and answers NOT_FOUND to a read
 * within the same one: a busy job keeps its utilization, it did not go
 * idle. (A sample period of an hour: every read after the first is
 * NOT_FOUND.) */
static void test_proc_util_not_found_is_not_idle(void **state) {
    fixture *f = *state;
    setenv("AEGIS_TEST_NVML_SAMPLE_MS", "3600000", 1);
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    pid_t busy = start_job(f, "0", "--mib", "100", "--seconds", "60",
                           "--smact", "0.7", NULL);
    tel_gpu_reading r;
    int i = await_job(tel, 0, busy, &r);
    for (int k = 0; k < 3; k++) {
        read_gpu(tel, 0, &r);
        i = find_proc(&r, busy);
        assert_true(i >= 0);
        assert_true(r.procs[i].sm_util == 70.0);
    }
    kill(busy, SIGTERM);
    assert_int_equal(job_status(f, busy), 143);
}

/* A GPU in MIG mode with a job in a 1g.5gb instance: NVML has no
 * utilization there (NOT_SUPPORTED, flagged, unknown rather than 0), and
 * the job is listed with its instance's ids. Unprivileged, the whole-GPU
 * handle refuses memory and processes (NO_PERMISSION): the reading comes
 * from the MIG devices instead, flagged, with nothing missing. */
static void test_mig_mode_readings(void **state) {
    fixture *f = *state;
    setenv("AEGIS_TEST_GPUS", "2x40960", 1);
    char path[sizeof f->dir + 8], err[512] = "";
    snprintf(path, sizeof path, "%s/mig0", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("mode 1\n", fp);
    fclose(fp);
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    tel_mig_dev dev;
    if (tel_mig_create(tel, 0, 0, 0, 1, &dev, err, sizeof err) != 0)
        fail_msg("tel_mig_create: %s", err);
    pid_t job = start_job(f, dev.uuid, "--mib", "100", "--seconds", "60",
                          "--smact", "0.5", NULL);
    tel_gpu_reading r;
    int i = await_job(tel, 0, job, &r);
    assert_int_equal(r.procs[i].mig_gi, (int)dev.gi_id);
    assert_int_equal(r.procs[i].mig_ci, (int)dev.ci_id);
    assert_true(r.r.util == CORE_UNKNOWN);
    assert_true(r.procs[i].sm_util == CORE_UNKNOWN);
    assert_int_equal(r.flags, TEL_F_NO_UTIL);
    assert_true(r.r.used_mib == 100.0 && r.r.total_mib == 40960.0);

    setenv("AEGIS_TEST_NVML_UNPRIVILEGED", "1", 1);
    read_gpu(tel, 0, &r);
    assert_int_equal(r.flags, TEL_F_NO_UTIL | TEL_F_BY_MIG_DEVICE);
    assert_true(r.r.used_mib == 100.0 && r.r.total_mib == 40960.0);
    assert_int_equal(r.nprocs, 1);
    assert_int_equal(r.procs[0].pid, job);
    assert_true(r.procs[0].used_mib == 100.0);
    assert_int_equal(r.procs[0].mig_gi, (int)dev.gi_id);
    assert_non_null(strstr(tel_flag_text(TEL_F_BY_MIG_DEVICE), "MIG device"));

    /* GPU 1 is not in MIG mode: whole-GPU readings, no instance ids */
    pid_t whole = start_job(f, "1", "--mib", "100", "--seconds", "60", NULL);
    i = await_job(tel, 1, whole, &r);
    assert_int_equal(r.flags, 0);
    assert_int_equal(r.procs[i].mig_gi, -1);
    assert_int_equal(r.procs[i].mig_ci, -1);
    kill(job, SIGTERM);
    kill(whole, SIGTERM);
    assert_int_equal(job_status(f, job), 143);
    assert_int_equal(job_status(f, whole), 143);
    assert_int_equal(tel_mig_destroy(tel, 0, dev.gi_id, dev.ci_id, err,
                                     sizeof err), 0);
}

/* Opens DCGM on an open NVML state, failing the test if it does not. */
static void open_dcgm(tel_state *tel, const char *lib) {
    char err[512] = "";
    if (tel_open_dcgm(tel, lib, err, sizeof err) != 0)
        fail_msg("tel_open_dcgm: %s", err);
}

/* Reads GPU gpu until DCGM has a value (its first comes an update period
 * after the watch); fails the test at the deadline. */
static void await_dcgm(tel_state *tel, int gpu, tel_gpu_reading *r) {
    double deadline = now_s() + AWAIT_SECONDS;
    for (read_gpu(tel, gpu, r); r->r.smact == CORE_UNKNOWN;
         read_gpu(tel, gpu, r)) {
        if (now_s() > deadline)
            fail_msg("no DCGM value on GPU %d after %.0f s: %s", gpu,
                     AWAIT_SECONDS, tel_dcgm_error(tel));
        nap_ms(20);
    }
}

static void assert_no_dcgm_fields(const tel_gpu_reading *r) {
    assert_true(r->r.smact == CORE_UNKNOWN && r->r.smocc == CORE_UNKNOWN &&
                r->r.drama == CORE_UNKNOWN);
}

/* No DCGM: a clear error naming the library, and readings go on with the
 * profiling fields unknown (the core's utilization-only filter). */
static void test_dcgm_missing(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    char err[512] = "";
    assert_int_equal(tel_open_dcgm(tel, "/nonexistent/libdcgm.so.4", err,
                                   sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/libdcgm.so.4"));
    assert_non_null(strstr(err, "dlopen"));

    setenv("AEGIS_DCGM_LIBRARY", "/nonexistent/libdcgm-env.so", 1);
    assert_int_equal(tel_open_dcgm(tel, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/libdcgm-env.so"));

    assert_int_equal(tel_open_dcgm(tel, "libm.so.6", err, sizeof err), -1);
    assert_non_null(strstr(err, "libm.so.6"));
    assert_non_null(strstr(err, "dcgmInit"));

    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    assert_no_dcgm_fields(&r);
    assert_true(r.r.util == 0.0);
    assert_null(tel_dcgm_error(tel));
}

/* A fake job's SMACT shows in SMACT, SMOCC and DRAMA on its GPU only, by
 * the stand-in's models (x1, x0.5, x0.4); the library may come from the
 * environment. */
static void test_dcgm_fields(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    setenv("AEGIS_DCGM_LIBRARY", TEL_TEST_DCGM, 1);
    open_dcgm(tel, NULL);
    tel_gpu_reading r;
    await_dcgm(tel, 1, &r);
    assert_true(r.r.smact == 0.0 && r.r.smocc == 0.0 && r.r.drama == 0.0);

    pid_t pid = start_job(f, "1", "--mib", "100", "--seconds", "60",
                          "--smact", "0.5", NULL);
    await_job(tel, 1, pid, &r);
    assert_true(r.r.smact == 0.5);
    assert_true(r.r.smocc == 0.25);
    assert_true(r.r.drama == 0.2);
    assert_null(tel_dcgm_error(tel));
    read_gpu(tel, 0, &r);
    assert_true(r.r.smact == 0.0);
    kill(pid, SIGTERM);
    assert_int_equal(job_status(f, pid), 143);
}

/* Through a host engine ($AEGIS_DCGM_HOSTENGINE) instead of an embedded
 * one; a failed connection names the address. */
static void test_dcgm_hostengine(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    setenv("AEGIS_DCGM_HOSTENGINE", "127.0.0.1:5555", 1);
    setenv("AEGIS_TEST_DCGM_FAIL", "dcgmConnect_v2", 1);
    char err[512] = "";
    assert_int_equal(tel_open_dcgm(tel, TEL_TEST_DCGM, err, sizeof err), -1);
    assert_non_null(strstr(err, "dcgmConnect_v2 to 127.0.0.1:5555"));
    unsetenv("AEGIS_TEST_DCGM_FAIL");
    open_dcgm(tel, TEL_TEST_DCGM);
    tel_gpu_reading r;
    await_dcgm(tel, 0, &r);
    assert_true(r.r.smact == 0.0);
}

/* Each call of the open sequence failing: the error names the library and
 * the call, and NVML readings go on without DCGM. */
static void test_dcgm_open_fails(void **state) {
    static const char *calls[] = {"dcgmInit", "dcgmStartEmbedded",
                                  "dcgmGetAllDevices", "dcgmFieldGroupCreate",
                                  "dcgmWatchFields"};
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        char err[512] = "";
        setenv("AEGIS_TEST_DCGM_FAIL", calls[i], 1);
        assert_int_equal(tel_open_dcgm(tel, TEL_TEST_DCGM, err, sizeof err),
                         -1);
        assert_non_null(strstr(err, TEL_TEST_DCGM));
        assert_non_null(strstr(err, calls[i]));
        assert_non_null(strstr(err, "AEGIS_TEST_DCGM_FAIL"));
    }
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    assert_no_dcgm_fields(&r);
}

/* DCGM sees fewer GPUs than NVML (it manages 32 at most): no pairing. */
static void test_dcgm_gpu_count_differs(void **state) {
    fixture *f = *state;
    setenv("AEGIS_TEST_GPUS", "33x1000", 1);
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    char err[512] = "";
    assert_int_equal(tel_open_dcgm(tel, TEL_TEST_DCGM, err, sizeof err), -1);
    assert_non_null(strstr(err, "32 GPUs where NVML has 33"));
}

/* A failing read takes the reading back to utilization, not down; the
 * failure is kept for the caller until a read works again. */
static void test_dcgm_read_fails(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    open_dcgm(tel, TEL_TEST_DCGM);
    tel_gpu_reading r;
    await_dcgm(tel, 1, &r);
    setenv("AEGIS_TEST_DCGM_FAIL", "dcgmGetLatestValuesForFields", 1);
    read_gpu(tel, 1, &r);
    assert_no_dcgm_fields(&r);
    assert_true(r.r.util == 0.0);
    const char *why = tel_dcgm_error(tel);
    assert_non_null(why);
    assert_non_null(strstr(why, "dcgmGetLatestValuesForFields (GPU 1)"));
    unsetenv("AEGIS_TEST_DCGM_FAIL");
    read_gpu(tel, 1, &r);
    assert_true(r.r.smact == 0.0);
    assert_null(tel_dcgm_error(tel));
}

/* DCGM's first value comes an update period after the watch: the blanks
 * before it are no failure (nothing to log), the reading just uses
 * utilization meanwhile. */
static void test_dcgm_first_value_after_update(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    open_dcgm(tel, TEL_TEST_DCGM);
    tel_gpu_reading r;
    read_gpu(tel, 0, &r);
    assert_no_dcgm_fields(&r);
    assert_true(r.r.util == 0.0);
    assert_null(tel_dcgm_error(tel));
    await_dcgm(tel, 0, &r);
    assert_true(r.r.smact == 0.0);
    assert_null(tel_dcgm_error(tel));
}

/* The profiling counters held by another host engine or a profiler: the
 * watch fails saying so (aegisd then runs on utilization); held later,
 * the fields come back blank, the reading falls back to utilization, and
 * tel_dcgm_error says why until they are back. */
static void test_dcgm_profiler_holds_counters(void **state) {
    fixture *f = *state;
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    setenv("AEGIS_TEST_DCGM_PROF_HELD", "1", 1);
    char err[512] = "";
    assert_int_equal(tel_open_dcgm(tel, TEL_TEST_DCGM, err, sizeof err), -1);
    assert_non_null(strstr(err, "held by another DCGM host engine or a "
                                "profiler"));
    unsetenv("AEGIS_TEST_DCGM_PROF_HELD");
    open_dcgm(tel, TEL_TEST_DCGM);
    tel_gpu_reading r;
    await_dcgm(tel, 0, &r);
    setenv("AEGIS_TEST_DCGM_PROF_HELD", "1", 1);
    double deadline = now_s() + AWAIT_SECONDS;
    do { /* blanks just after the watch are not yet a failure */
        nap_ms(50);
        read_gpu(tel, 0, &r);
        assert_no_dcgm_fields(&r);
        assert_true(r.r.util == 0.0);
    } while (!tel_dcgm_error(tel) && now_s() < deadline);
    assert_non_null(tel_dcgm_error(tel));
    assert_non_null(strstr(tel_dcgm_error(tel), "profiler"));
    unsetenv("AEGIS_TEST_DCGM_PROF_HELD");
    read_gpu(tel, 0, &r);
    assert_true(r.r.smact == 0.0);
    assert_null(tel_dcgm_error(tel));
}

static void test_job_bad_usage(void **state) {
    fixture *f = *state;
    pid_t pid = start_job(f, NULL, "--mib", "1", "--seconds", "0", NULL);
    assert_int_equal(job_status(f, pid), 2);
    assert_true(errfile_has(f, "CUDA_VISIBLE_DEVICES"));
    pid = start_job(f, "GPU-aegis-test-0000-2", "--mib", "1", "--seconds",
                    "0", NULL);
    assert_int_equal(job_status(f, pid), 2);
    assert_true(errfile_has(f, "GPU-aegis-test-0000-2"));
    pid = start_job(f, "0", "--mib", "1", NULL);
    assert_int_equal(job_status(f, pid), 2);
    pid = start_job(f, "0", "--mib", "1", "--seconds", "0", NULL);
    assert_int_equal(job_status(f, pid), 0);
}

static void test_default_shape(void **state) {
    fixture *f = *state;
    unsetenv("AEGIS_TEST_GPUS");
    tel_state *tel = open_nvml(f, TEL_TEST_NVML);
    assert_int_equal(tel_gpu_count(tel), 3);
    tel_gpu_reading r;
    read_gpu(tel, 2, &r);
    assert_true(r.r.total_mib == 40960.0);
}

static void test_bad_shapes(void **state) {
    static const char *bad[] = {"0x1000", "65x1000", "3x",       "x1000",
                                "abc",    "3x40960x", "3x0",     "-1x5",
                                "3 x 5",  "2x99999999", "2x1.5", "1x-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        setenv("AEGIS_TEST_GPUS", bad[i], 1);
        tel_state *tel = tel_open(TEL_TEST_NVML, err, sizeof err);
        if (tel) {
            tel_close(tel);
            fail_msg("AEGIS_TEST_GPUS=%s accepted", bad[i]);
        }
        assert_non_null(strstr(err, "nvmlInit_v2"));
        assert_non_null(strstr(err, bad[i]));
    }
}

static void test_missing_state_dir(void **state) {
    char err[512] = "";
    unsetenv("AEGIS_TEST_GPU_DIR");
    assert_null(tel_open(TEL_TEST_NVML, err, sizeof err));
    assert_non_null(strstr(err, TEL_TEST_NVML));
    assert_non_null(strstr(err, "AEGIS_TEST_GPU_DIR is not set"));

    setenv("AEGIS_TEST_GPU_DIR", "/nonexistent/aegis", 1);
    assert_null(tel_open(TEL_TEST_NVML, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/aegis"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_missing_library, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_open_not_nvml, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_from_environment, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_gpus_listed_idle, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_job_seen_then_freed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dead_job_ignored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_job_out_of_memory, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_job_oom_after_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_old_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_procs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_procs_old_driver, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_driver_535_process_list, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_driver_535_many_processes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_driver_550_process_list, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mps_clients_listed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mps_clients_listed_old_driver,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_proc_util_over_100_dropped,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_proc_util_stale_dropped, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_proc_util_idle_job, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_proc_util_not_found_is_not_idle,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_mig_mode_readings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_hostengine, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_open_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_gpu_count_differs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_read_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_first_value_after_update,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_dcgm_profiler_holds_counters,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_bad_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_state_dir, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
