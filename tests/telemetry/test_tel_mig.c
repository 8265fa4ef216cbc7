/* test_tel_mig.c -- tel_mig.h against libaegis-testnvml.so: the exact NVML
 * calls behind creating, finding, listing and destroying a job's MIG
 * instance, read back from the library's mig-calls.log.
 *
 * Every test gets a fresh state folder, two A100-SXM4-40GB test GPUs, and
 * MIG mode on GPU 0 only (written into mig0, as an administrator's
 * `nvidia-smi -mig 1` would leave it). Profile numbers: 1g.5gb is NVML
 * profile 0 (id 19), 3g.20gb profile 2 (id 9).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tel.h"
#include "tel_mig.h"
#include "tmpdir.h"

typedef struct fixture {
    char dir[64];
    tel_state *tel;
} fixture;

static void write_file(const fixture *f, const char *name, const char *text) {
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int open_gpus(fixture *f, const char *model) {
    if (model)
        setenv("AEGIS_TEST_GPU_MODEL", model, 1);
    else
        unsetenv("AEGIS_TEST_GPU_MODEL");
    char err[512] = "";
    f->tel = tel_open(TEL_TEST_NVML, err, sizeof err);
    if (!f->tel)
        fail_msg("tel_open: %s", err);
    /* Only what the test itself does goes in the log. */
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/mig-calls.log", f->dir);
    unlink(path);
    return 0;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (tmpdir_make_gpus(f->dir, sizeof f->dir, "aegis-telmig", "2x40960") < 0)
        return -1;
    write_file(f, "mig0", "mode 1\n");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    tel_close(f->tel);
    tmpdir_remove(f->dir);
    free(f);
    return 0;
}

/* The call log, then empties it. */
static const char *take_log(fixture *f) {
    const char *text = tmpdir_read(f->dir, "mig-calls.log");
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/mig-calls.log", f->dir);
    unlink(path);
    return text;
}

static void test_mode(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    assert_int_equal(tel_mig_enabled(f->tel, 0, err, sizeof err), 1);
    assert_int_equal(tel_mig_enabled(f->tel, 1, err, sizeof err), 0);
    assert_int_equal(tel_mig_enabled(f->tel, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "GPU 2: no such GPU"));
    assert_string_equal(take_log(f),
        "nvmlDeviceGetMigMode gpu0 -> 0\n"
        "nvmlDeviceGetMigMode gpu1 -> 0\n");
}

/* MIG mode changes on an idle GPU only: a GPU instance keeps it on. */
static void test_set_mode(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    assert_int_equal(tel_mig_set_mode(f->tel, 1, 1, err, sizeof err), 0);
    assert_int_equal(tel_mig_enabled(f->tel, 1, err, sizeof err), 1);
    tel_mig_dev d;
    assert_int_equal(tel_mig_create(f->tel, 1, 0, 0, 1, &d, err, sizeof err),
                     0);
    take_log(f);
    assert_int_equal(tel_mig_set_mode(f->tel, 1, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "nvmlDeviceSetMigMode (GPU 1)"));
    assert_non_null(strstr(err, "still has 1 GPU instances"));
    assert_string_equal(take_log(f), "nvmlDeviceSetMigMode gpu1 mode=0 -> 19\n");
    assert_int_equal(tel_mig_destroy(f->tel, 1, d.gi_id, d.ci_id, err,
                                     sizeof err), 0);
    assert_int_equal(tel_mig_set_mode(f->tel, 1, 0, err, sizeof err), 0);
    assert_int_equal(tel_mig_enabled(f->tel, 1, err, sizeof err), 0);
}

/* A GPU model without MIG (a V100) answers NOT_SUPPORTED: MIG off. */
static void test_model_without_mig(void **state) {
    fixture *f = *state;
    open_gpus(f, "Tesla V100-SXM2-32GB");
    char err[512] = "";
    assert_int_equal(tel_mig_enabled(f->tel, 0, err, sizeof err), 0);
    tel_mig_dev devs[TEL_MIG_MAX_DEVS];
    assert_int_equal(tel_mig_list(f->tel, 0, devs, TEL_MIG_MAX_DEVS, err,
                                  sizeof err), 0);
}

static void test_create_list_destroy(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    tel_mig_dev dev;
    assert_int_equal(tel_mig_create(f->tel, 0, 2, 4, 4, &dev, err,
                                    sizeof err), 0);
    assert_string_equal(dev.uuid, "MIG-aegis-test-0-1-0");
    assert_int_equal(dev.gi_id, 1);
    assert_int_equal(dev.ci_id, 0);
    assert_int_equal(dev.profile_id, 9);
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceProfileInfo gpu0 profile=2 -> 0\n"
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu0 profileId=9 start=4 "
        "size=4 -> 0\n"
        "nvmlGpuInstanceGetInfo gpu0/gi1 -> 0\n"
        "nvmlGpuInstanceGetComputeInstanceProfileInfo gpu0/gi1 profile=2 "
        "engProfile=0 -> 0\n"
        "nvmlGpuInstanceCreateComputeInstance gpu0/gi1 profileId=2 -> 0\n"
        "nvmlDeviceGetMaxMigDeviceCount gpu0 -> 0\n"
        "nvmlDeviceGetMigDeviceHandleByIndex gpu0 index=0 -> 0\n"
        "nvmlDeviceGetGpuInstanceId gpu0/gi1/ci0 -> 0\n"
        "nvmlDeviceGetComputeInstanceId gpu0/gi1/ci0 -> 0\n"
        "nvmlDeviceGetUUID gpu0/gi1/ci0 -> 0\n");

    tel_mig_dev small;
    assert_int_equal(tel_mig_create(f->tel, 0, 0, 0, 1, &small, err,
                                    sizeof err), 0);
    assert_string_equal(small.uuid, "MIG-aegis-test-0-2-0");
    take_log(f);
    tel_mig_dev devs[TEL_MIG_MAX_DEVS];
    assert_int_equal(tel_mig_list(f->tel, 0, devs, TEL_MIG_MAX_DEVS, err,
                                  sizeof err), 2);
    assert_string_equal(devs[0].uuid, "MIG-aegis-test-0-1-0");
    assert_int_equal(devs[0].start, 4);
    assert_int_equal(devs[0].size, 4);
    assert_int_equal(devs[0].profile_id, 9);
    assert_string_equal(devs[1].uuid, "MIG-aegis-test-0-2-0");
    assert_int_equal(devs[1].gi_id, 2);
    assert_int_equal(devs[1].start, 0);
    assert_int_equal(devs[1].profile_id, 19);
    take_log(f);

    assert_int_equal(tel_mig_destroy(f->tel, 0, 1, 0, err, sizeof err), 0);
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceById gpu0 id=1 -> 0\n"
        "nvmlGpuInstanceGetComputeInstanceById gpu0/gi1 id=0 -> 0\n"
        "nvmlComputeInstanceDestroy gpu0/gi1/ci0 -> 0\n"
        "nvmlGpuInstanceDestroy gpu0/gi1 -> 0\n");
    /* Gone already: a second cleanup is not an error. */
    assert_int_equal(tel_mig_destroy(f->tel, 0, 1, 0, err, sizeof err), 0);
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceById gpu0 id=1 -> 6\n");
    assert_int_equal(tel_mig_list(f->tel, 0, devs, TEL_MIG_MAX_DEVS, err,
                                  sizeof err), 1);
    assert_string_equal(devs[0].uuid, "MIG-aegis-test-0-2-0");
}

/* A placement on taken slices fails at the GPU instance: nothing made,
 * nothing to undo, the message names the call, and it is "busy" (an
 * instance on its way out holds them), not a failure of the job. */
static void test_create_on_taken_slices(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    tel_mig_dev a, b;
    assert_int_equal(tel_mig_create(f->tel, 0, 2, 0, 4, &a, err, sizeof err),
                     0);
    take_log(f);
    assert_int_equal(tel_mig_create(f->tel, 0, 0, 2, 1, &b, err, sizeof err),
                     TEL_MIG_BUSY);
    assert_non_null(strstr(err, "nvmlDeviceCreateGpuInstanceWithPlacement "
                                "(GPU 0)"));
    assert_non_null(strstr(err, "overlap GPU instance 1"));
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceProfileInfo gpu0 profile=0 -> 0\n"
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu0 profileId=19 start=2 "
        "size=1 -> 23\n");
}

/* MIG mode off: the driver refuses the instance, and tel says which call. */
static void test_create_mode_off(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    tel_mig_dev d;
    assert_int_equal(tel_mig_create(f->tel, 1, 0, 0, 1, &d, err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "nvmlDeviceGetGpuInstanceProfileInfo (GPU "
                                "1)"));
    assert_non_null(strstr(err, "MIG mode is off"));
}

/* A GPU instance whose compute instance was never made (a crash between
 * the two) is still cleaned up. */
static void test_destroy_without_ci(void **state) {
    fixture *f = *state;
    write_file(f, "mig0", "mode 1\ngi 3 19 6\n");
    open_gpus(f, NULL);
    char err[512] = "";
    assert_int_equal(tel_mig_destroy(f->tel, 0, 3, 0, err, sizeof err), 0);
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceById gpu0 id=3 -> 0\n"
        "nvmlGpuInstanceGetComputeInstanceById gpu0/gi3 id=0 -> 6\n"
        "nvmlGpuInstanceDestroy gpu0/gi3 -> 0\n");
}

/* MIG mode turned off (by a reset, or by hand) took every instance with
 * it: NVML answers NOT_SUPPORTED for an instance id then, not NOT_FOUND,
 * and cleanup counts the instance as gone. */
static void test_destroy_mig_off(void **state) {
    fixture *f = *state;
    write_file(f, "mig0", "mode 0\n");
    open_gpus(f, NULL);
    char err[512] = "";
    assert_int_equal(tel_mig_destroy(f->tel, 0, 3, 0, err, sizeof err), 0);
    assert_string_equal(take_log(f),
        "nvmlDeviceGetGpuInstanceById gpu0 id=3 -> 3\n");
}

/* Starts aegis-fakegpu with CUDA_VISIBLE_DEVICES=cvd for a minute, and
 * waits until its allocation file is there. */
static pid_t start_fake(fixture *f, const char *cvd, int gpu) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
        execl(TEL_TEST_FAKEGPU, TEL_TEST_FAKEGPU, "--mib", "100",
              "--seconds", "60", (char *)NULL);
        _exit(127);
    }
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/gpu%d.%ld", f->dir, gpu, (long)pid);
    struct timespec nap = {0, 5000000L};
    for (int i = 0; i < 2000 && access(path, F_OK) != 0; i++)
        nanosleep(&nap, NULL); /* polls for the file, 10 s at most */
    assert_int_equal(access(path, F_OK), 0);
    return pid;
}

static void stop_fake(pid_t pid) {
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* MIG mode set on a GPU with processes: NVML accepts it but leaves it
 * pending (IN_USE); tel takes it back and says "busy", not "reset". Once
 * the GPU is idle it works. */
static void test_set_mode_busy(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    pid_t job = start_fake(f, "1", 1);
    char err[512] = "";
    assert_int_equal(tel_mig_set_mode(f->tel, 1, 1, err, sizeof err),
                     TEL_MIG_BUSY);
    assert_non_null(strstr(err, "GPU is busy"));
    assert_null(strstr(err, "reset"));
    assert_int_equal(tel_mig_enabled(f->tel, 1, err, sizeof err), 0);
    /* nothing left pending for the GPU's next reset */
    assert_string_equal(tmpdir_read(f->dir, "mig1"), "mode 0\n");
    stop_fake(job);
    assert_int_equal(tel_mig_set_mode(f->tel, 1, 1, err, sizeof err), 0);
    assert_int_equal(tel_mig_enabled(f->tel, 1, err, sizeof err), 1);
}

/* Where only a reset applies the mode (pass-through): a failure that
 * says so. */
static void test_set_mode_reset_required(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    setenv("AEGIS_TEST_MIG_RESET_REQUIRED", "1", 1);
    char err[512] = "";
    int rc = tel_mig_set_mode(f->tel, 1, 1, err, sizeof err);
    unsetenv("AEGIS_TEST_MIG_RESET_REQUIRED");
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "until the GPU is reset"));
}

/* A compute instance that still runs a process is not destroyed: the
 * failure names the call, the instance stays, and goes once the process
 * has. */
static void test_destroy_in_use(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[512] = "";
    tel_mig_dev d;
    assert_int_equal(tel_mig_create(f->tel, 0, 0, 0, 1, &d, err, sizeof err),
                     0);
    pid_t job = start_fake(f, d.uuid, 0);
    assert_int_equal(tel_mig_destroy(f->tel, 0, d.gi_id, d.ci_id, err,
                                     sizeof err), -1);
    assert_non_null(strstr(err, "nvmlComputeInstanceDestroy (GPU 0)"));
    assert_non_null(strstr(err, "NVML error 19"));
    tel_mig_dev devs[TEL_MIG_MAX_DEVS];
    assert_int_equal(tel_mig_list(f->tel, 0, devs, TEL_MIG_MAX_DEVS, err,
                                  sizeof err), 1);
    stop_fake(job);
    assert_int_equal(tel_mig_destroy(f->tel, 0, d.gi_id, d.ci_id, err,
                                     sizeof err), 0);
    assert_int_equal(tel_mig_list(f->tel, 0, devs, TEL_MIG_MAX_DEVS, err,
                                  sizeof err), 0);
}

/* Runs aegis-fakegpu with `mib` on device cvd (and, when not NULL, the
 * MPS pipe directory and pinned limit) for no time; its exit status, its
 * stderr in err. */
static int run_fake(fixture *f, const char *cvd, const char *mib,
                    const char *mps_pipe, const char *pinned, char *err,
                    size_t errlen) {
    char errpath[sizeof f->dir + 16];
    snprintf(errpath, sizeof errpath, "%s.err", f->dir);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("CUDA_VISIBLE_DEVICES", cvd, 1);
        if (mps_pipe)
            setenv("CUDA_MPS_PIPE_DIRECTORY", mps_pipe, 1);
        if (pinned)
            setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", pinned, 1);
        if (!freopen("/dev/null", "w", stdout) ||
            !freopen(errpath, "w", stderr))
            _exit(126);
        execl(TEL_TEST_FAKEGPU, TEL_TEST_FAKEGPU, "--mib", mib, "--seconds",
              "0", (char *)NULL);
        _exit(127);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    FILE *fp = fopen(errpath, "r");
    size_t n = fp ? fread(err, 1, errlen - 1, fp) : 0;
    err[n] = '\0';
    if (fp)
        fclose(fp);
    unlink(errpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A fake job on a MIG device has that instance's memory, not the GPU's;
 * a device that was never made is an invalid ordinal. */
static void test_fakegpu_on_mig(void **state) {
    fixture *f = *state;
    open_gpus(f, NULL);
    char err[1024] = "";
    tel_mig_dev d;
    assert_int_equal(tel_mig_create(f->tel, 0, 0, 0, 1, &d, err, sizeof err),
                     0); /* 1g.5gb: 4864 MiB */
    assert_int_equal(run_fake(f, d.uuid, "4000", NULL, NULL, err, sizeof err),
                     0);
    assert_int_equal(run_fake(f, d.uuid, "6000", NULL, NULL, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "CUDA out of memory. Tried to allocate 5.86 "
                                "GiB (GPU 0; 4.75 GiB total capacity"));
    assert_int_equal(run_fake(f, "MIG-aegis-test-0-5-0", "10", NULL, NULL, err,
                              sizeof err), 2);
    assert_non_null(strstr(err, "invalid device ordinal"));
}

/* Under MPS: no control socket is a failed client, and the pinned limit
 * is an OOM. */
static void test_fakegpu_under_mps(void **state) {
    fixture *f = *state;
    char err[1024] = "";
    assert_int_equal(run_fake(f, "0", "10", f->dir, NULL, err, sizeof err), 1);
    assert_non_null(strstr(err, "MPS client failed to connect"));
    assert_int_equal(run_fake(f, "0", "2000", NULL, "0=1000M", err,
                              sizeof err), 1);
    assert_non_null(strstr(err, "CUDA out of memory"));
    assert_int_equal(run_fake(f, "0", "900", NULL, "0=1G", err, sizeof err),
                     0);
    assert_int_equal(run_fake(f, "0", "900", NULL, "0=1X", err, sizeof err),
                     1);
    assert_non_null(strstr(err, "bad entry"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_without_mig, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_list_destroy, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_on_taken_slices, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_create_mode_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_destroy_mig_off, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_destroy_without_ci, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fakegpu_on_mig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_mode_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_mode_reset_required, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_destroy_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fakegpu_under_mps, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
