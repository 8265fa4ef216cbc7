/* test_cpus.c -- the server's CPUs as a resource (src/core/cpus.c):
 * aegis-plus does not start a job whose data loading's CPUs would take
 * the running jobs' past the server's, other policies do; a job that
 * wants more than the server has still runs once no CPU is committed,
 * and the head of the queue keeps its CPUs from the jobs behind it; a
 * feed's jobs on one GPU commit their loader once. Worked by hand on a
 * server of 8 CPUs. */
#include "helpers.h"

#define SERVER_CPUS 8.0

static core_state *cpu_core(const char *policy, int ngpus) {
    core_state *core = make_core(policy, "magm", ngpus);
    char err[256];
    assert_int_equal(core_set_cpus(core, SERVER_CPUS, err, sizeof(err)), 0);
    return core;
}

/* Submits a one-GPU job whose data loading keeps `cpus` CPUs busy, of
 * feed `feed` (NULL: none). */
static void submit_cpus(core_state *core, int64_t id, double cpus,
                        const char *feed, double now) {
    core_job_spec s = job_spec(id, 1);
    s.cpus = cpus;
    s.feed = feed;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* Schedules at `now` and wants exactly the jobs of `ids` (n of them)
 * started, in that order. */
static void starts(core_state *core, double now, const int64_t *ids, int n) {
    core_launch out[8];
    assert_int_equal(core_schedule(core, now, out, 8), n);
    for (int i = 0; i < n; i++) assert_int_equal(out[i].job_id, ids[i]);
}

static void assert_reason_text(core_state *core, int64_t id, double now,
                               const char *want) {
    core_reason r;
    assert_int_equal(core_job_reason(core, id, now, &r), 0);
    assert_int_equal(r.kind, CORE_WAIT_CPUS);
    char text[200];
    core_reason_text(&r, now, text, sizeof(text));
    assert_string_equal(text, want);
}

/* Jobs of 6 and 4 CPUs on a server of 8: under aegis-plus the second
 * waits although GPU 1 is idle (6 + 4 > 8), and starts when the first
 * ends; aegis starts both, 10 CPUs committed. */
static void test_over_the_server_not_collocated(void **state) {
    core_state *core = cpu_core("aegis-plus", 2);
    submit_cpus(core, 1, 6, NULL, 0);
    submit_cpus(core, 2, 4, NULL, 0);
    starts(core, 0, (int64_t[]){1}, 1);
    assert_double_equal(core_cpus_committed(core), 6, 0);
    assert_reason_text(core, 2, 0, "needs 4 CPUs for its data loading, 2 of "
                       "the server's 8 free");
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 100, NULL),
                     CORE_DONE);
    assert_double_equal(core_cpus_committed(core), 0, 0);
    starts(core, 100, (int64_t[]){2}, 1);
    assert_double_equal(core_cpus_committed(core), 4, 0);
    core_destroy(core);

    core = cpu_core("aegis", 2);
    submit_cpus(core, 1, 6, NULL, 0);
    submit_cpus(core, 2, 4, NULL, 0);
    starts(core, 0, (int64_t[]){1, 2}, 2);
    assert_double_equal(core_cpus_committed(core), 10, 0);
    core_destroy(core);
}

/* 3 + 5 CPUs fill the server of 8 exactly: both start. A third job of 1
 * CPU waits; one that counts no CPUs is not held back by them. */
static void test_exactly_full(void **state) {
    core_state *core = cpu_core("aegis-plus", 4);
    submit_cpus(core, 1, 3, NULL, 0);
    submit_cpus(core, 2, 5, NULL, 0);
    submit_cpus(core, 3, 1, NULL, 0);
    submit_cpus(core, 4, 0, NULL, 0);
    starts(core, 0, (int64_t[]){1, 2, 4}, 3);
    assert_double_equal(core_cpus_committed(core), 8, 0);
    assert_reason_text(core, 3, 0, "needs 1 CPU for its data loading, 0 of "
                       "the server's 8 free");
    core_destroy(core);
}

/* A job wanting 12 CPUs of a server's 8 waits while 2 are committed,
 * keeping them from a 1-CPU job behind it (2 + 1 + 12 > 8), which would
 * otherwise fit; once the 2-CPU job ends it starts, though it alone
 * wants more than the server has (no deadlock), and the 1-CPU job waits
 * until it ends. */
static void test_bigger_than_the_server_runs_alone(void **state) {
    core_state *core = cpu_core("aegis-plus", 3);
    submit_cpus(core, 1, 2, NULL, 0);
    starts(core, 0, (int64_t[]){1}, 1);
    submit_cpus(core, 2, 12, NULL, 1);
    submit_cpus(core, 3, 1, NULL, 1);
    starts(core, 1, NULL, 0);
    assert_reason_text(core, 2, 1, "needs 12 CPUs for its data loading, 6 "
                       "of the server's 8 free");
    assert_reason_text(core, 3, 1, "needs 1 CPU for its data loading, 0 of "
                       "the server's 8 free (12 kept for job 2, the head of "
                       "the queue)");
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 50, NULL),
                     CORE_DONE);
    starts(core, 50, (int64_t[]){2}, 1);
    assert_double_equal(core_cpus_committed(core), 12, 0);
    starts(core, 51, NULL, 0);
    assert_reason_text(core, 3, 51, "needs 1 CPU for its data loading, 0 "
                       "of the server's 8 free");
    assert_int_equal(core_job_exit(core, 2, CORE_EXIT_OK, 90, NULL),
                     CORE_DONE);
    starts(core, 90, (int64_t[]){3}, 1);
    core_destroy(core);
}

/* Jobs of a feed on one GPU share its loader: the second commits no
 * more CPUs (4, not 8), and the loader keeps the 4 CPUs of the job that
 * opened it until the last of them ends. A 4-CPU job of no feed then
 * does not fit beside them on a server of 6. */
static void test_feed_loader_counts_once(void **state) {
    core_state *core = cpu_core("aegis-plus", 2);
    char err[256];
    assert_int_equal(core_set_cpus(core, 6, err, sizeof(err)), 0);
    submit_cpus(core, 1, 4, "imagenet", 0);
    starts(core, 0, (int64_t[]){1}, 1);
    core_job_active(core, 1, 0);
    feed(core, 0, 8000, 0);
    feed(core, 1, 0, 0);
    submit_cpus(core, 2, 4, "imagenet", 30);
    submit_cpus(core, 3, 4, NULL, 30);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].gpus[0], 0);
    assert_double_equal(core_cpus_committed(core), 4, 0);
    assert_reason_text(core, 3, 30, "needs 4 CPUs for its data loading, 2 "
                       "of the server's 6 free");
    assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 60, NULL),
                     CORE_DONE);
    assert_double_equal(core_cpus_committed(core), 4, 0);
    assert_int_equal(core_job_exit(core, 2, CORE_EXIT_OK, 70, NULL),
                     CORE_DONE);
    assert_double_equal(core_cpus_committed(core), 0, 0);
    starts(core, 70, (int64_t[]){3}, 1);
    core_destroy(core);
}

/* Without the server's CPUs (0, core_create()'s) nothing is held back;
 * a spec or a server with CPUs below 0 is refused. */
static void test_unset_and_bad_cpus(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    submit_cpus(core, 1, 6, NULL, 0);
    submit_cpus(core, 2, 4, NULL, 0);
    starts(core, 0, (int64_t[]){1, 2}, 2);
    char err[256];
    assert_int_equal(core_set_cpus(core, -1, err, sizeof(err)), -1);
    assert_string_equal(err, "core: -1 CPUs, must be 0 or more");
    core_job_spec s = job_spec(3, 1);
    s.cpus = -2;
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), -1);
    assert_string_equal(err, "job 3: -2 CPUs, must be 0 or more");
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_over_the_server_not_collocated),
        cmocka_unit_test(test_exactly_full),
        cmocka_unit_test(test_bigger_than_the_server_runs_alone),
        cmocka_unit_test(test_feed_loader_counts_once),
        cmocka_unit_test(test_unset_and_bad_cpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
