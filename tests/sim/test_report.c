/* test_report.c -- the simulator's per-job energy split (meter.h) and its
 * report rows (report_account) on a hand-built result: two jobs sharing
 * GPU 0, a job of SMACT 0 alone on GPU 1, and an OOM attempt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "meter.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

static cat_workload works[] = {
    {.name = "heavy", .num_gpus = 1, .solo_s = 100, .smact = 0.6},
    {.name = "light", .num_gpus = 1, .solo_s = 100, .smact = 0.2},
    {.name = "idle", .num_gpus = 1, .solo_s = 40, .smact = 0},
};
static trace_job src[] = {{0, 1, &works[0], 0, 0, 0, 0}, {0, 2, &works[1], 0, 0, 0, 0},
                          {10, 3, &works[2], 0, 0, 0, 0}};
static int32_t gpus[] = {0, 0, 1, 0};
/* job 1 (light) crashed at its first activity at 20, ran again 50..150 */
static sim_attempt atts[] = {
    {.start_s = 0, .active_s = 0, .end_s = 100, .gpu_off = 0, .next = -1,
     .job = 0, .ngpus = 1},
    {.start_s = 10, .active_s = 20, .end_s = 20, .gpu_off = 1, .next = 3,
     .job = 1, .ngpus = 1, .oom = true},
    {.start_s = 10, .active_s = 10, .end_s = 50, .gpu_off = 2, .next = -1,
     .job = 2, .ngpus = 1},
    {.start_s = 45, .active_s = 50, .end_s = 150, .gpu_off = 3, .next = -1,
     .job = 1, .ngpus = 1},
};

static sim_server_log server_log = {.attempts = atts, .nattempts = 4,
                                    .gpus = gpus, .ngpus_used = 4};

static void make(sim_result *r, sim_job *jobs) {
    memset(jobs, 0, 3 * sizeof(*jobs));
    int first[] = {0, 1, 2}, last[] = {0, 3, 2};
    double end[] = {100, 150, 50}, energy[] = {28375, 11125, 2000};
    for (int i = 0; i < 3; i++)
        jobs[i] = (sim_job){.src = &src[i], .end_s = end[i],
                            .first_attempt = first[i], .last_attempt = last[i],
                            .energy_j = energy[i], .state = SIM_DONE};
    *r = (sim_result){.policy = "p", .servers = 1, .gpus_per_server = 2,
                      .jobs = jobs, .njobs = 3, .logs = &server_log,
                      .start_s = 0, .makespan_s = 150};
}

/* GPU 0: 0..50 heavy alone at 290 W; 50..100 heavy and light at 370 W,
 * split 3:1; 100..150 light alone at 130 W. GPU 1: the idle job, alone at
 * 50 W for 40 s. The meter sees the GPU change at 50, 100 and 150. */
static void test_energy_split(void **state) {
    (void)state;
    sim_model m = {.idle_w = 50, .max_w = 450};
    energy_meter g0 = {0}, g1 = {0};
    double heavy = meter_mark(&g0, 0.6);
    meter_run(&g0, sim_model_power_w(&m, 0.6), 0.6, 1, 50);
    double light = meter_mark(&g0, 0.2);
    meter_run(&g0, sim_model_power_w(&m, 0.8), 0.8, 2, 50);
    double heavy_j = meter_energy_since(&g0, 0.6, heavy);
    meter_run(&g0, sim_model_power_w(&m, 0.2), 0.2, 1, 50);
    double light_j = meter_energy_since(&g0, 0.2, light);
    double idle = meter_mark(&g1, 0);
    meter_run(&g1, sim_model_power_w(&m, 0), 0, 1, 40);
    double idle_j = meter_energy_since(&g1, 0, idle);
    assert_float_equal(heavy_j, 290 * 50 + 370 * 50 * 0.75, 1e-6);
    assert_float_equal(light_j, 370 * 50 * 0.25 + 130 * 50, 1e-6);
    assert_float_equal(idle_j, 50 * 40, 1e-6);
}

static void test_account_rows(void **state) {
    (void)state;
    sim_result r;
    sim_job jobs[3];
    make(&r, jobs);
    acct_params p = {.grid_g_per_kwh = 360, .pue = 1};
    report_summary s = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *csv = open_memstream(&buf, &len);
    assert_int_equal(report_account(&r, &p, csv, &s), 0);
    fclose(csv);
    assert_int_equal(s.jobs_total.jobs, 3);
    /* light: queued 10..10, crashed at 20, queued 20..45, ran 45..150 */
    assert_float_equal(s.jobs_total.queue_wait_s, 0 + 25 + 10, 1e-9);
    assert_float_equal(s.jobs_total.gpu_hours, (100 + 10 + 105 + 40) / 3600.0,
                       1e-12);
    assert_int_equal(s.jobs_total.slowdowns, 3);
    assert_float_equal(s.jobs_total.energy_j, 28375 + 11125 + 2000, 1e-6);
    assert_non_null(strstr(buf, ",light,"));
    assert_non_null(strstr(buf, ",sim,done,"));
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_split),
        cmocka_unit_test(test_account_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
