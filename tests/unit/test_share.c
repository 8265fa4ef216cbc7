/* test_share.c -- the core's sharing modes (core.h, "sharing modes"):
 * hand-written event sequences on exclusive, naive, mps, mig and auto GPUs.
 * Jobs carry memory estimates under policy aegis-est, so their demand is
 * estimate + 2048 MiB and picks a MIG profile of an A100-40GB:
 *   est 2000 -> 4048 MiB  -> 1g.5gb  (4864: MIG under auto, 1.2x)
 *   est 4000 -> 6048 MiB  -> 1g.10gb (9856: MPS under auto, 1.63x)
 *   est 6000 -> 8048 MiB  -> 1g.10gb (9856)
 *   est 16000 -> 18048 MiB -> 3g.20gb (19968) */
#include "helpers.h"

#include <string.h>

#include "mig_plan.h"

static const mig_model *a100(void) {
    const mig_model *m = mig_model_find("NVIDIA A100-SXM4-40GB");
    assert_non_null(m);
    return m;
}

/* A core of n GPUs, all in `mode`, under policy aegis-est. */
static core_state *share_core(int n, share_mode mode) {
    core_state *core = make_core("aegis-est", "magm", n);
    char err[256];
    for (int g = 0; g < n; g++)
        assert_int_equal(core_gpu_share(core, g, mode, a100(), err, sizeof(err)), 0);
    return core;
}

static void submit_est(core_state *core, int64_t id, int ngpus, double est) {
    core_job_spec s = job_spec(id, ngpus);
    s.est_mib = est;
    char err[256];
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
}

/* Asserts that the next launch at `now` is job `id` in an instance of
 * `profile` at `start` on GPU `gpu`. */
static void expect_mig(core_state *core, double now, int64_t id, int gpu,
                       const char *profile, int start) {
    core_launch l;
    assert_int_equal(core_schedule(core, now, &l, 1), 1);
    assert_int_equal(l.job_id, id);
    assert_int_equal(l.gpus[0], gpu);
    assert_int_equal(l.share[0], SHARE_MIG);
    assert_false(l.exclusive);
    assert_non_null(l.mig);
    assert_string_equal(l.mig->name, profile);
    assert_int_equal(l.mig_start, start);
}

/* Asserts that the next launch at `now` is job `id` on the whole of GPU
 * `gpu`, running as `share`. */
static void expect_whole(core_state *core, double now, int64_t id, int gpu,
                         share_mode share, bool exclusive) {
    core_launch l;
    assert_int_equal(core_schedule(core, now, &l, 1), 1);
    assert_int_equal(l.job_id, id);
    assert_int_equal(l.gpus[0], gpu);
    assert_int_equal(l.share[0], share);
    assert_int_equal(l.exclusive, exclusive);
    assert_null(l.mig);
}

static void expect_wait(core_state *core, double now) {
    core_launch l;
    assert_int_equal(core_schedule(core, now, &l, 1), 0);
}

/* Each GPU's launches say its mode; a second job on an exclusive GPU waits
 * however quiet the GPU reads, where a naive GPU takes it. */
static void test_exclusive_never_collocates(void **state) {
    core_state *core = make_core("aegis", "magm", 3);
    char err[256];
    assert_int_equal(core_gpu_share(core, 0, SHARE_EXCLUSIVE, NULL, err, sizeof(err)), 0);
    assert_int_equal(core_gpu_share(core, 2, SHARE_MPS, NULL, err, sizeof(err)), 0);
    for (int id = 1; id <= 3; id++) submit(core, id, 1, 0);
    expect_whole(core, 0, 1, 0, SHARE_EXCLUSIVE, true);
    expect_whole(core, 0, 2, 1, SHARE_NAIVE, true); /* the default mode */
    expect_whole(core, 0, 3, 2, SHARE_MPS, true);
    for (int g = 0; g < 3; g++) {
        core_job_active(core, g + 1, 0);
        feed(core, g, 1000, 0);
    }
    /* GPU 0 has the most free memory, so MAGM would pick it if it could. */
    feed(core, 1, 9000, 0);
    feed(core, 2, 20000, 0);
    submit(core, 4, 1, 0);
    expect_whole(core, 100, 4, 1, SHARE_NAIVE, false);
    submit(core, 5, 1, 0);
    expect_whole(core, 100, 5, 2, SHARE_MPS, false);
    /* Now GPUs 1 and 2 are full; GPU 0, quiet and nearly empty, still
     * takes nothing while its job runs. */
    core_job_active(core, 4, 100);
    core_job_active(core, 5, 100);
    feed(core, 1, 39000, 100);
    feed(core, 2, 39000, 100);
    submit(core, 6, 1, 0);
    expect_wait(core, 200);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 201, NULL), CORE_DONE);
    expect_whole(core, 201, 6, 0, SHARE_EXCLUSIVE, true);
    core_destroy(core);
}

/* The smallest profile that holds each demand, at the lowest free start,
 * at once: no telemetry window and no observation are needed between
 * instances. */
static void test_mig_smallest_profile(void **state) {
    core_state *core = share_core(1, SHARE_MIG);
    submit_est(core, 1, 1, 2000);
    submit_est(core, 2, 1, 6000);
    submit_est(core, 3, 1, 16000);
    expect_mig(core, 0, 1, 0, "1g.5gb", 0);
    expect_mig(core, 0, 2, 0, "1g.10gb", 2); /* two slices, even starts */
    expect_mig(core, 0, 3, 0, "3g.20gb", 4);
    assert_int_equal(core_idle_gpu_count(core), 0);
    core_destroy(core);
}

/* Best fit across GPUs: the fuller GPU takes the next instance, keeping
 * the empty one whole for a big profile. */
static void test_mig_best_fit(void **state) {
    core_state *core = share_core(2, SHARE_MIG);
    submit_est(core, 1, 1, 2000);
    submit_est(core, 2, 1, 2000);
    submit_est(core, 3, 1, 30000); /* 32048 MiB -> 7g.40gb */
    expect_mig(core, 0, 1, 0, "1g.5gb", 0);
    expect_mig(core, 0, 2, 0, "1g.5gb", 1);
    expect_mig(core, 0, 3, 1, "7g.40gb", 0);
    core_destroy(core);
}

/* Seven 1g.5gb fill the GPU: the eighth waits (FULL) and takes the start
 * the first instance to go frees. */
static void test_mig_full_waits(void **state) {
    core_state *core = share_core(1, SHARE_MIG);
    for (int id = 1; id <= 8; id++) submit_est(core, id, 1, 2000);
    for (int id = 1; id <= 7; id++) expect_mig(core, 0, id, 0, "1g.5gb", id - 1);
    expect_wait(core, 1000);
    assert_int_equal(core_job_exit(core, 4, CORE_EXIT_OK, 1001, NULL), CORE_DONE);
    expect_mig(core, 1001, 8, 0, "1g.5gb", 3);
    core_destroy(core);
}

/* Slices 1-3 and 5-7 free hold a 3g.20gb's four slices in number but at
 * neither of its starts (0, 4): the job waits, and so does the small job
 * queued behind it (no backfill), until an instance at a valid start
 * goes. */
static void test_mig_fragmented_waits(void **state) {
    core_state *core = share_core(1, SHARE_MIG);
    for (int id = 1; id <= 5; id++) submit_est(core, id, 1, 2000);
    for (int id = 1; id <= 5; id++) expect_mig(core, 0, id, 0, "1g.5gb", id - 1);
    for (int id = 2; id <= 4; id++)
        assert_int_equal(core_job_exit(core, id, CORE_EXIT_OK, 10, NULL), CORE_DONE);
    const mig_profile *p1 = mig_profile_find(a100(), "1g.5gb");
    mig_instance left[2] = {{p1, 0}, {p1, 4}};
    assert_int_equal(mig_plan(a100(), left, 2, 18048).verdict, MIG_FRAGMENTED);
    submit_est(core, 6, 1, 16000);
    submit_est(core, 7, 1, 2000);
    expect_wait(core, 20);
    assert_int_equal(core_job_exit(core, 5, CORE_EXIT_OK, 30, NULL), CORE_DONE);
    expect_mig(core, 30, 6, 0, "3g.20gb", 4);
    expect_mig(core, 30, 7, 0, "1g.5gb", 1);
    core_destroy(core);
}

/* An OOM in an instance climbs to the next larger profile's memory, then
 * past the largest to the whole GPU with MIG off, and an OOM there stops
 * the job. */
static void test_mig_oom_climbs(void **state) {
    core_state *core = share_core(1, SHARE_MIG);
    submit_est(core, 1, 1, 2000);
    static const char *const climb[] = {"1g.5gb", "1g.10gb", "3g.20gb", "7g.40gb"};
    static const double floors[] = {9856, 19968, 40192, 0};
    double t = 0, next = -1;
    for (int i = 0; i < 4; i++) {
        expect_mig(core, t, 1, 0, climb[i], 0);
        assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, ++t, &next),
                         CORE_REQUEUED);
        assert_double_equal(next, floors[i], 0.5);
    }
    expect_whole(core, t, 1, 0, SHARE_EXCLUSIVE, true);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, ++t, NULL), CORE_STOPPED);
    core_destroy(core);
}

/* Jobs MIG cannot hold take a whole GPU with MIG off, alone: a multi-GPU
 * job, and a demand above the largest profile. Small jobs wait for them. */
static void test_mig_whole_gpu_fallbacks(void **state) {
    core_state *core = share_core(2, SHARE_MIG);
    submit_est(core, 1, 2, 2000);
    submit_est(core, 2, 1, 2000);
    core_launch l;
    assert_int_equal(core_schedule(core, 0, &l, 1), 1);
    assert_int_equal(l.num_gpus, 2);
    assert_null(l.mig);
    assert_int_equal(l.share[0], SHARE_EXCLUSIVE);
    assert_int_equal(l.share[1], SHARE_EXCLUSIVE);
    expect_wait(core, 100);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 101, NULL), CORE_DONE);
    expect_mig(core, 101, 2, 0, "1g.5gb", 0);
    submit_est(core, 3, 1, 39000); /* 41048 MiB: more than 7g.40gb */
    submit_est(core, 4, 1, 2000);
    expect_whole(core, 102, 3, 1, SHARE_EXCLUSIVE, true);
    expect_mig(core, 102, 4, 0, "1g.5gb", 1); /* GPU 1 is held */
    core_destroy(core);
}

/* auto picks per job; a GPU runs one kind at a time: MIG jobs while it
 * holds instances, MPS jobs while it runs whole-GPU jobs. */
static void test_auto_per_job(void **state) {
    core_state *core = share_core(2, SHARE_AUTO);
    submit_est(core, 1, 1, 2000); /* MIG */
    submit_est(core, 2, 1, 4000); /* MPS */
    submit_est(core, 3, 1, 2000); /* MIG */
    submit_est(core, 4, 1, 4000); /* MPS */
    submit_est(core, 5, 1, 4000); /* MPS */
    expect_mig(core, 0, 1, 0, "1g.5gb", 0);
    expect_whole(core, 0, 2, 1, SHARE_MPS, true);
    expect_mig(core, 0, 3, 0, "1g.5gb", 1);
    core_job_active(core, 2, 0);
    feed(core, 0, 2000, 0);
    feed(core, 1, 6000, 0);
    /* GPU 0 reads more free memory, but holds instances. */
    expect_wait(core, 29);
    expect_whole(core, 30, 4, 1, SHARE_MPS, false);
    core_job_active(core, 4, 30);
    feed(core, 1, 38000, 30); /* full: job 5 cannot join job 2 and 4 */
    expect_wait(core, 1000);
    /* Idle again, GPU 0 takes whole-GPU jobs. */
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 1001, NULL), CORE_DONE);
    assert_int_equal(core_job_exit(core, 3, CORE_EXIT_OK, 1001, NULL), CORE_DONE);
    expect_whole(core, 1001, 5, 0, SHARE_MPS, true);
    core_destroy(core);
}

/* Lucid's limit of two jobs per GPU guards against interference, which
 * instances do not have: on a MIG GPU it does not apply. */
static void test_mig_skips_policy_rule(void **state) {
    core_state *core = make_core("lucid", "magm", 1);
    char err[256];
    assert_int_equal(core_gpu_share(core, 0, SHARE_MIG, a100(), err, sizeof(err)), 0);
    for (int id = 1; id <= 3; id++) {
        core_job_spec s = job_spec(id, 1);
        s.peak_mib = 2000;
        s.sharing_score = 1;
        assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    }
    for (int id = 1; id <= 3; id++) expect_mig(core, 0, id, 0, "1g.5gb", id - 1);
    core_destroy(core);
}

/* auto weighs compute too: a job whose profiled utilization exceeds its
 * profile's share of the compute slices (1g: 1/7, 14%) runs under MPS,
 * whatever its memory. */
static void test_auto_compute(void **state) {
    core_state *core = share_core(1, SHARE_AUTO);
    char err[256];
    core_job_spec busy = job_spec(1, 1), light = job_spec(2, 1);
    busy.est_mib = light.est_mib = 2000;
    busy.util_pct = 90;
    light.util_pct = 10;
    assert_int_equal(core_submit(core, &busy, 0, err, sizeof(err)), 0);
    assert_int_equal(core_submit(core, &light, 0, err, sizeof(err)), 0);
    expect_whole(core, 0, 1, 0, SHARE_MPS, true);
    expect_wait(core, 0); /* the GPU runs a whole-GPU job */
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 10, NULL), CORE_DONE);
    expect_mig(core, 10, 2, 0, "1g.5gb", 0);
    core_destroy(core);
}

/* An adopted job keeps its instance's slices; bad modes and adoptions are
 * refused with the GPU named. */
static void test_share_adopt_and_errors(void **state) {
    core_state *core = share_core(1, SHARE_MIG);
    core_job_spec s = job_spec(7, 1);
    core_adopted a = {.retry = {.attempt = 1}, .gpus = {0}, .admitted_mib = 4048,
                      .active = true, .active_at = -1000,
                      .mig = mig_profile_find(a100(), "3g.20gb"), .mig_start = 0};
    char err[256];
    assert_int_equal(core_adopt(core, &s, &a, 0, err, sizeof(err)), 0);
    submit_est(core, 1, 1, 2000);
    expect_mig(core, 0, 1, 0, "1g.5gb", 4);
    assert_int_equal(core_gpu_share(core, 0, SHARE_NAIVE, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "GPU 0 runs 2 jobs"));
    /* Overlapping slices (3g.20gb at 0 holds 0-3), or a start the profile
     * does not allow (3g starts at 0 or 4), are refused. */
    core_adopted b = a;
    b.mig = mig_profile_find(a100(), "1g.5gb");
    b.mig_start = 2;
    s.id = 9;
    assert_int_equal(core_adopt(core, &s, &b, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "job 9: MIG instance 1g.5gb at slice 2"));
    b.mig = mig_profile_find(a100(), "3g.20gb");
    b.mig_start = 5;
    assert_int_equal(core_adopt(core, &s, &b, 0, err, sizeof(err)), -1);
    b.mig_start = 4; /* taken by job 1's 1g.5gb */
    assert_int_equal(core_adopt(core, &s, &b, 0, err, sizeof(err)), -1);
    assert_int_equal(core_running_count(core), 2);
    core_destroy(core);

    core = make_core("aegis", "magm", 1);
    assert_int_equal(core_gpu_share(core, 1, SHARE_MPS, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "GPU 1"));
    assert_int_equal(core_gpu_share(core, 0, SHARE_AUTO, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "auto needs a MIG profile table"));
    assert_int_equal(core_gpu_share(core, 0, (share_mode)9, NULL, err, sizeof(err)), -1);
    s.id = 8;
    assert_int_equal(core_adopt(core, &s, &a, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "job 8: MIG instance 3g.20gb"));
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exclusive_never_collocates),
        cmocka_unit_test(test_mig_smallest_profile),
        cmocka_unit_test(test_mig_best_fit),
        cmocka_unit_test(test_mig_full_waits),
        cmocka_unit_test(test_mig_fragmented_waits),
        cmocka_unit_test(test_mig_oom_climbs),
        cmocka_unit_test(test_mig_whole_gpu_fallbacks),
        cmocka_unit_test(test_auto_per_job),
        cmocka_unit_test(test_auto_compute),
        cmocka_unit_test(test_mig_skips_policy_rule),
        cmocka_unit_test(test_share_adopt_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
