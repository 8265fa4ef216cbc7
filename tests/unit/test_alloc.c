/* test_alloc.c -- the core when memory runs out (core_set_allocator(),
 * as SQLite injects allocation faults): a scenario that grows every table
 * the core keeps (jobs, users, feeds, windows) is run again and again,
 * its n-th allocation failing, then every one after it too. Each call
 * must fail cleanly or succeed, the core's counts must stay whole
 * (core_check() after every event, helpers.h), and the sanitizer build
 * must see no leak. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>

static long alloc_calls;   /* allocations so far in this run */
static long alloc_fail_at; /* the first to fail; 0: none */
static bool alloc_sticky;  /* every one after it fails too */
static long alloc_failed;  /* allocations refused in this run */

static bool alloc_refuses(void) {
    alloc_calls++;
    bool refuse = alloc_fail_at > 0 &&
                  (alloc_calls == alloc_fail_at ||
                   (alloc_sticky && alloc_calls > alloc_fail_at));
    alloc_failed += refuse;
    return refuse;
}

static void *failing_malloc(size_t size) {
    return alloc_refuses() ? NULL : malloc(size);
}

static void *failing_calloc(size_t n, size_t size) {
    return alloc_refuses() ? NULL : calloc(n, size);
}

static void *failing_realloc(void *p, size_t size) {
    return alloc_refuses() ? NULL : realloc(p, size);
}

static const core_allocator failing = {failing_malloc, failing_calloc,
                                       failing_realloc};

/* A refused call says why, and names the job. */
static void refused_well(int rc, const char *err) {
    if (rc == 0) return;
    assert_non_null(strstr(err, "out of memory"));
}

/* Submits jobs of many users and feeds (tables grow past their first
 * size), places, retries and ends them. Returns without failing when an
 * allocation is refused: only the core's answers are checked. */
static void scenario(void) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = "aegis-plus";
    double totals[4] = {GPU_MIB, GPU_MIB, GPU_MIB, GPU_MIB};
    char err[256] = "";
    core_state *core = core_create(&cfg, 4, totals, err, sizeof(err));
    if (!core) {
        assert_non_null(strstr(err, "out of memory"));
        return;
    }
    for (int64_t id = 1; id <= 150; id++) {
        core_job_spec s = job_spec(id, 1 + (int)(id % 2));
        char name[32];
        snprintf(name, sizeof(name), "feed%d", (int)(id % 20));
        s.user = (uint32_t)(id % 90);
        s.feed = id % 3 ? name : NULL;
        refused_well(core_submit(core, &s, 0, err, sizeof(err)), err);
    }
    core_launch out[8];
    for (double t = 0; t < 60; t += 5) {
        for (int g = 0; g < 4; g++) feed(core, g, 1000, t);
        int n = core_schedule(core, t, out, 8);
        for (int i = 0; i < n; i++) {
            core_job_active(core, out[i].job_id, t);
            core_exit how = out[i].job_id % 4 ? CORE_EXIT_OK : CORE_EXIT_OOM;
            core_job_exit(core, out[i].job_id, how, t + 1, NULL);
        }
    }
    core_cancel(core, 3, 60);
    core_destroy(core);
}

static void test_every_allocation_fails_once(void **state) {
    core_set_allocator(&failing);
    for (alloc_fail_at = 1;; alloc_fail_at++) {
        alloc_calls = alloc_failed = 0;
        scenario();
        if (alloc_failed == 0) break; /* the scenario needs no more */
    }
    core_set_allocator(NULL);
    assert_true(alloc_fail_at > 20); /* it reached the tables' growth */
}

static void test_memory_stays_gone(void **state) {
    core_set_allocator(&failing);
    alloc_sticky = true;
    for (alloc_fail_at = 1;; alloc_fail_at++) {
        alloc_calls = alloc_failed = 0;
        scenario();
        if (alloc_failed == 0) break;
    }
    alloc_sticky = false;
    core_set_allocator(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_fails_once),
        cmocka_unit_test(test_memory_stays_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
