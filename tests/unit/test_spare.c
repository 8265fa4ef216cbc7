/* test_spare.c -- the core's spare job records (core_state.spare): a
 * forgotten job's record is kept for the next submit, at most
 * CORE_SPARE_MAX of them, the rest freed, so that a burst of jobs does
 * not keep its memory once it has passed (100,000 jobs kept 49 MB); and a
 * record freed is no longer read through the last pass's front. */
#include "helpers.h"

#include "core_priv.h"

/* The records on the spare chain, counted by walking it (not by the
 * core's own count, which core_check() compares with the chain). */
static size_t spare_records(const core_state *core) {
    size_t n = 0;
    for (const core_job *j = core->spare; j; j = j->hnext) n++;
    return n;
}

/* Submits jobs first..last of one GPU, each estimated to need est_mib,
 * at `now`. The core's functions themselves, in parentheses past the
 * helpers' checking macros: a check after each of thousands of events
 * walks every job each time; the test checks the core once the batch is
 * in. */
static void submit_est_range(core_state *core, int64_t first, int64_t last,
                             double est_mib, double now) {
    char err[256];
    for (int64_t id = first; id <= last; id++) {
        core_job_spec s = job_spec(id, 1);
        s.est_mib = est_mib;
        assert_int_equal((core_submit)(core, &s, now, err, sizeof(err)), 0);
    }
    check_core(core, __FILE__, __LINE__);
}

static void submit_range(core_state *core, int64_t first, int64_t last,
                         double now) {
    submit_est_range(core, first, last, CORE_UNKNOWN, now);
}

static void cancel_range(core_state *core, int64_t first, int64_t last,
                         double now) {
    for (int64_t id = first; id <= last; id++)
        assert_int_equal((core_cancel)(core, id, now), 0);
    check_core(core, __FILE__, __LINE__);
}

/* Jobs through the core in bursts far past the cap, queued and cancelled,
 * and run to their end: the spare records never pass CORE_SPARE_MAX, and
 * the cap's worth is kept for the next burst, which takes them first. */
static void test_spare_records_capped(void **state) {
    (void)state;
    core_state *core = make_core("aegis", "magm", 2);
    const int64_t burst = CORE_SPARE_MAX + 5000;
    for (int round = 0; round < 3; round++) {
        int64_t first = 1 + round * burst;
        submit_range(core, first, first + burst - 1, round);
        /* the submits took every spare record there was */
        assert_int_equal(spare_records(core), 0);
        cancel_range(core, first, first + burst - 1, round);
        assert_int_equal(spare_records(core), CORE_SPARE_MAX);
    }
    /* jobs that ran and ended are forgotten the same way */
    core_launch out[2];
    for (int64_t id = 1000000; id < 1000000 + 2 * CORE_SPARE_MAX; id += 2) {
        submit_range(core, id, id + 1, id);
        assert_int_equal(core_schedule(core, id, out, 2), 2);
        for (int k = 0; k < 2; k++)
            assert_int_equal(core_job_exit(core, out[k].job_id, CORE_EXIT_OK,
                                           id + 1, NULL), CORE_DONE);
        assert_true(spare_records(core) <= CORE_SPARE_MAX);
    }
    assert_int_equal(spare_records(core), CORE_SPARE_MAX);
    core_destroy(core);
}

/* Under aegis-plus a backfill pass remembers the records of the jobs it
 * reached, and core_reason_front() reads them after those jobs may have
 * gone. With the spare list full, a reached job's cancel frees its
 * record: the front must then neither give it nor read the freed record
 * (valgrind, or a sanitizer build, says where it would), and a job
 * submitted again under its id is found by the id. */
static void test_freed_record_leaves_front(void **state) {
    (void)state;
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 30000);
    /* each needs more than any GPU has free: they wait, all reached */
    submit_est_range(core, 200000, 200009, 38000, 1);
    core_launch out[2];
    assert_int_equal(core_schedule(core, 30, out, 2), 0);
    int64_t ids[CORE_BACKFILL_DEPTH];
    assert_int_equal(core_reason_front(core, ids, CORE_BACKFILL_DEPTH), 10);
    /* the spare list filled behind them, with no pass since */
    submit_range(core, 300000, 300000 + CORE_SPARE_MAX - 1, 30);
    cancel_range(core, 300000, 300000 + CORE_SPARE_MAX - 1, 30);
    assert_int_equal(spare_records(core), CORE_SPARE_MAX);
    cancel_range(core, 200000, 200009, 30); /* their records freed */
    assert_int_equal(spare_records(core), CORE_SPARE_MAX);
    assert_int_equal(core_reason_front(core, ids, CORE_BACKFILL_DEPTH), 0);
    /* the same id again, in a new record */
    submit_est_range(core, 200004, 200004, 38000, 31);
    assert_int_equal(core_reason_front(core, ids, CORE_BACKFILL_DEPTH), 1);
    assert_int_equal(ids[0], 200004);
    core_destroy(core);
}

/* A new record's reason asked before any backfill pass has reached it
 * (`aegis ls` right after a restart's recovery, or a submit): every field
 * question() reads is set by core_job_new(), not left from the record's
 * malloc or its last job. UBSan: "load of value 190, which is not a valid
 * value for type '_Bool'" (behind_drain; over_limit before it). */
static void test_new_record_reason_before_pass(void **state) {
    (void)state;
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 30000);
    core_reason r;
    for (int64_t id = 400000; id < 400004; id++) {
        submit_est_range(core, id, id, 38000, 1);
        assert_int_equal(core_job_reason(core, id, 1, &r), 0);
    }
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spare_records_capped),
        cmocka_unit_test(test_freed_record_leaves_front),
        cmocka_unit_test(test_new_record_reason_before_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
