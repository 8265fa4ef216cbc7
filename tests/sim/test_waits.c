/* test_waits.c -- the replay's waiting time by reason (waits.h) asks a
 * job's reason again once something it reads has changed, even where the
 * moment that changed it was one of arrivals alone, whose refresh asks
 * only the jobs new to the front: here a pass after an arrival finds a
 * job at its user's limit, the user's other job having started in the
 * pass before, and a later moment that changes nothing must still tell
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "waits.h"

#define JOBS 8
#define GPU_MIB 40960.0

static core_state *plus_core(void) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = "aegis-plus";
    cfg.max_jobs_per_user = 1;
    double totals[2] = {GPU_MIB, GPU_MIB};
    char err[256];
    core_state *core = core_create(&cfg, 2, totals, err, sizeof(err));
    assert_non_null(core);
    return core;
}

static void submit(core_state *core, int64_t id, uint32_t user, double est,
                   double now) {
    core_job_spec s = {.id = id, .num_gpus = 1, .est_mib = est,
                       .peak_mib = CORE_UNKNOWN, .util_pct = CORE_UNKNOWN,
                       .sharing_score = -1, .user = user};
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* Both GPUs run a job (of users 9 and 10) reading 30000 MiB from t=0. */
static void occupy(core_state *core) {
    submit(core, 6, 9, CORE_UNKNOWN, 0);
    submit(core, 7, 10, CORE_UNKNOWN, 0);
    core_launch out[2];
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    for (int g = 0; g < 2; g++) {
        core_job_active(core, out[g].job_id, 0);
        core_reading r = {.used_mib = 30000, .total_mib = GPU_MIB,
                          .smact = 0.1, .smocc = 0.1, .drama = 0.1,
                          .util = 0.1};
        core_sample(core, g, &r, 0);
    }
}

static void test_limit_after_arrival_is_told(void **state) {
    (void)state;
    core_state *core = plus_core();
    occupy(core);
    double by_reason[JOBS * SIM_WAIT_KINDS] = {0};
    int32_t ids[JOBS] = {0, 1, 2, 3, 4, 5, 6, 7};
    sim_waits w;
    assert_int_equal(sim_waits_init(&w, by_reason, ids, JOBS), 0);
    /* Head 0 (user 1) waits for memory; 1 (user 2) too big to pass it;
     * 2 (user 2) small, starts past it: user 2 is at its limit. */
    submit(core, 0, 1, 38000, 30);
    submit(core, 1, 2, 20000, 30);
    submit(core, 2, 2, 500, 30);
    for (int j = 0; j < 3; j++) sim_waits_queue(&w, j, 30);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    sim_waits_start(&w, 2, 30);
    sim_waits_refresh(&w, core, 30, false);
    assert_true(w.kind[1] != CORE_WAIT_USER_LIMIT);
    /* An arrival alone: its pass starts nothing, and finds job 1 at its
     * user's limit. */
    submit(core, 3, 3, 20000, 40);
    sim_waits_queue(&w, 3, 40);
    assert_int_equal(core_schedule(core, 40, out, 4), 0);
    sim_waits_refresh(&w, core, 40, true);
    /* Nothing changes; the reason is told now at the latest. */
    assert_int_equal(core_schedule(core, 50, out, 4), 0);
    sim_waits_refresh(&w, core, 50, false);
    assert_int_equal(w.kind[1], CORE_WAIT_USER_LIMIT);
    sim_waits_free(&w);
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit_after_arrival_is_told),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
