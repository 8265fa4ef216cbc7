/* test_plus.c -- aegis-plus in the core: backfill past a blocked head, the
 * GPUs kept for the head and the partner a kept GPU may take, the
 * advance of big jobs, the bound on passes (none past a head that must
 * run alone), the pair rule, the capped
 * demand, fair share, the per-user limits, nice, and the reason
 * core_job_reason() gives each waiting job under aegis-plus and under
 * AEGIS's FIFO. */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

/* The default configuration, under aegis-plus. */
static core_config plus_config(void) {
    core_config cfg;
    core_config_default(&cfg);
    cfg.policy = "aegis-plus";
    return cfg;
}

static void submit_est(core_state *core, int64_t id, double est, double now) {
    core_job_spec s = job_spec(id, 1);
    s.est_mib = est;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

static core_reason reason_of(core_state *core, int64_t id, double now) {
    core_reason r;
    assert_int_equal(core_job_reason(core, id, now, &r), 0);
    return r;
}

static void assert_reason_text(core_state *core, int64_t id, double now,
                               const char *want) {
    core_reason r = reason_of(core, id, now);
    char text[160];
    core_reason_text(&r, now, text, sizeof(text));
    assert_string_equal(text, want);
}

/* Two GPUs each 10960 MiB free: a head demanding the capped 12288 MiB
 * cannot start, a 500 MiB job behind it starts at once -- on GPU 1, since
 * GPU 0 (the most free, the lower index breaking the tie) is kept for the
 * head. AEGIS-est would keep both waiting. */
static void test_backfill_past_blocked_head(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 30000);
    submit_est(core, 1, 38000, 0);
    submit_est(core, 2, 500, 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].gpus[0], 1);
    assert_double_equal(out[0].floor_mib, 2548, 0);
    core_reason r = reason_of(core, 1, 30);
    assert_int_equal(r.kind, CORE_WAIT_MEMORY);
    assert_reason_text(core, 1, 30, "no GPU with 12800 MiB free (largest "
                       "free: 10960 MiB on GPU 0)");
    assert_int_equal(reason_of(core, 2, 30).kind, CORE_WAIT_NONE);
    core_destroy(core);

    core = make_core("aegis-est", "magm", 2);
    occupy_all(core, 2, 30000);
    submit_est(core, 1, 38000, 0);
    submit_est(core, 2, 500, 0);
    assert_int_equal(core_schedule(core, 30, out, 4), 0);
    assert_reason_text(core, 2, 30, "behind job 1 (head of queue)");
    core_destroy(core);
}

/* A job that fits only on a GPU kept for the head, where two jobs run,
 * waits behind it: a third job there would leave the head to the
 * pressure filter when one of the two ends. */
static void test_head_keeps_its_gpu(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 0);
    submit(core, 10, 1, 0);         /* a second job on GPU 0 */
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].gpus[0], 0);
    core_job_active(core, 10, 31);
    feed(core, 0, 30000, 31);   /* GPU 0: 10960 free */
    feed(core, 1, 33000, 31);   /* GPU 1: 7960 free */
    submit_est(core, 1, 38000, 31); /* demands 12288: fits neither */
    submit_est(core, 2, 7000, 31);  /* 9048: GPU 0 only, which is kept */
    submit_est(core, 3, 1000, 31);  /* 3048: GPU 1 */
    assert_int_equal(core_schedule(core, 100, out, 4), 1);
    assert_int_equal(out[0].job_id, 3);
    assert_int_equal(out[0].gpus[0], 1);
    assert_reason_text(core, 2, 100, "behind job 1 (head of queue)");
    core_destroy(core);
}

/* A kept GPU running one job takes a job behind the head when the head
 * would still fit beside it once that one job ends: whole demands, so
 * with the daemon's uncapped estimates a job too big to sit beside the
 * head waits behind it. */
static void test_partner_on_kept_gpu(void **state) {
    core_config cfg = plus_config();
    cfg.est_cap_mib = 0;
    core_state *core = make_core_cfg(&cfg, 2);
    occupy_all(core, 2, 0);
    feed(core, 0, 30000, 0);    /* GPU 0: 10960 free */
    feed(core, 1, 36000, 0);    /* GPU 1: 4960 free */
    submit_est(core, 1, 30000, 0);  /* 32048: fits neither, keeps GPU 0 */
    submit_est(core, 2, 7000, 0);   /* 9048 + 32048 + 512 > 40960 */
    submit_est(core, 3, 5000, 0);   /* 7048: GPU 0, beside the head later */
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 3);
    assert_int_equal(out[0].gpus[0], 0);
    assert_reason_text(core, 2, 30, "no GPU with 9560 MiB free (largest "
                       "free: 4960 MiB on GPU 1)");
    core_destroy(core);
}

/* The head keeps the GPUs it kept last time while they are usable, even
 * when another now shows more free memory: a kept GPU that took a partner
 * takes no one else, so the head fits there once the job it found there
 * ends, where letting the kept GPU move would let each GPU take a
 * partner in turn. */
static void test_kept_gpu_stays(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 0);
    feed(core, 0, 30000, 0);    /* GPU 0: 10960 free, kept */
    feed(core, 1, 39000, 0);    /* GPU 1: 1960 free */
    submit_est(core, 1, 38000, 0);  /* demands 12288: fits neither */
    submit_est(core, 2, 1000, 0);   /* 3048: GPU 0 only, as a partner */
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].gpus[0], 0);
    core_job_active(core, 2, 31);
    feed(core, 0, 37000, 31);   /* GPU 0: 3960 free, two jobs */
    feed(core, 1, 35000, 31);   /* GPU 1: 5960 free, now the most */
    submit_est(core, 3, 500, 100);  /* 2548: fits both */
    assert_int_equal(core_schedule(core, 100, out, 4), 1);
    assert_int_equal(out[0].job_id, 3);
    assert_int_equal(out[0].gpus[0], 1);
    core_destroy(core);
}

/* A job whose demand is over half a GPU queues as if submitted
 * big_advance_s earlier (two of them cannot share a GPU, so they start
 * while small partners are left); one submitted later than that stays
 * behind. AEGIS's FIFO keeps submit order. */
static void test_big_jobs_advance(void **state) {
    const char *policies[] = {"aegis-plus", "aegis"};
    const int64_t first[] = {2, 1};
    for (int p = 0; p < 2; p++) {
        core_state *core = make_core(policies[p], "magm", 1);
        occupy_all(core, 1, 40000); /* no room until it ends */
        submit_est(core, 1, 1000, 0);
        submit_est(core, 2, 30000, 100);   /* big, 100 s later */
        submit_est(core, 3, 30000, 2000);  /* big, 2000 s later */
        core_launch l;
        assert_int_equal(place_one(core, 2000, NULL), -1);
        assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 2100, NULL),
                         CORE_DONE);
        assert_int_equal(place_one(core, 2100, &l), 0);
        assert_int_equal(l.job_id, first[p]);
        if (p == 0) { /* then the small job, before the late big one */
            assert_int_equal(core_job_exit(core, 2, CORE_EXIT_OK, 2200, NULL),
                             CORE_DONE);
            assert_int_equal(place_one(core, 2200, &l), 0);
            assert_int_equal(l.job_id, 1);
        }
        core_destroy(core);
    }
}

/* With big_advance_frac, a big job queues that fraction of the oldest
 * waiting job's wait ahead, when that is more than big_advance_s: under a
 * long backlog 900 s moves it past nothing, and it is left for the end.
 * Job 3 (big) comes at 8000 s while job 1 has waited since 0: half of
 * 8000 s, or the default 0.3 of it, puts it before job 2 (6000 s), never
 * before job 1. Without the fraction it goes 900 s ahead only, behind
 * job 2. */
static void test_big_advance_by_backlog(void **state) {
    const char *fracs[] = {"0.5", NULL, "0"}; /* NULL: the default */
    const int64_t second[] = {3, 3, 2};
    for (int f = 0; f < 3; f++) {
        core_config cfg = plus_config();
        char err[256];
        if (fracs[f])
            assert_int_equal(core_config_set(&cfg, "big_advance_frac",
                                             fracs[f], err, sizeof(err)), 0);
        core_state *core = make_core_cfg(&cfg, 1);
        occupy_all(core, 1, 40000); /* no room until it ends */
        submit_est(core, 1, 1000, 0);
        submit_est(core, 2, 1000, 6000);
        submit_est(core, 3, 30000, 8000);
        core_launch l;
        assert_int_equal(core_job_exit(core, 100, CORE_EXIT_OK, 8100, NULL),
                         CORE_DONE);
        assert_int_equal(place_one(core, 8100, &l), 0);
        assert_int_equal(l.job_id, 1);
        assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 8200, NULL),
                         CORE_DONE);
        assert_int_equal(place_one(core, 8200, &l), 0);
        assert_int_equal(l.job_id, second[f]);
        core_destroy(core);
    }
}

/* After backfill_max_passes jobs have started past the head, the queue
 * waits behind it. */
static void test_passes_are_bounded(void **state) {
    core_config cfg = plus_config();
    cfg.backfill_max_passes = 1;
    core_state *core = make_core_cfg(&cfg, 3);
    occupy_all(core, 3, 30000);
    submit_est(core, 1, 38000, 0);
    submit_est(core, 2, 500, 0);
    submit_est(core, 3, 500, 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(core_schedule(core, 100, out, 4), 0);
    assert_reason_text(core, 3, 100, "behind job 1 (head of queue)");
    core_destroy(core);
}

/* Two GPUs each 10960 MiB free: a head asking 38000 MiB keeps GPU 0, a
 * 500 MiB job starts on GPU 1, and the pass stops, GPU 1 being under
 * observation. The next 500 MiB job fits GPU 0 now, but the head keeps
 * it: what it waits for is the end of GPU 1's observation, whether its
 * demand and the head's fit GPU 0 together (the capped demand: it is the
 * head's partner there) or not (uncapped, as the daemon trusts --mem). */
static void test_no_room_observing(void **state) {
    for (int capped = 0; capped < 2; capped++) {
        core_config cfg = plus_config();
        if (!capped) cfg.est_cap_mib = 0;
        core_state *core = make_core_cfg(&cfg, 2);
        occupy_all(core, 2, 30000);
        submit_est(core, 1, 38000, 0);
        submit_est(core, 2, 500, 0);
        submit_est(core, 3, 500, 0);
        core_launch out[4];
        assert_int_equal(core_schedule(core, 30, out, 4), 1);
        assert_int_equal(out[0].job_id, 2);
        assert_int_equal(out[0].gpus[0], 1);
        assert_reason_text(core, 3, 30, "GPU 1 under observation until its "
                           "new job is seen active");
        core_job_active(core, 2, 31);
        assert_int_equal(core_schedule(core, 62, out, 4), 1);
        assert_int_equal(out[0].job_id, 3);
        core_destroy(core);
    }
}

/* A pass that stops because no GPU but the head's could take a job now
 * has not passed its quota: a job it did not reach is told what keeps it
 * off the GPUs it may take, here GPU 1, under observation since the job
 * before it started there. GPU 0 is kept for the head (it had the most
 * free memory when the head first waited) and has too little for it. */
static void test_no_room_is_no_limit(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 30000);
    feed(core, 1, 39000, 1);
    submit_est(core, 1, 38000, 0);  /* demands 12288: fits neither */
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 0); /* keeps GPU 0 */
    feed(core, 0, 39000, 31);   /* GPU 0: 1960 free from t=61 */
    feed(core, 1, 30000, 31);   /* GPU 1: 10960 free from t=61 */
    submit_est(core, 2, 500, 60);   /* 2548: fits GPU 1 only */
    submit_est(core, 3, 500, 60);
    assert_int_equal(core_schedule(core, 70, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    assert_int_equal(out[0].gpus[0], 1);
    assert_int_equal(reason_of(core, 3, 70).kind, CORE_WAIT_OBSERVING);
    assert_reason_text(core, 3, 70, "GPU 1 under observation until its new "
                       "job is seen active");
    core_destroy(core);
}

/* A head that must run alone (its ladder has no rung left) is passed by
 * none: a job that fits beside GPU 1's job waits, so that whichever GPU
 * empties first is idle for the head -- here GPU 1, not the GPU it kept
 * (the fewest jobs, the lower index breaking the tie). Once it starts,
 * the job behind it does. */
static void test_alone_head_passed_by_none(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 2);
    occupy_all(core, 2, 30000);
    submit_alone(core, 1, 0);
    submit_est(core, 2, 500, 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 30, out, 4), 0);
    assert_reason_text(core, 2, 30, "behind job 1 (head of queue)");
    assert_int_equal(reason_of(core, 1, 30).kind, CORE_WAIT_IDLE);
    assert_int_equal(core_job_exit(core, 101, CORE_EXIT_OK, 40, NULL),
                     CORE_DONE);
    assert_int_equal(core_schedule(core, 40, out, 4), 2);
    assert_int_equal(out[0].job_id, 1);
    assert_int_equal(out[0].gpus[0], 1);
    assert_int_equal(out[1].job_id, 2); /* then backfill goes on */
    assert_int_equal(out[1].gpus[0], 0);
    core_destroy(core);
}

static void feed_busy(core_state *core, int gpu, double used, double now) {
    core_reading r = reading(used, 0.9, 0.5, 0.6, 0.9);
    core_sample(core, gpu, &r, now);
}

/* A GPU under pressure running one job takes a second under aegis-plus
 * (every measured pair ran faster than the two alone), never a third;
 * AEGIS turns it away from the first. */
static void test_pair_rule(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    occupy_all(core, 1, 0);
    feed_busy(core, 0, 1000, 0);
    submit(core, 1, 1, 0);
    assert_int_equal(place_one(core, 30, NULL), -1);
    assert_reason_text(core, 1, 30, "GPU 0 under pressure (SMACT 0.90 >= "
                       "0.65)");
    core_destroy(core);

    core = make_core("aegis-plus", "magm", 1);
    occupy_all(core, 1, 0);
    feed_busy(core, 0, 1000, 0);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 30, NULL), 0);
    core_job_active(core, 1, 40);
    feed_busy(core, 0, 2000, 40);
    assert_int_equal(place_one(core, 100, NULL), -1);
    assert_int_equal(reason_of(core, 2, 100).kind, CORE_WAIT_PRESSURE);
    core_destroy(core);
}

/* Observation: until the newcomer is seen active, then until 30 s after;
 * the text counts the seconds left. */
static void test_reason_observing(void **state) {
    core_state *core = make_core("aegis", "magm", 1);
    feed(core, 0, 1000, -100);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    assert_int_equal(place_one(core, 1, NULL), -1);
    assert_reason_text(core, 2, 1, "GPU 0 under observation until its new "
                       "job is seen active");
    core_job_active(core, 1, 10);
    assert_int_equal(place_one(core, 12, NULL), -1);
    core_reason r = reason_of(core, 2, 12);
    assert_int_equal(r.kind, CORE_WAIT_OBSERVING);
    assert_double_equal(r.until, 40, 0);
    assert_reason_text(core, 2, 12, "GPU 0 under observation for 28 s more");
    assert_int_equal(reason_of(core, 1, 12).kind, CORE_WAIT_NONE);
    core_destroy(core);
}

/* A job that must run alone waits for an idle GPU; an unknown job has no
 * reason. */
static void test_reason_idle_and_unknown(void **state) {
    core_state *core = make_core("exclusive", "magm", 1);
    submit(core, 1, 1, 0);
    submit(core, 2, 1, 0);
    assert_int_equal(place_one(core, 0, NULL), 0);
    assert_int_equal(place_one(core, 1, NULL), -1);
    assert_reason_text(core, 2, 1, "waiting for 1 idle GPU");
    core_reason r;
    assert_int_equal(core_job_reason(core, 99, 1, &r), -1);
    assert_int_equal(r.kind, CORE_WAIT_NONE);
    assert_string_equal(core_wait_name(CORE_WAIT_USER_LIMIT), "user_limit");
    core_destroy(core);
}

/* The cap: a 38000 MiB estimate is admitted with 12288 MiB; 0 lifts it. */
static void test_demand_cap(void **state) {
    core_config cfg = plus_config();
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 20000);
    submit_est(core, 1, 38000, 0);
    core_launch l;
    assert_int_equal(place_one(core, 30, &l), 0);
    assert_double_equal(l.floor_mib, 12288, 0);
    core_destroy(core);
    cfg.est_cap_mib = 0;
    core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 20000);
    submit_est(core, 1, 38000, 0);
    assert_int_equal(place_one(core, 30, NULL), -1);
    core_destroy(core);
}

/* A declared demand (a simulated trace's mem_mib) is trusted whole, as
 * aegisd trusts --mem: under the cap it is not placed beside the 20000
 * MiB job, where 38000 MiB cannot fit. */
static void test_declared_not_capped(void **state) {
    core_config cfg = plus_config();
    core_state *core = make_core_cfg(&cfg, 1);
    occupy_all(core, 1, 20000);
    core_job_spec s = job_spec(1, 1);
    s.est_mib = 38000;
    s.mem_declared = true;
    char err[256];
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    assert_int_equal(place_one(core, 30, NULL), -1);
    core_destroy(core);
}

static void submit_as(core_state *core, int64_t id, uint32_t user, int nice,
                      double now) {
    core_job_spec s = job_spec(id, 1);
    s.user = user;
    s.nice = nice;
    char err[256];
    assert_int_equal(core_submit(core, &s, now, err, sizeof(err)), 0);
}

/* One full GPU: user 1 has run a job for 200 s when user 2 submits; when
 * the GPU frees, user 2's job goes before user 1's older ones. AEGIS's
 * FIFO takes user 1's next. */
static void test_fair_share(void **state) {
    const char *policies[] = {"aegis-plus", "aegis"};
    const int64_t next[] = {10, 2};
    for (int p = 0; p < 2; p++) {
        core_state *core = make_core(policies[p], "magm", 1);
        for (int i = 1; i <= 3; i++) submit_as(core, i, 1, 0, 0);
        assert_int_equal(place_one(core, 0, NULL), 0);
        core_job_active(core, 1, 0);
        feed(core, 0, 40000, 0); /* no room beside it */
        submit_as(core, 10, 2, 0, 200);
        assert_int_equal(place_one(core, 200, NULL), -1);
        assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 300, NULL),
                         CORE_DONE);
        core_launch l;
        assert_int_equal(place_one(core, 300, &l), 0);
        assert_int_equal(l.job_id, next[p]);
        core_destroy(core);
    }
}

/* max_jobs_per_user and max_gpus_per_user hold a user's job back without
 * holding back the others'. */
static void test_user_limits(void **state) {
    core_config cfg = plus_config();
    for (int which = 0; which < 2; which++) {
        cfg.max_jobs_per_user = which == 0 ? 1 : 0;
        cfg.max_gpus_per_user = which == 1 ? 1 : 0;
        core_state *core = make_core_cfg(&cfg, 2);
        submit_as(core, 1, 7, 0, 0);
        submit_as(core, 2, 7, 0, 0);
        submit_as(core, 3, 8, 0, 0);
        core_launch out[4];
        assert_int_equal(core_schedule(core, 0, out, 4), 2);
        assert_int_equal(out[0].job_id, 1);
        assert_int_equal(out[1].job_id, 3);
        assert_reason_text(core, 2, 0, which == 0 ? "user limit reached "
                           "(1 job)" : "user limit reached (1 GPU)");
        assert_int_equal(core_job_exit(core, 1, CORE_EXIT_OK, 10, NULL),
                         CORE_DONE);
        assert_int_equal(core_schedule(core, 10, out, 4), 1);
        assert_int_equal(out[0].job_id, 2);
        core_destroy(core);
    }
}

/* A limit of two counts in the plural: "2 jobs", "2 GPUs". */
static void test_user_limit_plural(void **state) {
    core_config cfg = plus_config();
    for (int which = 0; which < 2; which++) {
        cfg.max_jobs_per_user = which == 0 ? 2 : 0;
        cfg.max_gpus_per_user = which == 1 ? 2 : 0;
        core_state *core = make_core_cfg(&cfg, 3);
        for (int id = 1; id <= 3; id++) submit_as(core, id, 7, 0, 0);
        core_launch out[4];
        assert_int_equal(core_schedule(core, 0, out, 4), 2);
        assert_reason_text(core, 3, 0, which == 0 ? "user limit reached "
                           "(2 jobs)" : "user limit reached (2 GPUs)");
        core_destroy(core);
    }
}

/* A job asking more GPUs than max_gpus_per_user could never start: the
 * check a driver refuses it with at submission says so, naming the
 * limit; one the core holds already (queued before the limit was
 * lowered) says so as its reason, whatever runs, and never holds back
 * the user's other jobs. Only aegis-plus applies the limits. */
static void test_over_gpu_limit(void **state) {
    core_config cfg = plus_config();
    cfg.max_gpus_per_user = 1;
    char err[128];
    assert_int_equal(core_job_within_limits(&cfg, 1, err, sizeof(err)), 0);
    assert_int_equal(core_job_within_limits(&cfg, 2, err, sizeof(err)), -1);
    assert_string_equal(err, "2 GPUs asked, over max_gpus_per_user 1");
    cfg.policy = "aegis";
    assert_int_equal(core_job_within_limits(&cfg, 2, err, sizeof(err)), 0);
    cfg.policy = "aegis-plus";
    cfg.max_gpus_per_user = 0;
    assert_int_equal(core_job_within_limits(&cfg, 8, err, sizeof(err)), 0);

    cfg.max_gpus_per_user = 1;
    core_state *core = make_core_cfg(&cfg, 3);
    core_job_spec s = job_spec(1, 2);
    s.user = 7;
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), 0);
    submit_as(core, 2, 7, 0, 0);
    core_launch out[4];
    assert_int_equal(core_schedule(core, 0, out, 4), 1);
    assert_int_equal(out[0].job_id, 2);
    core_reason r = reason_of(core, 1, 0);
    assert_int_equal(r.kind, CORE_WAIT_USER_LIMIT);
    assert_reason_text(core, 1, 0, "asks 2 GPUs, over max_gpus_per_user 1: "
                       "cannot start");
    assert_int_equal(core_job_exit(core, 2, CORE_EXIT_OK, 10, NULL),
                     CORE_DONE);
    assert_int_equal(core_schedule(core, 10, out, 4), 0);
    assert_reason_text(core, 1, 10, "asks 2 GPUs, over max_gpus_per_user 1: "
                       "cannot start");
    core_destroy(core);
}

/* A niced job goes after its user's others; nice is 0..CORE_NICE_MAX. */
static void test_nice(void **state) {
    core_state *core = make_core("aegis-plus", "magm", 1);
    submit_as(core, 1, 1, 100, 0);
    submit_as(core, 2, 1, 0, 0);
    core_launch l;
    assert_int_equal(place_one(core, 0, &l), 0);
    assert_int_equal(l.job_id, 2);
    core_job_spec s = job_spec(3, 1);
    s.nice = CORE_NICE_MAX + 1;
    char err[128];
    assert_int_equal(core_submit(core, &s, 0, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "nice"));
    core_destroy(core);
}

/* The pass's order among many users, ties included: users 1..15 ran a
 * job each for 100 s, users 16..30 none, so each group shares one
 * fair-share factor (usage equal to the bit). Every user then queues two
 * jobs at one instant, with nice 0..2; on 64 idle GPUs one pass starts
 * all 60, in its order: the idle users' jobs first, then by nice (the
 * priority's tie), then by submit order (the queue's), whatever the user. */
typedef struct order_key {
    int64_t id;
    int group, nice, seq;
} order_key;

static int order_cmp(const void *pa, const void *pb) {
    const order_key *a = pa, *b = pb;
    if (a->group != b->group) return a->group - b->group;
    if (a->nice != b->nice) return a->nice - b->nice;
    return a->seq - b->seq;
}

static void test_order_many_users_ties(void **state) {
    enum { BUSY = 15, USERS = 30, PER_USER = 2, JOBS = USERS * PER_USER };
    core_state *core = make_core("aegis-plus", "magm", CORE_MAX_GPUS);
    core_launch out[CORE_MAX_GPUS];
    for (int u = 1; u <= BUSY; u++) submit_as(core, u, (uint32_t)u, 0, 0);
    assert_int_equal(core_schedule(core, 0, out, CORE_MAX_GPUS), BUSY);
    for (int u = 1; u <= BUSY; u++) {
        core_job_active(core, u, 0);
        assert_int_equal(core_job_exit(core, u, CORE_EXIT_OK, 100, NULL),
                         CORE_DONE);
    }
    order_key want[JOBS];
    int n = 0;
    for (int r = 0; r < PER_USER; r++)
        for (int u = USERS; u >= 1; u--) { /* uids against submit order */
            int64_t id = 1000 + 10 * u + r;
            int nice = (u + r) % 3;
            submit_as(core, id, (uint32_t)u, nice, 200);
            want[n] = (order_key){.id = id, .group = u <= BUSY,
                                  .nice = nice, .seq = n};
            n++;
        }
    qsort(want, JOBS, sizeof(*want), order_cmp);
    assert_int_equal(core_schedule(core, 300, out, CORE_MAX_GPUS), JOBS);
    for (int i = 0; i < JOBS; i++) assert_int_equal(out[i].job_id, want[i].id);
    core_destroy(core);
}

/* Users are told apart by uid however alike their low bits: 60 users,
 * uids multiples of 65536, two jobs each, one job each at a time: one
 * pass starts exactly one job of each, the first it queued. */
static void test_many_uids(void **state) {
    enum { USERS = 60 };
    core_config cfg = plus_config();
    cfg.max_jobs_per_user = 1;
    core_state *core = make_core_cfg(&cfg, CORE_MAX_GPUS);
    for (int r = 0; r < 2; r++)
        for (int u = 0; u < USERS; u++)
            submit_as(core, 1000 * r + u, (uint32_t)u << 16, 0, 0);
    core_launch out[CORE_MAX_GPUS];
    assert_int_equal(core_schedule(core, 0, out, CORE_MAX_GPUS), USERS);
    for (int u = 0; u < USERS; u++) {
        assert_int_equal(out[u].job_id, u);
        assert_reason_text(core, 1000 + u, 0, "user limit reached (1 job)");
    }
    core_destroy(core);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backfill_past_blocked_head),
        cmocka_unit_test(test_head_keeps_its_gpu),
        cmocka_unit_test(test_partner_on_kept_gpu),
        cmocka_unit_test(test_kept_gpu_stays),
        cmocka_unit_test(test_big_jobs_advance),
        cmocka_unit_test(test_big_advance_by_backlog),
        cmocka_unit_test(test_passes_are_bounded),
        cmocka_unit_test(test_no_room_observing),
        cmocka_unit_test(test_no_room_is_no_limit),
        cmocka_unit_test(test_alone_head_passed_by_none),
        cmocka_unit_test(test_pair_rule),
        cmocka_unit_test(test_reason_observing),
        cmocka_unit_test(test_reason_idle_and_unknown),
        cmocka_unit_test(test_demand_cap),
        cmocka_unit_test(test_declared_not_capped),
        cmocka_unit_test(test_fair_share),
        cmocka_unit_test(test_user_limits),
        cmocka_unit_test(test_user_limit_plural),
        cmocka_unit_test(test_over_gpu_limit),
        cmocka_unit_test(test_nice),
        cmocka_unit_test(test_order_many_users_ties),
        cmocka_unit_test(test_many_uids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
