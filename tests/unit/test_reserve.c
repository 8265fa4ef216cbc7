/* test_reserve.c -- the reservation of a wide head of the queue under
 * aegis-plus (src/core/reserve.c): its GPUs take no new job once half of
 * backfill_max_passes have passed it, a job whose
 * time limit (and the kill grace) ends before the head's expected start
 * backfills there, none does while that start is unknown, a site's
 * default_time gives a job without a limit one, and the head's REASON;
 * and a job waiting for empty GPUs keeps its place in submit order, on
 * the GPUs whose jobs started last. */
#include "helpers.h"

/* The default configuration under aegis-plus. */
static core_config plus_config(void) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = "aegis-plus";
    return cfg;
}

/* aegis-plus on two GPUs of 40960 MiB. One job may pass the head before
 * the queue waits behind it, so a wide head keeps its GPUs whole at once
 * (after half of that, none). */
static core_state *plus_core(double default_time) {
    core_config cfg = plus_config();
    cfg.backfill_max_passes = 1;
    cfg.default_time = default_time;
    return make_core_cfg(&cfg, 2);
}

static void submit_limited(core_state *core, int64_t id, int ngpus,
                           double est, double limit, double now) {
    core_job_spec s = job_spec(id, ngpus);
    s.est_mib = est;
    s.time_limit_s = limit;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* A job of `ngpus` GPUs declaring a whole GPU of 40960 MiB on each. */
static void submit_whole_gpu(core_state *core, int64_t id, int ngpus,
                             double now) {
    core_job_spec s = job_spec(id, ngpus);
    s.est_mib = 40960;
    s.mem_declared = true;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* A pass at `now` starts job `id` alone, on GPU `gpu`. */
static void starts_on(core_state *core, double now, int64_t id, int gpu) {
    core_launch out[4];
    assert_int_equal(core_schedule(core, now, out, 4), 1);
    assert_int_equal(out[0].job_id, id);
    assert_int_equal(out[0].gpus[0], gpu);
}

/* Jobs 100 and 101 start at t=0 on GPUs 0 and 1 with these limits (0:
 * none), active at once; each GPU reads 30000 MiB used (10960 free) from
 * then, so from t=30 its window is full and its observation over. */
static void two_running(core_state *core, double limit0, double limit1) {
    submit_limited(core, 100, 1, CORE_UNKNOWN, limit0, 0);
    submit_limited(core, 101, 1, CORE_UNKNOWN, limit1, 0);
    core_launch out[2];
    assert_int_equal(core_schedule(core, 0, out, 2), 2);
    for (int g = 0; g < 2; g++) {
        core_job_active(core, 100 + g, 0);
        feed(core, g, 30000, 0);
    }
}

/* plus_core(default_time) with jobs 100 and 101 running (two_running()),
 * a 2-GPU head, job 1, demanding 12288 MiB (capped), and behind it 1-GPU
 * jobs 2, 3, ... of 2548 MiB with these limits (0: none), all queued at
 * t=30. */
static core_state *wide_head(double default_time, double limit0,
                             double limit1, const double *limits, int n) {
    core_state *core = plus_core(default_time);
    two_running(core, limit0, limit1);
    submit_limited(core, 1, 2, 38000, 0, 30);
    for (int i = 0; i < n; i++)
        submit_limited(core, 2 + i, 1, 500, limits[i], 30);
    return core;
}

/* Nothing starts at `now`; the head, job 1, waits for `why`, and job
 * `behind` behind it. */
static void head_waits(core_state *core, double now, const char *why,
                       int64_t behind) {
    core_launch out[4];
    assert_int_equal(core_schedule(core, now, out, 4), 0);
    reason_is(core, 1, now, why);
    reason_is(core, behind, now, "behind job 1 (head of queue)");
}

/* A 2-GPU head demanding 12288 MiB (capped) fits beside neither job; a
 * 1-GPU job of 2548 MiB would fit beside it on either GPU, and the
 * partner rule let it start there. The head keeps both GPUs whole: the
 * small job waits behind it, and the head starts once the two jobs it
 * found end. */
static void test_reservation_blocks_its_gpus(void **state) {
    (void)state;
    core_state *core = wide_head(0, 0, 0, (double[]){0}, 1);
    head_waits(core, 30, "reserving GPUs 0-1: 2 jobs on them, expected "
               "start unknown (job 101 has no time limit)", 2);
    core_launch out[4];
    core_reason r;
    assert_int_equal(core_job_reason(core, 1, 30, &r), 0);
    assert_string_equal(core_wait_name(r.kind), "reserving");
    assert_true(r.until < 0);
    assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 40, NULL),
                     CORE_DONE);
    assert_int_equal(core_schedule(core, 40, out, 4), 0);
    reason_is(core, 1, 40, "reserving GPUs 0-1: 1 job on them, expected "
              "start unknown (job 101 has no time limit)");
    assert_int_equal(core_job_exit(core, 101, CORE_EXIT_OK, 50, NULL),
                     CORE_DONE);
    assert_int_equal(core_schedule(core, 50, out, 4), 1);
    assert_int_equal(out[0].job_id, 1);
    assert_int_equal(out[0].num_gpus, 2);
    assert_true(out[0].exclusive);
    core_destroy(core);
}

/* Jobs 100 and 101 have an hour each: the head starts by 3610 at the
 * latest (the kill grace included). At t=30 a job of 1800 s ends by 1840
 * and backfills on a kept GPU, and so does one of 1000 s: neither counts
 * against the one job that backfill_max_passes lets pass the head. One of
 * 3600 s would end by 3640 and waits, as does the one that ends exactly
 * when the head starts, plus a second. */
static void test_short_job_backfills(void **state) {
    (void)state;
    core_state *core = wide_head(0, 3600, 3600,
                                 (double[]){3600, 3571, 1800, 1000}, 4);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 2);
    assert_int_equal(out[0].job_id, 4);
    assert_int_equal(out[1].job_id, 5);
    reason_is(core, 1, 30, "reserving GPUs 0-1: 4 jobs on them, expected "
              "start in 3580 s");
    reason_is(core, 2, 30, "behind job 1 (head of queue)");
    reason_is(core, 3, 30, "behind job 1 (head of queue)");
    core_reason r;
    assert_int_equal(core_job_reason(core, 1, 30, &r), 0);
    assert_double_equal(r.until, 3610, 1e-9);
    core_destroy(core);

    /* 3570 s from t=30 with the grace is 3610: it fits exactly */
    core = wide_head(0, 3600, 3600, (double[]){3570}, 1);
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    core_destroy(core);
}

/* With backfill_max_passes 4, a wide head takes partners as a one-GPU
 * head does until 2 jobs have passed it; from the next pass on its GPUs
 * are kept whole. Three GPUs each run a job; GPU 2 has too little room
 * for anyone. The head keeps GPUs 0 and 1, where jobs 2 and 3 start as
 * its partners; then job 4 finds them whole. */
static void test_wide_head_whole_after_half(void **state) {
    (void)state;
    core_config cfg = plus_config();
    cfg.backfill_max_passes = 4;
    core_state *core = make_core_cfg(&cfg, 3);
    occupy_all(core, 3, 30000);
    feed(core, 2, 39000, 1);
    submit_limited(core, 1, 2, 38000, 0, 30);
    for (int64_t id = 2; id <= 4; id++) submit_limited(core, id, 1, 500, 0, 30);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 40, out, 4), 2);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].gpus[0], 0);
    assert_int_equal(out[1].job_id, 3);
    assert_int_equal(out[1].gpus[0], 1);
    core_reason r;
    assert_int_equal(core_job_reason(core, 1, 40, &r), 0);
    assert_int_equal(r.kind, CORE_WAIT_MEMORY);
    core_job_active(core, 2, 41);
    core_job_active(core, 3, 41);
    head_waits(core, 100, "reserving GPUs 0-1: 4 jobs on them, expected "
               "start unknown (job 101 has no time limit)", 4);
    core_destroy(core);
}

/* A head that must run alone keeps GPU 0 (the fewest jobs, the lower
 * index breaking the tie). While its start is unknown none passes it (as
 * test_plus shows); once every job there has a limit, it is reserved as a
 * wide head is: a job may start on GPU 1, not on GPU 0. */
static void test_alone_head_reserves(void **state) {
    (void)state;
    core_state *core = plus_core(0);
    two_running(core, 3600, 600);
    submit_alone(core, 1, 30);
    submit_limited(core, 2, 1, 500, 0, 30);
    submit_limited(core, 3, 1, 500, 0, 30);
    starts_on(core, 30, 2, 1);
    reason_is(core, 1, 30, "reserving GPU 0: 1 job on it, expected start "
              "in 3580 s");
    core_destroy(core);
}

/* One job on the kept GPUs without a limit: nobody knows when the head
 * starts, so no job backfills there, however short. */
static void test_unknown_start_no_backfill(void **state) {
    (void)state;
    core_state *core = wide_head(0, 3600, 0, (double[]){60}, 1);
    head_waits(core, 30, "reserving GPUs 0-1: 2 jobs on them, expected "
               "start unknown (job 101 has no time limit)", 2);
    core_destroy(core);
}

/* default_time gives every job without a limit one: the running jobs end
 * by 3610, so a job of 1800 s backfills, and one without a limit (an hour
 * by default) does not. */
static void test_default_time(void **state) {
    (void)state;
    core_state *core = wide_head(3600, 0, 0, (double[]){0, 1800}, 2);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 3);
    reason_is(core, 1, 30, "reserving GPUs 0-1: 3 jobs on them, expected "
              "start in 3580 s");
    core_destroy(core);

    core_config cfg;
    core_config_default(&cfg);
    char err[128];
    assert_int_equal(core_config_set(&cfg, "default_time", "7200", err,
                                     sizeof(err)), 0);
    assert_double_equal(cfg.default_time, 7200, 0);
    assert_int_equal(core_config_set(&cfg, "default_time", "-1", err,
                                     sizeof(err)), -1);
    assert_non_null(strstr(err, "default_time"));
}

/* A one-GPU head keeps its partner rule, and a job short enough to leave
 * before the head's start may also take its GPU. */
static void test_one_gpu_head_short_job(void **state) {
    (void)state;
    core_config cfg = plus_config();
    cfg.est_cap_mib = 0;
    core_state *core = make_core_cfg(&cfg, 1);
    submit_limited(core, 100, 1, CORE_UNKNOWN, 600, 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 0, out, 4), 1);
    core_job_active(core, 100, 0);
    feed(core, 0, 30000, 0);
    submit_limited(core, 1, 1, 30000, 0, 30);   /* 32048: waits */
    submit_limited(core, 2, 1, 7000, 500, 30);  /* no partner; ends by 540 */
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    reason_is(core, 1, 30, "no GPU with 32560 MiB free (largest free: "
              "10960 MiB on GPU 0)");
    core_destroy(core);
}

/* A one-GPU head declaring a whole GPU fits beside no job: it waits for
 * the jobs on its GPU to leave, as one that must run alone does, so it
 * keeps the GPU with the fewest jobs (the most free memory breaking the
 * tie: GPU 1 here) whole and is told so, where it waited for memory. */
static void test_whole_gpu_head_reserves(void **state) {
    (void)state;
    core_state *core = plus_core(0);
    two_running(core, 3600, 600);
    feed(core, 1, 20000, 0);
    submit_whole_gpu(core, 1, 1, 30);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 0);
    reason_is(core, 1, 30, "reserving GPU 1: 1 job on it, expected start "
              "in 580 s");
    core_destroy(core);
}

/* A head waiting for empty GPUs moves its reservation to a GPU that has
 * emptied: it keeps GPUs 0 and 1 at first (one job each), GPU 2 empties
 * at t=40, and it keeps GPUs 0 and 2 from then on, so job 2 starts beside
 * the job on GPU 1, not on the idle GPU 2 that would have kept the head
 * waiting for the job on GPU 1 as well. */
static void test_whole_gpu_head_takes_emptied_gpu(void **state) {
    (void)state;
    core_config cfg = plus_config();
    core_state *core = make_core_cfg(&cfg, 3);
    core_launch out[4];
    for (int g = 0; g < 3; g++)
        submit_limited(core, 100 + g, 1, CORE_UNKNOWN, 0, 0);
    assert_int_equal(core_schedule(core, 0, out, 4), 3);
    int64_t on2 = -1;
    for (int g = 0; g < 3; g++) {
        core_job_active(core, 100 + g, 0);
        feed(core, out[g].gpus[0], 30000, 0);
        if (out[g].gpus[0] == 2) on2 = out[g].job_id;
    }
    submit_whole_gpu(core, 1, 2, 30);
    assert_int_equal(core_schedule(core, 30, out, 4), 0);
    reason_is(core, 1, 30, "reserving GPUs 0-1: 2 jobs on them, expected "
              "start unknown (job 101 has no time limit)");
    assert_int_equal(core_job_exit(core, on2, CORE_EXIT_OK, 40, NULL),
                     CORE_DONE);
    submit_limited(core, 2, 1, 500, 0, 40);
    starts_on(core, 40, 2, 1);
    reason_is(core, 1, 40, "reserving GPUs 0,2: 1 job on them, expected "
              "start unknown (job 100 has no time limit)");
    core_destroy(core);
}

/* Behind a head that waits for memory (job 1, GPU 0 kept: its partner
 * rule would let job 3 in beside it), job 2 asks two whole GPUs and cannot
 * start either. It keeps both from the jobs behind it: job 3, submitted
 * after it, would fit beside the job on GPU 1 now and hold the GPU for as
 * long as it ran, where a FIFO would start job 2 first. So job 3 waits
 * behind the head, and job 2 starts once the two jobs it found end. */
static void test_wide_behind_head_keeps_gpus(void **state) {
    (void)state;
    core_state *core = plus_core(0);
    two_running(core, 0, 0);
    submit_limited(core, 1, 1, 38000, 0, 30);
    submit_whole_gpu(core, 2, 2, 30);
    submit_limited(core, 3, 1, 500, 0, 31);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 31, out, 4), 0);
    reason_is(core, 3, 31, "behind job 1 (head of queue)");
    for (int g = 0; g < 2; g++)
        assert_int_equal(core_job_exit(core, 100 + g, CORE_EXIT_OK, 40, NULL),
                         CORE_DONE);
    assert_int_equal(core_schedule(core, 40, out, 4), 1);
    assert_int_equal(out[0].job_id, 1);
    core_job_active(core, 1, 40);
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 50, NULL),
                     CORE_DONE);
    assert_int_equal(core_schedule(core, 50, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    core_destroy(core);
}

/* The queued job's head start (users.c's advance), in seconds. */
static double head_start(core_state *core, int64_t id, double now) {
    core_priority p;
    assert_int_equal(core_job_priority(core, id, now, &p), 0);
    return p.head_start_s;
}

/* A big job goes 900 s ahead (big_advance_s), but not ahead of a job
 * waiting for empty GPUs, which takes no advance itself, of one GPU or
 * more: job 3 queues right behind job 2, as if submitted with it, job 6
 * right behind job 5; job 4, submitted with no such job waiting within
 * its advance, goes the whole 900 s. */
static void test_empty_gpus_keep_submit_order(void **state) {
    (void)state;
    core_state *core = plus_core(0);
    two_running(core, 0, 0);
    submit_whole_gpu(core, 2, 2, 30);
    submit_limited(core, 3, 1, 38000, 0, 40);
    assert_double_equal(head_start(core, 2, 40), 0, 1e-9);
    assert_double_equal(head_start(core, 3, 40), 10, 1e-9);
    assert_int_equal(core_cancel(core, 2, 950), 0);
    submit_limited(core, 4, 1, 38000, 0, 960);
    assert_double_equal(head_start(core, 4, 960), 900, 1e-9);
    submit_whole_gpu(core, 5, 1, 970);
    submit_limited(core, 6, 1, 38000, 0, 975);
    assert_double_equal(head_start(core, 5, 975), 0, 1e-9);
    assert_double_equal(head_start(core, 6, 975), 5, 1e-9);
    core_destroy(core);
}

/* As test_wide_behind_head_keeps_gpus, but job 2, of two GPUs demanding
 * 12288 MiB (capped) each, fails first: the pass knows then that job 4,
 * asking as many GPUs and more memory, cannot start either, and does not
 * try it; job 4 still keeps its GPUs from job 5 behind it. A job of one
 * GPU waiting for an empty one (job 3) keeps none. */
static void test_wide_known_to_fail_keeps_gpus(void **state) {
    (void)state;
    core_state *core = plus_core(0);
    two_running(core, 0, 0);
    submit_limited(core, 1, 1, 38000, 0, 30);
    submit_limited(core, 2, 2, 20000, 0, 30);
    submit_whole_gpu(core, 3, 1, 30);
    submit_whole_gpu(core, 4, 2, 30);
    submit_limited(core, 5, 1, 500, 0, 31);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 31, out, 4), 0);
    reason_is(core, 5, 31, "behind job 1 (head of queue)");
    core_destroy(core);
}

/* Four GPUs each run one job, two started at t=0 (11960 and 11460 MiB
 * free), two at t=1000 (10960 free). Behind a head that waits for memory
 * (job 1, demanding 12288 MiB (capped), keeping the GPU with the most
 * free), job 2 asks two whole GPUs: it keeps the two whose jobs started
 * last, though the others show more free memory, which chose before. A
 * GPU job that has run long is likely to run long still, so those are
 * the likelier to empty first. Job 3, submitted after job 2, then starts
 * beside the other job of t=0, not on a GPU job 2 keeps. */
static void test_wide_behind_head_keeps_youngest(void **state) {
    (void)state;
    core_config cfg = plus_config();
    core_state *core = make_core_cfg(&cfg, 4);
    core_launch out[4];
    int old_gpu[2], young_gpu[2];
    for (int i = 0; i < 2; i++)
        submit_limited(core, 100 + i, 1, CORE_UNKNOWN, 0, 0);
    assert_int_equal(core_schedule(core, 0, out, 4), 2);
    for (int i = 0; i < 2; i++) old_gpu[i] = out[i].gpus[0];
    for (int i = 0; i < 2; i++)
        submit_limited(core, 102 + i, 1, CORE_UNKNOWN, 0, 1000);
    assert_int_equal(core_schedule(core, 1000, out, 4), 2);
    for (int i = 0; i < 2; i++) young_gpu[i] = out[i].gpus[0];
    for (int i = 0; i < 2; i++) {
        core_job_active(core, 100 + i, 0);
        core_job_active(core, 102 + i, 1000);
        feed(core, old_gpu[i], 29000 + 500 * i, 1000);
        feed(core, young_gpu[i], 30000, 1000);
    }
    submit_limited(core, 1, 1, 38000, 0, 1100);
    submit_whole_gpu(core, 2, 2, 1100);
    submit_limited(core, 3, 1, 500, 0, 1101);
    assert_int_equal(core_schedule(core, 1101, out, 4), 1);
    assert_int_equal(out[0].job_id, 3);
    assert_int_equal(out[0].gpus[0], old_gpu[1]);
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reservation_blocks_its_gpus),
        cmocka_unit_test(test_short_job_backfills),
        cmocka_unit_test(test_wide_head_whole_after_half),
        cmocka_unit_test(test_alone_head_reserves),
        cmocka_unit_test(test_unknown_start_no_backfill),
        cmocka_unit_test(test_default_time),
        cmocka_unit_test(test_one_gpu_head_short_job),
        cmocka_unit_test(test_whole_gpu_head_reserves),
        cmocka_unit_test(test_whole_gpu_head_takes_emptied_gpu),
        cmocka_unit_test(test_wide_behind_head_keeps_gpus),
        cmocka_unit_test(test_empty_gpus_keep_submit_order),
        cmocka_unit_test(test_wide_known_to_fail_keeps_gpus),
        cmocka_unit_test(test_wide_behind_head_keeps_youngest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
