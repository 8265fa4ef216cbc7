/* test_metrics.c -- the parts of aegisd's Prometheus endpoint that need no
 * loop: the text format's escaping and rendering (metrics_text.c), the
 * counters (metrics_counts.c), the bounded per-job families
 * (metrics_jobs.c), the judging of HTTP requests (http_req.c) and the
 * metrics_* keys (config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "http_req.h"
#include "metrics_counts.h"
#include "metrics_jobs.h"
#include "metrics_text.h"

/* Backslash, double quote and newline are escaped in label values; other
 * bytes (UTF-8 too) are kept. */
static void test_label_escaping(void **state) {
    (void)state;
    static const char *const in[] = {"plain", "a\\b", "say \"hi\"",
                                      "two\nlines", "\\\"\n", "",
                                      "caf\xc3\xa9 {x=1}"};
    static const char *const out[] = {"plain", "a\\\\b", "say \\\"hi\\\"",
                                      "two\\nlines", "\\\\\\\"\\n", "",
                                      "caf\xc3\xa9 {x=1}"};
    for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
        mtext t = {0};
        mtext_label_value(&t, in[i]);
        assert_false(t.failed);
        assert_string_equal(t.buf ? t.buf : "", out[i]);
        mtext_free(&t);
    }
}

static void test_family_and_samples(void **state) {
    (void)state;
    mtext t = {0};
    mtext_family(&t, "aegis_x_bytes", "gauge",
                 "Help with \\ and\nnewline \"q\".");
    const char *labels[] = {"gpu", "0", "name", "a\"b\n", NULL};
    mtext_sample(&t, "aegis_x_bytes", labels, 1572864000);
    mtext_sample(&t, "aegis_x_bytes", NULL, 0.25);
    const char *one[] = {"user", "u", NULL};
    mtext_sample(&t, "aegis_x_bytes", one, NAN);
    mtext_sample(&t, "aegis_x_bytes", one, INFINITY);
    mtext_sample(&t, "aegis_x_bytes", one, -INFINITY);
    mtext_sample(&t, "aegis_x_bytes", one, 123456789012.5);
    assert_false(t.failed);
    assert_string_equal(t.buf,
        "# HELP aegis_x_bytes Help with \\\\ and\\nnewline \"q\".\n"
        "# TYPE aegis_x_bytes gauge\n"
        "aegis_x_bytes{gpu=\"0\",name=\"a\\\"b\\n\"} 1572864000\n"
        "aegis_x_bytes 0.25\n"
        "aegis_x_bytes{user=\"u\"} NaN\n"
        "aegis_x_bytes{user=\"u\"} +Inf\n"
        "aegis_x_bytes{user=\"u\"} -Inf\n"
        "aegis_x_bytes{user=\"u\"} 123456789012.5\n");
    assert_int_equal(t.len, strlen(t.buf));
    mtext_free(&t);
}

/* Much text: the buffer grows and stays whole. */
static void test_growth(void **state) {
    (void)state;
    mtext t = {0};
    const char *labels[] = {"job_id", "12345", NULL};
    for (int i = 0; i < 10000; i++) mtext_sample(&t, "aegis_y", labels, i);
    assert_false(t.failed);
    assert_int_equal(t.len, strlen(t.buf));
    assert_non_null(strstr(t.buf, "aegis_y{job_id=\"12345\"} 9999\n"));
    assert_memory_equal(t.buf, "aegis_y{job_id=\"12345\"} 0\n", 26);
    mtext_free(&t);
    assert_null(t.buf);
}

/* Buckets are cumulative, le="+Inf" is the count, then _sum and _count. */
static void test_histogram(void **state) {
    (void)state;
    static const double bounds[] = {0.001, 0.01, 0.1};
    mtext_hist h;
    mtext_hist_init(&h, bounds, 3);
    mtext_hist_observe(&h, 0.0005);
    mtext_hist_observe(&h, 0.001); /* le is inclusive */
    mtext_hist_observe(&h, 0.05);
    mtext_hist_observe(&h, 2);
    mtext t = {0};
    mtext_histogram(&t, "aegis_p_seconds", &h);
    assert_string_equal(t.buf,
        "aegis_p_seconds_bucket{le=\"0.001\"} 2\n"
        "aegis_p_seconds_bucket{le=\"0.01\"} 2\n"
        "aegis_p_seconds_bucket{le=\"0.1\"} 3\n"
        "aegis_p_seconds_bucket{le=\"+Inf\"} 4\n"
        "aegis_p_seconds_sum 2.0515\n"
        "aegis_p_seconds_count 4\n");
    mtext_free(&t);
}

static void test_counts(void **state) {
    (void)state;
    metrics_counts m;
    metrics_counts_init(&m);
    assert_true(m.pass_s.nbounds > 0);
    metrics_count_attempt(&m, "ann", 2, 10);
    metrics_count_attempt(&m, "bob", 1, 5);
    metrics_count_attempt(&m, "ann", 1, -3); /* a clock step: nothing */
    metrics_count_finished(&m, "ann", "done", 100);
    metrics_count_finished(&m, "ann", "timeout", 0);
    metrics_count_finished(&m, "bob", "cancelled", 7);
    metrics_count_finished(&m, "bob", "queued", 1); /* not an end state */
    for (int i = 0; i < 20; i++) { /* many users: the table grows */
        char user[16];
        snprintf(user, sizeof(user), "u%d", i);
        metrics_count_finished(&m, user, "failed", 1);
    }
    assert_int_equal(m.nusers, 22);
    metrics_user *ann = metrics_user_of(&m, "ann");
    metrics_user *bob = metrics_user_of(&m, "bob");
    assert_true(ann->gpu_s == 20 && bob->gpu_s == 5);
    assert_true(ann->energy_j == 100 && bob->energy_j == 8);
    assert_int_equal(ann->finished[0], 1);  /* done */
    assert_int_equal(ann->finished[3], 1);  /* timeout */
    assert_int_equal(bob->finished[2], 1);  /* cancelled */
    assert_int_equal(bob->finished[0] + bob->finished[1] + bob->finished[3], 0);
    assert_int_equal(metrics_user_of(&m, "u19")->finished[1], 1);
    assert_int_equal(m.nusers, 22);
    metrics_counts_free(&m);
}

/* A job view for the renderer: no samples but its attempts. */
static mjob job_of(int64_t id, const char *user, mjob_state state) {
    return (mjob){.id = id, .user = user, .name = "n", .state = state,
                  .attempts = 1, .memory_bytes = -1, .sm_share = -1,
                  .energy_j = 0};
}

/* Lines of t that start with prefix. */
static int lines_with(const mtext *t, const char *prefix) {
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = t->buf; p && *p; p = strchr(p, '\n') + 1)
        n += strncmp(p, prefix, len) == 0;
    return n;
}

/* Past max_listed, running jobs keep their series, then the oldest
 * waiting ones; the rest are counted by user and state. */
static void test_jobs_bounded(void **state) {
    (void)state;
    const mjob jobs[] = {job_of(1, "bob", MJOB_QUEUED),
                         job_of(2, "ann", MJOB_RUNNING),
                         job_of(3, "ann", MJOB_QUEUED),
                         job_of(4, "ann", MJOB_HELD),
                         job_of(5, "bob", MJOB_QUEUED),
                         job_of(6, "bob", MJOB_RUNNING),
                         job_of(7, "ann", MJOB_QUEUED)};
    mtext t = {0};
    mjobs_render(&t, jobs, 7, 3);
    assert_false(t.failed);
    assert_int_equal(lines_with(&t, "aegis_job_state{"), 3);
    assert_int_equal(lines_with(&t, "aegis_job_attempts{"), 3);
    for (int id = 1; id <= 7; id++) {
        char want[64];
        snprintf(want, sizeof(want), "aegis_job_state{job_id=\"%d\",", id);
        assert_int_equal(lines_with(&t, want), id == 1 || id == 2 || id == 6);
    }
    assert_non_null(strstr(t.buf,
        "# TYPE aegis_jobs_unlisted gauge\n"
        "aegis_jobs_unlisted{user=\"ann\",state=\"queued\"} 2\n"
        "aegis_jobs_unlisted{user=\"ann\",state=\"held\"} 1\n"
        "aegis_jobs_unlisted{user=\"bob\",state=\"queued\"} 1\n"));
    assert_int_equal(lines_with(&t, "aegis_jobs_unlisted{"), 3);
    mtext_free(&t);
    /* fewer running jobs than the bound: the oldest running ones only */
    mjobs_render(&t, jobs, 7, 1);
    assert_int_equal(lines_with(&t, "aegis_job_state{job_id=\"2\","), 1);
    assert_non_null(strstr(t.buf, "aegis_jobs_unlisted{user=\"bob\",state=\"running\"} 1\n"));
    mtext_free(&t);
    /* within the bound: every job, nothing unlisted */
    mjobs_render(&t, jobs, 7, 1000);
    assert_int_equal(lines_with(&t, "aegis_job_state{"), 7);
    assert_int_equal(lines_with(&t, "aegis_jobs_unlisted{"), 0);
    mtext_free(&t);
    /* 0: no job has series of its own */
    mjobs_render(&t, jobs, 7, 0);
    assert_int_equal(lines_with(&t, "aegis_job_state{"), 0);
    assert_int_equal(lines_with(&t, "aegis_jobs_unlisted{"), 5);
    mtext_free(&t);
}

/* A listed job's labels and samples; no sample where it has none. */
static void test_jobs_families(void **state) {
    (void)state;
    mjob run = job_of(12, "ann", MJOB_RUNNING);
    snprintf(run.gpus, sizeof(run.gpus), "0,2");
    run.name = "say \"hi\"";
    run.memory_bytes = 1048576;
    run.sm_share = 0.25;
    run.energy_j = 9.5;
    const mjob jobs[] = {run, job_of(13, "bob", MJOB_HELD)};
    mtext t = {0};
    mjobs_render(&t, jobs, 2, 10);
    assert_false(t.failed);
    assert_non_null(strstr(t.buf,
        "aegis_job_state{job_id=\"12\",user=\"ann\",name=\"say \\\"hi\\\"\","
        "gpu=\"0,2\",state=\"running\"} 1\n"
        "aegis_job_state{job_id=\"13\",user=\"bob\",name=\"n\",gpu=\"\","
        "state=\"held\"} 1\n"));
    assert_non_null(strstr(t.buf,
        "aegis_job_sm_share_ratio{job_id=\"12\",user=\"ann\","
        "name=\"say \\\"hi\\\"\",gpu=\"0,2\"} 0.25\n# HELP"));
    assert_int_equal(lines_with(&t, "aegis_job_memory_used_bytes{"), 1);
    assert_int_equal(lines_with(&t, "aegis_job_energy_joules_total{"), 2);
    mtext_free(&t);
    /* no job: the families' headers that always show, and no sample */
    mjobs_render(&t, jobs, 0, 10);
    assert_false(t.failed);
    assert_int_equal(lines_with(&t, "aegis_job"), 0);
    assert_int_equal(lines_with(&t, "# TYPE aegis_job_state gauge"), 1);
    mtext_free(&t);
}

static void test_http_judge(void **state) {
    (void)state;
    static const struct {
        const char *req;
        int status;
    } cases[] = {
        {"GET /metrics HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n", 200},
        {"GET /metrics?x=1 HTTP/1.0\r\n\r\n", 200},
        {"GET /metrics HTTP/1.1\n\n", 200},             /* bare LF */
        {"GET /metrics HTTP/1.1\r\nHost: a\r\n", 0},    /* headers go on */
        {"GET /metr", 0},
        {"", 0},
        {"GET / HTTP/1.1\r\n\r\n", 404},
        {"GET /metricsx HTTP/1.1\r\n\r\n", 404},
        {"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n", 405},
        {"HEAD /metrics HTTP/1.1\r\n\r\n", 405},
        {"get /metrics HTTP/1.1\r\n\r\n", 400},         /* not a token */
        {"GET /metrics HTTP/2.0\r\n\r\n", 505},
        {"GET /metrics HTTP/3.0\r\n\r\n", 505},
        {"GET /metrics HTTP/1.x\r\n\r\n", 400},
        {"GET /metrics FTP/1.1\r\n\r\n", 400},
        /* the absolute form, which a server must accept (RFC 9112) */
        {"GET http://h:9464/metrics HTTP/1.1\r\n\r\n", 200},
        {"GET HTTPS://h/metrics?x HTTP/1.1\r\n\r\n", 200},
        {"GET http://h/other HTTP/1.1\r\n\r\n", 404},
        {"GET http://h HTTP/1.1\r\n\r\n", 404},
        {"GET http:/metrics HTTP/1.1\r\n\r\n", 400},
        {"GET metrics HTTP/1.1\r\n\r\n", 400},
        {"GET  /metrics HTTP/1.1\r\n\r\n", 400},
        {"GET /metrics\r\n\r\n", 400},                  /* HTTP/0.9 */
        {"\x16\x03\x01\x02", 400},                      /* TLS, at once */
        {"GET /met\x01rics", 400},
        {"\r\n\r\n", 400},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int got = http_req_judge(cases[i].req, strlen(cases[i].req));
        if (got != cases[i].status)
            fail_msg("case %zu (%s): %d, not %d", i, cases[i].req, got,
                     cases[i].status);
    }
    /* a NUL in the request line is junk */
    assert_int_equal(http_req_judge("GET \0/metrics", 13), 400);
    /* headers without end past the limit */
    static char big[HTTP_REQ_MAX + 64];
    size_t n = (size_t)snprintf(big, sizeof(big),
                                "GET /metrics HTTP/1.1\r\nX: ");
    memset(big + n, 'a', sizeof(big) - n);
    assert_int_equal(http_req_judge(big, HTTP_REQ_MAX), 0);
    assert_int_equal(http_req_judge(big, HTTP_REQ_MAX + 1), 431);
    /* a request line longer than the limit */
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /", 5);
    assert_int_equal(http_req_judge(big, sizeof(big)), 431);
    assert_string_equal(http_req_reason(405), "Method Not Allowed");
    assert_string_equal(http_req_reason(400), "Bad Request");
}

static void test_listen_addr(void **state) {
    (void)state;
    struct sockaddr_storage sa;
    char msg[256];
    assert_int_equal(config_listen_addr("127.0.0.1:9464", &sa, msg,
                                        sizeof(msg)), 0);
    const struct sockaddr_in *in4 = (const struct sockaddr_in *)&sa;
    assert_int_equal(sa.ss_family, AF_INET);
    assert_int_equal(ntohs(in4->sin_port), 9464);
    assert_int_equal(ntohl(in4->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(config_listen_addr("[::1]:80", &sa, msg, sizeof(msg)), 0);
    assert_int_equal(sa.ss_family, AF_INET6);
    assert_int_equal(ntohs(((const struct sockaddr_in6 *)&sa)->sin6_port), 80);
    assert_int_equal(config_listen_addr("0.0.0.0:65535", &sa, msg,
                                        sizeof(msg)), 0);
    static const char *const bad[] = {"", "9464", ":9464", "127.0.0.1",
                                      "127.0.0.1:", "127.0.0.1:0",
                                      "127.0.0.1:65536", "127.0.0.1:-1",
                                      "127.0.0.1:80x", "localhost:9464",
                                      "::1:9464", "[::1]", "[127.0.0.1]:80",
                                      "1.2.3:80", "[]:80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        msg[0] = '\0';
        if (config_listen_addr(bad[i], &sa, msg, sizeof(msg)) != -1)
            fail_msg("'%s' accepted", bad[i]);
        assert_non_null(strstr(msg, "metrics_listen"));
    }
}

/* Loads a configuration file holding text into keys: config_load_daemon's
 * result, with its message in err. */
static int load_keys(const char *text, config_keys *keys, char *err,
                     size_t errlen) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/aegis-test-metrics-%d.yaml",
             (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int rc = config_load_daemon(path, false, &cfg, &acct, &share, keys, err,
                                errlen);
    remove(path);
    return rc;
}

/* The key in a file: kept, off by default, an empty value turns it off. */
static void test_listen_key(void **state) {
    (void)state;
    config_keys keys;
    char err[512];
    static const struct {
        const char *text, *want;
        int rc;
    } cases[] = {
        {"pue: 1\n", "", 0},
        {"metrics_listen: 127.0.0.1:9464\n", "127.0.0.1:9464", 0},
        {"metrics_listen: \"\"\n", "", 0},
        {"metrics_listen: 127.0.0.1\n", NULL, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int rc = load_keys(cases[i].text, &keys, err, sizeof(err));
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0) assert_string_equal(keys.metrics_listen, cases[i].want);
        else assert_non_null(strstr(err, ".yaml:1: metrics_listen"));
    }
}

/* metrics_cache_s and metrics_max_jobs: their defaults, values in range,
 * and errors naming the line and key. */
static void test_cache_keys(void **state) {
    (void)state;
    config_keys keys;
    char err[512];
    static const struct {
        const char *text;
        double cache_s, max_jobs;
        const char *err;
    } cases[] = {
        {"pue: 1\n", 1, 1000, NULL},
        {"metrics_cache_s: 2.5\nmetrics_max_jobs: 0\n", 2.5, 0, NULL},
        {"metrics_max_jobs: 200000\n", 1, 200000, NULL},
        {"metrics_cache_s: 0\n", 0, 0, ".yaml:1: metrics_cache_s: '0' is not a number"},
        {"metrics_cache_s: soon\n", 0, 0, ".yaml:1: metrics_cache_s"},
        {"pue: 1\nmetrics_max_jobs: 1.5\n", 0, 0,
         ".yaml:2: metrics_max_jobs: '1.5' is not a whole number"},
        {"metrics_max_jobs: -1\n", 0, 0, ".yaml:1: metrics_max_jobs"},
        {"metrics_max_jobs: 2000000\n", 0, 0, ".yaml:1: metrics_max_jobs"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        int rc = load_keys(cases[i].text, &keys, err, sizeof(err));
        if (cases[i].err) {
            assert_int_equal(rc, -1);
            if (!strstr(err, cases[i].err))
                fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].err);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_true(keys.metrics_cache_s == cases[i].cache_s);
        assert_true(keys.metrics_max_jobs == cases[i].max_jobs);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_jobs_bounded),
        cmocka_unit_test(test_jobs_families),
        cmocka_unit_test(test_http_judge),
        cmocka_unit_test(test_listen_addr),
        cmocka_unit_test(test_listen_key),
        cmocka_unit_test(test_cache_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
