/* test_adopt.c -- taking jobs back into a core: core_adopt() of running
 * jobs, core_submit_retry() and core_job_retry() for the recovery queue,
 * and core_reconfigure() of a live core. These are what aegisd calls after
 * a restart or a SIGHUP instead of starting over. */
#include "helpers.h"

#include <string.h>

static core_adopted adopted(int gpu, double admitted, bool exclusive) {
    core_adopted a = {.retry = {.attempt = 1}, .gpus = {gpu},
                      .admitted_mib = admitted, .exclusive = exclusive,
                      .active = true, .active_at = -1000};
    return a;
}

static int adopt(core_state *core, int64_t id, const core_adopted *a) {
    core_job_spec s = job_spec(id, 1);
    char err[256];
    return core_adopt(core, &s, a, 0, err, sizeof(err));
}

/* A job adopted as seen active long ago leaves its GPU open to a
 * collocated job once the window is full; one not yet seen keeps it
 * closed until it is seen and observed (the old daemon drained both). */
static void test_adopted_job_permits_collocation(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    core_adopted a = adopted(0, 5120, true);
    assert_int_equal(adopt(core, 7, &a), 0);
    assert_int_equal(core_running_count(core), 1);
    assert_int_equal(core_idle_gpu_count(core), 0);
    feed(core, 0, 8000, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 28, NULL), -1); /* window not full */
    core_launch l;
    assert_int_equal(place_one(core, 29, &l), 0);
    assert_false(l.exclusive);
    core_destroy(core);

    core = make_core("aegis", "magm", 1);
    a.active = false;
    assert_int_equal(adopt(core, 7, &a), 0);
    feed(core, 0, 8000, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 40, NULL), -1); /* never seen active */
    core_job_active(core, 7, 40);
    assert_int_equal(place_one(core, 69, NULL), -1); /* observing */
    assert_int_equal(place_one(core, 70, NULL), 0);
    core_destroy(core);
}

/* A job that must run alone holds its GPU; its exit frees it; bad
 * adoptions are refused with the job id in the message. */
static void test_adopted_alone_blocks(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_adopted a = adopted(1, 0, true);
    a.retry = (core_retry){.attempt = 3, .alone = true};
    assert_int_equal(adopt(core, 7, &a), 0);
    core_adopted b = adopted(0, 5120, true);
    assert_int_equal(adopt(core, 8, &b), 0);
    feed(core, 0, 36000, 0);
    feed(core, 1, 1000, 0);
    submit(core, 1, 1, 0);
    core_launch l;
    /* GPU 1 has the most free memory but is held; GPU 0 lacks room. */
    assert_int_equal(place_one(core, 60, &l), -1);
    assert_int_equal(core_job_exit(core, 7, CORE_EXIT_OK, 60, NULL), CORE_DONE);
    assert_int_equal(place_one(core, 60, &l), 1);
    assert_true(l.exclusive);

    char err[256];
    core_job_spec s = job_spec(9, 1);
    core_adopted bad = adopted(2, 5120, false);
    assert_int_equal(core_adopt(core, &s, &bad, 60, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "job 9: GPU 2"));
    bad = adopted(0, 5120, false);
    bad.retry.attempt = 0;
    assert_int_equal(core_adopt(core, &s, &bad, 60, err, sizeof(err)), -1);
    s = job_spec(8, 1); /* still running */
    assert_int_equal(core_adopt(core, &s, &b, 60, err, sizeof(err)), -1);
    assert_int_equal(core_running_count(core), 2);
    core_destroy(core);
}

/* An OOM climbs the ladder from the floor the job was adopted with; an
 * adopted exclusive job that no one joined stops instead, but one adopted
 * beside another counts as shared. */
static void test_adopted_exit_climbs_from_floor(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_adopted a = adopted(0, 18432, false);
    a.retry = (core_retry){.attempt = 3, .floor_mib = 18432};
    assert_int_equal(adopt(core, 7, &a), 0);
    double floor = -1;
    assert_int_equal(core_job_exit(core, 7, CORE_EXIT_OOM, 10, &floor),
                     CORE_REQUEUED);
    assert_double_equal(floor, 20480, 0);
    core_retry r;
    assert_int_equal(core_job_retry(core, 7, &r), 0);
    assert_int_equal(r.attempt, 4);
    assert_double_equal(r.floor_mib, 20480, 0);
    assert_false(r.alone);
    assert_int_equal(core_job_retry(core, 99, &r), -1);

    core_adopted solo = adopted(1, 5120, true);
    assert_int_equal(adopt(core, 8, &solo), 0);
    assert_int_equal(core_job_exit(core, 8, CORE_EXIT_OOM, 10, NULL),
                     CORE_STOPPED);
    assert_int_equal(adopt(core, 8, &solo), 0);
    core_adopted beside = adopted(1, 5120, true);
    assert_int_equal(adopt(core, 9, &beside), 0);
    assert_int_equal(core_job_exit(core, 9, CORE_EXIT_OOM, 10, &floor),
                     CORE_REQUEUED); /* adopted beside job 8: shared */
    assert_int_equal(core_job_exit(core, 8, CORE_EXIT_OOM, 10, &floor),
                     CORE_REQUEUED); /* job 9 came after it */
    assert_double_equal(floor, 10240, 0);
    core_destroy(core);
}

/* Retries rebuild the recovery queue in call order, ahead of the FIFO,
 * each launched with its floor; an alone retry waits for an idle GPU. */
static void test_retry_queue_order(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 1000);
    char err[256];
    submit(core, 1, 1, 0);
    int64_t order[] = {4, 2, 3};
    double floors[] = {10240, 0, 18432};
    for (int i = 0; i < 3; i++) {
        core_job_spec s = job_spec(order[i], 1);
        core_retry r = {.attempt = 2, .floor_mib = floors[i]};
        assert_int_equal(core_submit_retry(core, &s, &r, 0, err, sizeof(err)), 0);
    }
    core_job_spec s = job_spec(5, 1);
    core_retry alone = {.attempt = 4, .alone = true};
    assert_int_equal(core_submit_retry(core, &s, &alone, 0, err, sizeof(err)), 0);
    core_retry bad = {.attempt = 2, .floor_mib = -1};
    s = job_spec(6, 1);
    assert_int_equal(core_submit_retry(core, &s, &bad, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "job 6"));
    assert_int_equal(core_queued_count(core), 5);

    core_launch l;
    double t = 30;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(place_one(core, t, &l), 0);
        assert_int_equal(l.job_id, order[i]);
        assert_int_equal(l.attempt, 2);
        assert_double_equal(l.floor_mib, floors[i] > 0 ? floors[i] : 5120, 0);
        core_job_active(core, l.job_id, t);
        assert_int_equal(core_job_exit(core, l.job_id, CORE_EXIT_OK, t + 30, NULL),
                         CORE_DONE);
        t += 30;
    }
    assert_int_equal(place_one(core, t, NULL), -1); /* job 5 must run alone */
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, t, NULL), CORE_DONE);
    assert_int_equal(place_one(core, t, &l), 0);
    assert_int_equal(l.job_id, 5);
    assert_int_equal(l.attempt, 4);
    assert_true(l.exclusive);
    assert_double_equal(l.floor_mib, 0, 0);
    core_destroy(core);
}

/* A new pressure threshold applies at once; a bad config is refused and
 * the old one kept; a new window length restarts the windows; a policy
 * that never collocates holds every busy GPU, and releases it on the way
 * back. */
static void test_reconfigure(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 1000);
    core_reading busy = reading(1000, 0.6, 0.5, 0.6, 0.6);
    core_sample(core, 0, &busy, 0);
    submit(core, 1, 1, 0);
    char err[256];

    cfg.smact_max = 0.5;
    assert_int_equal(core_reconfigure(core, &cfg, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 30, NULL), -1); /* now under pressure */

    core_config bad = cfg;
    bad.smact_max = 0.65;
    bad.policy = "nope";
    assert_int_equal(core_reconfigure(core, &bad, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "nope"));
    bad.policy = "aegis";
    bad.window_samples = 0;
    assert_int_equal(core_reconfigure(core, &bad, err, sizeof(err)), -1);
    assert_int_equal(place_one(core, 30, NULL), -1); /* 0.5 still holds */

    cfg.smact_max = 0.65;
    cfg.policy = "exclusive";
    assert_int_equal(core_reconfigure(core, &cfg, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 30, NULL), -1); /* held */
    cfg.policy = "aegis";
    cfg.window_samples = 10;
    assert_int_equal(core_reconfigure(core, &cfg, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 30, NULL), -1); /* window restarted */
    core_sample(core, 0, &busy, 31);
    assert_int_equal(place_one(core, 39, NULL), -1); /* full at 31 + 9 */
    assert_int_equal(place_one(core, 40, NULL), 0);
    core_destroy(core);
}

/* The gates' last answer on a GPU whose window has not changed is not
 * kept across a reconfigure: a threshold raised since then applies. */
static void test_reconfigure_asks_gates_again(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.smact_max = 0.5;
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 1000);
    core_reading busy = reading(1000, 0.6, 0.5, 0.6, 0.6);
    core_sample(core, 0, &busy, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 30, NULL), -1); /* under pressure */
    cfg.smact_max = 0.65;
    char err[256];
    assert_int_equal(core_reconfigure(core, &cfg, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 30, NULL), 0);
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adopted_job_permits_collocation),
        cmocka_unit_test(test_adopted_alone_blocks),
        cmocka_unit_test(test_adopted_exit_climbs_from_floor),
        cmocka_unit_test(test_retry_queue_order),
        cmocka_unit_test(test_reconfigure),
        cmocka_unit_test(test_reconfigure_asks_gates_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
