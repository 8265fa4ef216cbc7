/* test_priority.c -- the priorities people read (`aegis priority`,
 * `aegis fairshare`) and the change of a queued job (`aegis update`):
 * the parts add up to the order a backfill pass takes, policies without
 * priorities say so, and an update moves a job in its user's queue. */
#include "helpers.h"

static void submit_as(core_state *core, int64_t id, uint32_t user, int nice,
                      double est, double now) {
    core_job_spec s = job_spec(id, 1);
    s.user = user;
    s.nice = nice;
    s.est_mib = est;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* User 1 held the only GPU for 200 s: its queued job's fair share is
 * below user 2's, and the parts add up to the priority. */
static void test_parts(void **state) {
    (void)state;
    core_state *core = make_core("aegis-plus", "magm", 1);
    submit_as(core, 1, 1, 0, CORE_UNKNOWN, 0);
    submit_as(core, 2, 1, 5, CORE_UNKNOWN, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    core_job_active(core, 1, 0);
    feed(core, 0, 40000, 0);
    submit_as(core, 3, 2, 0, 30000, 200); /* big: a head start */
    core_priority p2, p3;
    assert_int_equal(core_job_priority(core, 2, 200, &p2), 0);
    assert_int_equal(core_job_priority(core, 3, 200, &p3), 0);
    assert_true(p3.fair_share > p2.fair_share);
    assert_int_equal(p2.nice, 5);
    assert_double_equal(p2.priority, p2.fair_share - 5, 1e-9);
    assert_double_equal(p2.head_start_s, 0, 1e-9);
    assert_true(p3.head_start_s >= 900);
    assert_int_equal(core_job_priority(core, 1, 200, &p2), -1); /* runs */
    core_user_usage u[4];
    assert_int_equal(core_fairshare(core, 200, u, 4), 2);
    assert_int_equal(u[0].uid, 1);
    assert_double_equal(u[0].raw_gpu_s, 200, 1e-6);
    assert_true(u[0].decayed_gpu_s > 199 && u[0].decayed_gpu_s < 200);
    assert_double_equal(u[1].raw_gpu_s, 0, 1e-9);
    assert_double_equal(u[1].factor, 1, 1e-9);
    assert_true(u[0].factor < 1);
    core_destroy(core);
}

/* Under FIFO policies there are no priorities. */
static void test_none_without_backfill(void **state) {
    (void)state;
    core_state *core = make_core("aegis", "magm", 1);
    submit_as(core, 1, 1, 0, CORE_UNKNOWN, 0);
    core_priority p;
    assert_false(core_has_priorities(core));
    assert_int_equal(core_job_priority(core, 1, 0, &p), -1);
    core_destroy(core);
}

/* An update's nice moves the job behind its user's others; its memory
 * and limit are the spec's from then on. */
static void test_update_moves(void **state) {
    (void)state;
    core_state *core = make_core("aegis-plus", "magm", 1);
    occupy_all(core, 1, 40000);
    submit_as(core, 1, 1, 0, 1000, 0);
    submit_as(core, 2, 1, 0, 1000, 1);
    core_job_spec s = job_spec(1, 1);
    s.nice = 50;
    s.est_mib = 2000;
    s.time_limit_s = 60;
    assert_int_equal(core_job_update(core, 1, &s), 0);
    check_core(core, __FILE__, __LINE__);
    core_priority p;
    assert_int_equal(core_job_priority(core, 1, 10, &p), 0);
    assert_int_equal(p.nice, 50);
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 40, NULL),
                     CORE_DONE);
    core_launch l;
    assert_int_equal(place_one(core, 40, &l), 0);
    assert_int_equal(l.job_id, 2);
    assert_int_equal(core_job_update(core, 2, &s), -1); /* running */
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_none_without_backfill),
        cmocka_unit_test(test_update_moves),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
