/* test_mps_user.c -- an MPS GPU belongs to one user while it runs jobs
 * (src/core/share_gpu.h, share_gpu_mps()): MPS serves one user's clients
 * at a time, so the core never places another user's job beside them,
 * says why it waits, and co-places a feed's jobs of different users only
 * on GPUs that do not share through MPS. */
#include "helpers.h"

/* A core of ngpus GPUs, GPU g in modes[g]. */
static core_state *make_shared(const char *policy, int ngpus,
                               const share_mode *modes) {
    core_state *core = make_core(policy, "magm", ngpus);
    char err[256];
    for (int g = 0; g < ngpus; g++)
        assert_int_equal(core_gpu_share(core, g, modes[g], NULL, err,
                                        sizeof(err)), 0);
    return core;
}

static void submit_as(core_state *core, int64_t id, uint32_t user,
                      const char *feed, bool producer, double now) {
    core_job_spec s = job_spec(id, 1);
    char err[256];
    s.user = user;
    s.feed = feed;
    s.feed_producer = producer;
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* Job 1 of user 1000 runs alone on GPU 0 from t=0, seen active at once. */
static void first_job(core_state *core) {
    core_launch l;
    submit_as(core, 1, 1000, NULL, false, 0);
    assert_int_equal(place_one(core, 0, &l), 0);
    assert_true(l.exclusive);
    core_job_active(core, 1, 0);
}

/* Schedules each second from `from` to `to`, GPU 0 reading 2000 MiB (a
 * quiet GPU with room); returns the first launch's job id, or -1. */
static int64_t run_until(core_state *core, double from, double to,
                         core_launch *l) {
    for (double t = from; t <= to; t += 1) {
        feed(core, 0, 2000, t);
        if (place_one(core, t, l) >= 0) return l->job_id;
    }
    return -1;
}

/* A job of the same user joins the MPS GPU once its gates open. */
static void test_same_user_joins(void **state) {
    share_mode modes[] = {SHARE_MPS};
    core_state *core = make_shared("aegis", 1, modes);
    core_launch l;
    first_job(core);
    submit_as(core, 2, 1000, NULL, false, 0);
    assert_int_equal(run_until(core, 0, 60, &l), 2);
    assert_int_equal(l.gpus[0], 0);
    assert_int_equal(l.share[0], SHARE_MPS);
    core_destroy(core);
}

/* Another user's job waits for the GPU to be left by user 1000's jobs,
 * saying so, and starts once they are gone. */
static void test_other_user_waits(void **state) {
    share_mode modes[] = {SHARE_MPS};
    core_state *core = make_shared("aegis", 1, modes);
    core_launch l;
    first_job(core);
    submit_as(core, 2, 2000, NULL, false, 0);
    assert_int_equal(run_until(core, 0, 60, &l), -1);
    reason_is(core, 2, 60, "GPU 0 runs MPS clients of user 1000 (MPS serves "
                           "one user at a time)");
    core_reason r;
    assert_int_equal(core_job_reason(core, 2, 60, &r), 0);
    assert_string_equal(core_wait_name(r.kind), "mps_user");
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 61, NULL),
                     CORE_DONE);
    assert_int_equal(place_one(core, 61, &l), 0);
    assert_int_equal(l.job_id, 2);
    core_destroy(core);
}

/* The rule is MPS's: on a naive GPU the two users share, and on an auto
 * GPU running a whole-GPU job it holds as on an mps one. */
static void test_naive_shares_users(void **state) {
    share_mode modes[] = {SHARE_NAIVE};
    core_state *core = make_shared("aegis", 1, modes);
    core_launch l;
    first_job(core);
    submit_as(core, 2, 2000, NULL, false, 0);
    assert_int_equal(run_until(core, 0, 60, &l), 2);
    core_destroy(core);
}

/* Under backfill the GPU is kept for the waiting head of the queue: a
 * later job of the GPU's own user does not go past it, or a stream of
 * that user's jobs would keep the other user off the GPU for ever. */
static void test_backfill_keeps_gpu(void **state) {
    share_mode modes[] = {SHARE_MPS};
    core_state *core = make_shared("aegis-plus", 1, modes);
    core_launch l;
    first_job(core);
    submit_as(core, 2, 2000, NULL, false, 0);
    submit_as(core, 3, 1000, NULL, false, 1);
    assert_int_equal(run_until(core, 1, 60, &l), -1);
    reason_is(core, 2, 60, "GPU 0 runs MPS clients of user 1000 (MPS serves "
                           "one user at a time)");
    reason_is(core, 3, 60, "behind job 2 (head of queue)");
    core_destroy(core);
}

/* A feed's producer of user 1000 runs on MPS GPU 0: its consumer of user
 * 2000 does not wait for GPU 0 but takes GPU 1 at once; a consumer of user
 * 1000 still waits to join the producer. */
static void test_feed_users_apart(void **state) {
    share_mode modes[] = {SHARE_MPS, SHARE_MPS};
    core_state *core = make_shared("aegis", 2, modes);
    core_launch l;
    submit_as(core, 1, 1000, "imagenet", true, 0);
    assert_int_equal(place_one(core, 0, &l), 0);
    submit_as(core, 2, 2000, "imagenet", false, 0);
    assert_int_equal(place_one(core, 0, &l), 1);
    assert_int_equal(l.job_id, 2);
    submit_as(core, 3, 1000, "imagenet", false, 0);
    assert_int_equal(place_one(core, 0, &l), -1);
    reason_is(core, 3, 0, "waiting for feed imagenet's GPU 0 (until its new "
                          "job is seen active)");
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_user_joins),
        cmocka_unit_test(test_other_user_waits),
        cmocka_unit_test(test_naive_shares_users),
        cmocka_unit_test(test_backfill_keeps_gpu),
        cmocka_unit_test(test_feed_users_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
