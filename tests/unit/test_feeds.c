/* test_feeds.c -- the jobs of one data feed together (src/core/feeds.c):
 * consumers go beside their producer, waiting while its GPU observes; a
 * queued producer holds its consumers back; a full feed GPU sends them
 * elsewhere, also while it observes; and the reasons say so. */
#include "helpers.h"

static void submit_feed(core_state *core, int64_t id, bool producer,
                        double now) {
    core_job_spec s = job_spec(id, 1);
    char err[256];
    s.feed = "imagenet";
    s.feed_producer = producer;
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* The producer lands on GPU 0; each consumer waits for GPU 0 to end its
 * observation (two GPUs stay idle) and joins it there. */
static void coplace(const char *policy) {
    core_state *core = make_core(policy, "magm", 3);
    core_launch l[4];
    submit_feed(core, 1, true, 0);
    for (int id = 2; id <= 4; id++) submit_feed(core, id, false, 0);
    assert_int_equal(core_schedule(core, 0, l, 4), 1);
    assert_int_equal(l[0].job_id, 1);
    assert_int_equal(l[0].gpus[0], 0);
    reason_is(core, 2, 0, "waiting for feed imagenet's GPU 0 (until its new "
                          "job is seen active)");
    core_job_active(core, 1, 1);
    int placed = 0;
    for (double t = 1; t < 400 && placed < 3; t += 1) {
        feed(core, 0, 2000, t);
        feed(core, 1, 0, t);
        feed(core, 2, 0, t);
        if (t == 20)
            reason_is(core, 2, t, "waiting for feed imagenet's GPU 0 (11 s "
                                  "more)");
        int n = core_schedule(core, t, l, 4);
        for (int i = 0; i < n; i++) {
            assert_int_equal(l[i].gpus[0], 0);
            assert_false(l[i].exclusive);
            core_job_active(core, l[i].job_id, t);
        }
        placed += n;
    }
    assert_int_equal(placed, 3);
    assert_int_equal(core_idle_gpu_count(core), 2);
    core_destroy(core);
}

static void test_coplace_fifo(void **state) { coplace("aegis"); }
static void test_coplace_backfill(void **state) { coplace("aegis-plus"); }

/* With feed_colocate 0 the second consumer takes an idle GPU at once. */
static void test_coplace_off(void **state) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.feed_colocate = 0;
    core_state *core = make_core_cfg(&cfg, 3);
    core_launch l[4];
    submit_feed(core, 1, true, 0);
    submit_feed(core, 2, false, 0);
    assert_int_equal(core_schedule(core, 0, l, 4), 2);
    assert_int_equal(l[1].gpus[0], 1);
    core_destroy(core);
}

/* A producer that cannot start (three GPUs, behind in the queue by its
 * nice) keeps its consumer waiting, though it would fit, and it says for
 * whom; another job passes them. */
static void test_producer_first(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 3);
    occupy_all(core, 3, 20000);
    core_job_spec p = job_spec(1, 3);
    char err[256];
    p.feed = "imagenet";
    p.feed_producer = true;
    p.nice = 100;
    assert_int_equal(core_submit(core, &p, 0, err, sizeof(err)), 0);
    submit_feed(core, 2, false, 0);
    submit(core, 3, 1, 0);
    core_launch l[4];
    assert_int_equal(core_schedule(core, 100, l, 4), 1);
    assert_int_equal(l[0].job_id, 3);
    reason_is(core, 2, 100, "waiting for feed imagenet's producer (job 1)");
    core_reason r;
    core_job_reason(core, 2, 100, &r);
    assert_string_equal(core_wait_name(r.kind), "feed");
    assert_int_equal(core_cancel(core, 1, 100), 0);
    assert_int_equal(core_schedule(core, 100, l, 4), 1);
    assert_int_equal(l[0].job_id, 2);
    core_destroy(core);
}

/* A feed GPU without the memory: the consumer goes to an idle GPU. */
static void test_full_feed_gpu(void **state) {
    core_state *core = make_core("aegis", "magm", 2);
    core_launch l[2];
    submit_feed(core, 1, true, 0);
    assert_int_equal(core_schedule(core, 0, l, 2), 1);
    core_job_active(core, 1, 0);
    for (double t = 0; t <= 40; t++) feed(core, 0, 39000, t);
    submit_feed(core, 2, false, 40);
    assert_int_equal(place_one(core, 40, l), 1);
    assert_true(l[0].exclusive);
    core_destroy(core);
}

/* A feed GPU still observing its producer, but whose memory could not
 * take the consumer once it opens: the consumer does not wait for it,
 * it takes an idle GPU at once. */
static void test_observing_full_feed_gpu(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    core_launch l[2];
    submit_feed(core, 1, true, 0);
    assert_int_equal(core_schedule(core, 0, l, 2), 1);
    core_job_active(core, 1, 1);
    for (double t = 1; t <= 3; t++) {
        feed(core, 0, 39000, t);
        feed(core, 1, 0, t);
    }
    submit_feed(core, 2, false, 3);
    assert_int_equal(place_one(core, 3, l), 1);
    assert_int_equal(l[0].gpus[0], 1);
    core_destroy(core);
}

/* A feed name the core cannot keep is refused with the job's id. */
static void test_long_name(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    char name[CORE_FEED_NAME_MAX + 2], err[256];
    memset(name, 'a', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    core_job_spec s = job_spec(7, 1);
    s.feed = name;
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "job 7: feed name longer"));
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coplace_fifo),
        cmocka_unit_test(test_coplace_backfill),
        cmocka_unit_test(test_coplace_off),
        cmocka_unit_test(test_producer_first),
        cmocka_unit_test(test_full_feed_gpu),
        cmocka_unit_test(test_observing_full_feed_gpu),
        cmocka_unit_test(test_long_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
