/* test_reason_version.c -- core_reasons_version(), which lets a driver
 * that counts waiting time by reason (aegis sim --json) ask the reasons
 * again only when something they read changed: the version stays the
 * same across moments that change nothing a reason reads, and it never
 * stays the same where a queued job's reason changes kind. The second is
 * checked on a long random run of submits, launches, activity, ends and
 * readings under each policy, against the reasons asked at every moment. */
#include "helpers.h"

#include <stdlib.h>

/* One job of the random run. */
typedef struct run_job {
    enum { UNSUBMITTED, QUEUED, LAUNCHED, ACTIVE, GONE } state;
    double active_at, end_at;
    int gpus[CORE_MAX_JOB_GPUS], ngpus;
    double est_mib;
} run_job;

#define RUN_JOBS 600
#define RUN_GPUS 4

/* A small deterministic generator, the same on every libc. */
static uint32_t draw(uint32_t *seed, uint32_t n) {
    *seed = *seed * 1664525u + 1013904223u;
    return (*seed >> 8) % n;
}

/* A waiting head keeps the version across moments that change nothing:
 * time passing within full windows, asking again at the same moment, a
 * job queued behind it. An end and an observation that ends each make a
 * new one. */
static void test_version_moves_only_on_change(void **state) {
    (void)state;
    core_state *core = make_core("aegis-est", "magm", 2);
    occupy_all(core, 2, 30000);
    core_job_spec s = job_spec(1, 1);
    s.est_mib = 38000;
    char err[256];
    assert_int_equal(core_submit(core, &s, 30, err, sizeof(err)), 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 0);
    uint64_t v = core_reasons_version(core, 30);
    assert_int_equal(core_reasons_version(core, 30), v);
    assert_int_equal(core_reasons_version(core, 31), v);
    assert_int_equal(core_reasons_version(core, 500), v);
    submit(core, 2, 1, 501);
    assert_int_equal(core_schedule(core, 501, out, 4), 0);
    assert_int_equal(core_reasons_version(core, 501), v);
    core_job_exit(core, 100, CORE_EXIT_OK, 502, NULL);
    assert_true(core_schedule(core, 502, out, 4) >= 1);
    uint64_t after_end = core_reasons_version(core, 502);
    assert_true(after_end != v);
    core_job_active(core, out[0].job_id, 503);
    uint64_t observing = core_reasons_version(core, 503);
    assert_int_equal(core_reasons_version(core, 503 + 1), observing);
    core_config cfg;
    core_config_default(&cfg);
    assert_true(core_reasons_version(core, 503 + cfg.observe_s) != observing);
    core_destroy(core);
}

/* Launches what core_schedule() decides at t: active a few seconds later,
 * ending some minutes after that. */
static void run_schedule(core_state *core, run_job *jobs, double t,
                         uint32_t *seed) {
    core_launch out[8];
    int n;
    do {
        n = core_schedule(core, t, out, 8);
        for (int i = 0; i < n; i++) {
            run_job *j = &jobs[out[i].job_id];
            j->state = LAUNCHED;
            j->ngpus = out[i].num_gpus;
            for (int k = 0; k < j->ngpus; k++) j->gpus[k] = out[i].gpus[k];
            j->active_at = t + 1 + draw(seed, 8);
            j->end_at = j->active_at + 20 + draw(seed, 400);
        }
    } while (n == 8);
}

/* Activity and ends due at t. */
static void run_events(core_state *core, run_job *jobs, int njobs,
                       double t) {
    for (int i = 0; i < njobs; i++) {
        run_job *j = &jobs[i];
        if (j->state == LAUNCHED && j->active_at <= t) {
            core_job_active(core, i, t);
            j->state = ACTIVE;
        }
        if (j->state == ACTIVE && j->end_at <= t) {
            core_job_exit(core, i, CORE_EXIT_OK, t, NULL);
            j->state = GONE;
        }
    }
}

/* Each GPU reads its jobs' memory and a random pressure, now and then. */
static void run_readings(core_state *core, const run_job *jobs, int njobs,
                         double t, uint32_t *seed) {
    static const double smact[] = {0.2, 0.5, 0.7, 0.9};
    for (int g = 0; g < RUN_GPUS; g++) {
        if (draw(seed, 4) != 0) continue;
        double used = 0;
        for (int i = 0; i < njobs; i++)
            for (int k = 0; jobs[i].state == ACTIVE && k < jobs[i].ngpus; k++)
                used += jobs[i].gpus[k] == g ? jobs[i].est_mib : 0;
        double a = smact[draw(seed, 4)];
        core_reading r = reading(used < GPU_MIB ? used : GPU_MIB, a, a, a, a);
        core_sample(core, g, &r, t);
    }
}

static void run_submit(core_state *core, run_job *jobs, int id, double t,
                       uint32_t *seed) {
    static const double est[] = {1500, 6000, 12000, 20000, 31000};
    core_job_spec s = job_spec(id, draw(seed, 6) == 0 ? 2 : 1);
    s.est_mib = est[draw(seed, 5)];
    s.peak_mib = s.est_mib;
    s.util_pct = 20 + draw(seed, 70);
    s.sharing_score = (int)draw(seed, 3);
    s.user = 1 + draw(seed, 3);
    char err[256];
    assert_int_equal(core_submit(core, &s, t, err, sizeof(err)), 0);
    jobs[id] = (run_job){.state = QUEUED, .est_mib = s.est_mib};
}

/* A job new to the queue waits behind the head until a pass tells it
 * otherwise, which moves the version (sim_waits_queue() counts it so). */
static void run_arrival(core_state *core, run_job *jobs, int id, double t,
                        uint32_t *seed, core_wait *kind) {
    run_submit(core, jobs, id, t, seed);
    *kind = CORE_WAIT_BEHIND;
}

/* What a run checks moment by moment. */
typedef struct run_check {
    const char *policy;
    core_wait kinds[RUN_JOBS]; /* each job's reason at the last moment */
    uint64_t last;             /* the version then */
    int kept, moved;
} run_check;

/* The kind a driver counts for each queued job: its reason at the front
 * of the queue (core_reason_front()), "behind" elsewhere. */
static void counted_kinds(core_state *core, int njobs, double t,
                          core_wait *kind) {
    for (int i = 0; i < njobs; i++) kind[i] = CORE_WAIT_BEHIND;
    int64_t front[CORE_BACKFILL_DEPTH];
    int n = core_reason_front(core, front, CORE_BACKFILL_DEPTH);
    for (int i = 0; i < n; i++) {
        core_reason r;
        assert_int_equal(core_job_reason(core, front[i], t, &r), 0);
        kind[front[i]] = r.kind;
    }
}

/* Wherever the version stayed, every queued job's counted kind stayed. */
static void check_moment(core_state *core, const run_job *jobs, int njobs,
                         double t, run_check *c) {
    uint64_t v = core_reasons_version(core, t);
    core_wait now[RUN_JOBS];
    counted_kinds(core, njobs, t, now);
    for (int i = 0; i < njobs; i++) {
        if (jobs[i].state != QUEUED) continue;
        core_reason r = {.kind = now[i]};
        if (v == c->last && r.kind != c->kinds[i])
            fail_msg("%s at %.1f s: job %d went from %s to %s, the version "
                     "kept", c->policy, t, i, core_wait_name(c->kinds[i]),
                     core_wait_name(r.kind));
        c->kinds[i] = r.kind;
    }
    c->kept += v == c->last;
    c->moved += v != c->last;
    c->last = v;
}

/* The random run under one policy, checked at every moment, and half a
 * second later after a pass alone: a pass that launched a user's job
 * left that user's jobs it had reached before at their limit for the
 * next one to find, nothing else changed. */
static void run_policy(const char *policy) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = policy;
    cfg.max_jobs_per_user = 1;
    core_state *core = make_core_cfg(&cfg, RUN_GPUS);
    run_job *jobs = calloc(RUN_JOBS, sizeof(*jobs));
    run_check *c = calloc(1, sizeof(*c));
    assert_non_null(jobs);
    assert_non_null(c);
    c->policy = policy;
    uint32_t seed = 7;
    int njobs = 0;
    for (double t = 0; njobs < RUN_JOBS || t < 20000; t += 1 + draw(&seed, 6)) {
        if (njobs < RUN_JOBS && draw(&seed, 3) == 0) {
            run_arrival(core, jobs, njobs, t, &seed, &c->kinds[njobs]);
            njobs++;
        }
        run_events(core, jobs, njobs, t);
        run_readings(core, jobs, njobs, t, &seed);
        run_schedule(core, jobs, t, &seed);
        check_moment(core, jobs, njobs, t, c);
        run_schedule(core, jobs, t + 0.5, &seed);
        check_moment(core, jobs, njobs, t + 0.5, c);
    }
    /* Both happen: the version spares asking, and moves. */
    assert_true(c->kept > 100);
    assert_true(c->moved > 100);
    free(c);
    free(jobs);
    core_destroy(core);
}

static void test_version_keeps_no_change_unseen(void **state) {
    (void)state;
    static const char *const policies[] = {"aegis", "aegis-plus", "lucid",
                                           "horus", "exclusive"};
    for (size_t i = 0; i < sizeof(policies) / sizeof(*policies); i++)
        run_policy(policies[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_moves_only_on_change),
        cmocka_unit_test(test_version_keeps_no_change_unseen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
