/* test_window.c -- risk-score math on known windows, the fast path against
 * the slow path, and the times at which a window changes. */
#include "helpers.h"
#include "window.h"

#include <math.h>

/* 0.1 x3, 0.5, 0.9, 0.3 x25 (oldest first): mean 0.30667, median 0.3,
 * p95 interpolates 0.3..0.5 at 27.55 -> 0.41, EWMA(alpha 2/31) 0.27655;
 * values worked out independently in Python. */
static void test_risk_known_window(void **state) {
    win_run runs[] = {{0.1, 3}, {0.5, 1}, {0.9, 1}, {0.3, 25}};
    win_run scratch[4];
    assert_double_equal(win_risk(runs, 4, scratch), 0.32330354981942094, 1e-12);
}

static void test_risk_unknown_skipped(void **state) {
    win_run unknown[] = {{CORE_UNKNOWN, 30}};
    win_run mixed[] = {{CORE_UNKNOWN, 10}, {0.4, 20}};
    win_run scratch[2];
    assert_true(win_risk(unknown, 1, scratch) < 0);
    assert_double_equal(win_risk(mixed, 2, scratch), 0.4, 1e-12);
}

/* The same W values given one per second (the daemon) or as two steps
 * (the simulator) score the same, and a window whose last change is old
 * (fast path) scores exactly its current value. */
static void test_fast_path_matches_slow_path(void **state) {
    win each, steps;
    assert_int_equal(win_init(&each, 30, 1), 0);
    assert_int_equal(win_init(&steps, 30, 1), 0);
    core_reading lo = reading(1000, 0.2, 0.1, 0.3, 0.5);
    core_reading hi = reading(9000, 0.8, 0.6, 0.7, 0.9);
    for (int t = 0; t < 40; t++) win_push(&each, t < 25 ? &lo : &hi, t);
    win_push(&steps, &lo, 0);
    win_push(&steps, &hi, 25);
    assert_true(steps.nsteps <= 2);
    for (double now = 39; now < 60; now += 0.5) {
        win_scores a = *win_scores_at(&each, now);
        const win_scores *b = win_scores_at(&steps, now);
        assert_double_equal(a.smact, b->smact, 1e-12);
        assert_double_equal(a.drama, b->drama, 1e-12);
        assert_double_equal(a.used_max_mib, b->used_max_mib, 0);
    }
    /* Slow path at 39: 15 instants of each value. */
    win_run runs[] = {{0.2, 15}, {0.8, 15}};
    win_run scratch[2];
    assert_double_equal(win_scores_at(&steps, 39)->smact,
                        win_risk(runs, 2, scratch), 1e-12);
    assert_double_equal(win_scores_at(&steps, 39)->used_max_mib, 9000, 0);
    /* Fast path from 25 + 29 = 54 on: every score is the current value. */
    const win_scores *s = win_scores_at(&steps, 54);
    assert_double_equal(s->smact, 0.8, 0);
    assert_double_equal(s->smocc, 0.6, 0);
    assert_double_equal(s->util, 0.9, 0);
    win_run uniform[] = {{0.8, 30}};
    assert_double_equal(win_risk(uniform, 1, scratch), 0.8, 1e-12);
    win_free(&each);
    win_free(&steps);
}

static void test_full_and_next_change(void **state) {
    win w;
    assert_int_equal(win_init(&w, 30, 1), 0);
    core_reading a = reading(1000, 0.2, 0.1, 0.3, 0.5);
    core_reading b = reading(2000, 0.2, 0.1, 0.3, 0.5);
    win_push(&w, &a, 10);
    assert_false(win_full(&w, 38));
    assert_true(win_full(&w, 39));
    assert_false(win_full(&w, 38.5)); /* an earlier time asked later */
    assert_true(win_full(&w, 1e9));
    assert_double_equal(win_full_at(&w), 39, 0);
    win_push(&w, &b, 50);
    /* The change at 50 slides through the instants until 50 + 29. */
    assert_double_equal(win_next_change(&w, 50), 51, 0);
    assert_double_equal(win_next_change(&w, 60.5), 61, 0);
    assert_double_equal(win_next_change(&w, 78), 79, 0);
    assert_true(win_next_change(&w, 79) < 0);
    /* An unchanged reading is no change. */
    win_push(&w, &b, 90);
    assert_true(win_next_change(&w, 90) < 0);
    win_free(&w);
}

/* A reading that changes every period keeps 30 steps live while older
 * ones drop off the front: the window stays right as its steps move to
 * the front of their room and the room grows. */
static void test_many_steps(void **state) {
    win w;
    assert_int_equal(win_init(&w, 30, 1), 0);
    core_reading r[2] = {reading(1000, 0.2, 0.1, 0.3, 0.5),
                         reading(3000, 0.6, 0.1, 0.3, 0.5)};
    win_run runs[30], scratch[30];
    for (int t = 0; t < 200; t++) {
        win_push(&w, &r[t % 2], t);
        if (t < 29) continue;
        for (int i = 0; i < 30; i++)
            runs[i] = (win_run){r[(t - 29 + i) % 2].smact, 1};
        const win_scores *s = win_scores_at(&w, t);
        assert_double_equal(s->smact, win_risk(runs, 30, scratch), 1e-12);
        assert_double_equal(s->used_max_mib, 3000, 0);
        assert_int_equal(w.nsteps, 30);
    }
    win_free(&w);
}

/* Steps at times that fall on or near instants of a period that binary
 * cannot hold (0.1 s); step k reads 1000 (k + 1) MiB and SMACT 0.1 (k + 1). */
static const double odd_period = 0.1;
static const double odd_times[] = {0, 0.3, 0.7, 1.1, 2.0, 2.05, 2.3};
#define ODD_STEPS ((int)(sizeof(odd_times) / sizeof(odd_times[0])))

static void odd_window(win *w) {
    assert_int_equal(win_init(w, 30, odd_period), 0);
    for (int k = 0; k < ODD_STEPS; k++) {
        core_reading r = reading(1000 * (k + 1), 0.1 * (k + 1), 0.1, 0.3, 0.5);
        win_push(w, &r, odd_times[k]);
    }
}

/* Which step each instant of the odd window at `now` reads, oldest
 * instant first, worked out one instant at a time as the window defines
 * it. */
static void steps_read(double now, int *step) {
    for (int i = 29; i >= 0; i--) {
        int k = 0;
        while (k + 1 < ODD_STEPS && odd_times[k + 1] <= now - i * odd_period)
            k++;
        step[29 - i] = k;
    }
}

/* The odd window splits into runs exactly where reading each instant on
 * its own does. Each `now` asks a new window: this tests the runs, not the
 * cache between two asks. */
static void test_runs_match_instants(void **state) {
    win_run runs[30], scratch[30];
    for (double now = 2.3; now < 5.6; now += 0.05) {
        win w;
        odd_window(&w);
        int step[30];
        steps_read(now, step);
        double used_max = 0;
        for (int i = 0; i < 30; i++) {
            runs[i] = (win_run){0.1 * (step[i] + 1), 1};
            if (1000 * (step[i] + 1) > used_max) used_max = 1000 * (step[i] + 1);
        }
        const win_scores *s = win_scores_at(&w, now);
        assert_double_equal(s->smact, win_risk(runs, 30, scratch), 1e-12);
        assert_double_equal(s->used_max_mib, used_max, 0);
        win_free(&w);
    }
}

/* The odd window's next change is exactly the first time its instants
 * read other steps: they read the same just before it and differ at it. */
static void test_next_change_is_exact(void **state) {
    for (double now = 2.9; now < 5.6; now += 0.01) {
        win w;
        odd_window(&w);
        double at = win_next_change(&w, now);
        win_free(&w);
        int was[30], before[30], after[30];
        steps_read(now, was);
        if (at < 0) { /* every instant past the last step: no change */
            steps_read(now + 100, after);
            assert_memory_equal(was, after, sizeof(was));
            continue;
        }
        assert_true(at > now);
        steps_read(nextafter(at, 0), before);
        steps_read(at, after);
        assert_memory_equal(was, before, sizeof(was));
        assert_memory_not_equal(was, after, sizeof(was));
    }
}

/* The version stays while the window reads the same, and moves when a
 * new reading comes or the instants slide past a change. */
static void test_version_follows_content(void **state) {
    win w;
    assert_int_equal(win_init(&w, 30, 1), 0);
    core_reading a = reading(1000, 0.2, 0.1, 0.3, 0.5);
    core_reading b = reading(2000, 0.2, 0.1, 0.3, 0.5);
    win_push(&w, &a, 0);
    uint64_t v = win_version_at(&w, 40);
    assert_true(v != 0);
    assert_true(win_version_at(&w, 100) == v); /* one value since 0 */
    win_push(&w, &b, 100);
    uint64_t at100 = win_version_at(&w, 100);
    assert_true(at100 != v);
    assert_true(win_version_at(&w, 100.5) == at100);
    uint64_t at101 = win_version_at(&w, 101); /* a second instant reads b */
    assert_true(at101 != at100);
    win_push(&w, &b, 101.5); /* unchanged: no new step */
    assert_true(win_version_at(&w, 101.5) == at101);
    win_push(&w, &a, 101.5);
    assert_true(win_version_at(&w, 101.5) != at101);
    win_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_risk_known_window),
        cmocka_unit_test(test_risk_unknown_skipped),
        cmocka_unit_test(test_fast_path_matches_slow_path),
        cmocka_unit_test(test_full_and_next_change),
        cmocka_unit_test(test_version_follows_content),
        cmocka_unit_test(test_many_steps),
        cmocka_unit_test(test_runs_match_instants),
        cmocka_unit_test(test_next_change_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
