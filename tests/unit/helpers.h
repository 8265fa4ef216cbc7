/* helpers.h -- small builders shared by the core's unit tests: a core of
 * N equal GPUs, job specs with every hint unknown, and readings; and
 * core_check() after every event a test sends the core. */
#ifndef AEGIS_TEST_HELPERS_H
#define AEGIS_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"

/* Fails the test at file:line unless core_check() finds the core's sums
 * and counts as its jobs make them. */
static inline void check_core(const core_state *core, const char *file,
                              int line) {
    char err[512];
    if (core_check(core, err, sizeof(err)) == 0) return;
    print_error("core_check: %s\n", err);
    _fail(file, line);
}

static inline int checked_int(int rc, const core_state *core,
                              const char *file, int line) {
    check_core(core, file, line);
    return rc;
}

static inline core_outcome checked_outcome(core_outcome out,
                                           const core_state *core,
                                           const char *file, int line) {
    check_core(core, file, line);
    return out;
}

/* Every event call in the tests, and in the helpers below, is followed by
 * core_check(). A function-like macro is not expanded again inside its
 * own replacement, so the call there is the core's function. */
#define CHECKED_INT(fn, core, ...) \
    checked_int(fn((core), __VA_ARGS__), (core), __FILE__, __LINE__)
#define CHECKED_VOID(fn, core, ...) \
    (fn((core), __VA_ARGS__), check_core((core), __FILE__, __LINE__))
#define core_submit(core, ...) CHECKED_INT(core_submit, core, __VA_ARGS__)
#define core_submit_retry(core, ...) \
    CHECKED_INT(core_submit_retry, core, __VA_ARGS__)
#define core_adopt(core, ...) CHECKED_INT(core_adopt, core, __VA_ARGS__)
#define core_reconfigure(core, ...) \
    CHECKED_INT(core_reconfigure, core, __VA_ARGS__)
#define core_cancel(core, ...) CHECKED_INT(core_cancel, core, __VA_ARGS__)
#define core_gpu_share(core, ...) CHECKED_INT(core_gpu_share, core, __VA_ARGS__)
#define core_schedule(core, ...) CHECKED_INT(core_schedule, core, __VA_ARGS__)
#define core_sample(core, ...) CHECKED_VOID(core_sample, core, __VA_ARGS__)
#define core_job_active(core, ...) \
    CHECKED_VOID(core_job_active, core, __VA_ARGS__)
#define core_gpu_drain(core, ...) CHECKED_VOID(core_gpu_drain, core, __VA_ARGS__)
#define core_gpu_foreign(core, ...) \
    CHECKED_VOID(core_gpu_foreign, core, __VA_ARGS__)
#define core_job_exit(core, ...) \
    checked_outcome(core_job_exit((core), __VA_ARGS__), (core), __FILE__, \
                    __LINE__)

#define GPU_MIB 40960.0

/* cmocka before 1.1.6 has no assert_double_equal; this one prints both. */
#ifndef assert_double_equal
static inline void near_or_fail(double a, double b, double eps,
                                const char *file, int line) {
    if (fabs(a - b) <= eps) return;
    print_error("%.17g != %.17g (within %g)\n", a, b, eps);
    _fail(file, line);
}
#define assert_double_equal(a, b, eps) \
    near_or_fail((a), (b), (eps), __FILE__, __LINE__)
#endif

static inline core_state *make_core_cfg(const core_config *cfg, int ngpus) {
    double totals[CORE_MAX_GPUS];
    char err[256];
    for (int g = 0; g < ngpus; g++) totals[g] = GPU_MIB;
    core_state *core = core_create(cfg, ngpus, totals, err, sizeof(err));
    assert_non_null(core);
    return core;
}

static inline core_state *make_core(const char *policy, const char *placement,
                                    int ngpus) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = policy;
    cfg.placement = placement;
    return make_core_cfg(&cfg, ngpus);
}

static inline core_job_spec job_spec(int64_t id, int ngpus) {
    core_job_spec s = {.id = id, .num_gpus = ngpus, .est_mib = CORE_UNKNOWN,
                       .peak_mib = CORE_UNKNOWN, .util_pct = CORE_UNKNOWN,
                       .sharing_score = -1};
    return s;
}

static inline void submit(core_state *core, int64_t id, int ngpus, double now) {
    core_job_spec s = job_spec(id, ngpus);
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

static inline core_reading reading(double used, double smact, double smocc,
                                   double drama, double util) {
    core_reading r = {.used_mib = used, .total_mib = GPU_MIB, .smact = smact,
                      .smocc = smocc, .drama = drama, .util = util};
    return r;
}

/* A quiet GPU reading `used` MiB, with DCGM. */
static inline void feed(core_state *core, int gpu, double used, double now) {
    core_reading r = reading(used, 0.1, 0.1, 0.1, 0.1);
    core_sample(core, gpu, &r, now);
}

/* Fills every GPU with one job (ids 100+g) placed exclusive at t=0 and
 * active at once, each GPU reading `used` MiB from t=0: from t=30 on the
 * windows are full and the observation is over. */
static inline void occupy_all(core_state *core, int ngpus, double used) {
    core_launch out[CORE_MAX_GPUS];
    for (int g = 0; g < ngpus; g++) submit(core, 100 + g, 1, 0);
    assert_int_equal(core_schedule(core, 0, out, CORE_MAX_GPUS), ngpus);
    for (int g = 0; g < ngpus; g++) {
        assert_int_equal(out[g].gpus[0], g);
        assert_true(out[g].exclusive);
        core_job_active(core, 100 + g, 0);
        feed(core, g, used, 0);
    }
}

/* Schedules one launch at `now`; returns its first GPU or -1. */
static inline int place_one(core_state *core, double now, core_launch *l) {
    core_launch tmp;
    core_launch *out = l ? l : &tmp;
    return core_schedule(core, now, out, 1) == 1 ? out->gpus[0] : -1;
}

/* Queues job id of one GPU as a retry that must run alone (its ladder
 * has no rung left). */
static inline void submit_alone(core_state *core, int64_t id, double now) {
    core_job_spec s = job_spec(id, 1);
    core_retry alone = {.attempt = 3, .floor_mib = 0, .alone = true};
    char err[256];
    assert_int_equal(core_submit_retry(core, &s, &alone, now, err,
                                       sizeof(err)), 0);
}

/* Fails unless job id's reason at `now` reads `want`. */
static inline void reason_is(core_state *core, int64_t id, double now,
                             const char *want) {
    core_reason r;
    char text[256];
    assert_int_equal(core_job_reason(core, id, now, &r), 0);
    core_reason_text(&r, now, text, sizeof(text));
    if (strcmp(text, want) != 0)
        fail_msg("job %lld: '%s', not '%s'", (long long)id, text, want);
}

#endif
