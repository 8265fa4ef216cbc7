/* test_testmig.c -- the MIG model of libaegis-testnvml.so, called through
 * dlopen as a loader would: the limits the real driver enforces (mode,
 * placements, in use), the state shared through files, and the call log.
 *
 * Every test gets a fresh state folder, two GPUs and the default model
 * (A100-SXM4-40GB: 1g.5gb id 19, 2g.10gb id 14, 3g.20gb id 9, 7g id 0).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tel_nvml.h"
#include "tmpdir.h"

typedef struct fixture {
    char dir[64];
    void *lib;
} fixture;

/* The library's function `name`, typed by the caller. */
#define FN(f, type, name) ((type *)sym((f), (name)))

static void *sym(fixture *f, const char *name) {
    void *p = dlsym(f->lib, name);
    if (!p)
        fail_msg("dlsym %s: %s", name, dlerror());
    return p;
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (tmpdir_make_gpus(f->dir, sizeof f->dir, "aegis-tmig", "2x40960") < 0)
        return -1;
    unsetenv("AEGIS_TEST_GPU_MODEL");
    f->lib = dlopen(TEL_TEST_NVML, RTLD_NOW | RTLD_LOCAL);
    if (!f->lib)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    /* Undo the test's nvmlInit_v2, so the next test's reads its
     * environment even if dlclose leaves the library loaded. */
    while (FN(f, tel_nvml_shutdown_fn, "nvmlShutdown")() == NVML_SUCCESS)
        ;
    dlclose(f->lib);
    tmpdir_remove(f->dir);
    free(f);
    return 0;
}

/* nvmlInit_v2 and GPU gpu's handle. */
static nvmlDevice_t gpu_handle(fixture *f, unsigned int gpu) {
    assert_int_equal(FN(f, tel_nvml_init_fn, "nvmlInit_v2")(), NVML_SUCCESS);
    nvmlDevice_t d = NULL;
    assert_int_equal(FN(f, tel_nvml_handle_fn,
                        "nvmlDeviceGetHandleByIndex_v2")(gpu, &d),
                     NVML_SUCCESS);
    return d;
}

/* Sets MIG mode; returns the call's failure, or (when it worked) its
 * activationStatus: whether the mode took effect. */
static nvmlReturn_t set_mode(fixture *f, nvmlDevice_t d, unsigned int mode) {
    nvmlReturn_t act = -1;
    nvmlReturn_t rc = FN(f, tel_nvml_set_mig_mode_fn,
                         "nvmlDeviceSetMigMode")(d, mode, &act);
    if (rc != NVML_SUCCESS)
        assert_int_equal(act, rc);
    return rc != NVML_SUCCESS ? rc : act;
}

/* Asserts GPU d's current and pending MIG modes. */
static void assert_modes(fixture *f, nvmlDevice_t d, unsigned int current,
                         unsigned int pending) {
    unsigned int cur = 9, pend = 9;
    assert_int_equal(FN(f, tel_nvml_mig_mode_fn, "nvmlDeviceGetMigMode")(
                         d, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, current);
    assert_int_equal(pend, pending);
}

/* Writes an allocation file for this (live) process on GPU gpu. */
static void hold_memory(fixture *f, int gpu, const char *text) {
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/gpu%d.%ld", f->dir, gpu, (long)getpid());
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void release_memory(fixture *f, int gpu) {
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/gpu%d.%ld", f->dir, gpu, (long)getpid());
    unlink(path);
}

static nvmlReturn_t create_gi(fixture *f, nvmlDevice_t d, unsigned int id,
                              unsigned int start, unsigned int size,
                              nvmlGpuInstance_t *gi) {
    nvmlGpuInstancePlacement_t pl = {start, size};
    return FN(f, tel_nvml_gi_create_fn,
              "nvmlDeviceCreateGpuInstanceWithPlacement")(d, id, &pl, gi);
}

/* The whole call log. */
static const char *read_log(fixture *f) {
    return tmpdir_read(f->dir, "mig-calls.log");
}

static void truncate_log(fixture *f) {
    char path[sizeof f->dir + 32];
    snprintf(path, sizeof path, "%s/mig-calls.log", f->dir);
    unlink(path);
}

static void test_name_is_the_model(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    assert_int_equal(FN(f, tel_nvml_string_fn, "nvmlDeviceGetName")(
                         d, name, sizeof name), NVML_SUCCESS);
    assert_string_equal(name, "aegis test GPU: NVIDIA A100-SXM4-40GB");
}

static void test_mode_off_refuses_instances(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    unsigned int cur = 9, pend = 9;
    assert_int_equal(FN(f, tel_nvml_mig_mode_fn, "nvmlDeviceGetMigMode")(
                         d, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, 0);
    assert_int_equal(pend, 0);
    nvmlGpuInstance_t gi = NULL;
    assert_int_equal(create_gi(f, d, 9, 0, 4, &gi), NVML_ERROR_NOT_SUPPORTED);
    nvmlGpuInstanceProfileInfo_t info;
    assert_int_equal(FN(f, tel_nvml_gi_profile_fn,
                        "nvmlDeviceGetGpuInstanceProfileInfo")(d, 2, &info),
                     NVML_ERROR_NOT_SUPPORTED);
    const char *why = FN(f, tel_nvml_error_string_fn, "nvmlErrorString")(
        NVML_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(why, "MIG mode is off"));
    assert_string_equal(read_log(f),
        "nvmlDeviceGetMigMode gpu0 -> 0\n"
        "nvmlDeviceCreateGpuInstanceWithPlacement gpu0 profileId=9 start=0 "
        "size=4 -> 3\n"
        "nvmlDeviceGetGpuInstanceProfileInfo gpu0 profile=2 -> 3\n");
}

static void test_profiles_and_placements(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    tel_nvml_gi_profile_fn *info_fn = FN(f, tel_nvml_gi_profile_fn,
                                         "nvmlDeviceGetGpuInstanceProfileInfo");
    nvmlGpuInstanceProfileInfo_t info;
    static const unsigned int ids[] = {19, 14, 9, 5, 0};
    static const unsigned int mem[] = {4864, 9856, 19968, 19968, 40192};
    for (unsigned int p = 0; p < 5; p++) {
        assert_int_equal(info_fn(d, p, &info), NVML_SUCCESS);
        assert_int_equal(info.id, ids[p]);
        assert_int_equal(info.memorySizeMB, mem[p]);
    }
    assert_int_equal(info_fn(d, 9, &info), NVML_SUCCESS); /* 1g.10gb */
    assert_int_equal(info.id, 15);
    assert_int_equal(info_fn(d, 5, &info), NVML_ERROR_NOT_SUPPORTED); /* 8 */

    tel_nvml_gi_placements_fn *pl_fn = FN(
        f, tel_nvml_gi_placements_fn,
        "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
    unsigned int n = 0;
    assert_int_equal(pl_fn(d, 14, NULL, &n), NVML_SUCCESS);
    assert_int_equal(n, 3);
    nvmlGpuInstancePlacement_t pl[8];
    n = 8;
    assert_int_equal(pl_fn(d, 9, pl, &n), NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(pl[0].start, 0);
    assert_int_equal(pl[1].start, 4);
    assert_int_equal(pl[1].size, 4);
    n = 1;
    assert_int_equal(pl_fn(d, 19, pl, &n), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 7);
}

static void test_placement_rules(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    nvmlGpuInstance_t a = NULL, b = NULL;
    assert_int_equal(create_gi(f, d, 9, 2, 4, &a),
                     NVML_ERROR_INVALID_ARGUMENT); /* 3g starts at 0 or 4 */
    assert_int_equal(create_gi(f, d, 9, 4, 2, &a),
                     NVML_ERROR_INVALID_ARGUMENT); /* wrong size */
    assert_int_equal(create_gi(f, d, 77, 0, 1, &a),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(create_gi(f, d, 9, 4, 4, &a), NVML_SUCCESS);
    assert_int_equal(create_gi(f, d, 14, 4, 2, &b),
                     NVML_ERROR_INSUFFICIENT_RESOURCES); /* overlaps */
    assert_int_equal(create_gi(f, d, 5, 0, 4, &b), NVML_SUCCESS); /* 4g */
    assert_int_equal(create_gi(f, d, 19, 0, 1, &b),
                     NVML_ERROR_INSUFFICIENT_RESOURCES);

    nvmlGpuInstanceInfo_t gi;
    assert_int_equal(FN(f, tel_nvml_gi_info_fn, "nvmlGpuInstanceGetInfo")(
                         a, &gi), NVML_SUCCESS);
    assert_int_equal(gi.id, 1);
    assert_int_equal(gi.profileId, 9);
    assert_int_equal(gi.placement.start, 4);
    assert_true(gi.device == d);

    nvmlGpuInstance_t list[4];
    unsigned int n = 0;
    assert_int_equal(FN(f, tel_nvml_gi_list_fn, "nvmlDeviceGetGpuInstances")(
                         d, 9, list, &n), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_true(list[0] == a);
    /* Turning MIG off with instances on the GPU is refused. */
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_DISABLE),
                     NVML_ERROR_IN_USE);
}

/* nvmlDeviceSetMigMode on a GPU with processes works, but the new mode
 * stays pending (activationStatus IN_USE) until it is set again on an
 * idle GPU. */
static void test_enable_pending_while_processes(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 1);
    hold_memory(f, 1, "100 0.5\n"); /* a live process: this one */
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE),
                     NVML_ERROR_IN_USE);
    assert_modes(f, d, NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_ENABLE);
    release_memory(f, 1);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    assert_modes(f, d, NVML_DEVICE_MIG_ENABLE, NVML_DEVICE_MIG_ENABLE);
}

/* Where the GPU can be reset only from outside (pass-through): the mode
 * stays pending with RESET_REQUIRED, idle GPU or not. */
static void test_mode_pending_reset(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    setenv("AEGIS_TEST_MIG_RESET_REQUIRED", "1", 1);
    nvmlReturn_t act = set_mode(f, d, NVML_DEVICE_MIG_ENABLE);
    unsetenv("AEGIS_TEST_MIG_RESET_REQUIRED");
    assert_int_equal(act, NVML_ERROR_RESET_REQUIRED);
    assert_modes(f, d, NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_ENABLE);
}

/* No MIG devices while MIG mode is off; one per compute slice once on. */
static void test_max_mig_devices(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    tel_nvml_mig_max_fn *max = FN(f, tel_nvml_mig_max_fn,
                                  "nvmlDeviceGetMaxMigDeviceCount");
    unsigned int n = 9;
    assert_int_equal(max(d, &n), NVML_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    assert_int_equal(max(d, &n), NVML_SUCCESS);
    assert_int_equal(n, 7);
}

/* A compute instance with a process in it cannot be destroyed (IN_USE);
 * once the process is gone it can. */
static void test_destroy_in_use(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    nvmlGpuInstance_t gi = NULL;
    nvmlComputeInstance_t ci = NULL;
    assert_int_equal(create_gi(f, d, 19, 0, 1, &gi), NVML_SUCCESS);
    assert_int_equal(FN(f, tel_nvml_ci_create_fn,
                        "nvmlGpuInstanceCreateComputeInstance")(gi, 0, &ci),
                     NVML_SUCCESS);
    tel_nvml_ci_destroy_fn *cd = FN(f, tel_nvml_ci_destroy_fn,
                                    "nvmlComputeInstanceDestroy");
    hold_memory(f, 0, "100 0.5000 1 0\n");
    assert_int_equal(cd(ci), NVML_ERROR_IN_USE);
    release_memory(f, 0);
    assert_int_equal(cd(ci), NVML_SUCCESS);
}

/* On a GPU in MIG mode: no utilization (the GPU's or per process); the
 * whole GPU's memory and processes only for a privileged caller, each MIG
 * device's for anyone, with the instance ids of each process. */
static void test_mig_mode_readings(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    nvmlGpuInstance_t gi = NULL;
    nvmlComputeInstance_t ci = NULL;
    assert_int_equal(create_gi(f, d, 19, 0, 1, &gi), NVML_SUCCESS);
    assert_int_equal(FN(f, tel_nvml_ci_create_fn,
                        "nvmlGpuInstanceCreateComputeInstance")(gi, 0, &ci),
                     NVML_SUCCESS);
    hold_memory(f, 0, "100 0.5000 1 0\n");
    nvmlUtilization_t u;
    assert_int_equal(FN(f, tel_nvml_util_fn, "nvmlDeviceGetUtilizationRates")(
                         d, &u), NVML_ERROR_NOT_SUPPORTED);
    nvmlProcessUtilizationSample_t sample;
    unsigned int n = 1;
    assert_int_equal(FN(f, tel_nvml_proc_util_fn,
                        "nvmlDeviceGetProcessUtilization")(d, &sample, &n, 0),
                     NVML_ERROR_NOT_SUPPORTED);

    tel_nvml_memory_fn *mem = FN(f, tel_nvml_memory_fn,
                                 "nvmlDeviceGetMemoryInfo");
    tel_nvml_procs_fn *procs = FN(f, tel_nvml_procs_fn,
                                  "nvmlDeviceGetComputeRunningProcesses_v2");
    nvmlMemory_t m;
    nvmlProcessInfo_v2_t p[2];
    n = 2;
    assert_int_equal(mem(d, &m), NVML_SUCCESS); /* this test runs as root */
    assert_int_equal(procs(d, &n, p), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_true(p[0].pid == (unsigned int)getpid() && p[0].gpuInstanceId == 1 &&
                p[0].computeInstanceId == 0);
    setenv("AEGIS_TEST_NVML_UNPRIVILEGED", "1", 1);
    assert_int_equal(mem(d, &m), NVML_ERROR_NO_PERMISSION);
    assert_int_equal(procs(d, &n, p), NVML_ERROR_NO_PERMISSION);
    nvmlDevice_t mig = NULL;
    assert_int_equal(FN(f, tel_nvml_mig_handle_fn,
                        "nvmlDeviceGetMigDeviceHandleByIndex")(d, 0, &mig),
                     NVML_SUCCESS);
    n = 2;
    assert_int_equal(procs(mig, &n, p), NVML_SUCCESS);
    unsetenv("AEGIS_TEST_NVML_UNPRIVILEGED");
    assert_int_equal(n, 1);
    assert_true(p[0].pid == (unsigned int)getpid() && p[0].gpuInstanceId == 1 &&
                p[0].computeInstanceId == 0 && p[0].usedGpuMemory == 100 << 20);
    release_memory(f, 0);
}

/* A compute instance blocks its GPU instance's destruction; the MIG device
 * it makes has a MIG UUID and the instance's memory; a second process (a
 * fresh load of the library) sees the same state. */
static void test_compute_instances_and_devices(void **state) {
    fixture *f = *state;
    nvmlDevice_t d = gpu_handle(f, 0);
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_ENABLE), NVML_SUCCESS);
    nvmlGpuInstance_t gi = NULL;
    assert_int_equal(create_gi(f, d, 14, 2, 2, &gi), NVML_SUCCESS);
    nvmlComputeInstanceProfileInfo_t cp;
    tel_nvml_ci_profile_fn *cp_fn = FN(
        f, tel_nvml_ci_profile_fn,
        "nvmlGpuInstanceGetComputeInstanceProfileInfo");
    assert_int_equal(cp_fn(gi, 1, 0, &cp), NVML_SUCCESS);
    assert_int_equal(cp.sliceCount, 2);
    assert_int_equal(cp_fn(gi, 2, 0, &cp), NVML_ERROR_NOT_SUPPORTED);
    nvmlComputeInstance_t ci = NULL, ci2 = NULL;
    tel_nvml_ci_create_fn *ci_fn = FN(f, tel_nvml_ci_create_fn,
                                      "nvmlGpuInstanceCreateComputeInstance");
    assert_int_equal(ci_fn(gi, cp.id, &ci), NVML_SUCCESS);
    assert_int_equal(ci_fn(gi, 0, &ci2), NVML_ERROR_INSUFFICIENT_RESOURCES);

    nvmlDevice_t mig = NULL;
    tel_nvml_mig_handle_fn *mh = FN(f, tel_nvml_mig_handle_fn,
                                    "nvmlDeviceGetMigDeviceHandleByIndex");
    assert_int_equal(mh(d, 0, &mig), NVML_SUCCESS);
    assert_int_equal(mh(d, 1, &mig), NVML_ERROR_NOT_FOUND);
    assert_int_equal(mh(d, 0, &mig), NVML_SUCCESS);
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(FN(f, tel_nvml_string_fn, "nvmlDeviceGetUUID")(
                         mig, uuid, sizeof uuid), NVML_SUCCESS);
    assert_string_equal(uuid, "MIG-aegis-test-0-1-0");
    nvmlMemory_t m;
    assert_int_equal(FN(f, tel_nvml_memory_fn, "nvmlDeviceGetMemoryInfo")(
                         mig, &m), NVML_SUCCESS);
    assert_true(m.total == 9856ULL << 20 && m.used == 0);
    /* memory charged to its GPU instance (as aegis-fakegpu does, here in
     * this live process's name) is its memory in use */
    char alloc[sizeof f->dir + 32];
    snprintf(alloc, sizeof alloc, "%s/gpu0.%d", f->dir, (int)getpid());
    FILE *fa = fopen(alloc, "w");
    assert_non_null(fa);
    fputs("1000 0.5000 1 0\n", fa);
    fclose(fa);
    assert_int_equal(FN(f, tel_nvml_memory_fn, "nvmlDeviceGetMemoryInfo")(
                         mig, &m), NVML_SUCCESS);
    assert_true(m.used == 1000ULL << 20 && m.free == 8856ULL << 20);
    unlink(alloc);
    unsigned int id = 9;
    assert_int_equal(FN(f, tel_nvml_mig_id_fn, "nvmlDeviceGetGpuInstanceId")(
                         mig, &id), NVML_SUCCESS);
    assert_int_equal(id, 1);
    assert_int_equal(FN(f, tel_nvml_mig_id_fn, "nvmlDeviceGetGpuInstanceId")(
                         d, &id), NVML_ERROR_NOT_SUPPORTED);

    tel_nvml_gi_destroy_fn *gd = FN(f, tel_nvml_gi_destroy_fn,
                                    "nvmlGpuInstanceDestroy");
    assert_int_equal(gd(gi), NVML_ERROR_IN_USE);

    /* Another load of the library: state comes from the folder. */
    void *other = dlopen(TEL_TEST_NVML_COPY, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(other);
    tel_nvml_init_fn *init2 = (tel_nvml_init_fn *)dlsym(other, "nvmlInit_v2");
    tel_nvml_handle_fn *h2 = (tel_nvml_handle_fn *)dlsym(
        other, "nvmlDeviceGetHandleByIndex_v2");
    tel_nvml_gi_by_id_fn *by2 = (tel_nvml_gi_by_id_fn *)dlsym(
        other, "nvmlDeviceGetGpuInstanceById");
    tel_nvml_ci_by_id_fn *cby2 = (tel_nvml_ci_by_id_fn *)dlsym(
        other, "nvmlGpuInstanceGetComputeInstanceById");
    tel_nvml_ci_destroy_fn *cd2 = (tel_nvml_ci_destroy_fn *)dlsym(
        other, "nvmlComputeInstanceDestroy");
    assert_true(init2 && h2 && by2 && cby2 && cd2);
    nvmlDevice_t d2 = NULL;
    nvmlGpuInstance_t gi2 = NULL;
    nvmlComputeInstance_t c2 = NULL;
    assert_int_equal(init2(), NVML_SUCCESS);
    assert_int_equal(h2(0, &d2), NVML_SUCCESS);
    assert_int_equal(by2(d2, 1, &gi2), NVML_SUCCESS);
    assert_int_equal(by2(d2, 2, &gi2), NVML_ERROR_NOT_FOUND);
    assert_int_equal(by2(d2, 1, &gi2), NVML_SUCCESS);
    assert_int_equal(cby2(gi2, 0, &c2), NVML_SUCCESS);
    assert_int_equal(cd2(c2), NVML_SUCCESS);
    dlclose(other);

    assert_int_equal(gd(gi), NVML_SUCCESS);
    assert_int_equal(gd(gi), NVML_ERROR_INVALID_ARGUMENT); /* gone */
    assert_int_equal(set_mode(f, d, NVML_DEVICE_MIG_DISABLE), NVML_SUCCESS);
}

static void test_model_without_mig(void **state) {
    fixture *f = *state;
    setenv("AEGIS_TEST_GPU_MODEL", "Tesla V100-SXM2-32GB", 1);
    nvmlDevice_t d = gpu_handle(f, 0);
    unsigned int cur, pend;
    assert_int_equal(FN(f, tel_nvml_mig_mode_fn, "nvmlDeviceGetMigMode")(
                         d, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
    truncate_log(f);
    assert_int_equal(set_mode(f, d, 1), NVML_ERROR_NOT_SUPPORTED);
    assert_string_equal(read_log(f), "nvmlDeviceSetMigMode gpu0 mode=1 -> 3\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_name_is_the_model, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mode_off_refuses_instances,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles_and_placements, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_placement_rules, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mode_pending_reset, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_max_mig_devices, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_destroy_in_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mig_mode_readings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_enable_pending_while_processes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute_instances_and_devices,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_model_without_mig, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
