/* test_queue.c -- queue order (FIFO, recovery first, no backfill), the
 * OOM ladder driven through core_job_exit, retried jobs that wait for an
 * idle GPU, failures, losses, cancel, multi-GPU jobs and core_next_wakeup. */
#include "helpers.h"

static void test_fifo_no_backfill_and_two_gpu_job(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_launch out[4];
    submit(core, 1, 1, 0);
    assert_int_equal(core_schedule(core, 0, out, 4), 1); /* GPU 0, alone */
    submit(core, 2, 2, 0); /* needs two GPUs: only GPU 1 is idle */
    submit(core, 3, 1, 0); /* would fit GPU 1, but must wait its turn */
    assert_int_equal(core_schedule(core, 0, out, 4), 0);
    assert_int_equal(core_queued_count(core), 2);

    core_job_active(core, 1, 0);
    feed(core, 0, 20000, 0);
    feed(core, 1, 0, 0);
    assert_int_equal(core_schedule(core, 29, out, 4), 0);
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].num_gpus, 2);
    assert_false(out[0].exclusive);
    assert_int_equal(out[0].gpus[0], 1); /* magm: most free first */
    assert_int_equal(out[0].gpus[1], 0);
    core_destroy(core);
}

static void test_two_gpu_job_exclusive(void **state) {
    core_state *core = make_core("aegis", "magm", 3);
    core_launch out[2];
    submit(core, 1, 1, 0);
    submit(core, 2, 2, 0);
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    assert_true(out[1].exclusive);
    assert_int_equal(out[1].gpus[0], 1);
    assert_int_equal(out[1].gpus[1], 2);
    char err[128];
    core_job_spec big = job_spec(3, 4);
    assert_int_equal(core_submit(core, &big, 0, err, sizeof(err)), -1);
    core_job_spec dup = job_spec(2, 1);
    assert_int_equal(core_submit(core, &dup, 0, err, sizeof(err)), -1);
    core_destroy(core);
}

/* One collocated attempt on GPU 0 of a one-GPU server beside job 100. */
static core_launch run_shared(core_state *core, double now) {
    core_launch l;
    assert_int_equal(place_one(core, now, &l), 0);
    assert_false(l.exclusive);
    return l;
}

/* The pure ladder: each OOM climbs one bucket above the failed floor. */
static void test_ladder_through_exit(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.ladder_from_free = 0;
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 0);
    submit(core, 1, 1, 0);
    double floors[] = {5120, 10240, 18432, 20480, 28672, 30720};
    double next;
    for (int i = 0; i < 6; i++) {
        core_launch l = run_shared(core, 100 + i);
        assert_int_equal(l.attempt, i + 1);
        assert_double_equal(l.floor_mib, floors[i], 0);
        assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 100.5 + i, &next),
                         CORE_REQUEUED);
        assert_double_equal(next, i < 5 ? floors[i + 1] : 0, 0);
    }
    /* Past the last bucket the job waits for an idle GPU. */
    assert_int_equal(place_one(core, 200, NULL), -1);
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 201, NULL), CORE_DONE);
    core_launch l;
    assert_int_equal(place_one(core, 201, &l), 0);
    assert_true(l.exclusive);
    assert_int_equal(l.attempt, 7);
    assert_double_equal(l.floor_mib, 0, 0);
    /* Nothing may join a job that must run alone. */
    submit(core, 2, 1, 201);
    core_job_active(core, 1, 201);
    feed(core, 0, 0, 201);
    assert_int_equal(place_one(core, 1000, NULL), -1);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 1001, &next),
                     CORE_STOPPED);
    assert_int_equal(core_running_count(core), 0);
    core_destroy(core);
}

/* By default the failed floor is raised to the free memory the job was
 * placed with: it crashed with that much room, so it needs more. */
static void test_ladder_climbs_above_free_at_dispatch(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 25000); /* 15960 MiB free */
    submit(core, 1, 1, 0);
    core_launch l = run_shared(core, 100);
    assert_double_equal(l.floor_mib, 5120, 0);
    double next;
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 101, &next),
                     CORE_REQUEUED);
    assert_double_equal(next, 18432, 0); /* first bucket above 15960 */
    core_destroy(core);
}

static void test_oom_alone_stops_oom_shared_retries(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 10, NULL), CORE_STOPPED);

    /* Placed alone, but a job joined it later: the OOM may be the
     * neighbour's doing, so it is retried. It crashed with the whole GPU
     * free when placed, so no bucket is above that: it must run alone. */
    occupy_all(core, 1, 0);
    submit(core, 2, 1, 0);
    run_shared(core, 100);
    double next;
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OOM, 101, &next),
                     CORE_REQUEUED);
    assert_double_equal(next, 0, 0);
    core_destroy(core);
}

static void test_failure_never_retried_and_lost_requeued(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 0);
    submit(core, 1, 1, 0);
    run_shared(core, 100);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_FAILED, 101, NULL),
                     CORE_STOPPED);
    assert_int_equal(core_queued_count(core), 0);
    assert_int_equal(core_cancel(core, 1, 102), -1); /* forgotten */

    submit(core, 2, 1, 0);
    run_shared(core, 110);
    double next;
    assert_int_equal(core_job_exit(core, 2, CORE_EXIT_LOST, 111, &next),
                     CORE_REQUEUED);
    assert_double_equal(next, 5120, 0);
    core_launch l = run_shared(core, 112);
    assert_int_equal(l.attempt, 2);
    assert_double_equal(l.floor_mib, 5120, 0);
    core_destroy(core);
}

static void test_recovery_queue_first(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.ladder_from_free = 0; /* keep job 1 on the shared GPU after its OOM */
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 0);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    run_shared(core, 100); /* job 1; job 2 waits for the observation */
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 101, NULL),
                     CORE_REQUEUED);
    core_launch l = run_shared(core, 102);
    assert_int_equal(l.job_id, 1);
    assert_int_equal(l.attempt, 2);
    core_destroy(core);
}

/* recovery_collocates 0 (the measured AEGIS): a retried job waits for an
 * idle GPU although a busy one shows its floor free, the FIFO waits behind
 * it, and once it runs its GPU is open to newcomers again. */
static void test_recovery_waits_for_idle_gpu(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.ladder_from_free = 0; /* floor 10240: GPU 0 shows 40960 free */
    cfg.recovery_collocates = 0;
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 0);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    run_shared(core, 100);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OOM, 101, NULL),
                     CORE_REQUEUED);
    assert_int_equal(place_one(core, 102, NULL), -1);
    assert_int_equal(place_one(core, 500, NULL), -1); /* job 2 waits too */
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 600, NULL), CORE_DONE);
    core_launch l;
    assert_int_equal(place_one(core, 600, &l), 0);
    assert_int_equal(l.job_id, 1);
    assert_int_equal(l.attempt, 2);
    assert_true(l.exclusive);
    core_job_active(core, 1, 600);
    feed(core, 0, 12000, 600);
    l = run_shared(core, 630);
    assert_int_equal(l.job_id, 2);
    assert_int_equal(l.gpus[0], 0);
    core_destroy(core);
}

static void test_cancel(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    submit(core, 3, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    assert_int_equal(core_cancel(core, 2, 1), 0); /* queued */
    assert_int_equal(core_queued_count(core), 1);
    assert_int_equal(core_cancel(core, 1, 1), 0); /* running */
    assert_int_equal(core_running_count(core), 0);
    core_launch l;
    assert_int_equal(place_one(core, 1, &l), 0);
    assert_int_equal(l.job_id, 3);
    assert_true(l.exclusive);
    assert_int_equal(core_cancel(core, 99, 1), -1);
    assert_int_equal(core_job_exit(core, 99, CORE_EXIT_OK, 1, NULL), CORE_DONE);
    core_destroy(core);
}

static void test_next_wakeup(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    assert_true(core_next_wakeup(core, 0) < 0); /* nothing queued */
    occupy_all(core, 1, GPU_MIB - 1000);
    submit(core, 1, 1, 0);
    /* Window fills at 29, observation ends at 30. */
    assert_double_equal(core_next_wakeup(core, 0), 29, 0);
    assert_double_equal(core_next_wakeup(core, 29), 30, 0);
    /* A uniform full window and an open GPU: only an event can help. */
    assert_int_equal(place_one(core, 40, NULL), -1);
    assert_true(core_next_wakeup(core, 40) < 0);
    /* Memory freed at 50: the old peak slides out second by second. */
    feed(core, 0, 0, 50);
    assert_double_equal(core_next_wakeup(core, 60), 61, 0);
    assert_true(core_next_wakeup(core, 79) < 0);
    assert_int_equal(place_one(core, 79, NULL), 0);
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_no_backfill_and_two_gpu_job),
        cmocka_unit_test(test_two_gpu_job_exclusive),
        cmocka_unit_test(test_ladder_through_exit),
        cmocka_unit_test(test_ladder_climbs_above_free_at_dispatch),
        cmocka_unit_test(test_oom_alone_stops_oom_shared_retries),
        cmocka_unit_test(test_failure_never_retried_and_lost_requeued),
        cmocka_unit_test(test_recovery_queue_first),
        cmocka_unit_test(test_recovery_waits_for_idle_gpu),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_next_wakeup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
