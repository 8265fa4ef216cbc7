/* test_check.c -- core_check() (src/core/check.c) finds a count the
 * events broke: each test breaks one sum or link by hand, as a faulty
 * event would, and wants the difference named with both values. */
#include "helpers.h"

#include <stdio.h>

#include "core_priv.h"

/* A core of 2 GPUs under aegis-plus: job 1 running on GPUs 0 and 1 with
 * hints, its feed's loader of 3 CPUs on GPU 0, not yet seen active; job 2 (a feed's producer) and job 3 queued behind
 * a full server, job 3 a retry on the recovery queue. */
static core_state *busy_core(void) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    char err[256];
    core_job_spec s = job_spec(1, 2);
    s.util_pct = 40;
    s.sharing_score = 2;
    s.peak_mib = 1000;
    s.cpus = 3;
    s.feed = "imagenet";
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    core_launch l;
    assert_int_equal(core_schedule(core, 0, &l, 1), 1);
    s = job_spec(2, 2);
    s.feed = "imagenet";
    s.feed_producer = true;
    s.user = 7;
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    s = job_spec(3, 1);
    core_retry r = {.attempt = 2, .floor_mib = 2048};
    assert_int_equal(core_submit_retry(core, &s, &r, 0, err, sizeof(err)), 0);
    return core;
}

/* Fails unless core_check() reports exactly `want`. */
static void reports(const core_state *core, const char *want) {
    char err[512];
    assert_int_equal(core_check(core, err, sizeof(err)), -1);
    if (strcmp(err, want) != 0) fail_msg("'%s', not '%s'", err, want);
}

static void test_whole_core_passes(void **state) {
    core_state *core = busy_core();
    char err[512];
    assert_int_equal(core_check(core, err, sizeof(err)), 0);
    core_destroy(core);
}

static void test_gpu_sums(void **state) {
    core_state *core = busy_core();
    core->gpus[1].view.njobs++;
    reports(core, "GPU 1: njobs 2, its jobs make 1");
    core->gpus[1].view.njobs--;
    core->gpus[0].unseen = 0;
    reports(core, "GPU 0: unseen 0, its jobs not yet active make 1");
    core->gpus[0].unseen = 1;
    core->gpus[0].view.util_pct_sum = 39;
    reports(core, "GPU 0: util_pct_sum 39, its jobs make 40");
    core->gpus[0].view.util_pct_sum = 40;
    core->gpus[1].view.score_sum = 3;
    reports(core, "GPU 1: score_sum 3, its jobs make 2");
    core->gpus[1].view.score_sum = 2;
    core->gpus[1].view.peak_sum_mib = 0;
    reports(core, "GPU 1: peak_sum_mib 0, its jobs make 1000");
    core->gpus[1].view.peak_sum_mib = 1000;
    core->gpus[1].view.peak_unknown = 1;
    reports(core, "GPU 1: peak_unknown 1, its jobs of unknown peak make 0");
    core->gpus[1].view.peak_unknown = 0;
    core->idle |= 1;
    reports(core, "GPU 0: idle bit 1, its state says 0");
    core->idle &= ~(uint64_t)1;
    core_destroy(core);
}

static void test_running_and_queues(void **state) {
    core_state *core = busy_core();
    core->running = 2;
    reports(core, "running 2, the jobs make 1");
    core->running = 1;
    core->fifo.len = 2;
    reports(core, "FIFO queue: len 2, its links hold 1");
    core->fifo.len = 1;
    core_job *retry = core->recovery.head;
    core->recovery = (core_queue){0};
    reports(core, "queues hold 1 jobs, 2 are queued");
    core->recovery = (core_queue){retry, retry, 1};
    retry->attempt = 1;
    reports(core, "recovery queue: job 3: attempt 1 belongs on the other "
                  "queue");
    retry->attempt = 2;
    core_destroy(core);
}

static void test_users_and_feeds(void **state) {
    core_state *core = busy_core();
    core_user *u = &core->users[1]; /* uid 7, its producer queued */
    u->queued = 0;
    reports(core, "user 7: jobs 0, gpus 0, queued 0; its jobs make 0, 0, 1");
    u->queued = 1;
    core->feeds[0]->producers_queued = 0;
    reports(core, "feed imagenet: producers_queued 0, its jobs make 1");
    core->feeds[0]->producers_queued = 1;
    core->feeds[0]->on_gpu[1] = 0;
    reports(core, "feed imagenet: GPU 1: on_gpu 0, its jobs make 1");
    core->feeds[0]->on_gpu[1] = 1;
    core_destroy(core);
}

/* The CPUs committed, and the feed's loader on its job's first GPU. */
static void test_cpus(void **state) {
    core_state *core = busy_core();
    core->cpus_used = 2;
    reports(core, "cpus_used 2, the running jobs make 3");
    core->cpus_used = 3;
    core->feeds[0]->loader_jobs[1] = 1;
    reports(core, "feed imagenet: GPU 1: loader of 1 jobs and 0 CPUs, its "
            "jobs make 0");
    core->feeds[0]->loader_jobs[1] = 0;
    core->feeds[0]->loader_cpus[0] = 5;
    reports(core, "cpus_used 3, the running jobs make 5");
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_core_passes),
        cmocka_unit_test(test_gpu_sums),
        cmocka_unit_test(test_running_and_queues),
        cmocka_unit_test(test_users_and_feeds),
        cmocka_unit_test(test_cpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
