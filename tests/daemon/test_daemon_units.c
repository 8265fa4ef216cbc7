/* test_daemon_units.c -- cmocka tests of aegisd's parts that need no event
 * loop: the protocol parser, the SQLite store, the YAML config and the
 * classification of exits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config.h"
#include "cpu_budget.h"
#include "exec.h"
#include "exec_shim_args.h"
#include "launcher.h"
#include "proto.h"
#include "store.h"
#include "mps.h"
#include "usock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[256];

static int setup_dir(void **state) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/aegis-unit-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static int parse(const char *line, proto_request *req, char *err) {
    return proto_parse(line, strlen(line), req, err, 256);
}

/* ---- proto ---------------------------------------------------------------- */

static void test_proto_submit(void **state) {
    proto_request req;
    char err[256];
    assert_int_equal(parse("{\"op\":\"submit\",\"cwd\":\"/tmp\",\"env\":[\"A=1\"],"
                           "\"jobs\":[{\"cmd\":[\"sleep\",\"1\"],\"gpus\":2,"
                           "\"mem_mib\":1000,\"name\":\"x\",\"after\":7,"
                           "\"feed\":\"imagenet-1\"},"
                           "{\"cmd\":[\"true\"]}]}", &req, err), 0);
    assert_int_equal(req.op, PROTO_SUBMIT);
    assert_int_equal(req.njobs, 2);
    assert_string_equal(req.jobs[0].argv[1], "1");
    assert_null(req.jobs[0].argv[2]);
    assert_int_equal(req.jobs[0].gpus, 2);
    assert_int_equal(req.jobs[0].nafter, 1);
    assert_int_equal(req.jobs[0].after[0].id, 7);
    assert_string_equal(req.jobs[0].feed, "imagenet-1");
    assert_string_equal(req.jobs[1].feed, "");
    assert_false(req.jobs[0].feed_producer);
    assert_int_equal(req.jobs[1].gpus, 1);
    assert_true(req.jobs[1].mem_mib < 0);
    assert_string_equal(req.env[0], "A=1");
    proto_request_free(&req);
}

/* Dependencies: an existing job by id, or an earlier job of the same
 * submit by index, each with Slurm's kind; a bare number is afterok. The
 * opaque meta object travels as it is. */
static void test_proto_deps(void **state) {
    proto_request req;
    char err[256];
    assert_int_equal(parse("{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":["
                           "{\"cmd\":[\"a\"],\"after\":3},"
                           "{\"cmd\":[\"b\"],\"after\":[{\"id\":4,"
                           "\"kind\":\"afterany\"},{\"index\":0,"
                           "\"kind\":\"afternotok\"}],"
                           "\"meta\":{\"profile\":{\"avg_smact\":41.2}}}]}",
                           &req, err), 0);
    assert_int_equal(req.jobs[0].nafter, 1);
    assert_int_equal(req.jobs[0].after[0].id, 3);
    assert_int_equal(req.jobs[0].after[0].kind, PROTO_AFTER_OK);
    assert_null(req.jobs[0].meta);
    assert_int_equal(req.jobs[1].nafter, 2);
    assert_int_equal(req.jobs[1].after[0].id, 4);
    assert_int_equal(req.jobs[1].after[0].kind, PROTO_AFTER_ANY);
    assert_int_equal(req.jobs[1].after[1].id, 0);
    assert_int_equal(req.jobs[1].after[1].index, 0);
    assert_int_equal(req.jobs[1].after[1].kind, PROTO_AFTER_NOTOK);
    assert_true(json_is_object(req.jobs[1].meta));
    proto_request_free(&req);
    static const struct { const char *line, *field; } bad[] = {
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[{\"index\":0,\"kind\":\"afterok\"}]}]}",
         "jobs[0].after[0].index"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[{\"id\":1,\"kind\":\"after\"}]}]}",
         "jobs[0].after[0].kind"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[{\"id\":1,\"index\":0,\"kind\":\"afterok\"}]}]}",
         "jobs[0].after[0]"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[{\"kind\":\"afterok\"}]}]}", "jobs[0].after[0]"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[]}]}", "jobs[0].after"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":[{\"id\":1,\"kind\":\"afterok\",\"x\":1}]}]}",
         "jobs[0].after[0]: unknown field 'x'"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"meta\":[1]}]}", "jobs[0].meta"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char e[256] = "";
        int rc = parse(bad[i].line, &req, e);
        if (rc != -1 || !strstr(e, bad[i].field))
            fail_msg("case %zu: rc %d, err '%s'", i, rc, e);
        proto_request_free(&req);
    }
}

static void test_proto_other_ops(void **state) {
    proto_request req;
    char err[256];
    assert_int_equal(parse("{\"op\":\"ls\",\"all\":true}", &req, err), 0);
    assert_true(req.all);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"ls\",\"user\":\"alice\","
                           "\"states\":[\"queued\",\"done\"]}", &req, err), 0);
    assert_string_equal(req.user, "alice");
    assert_int_equal(json_array_size(req.states), 2);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"cancel\",\"ids\":[3,4]}", &req, err), 0);
    assert_int_equal(req.nids, 2);
    assert_int_equal(req.ids[1], 4);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"log\",\"id\":3,\"offset\":10,"
                           "\"stderr\":true}", &req, err), 0);
    assert_int_equal(req.offset, 10);
    assert_true(req.err_stream);
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"drain\",\"gpu\":2}", &req, err), 0);
    assert_int_equal(req.gpu, 2);
    proto_request_free(&req);
}

/* Each bad request fails with a message naming its field. */
static void test_proto_bad(void **state) {
    static const struct { const char *line, *field; } cases[] = {
        {"", "request"},
        {"[1]", "request"},
        {"{\"op\":1}", "op"},
        {"{\"op\":\"fly\"}", "op"},
        {"{\"op\":\"ls\",\"x\":1}", "unknown field 'x'"},
        {"{\"op\":\"ls\",\"all\":1}", "all"},
        {"{\"op\":\"ls\",\"user\":\"\"}", "user"},
        {"{\"op\":\"ls\",\"user\":7}", "user"},
        {"{\"op\":\"ls\",\"states\":[]}", "states"},
        {"{\"op\":\"ls\",\"states\":\"queued\"}", "states"},
        {"{\"op\":\"ls\",\"states\":[\"held\",\"paused\"]}", "states[1]"},
        {"{\"op\":\"update\",\"id\":1}", "at least one of"},
        {"{\"op\":\"update\",\"id\":1,\"nice\":-1}", "nice"},
        {"{\"op\":\"update\",\"id\":1,\"time_limit_s\":0}", "time_limit_s"},
        {"{\"op\":\"priority\",\"all\":true}", "unknown field"},
        {"{\"op\":\"show\"}", "id"},
        {"{\"op\":\"show\",\"id\":-1}", "id"},
        {"{\"op\":\"show\",\"id\":1.5}", "id"},
        {"{\"op\":\"cancel\",\"ids\":[]}", "ids"},
        {"{\"op\":\"cancel\",\"ids\":[1,\"2\"]}", "ids[1]"},
        {"{\"op\":\"submit\",\"cwd\":\"rel\",\"jobs\":[{\"cmd\":[\"a\"]}]}", "cwd"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[]}", "jobs"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{}]}", "jobs[0].cmd"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"\"]}]}",
         "jobs[0].cmd[0]"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"gpus\":9}]}", "jobs[0].gpus"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":-5}]}", "jobs[0].mem_mib"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"env\":[\"NOEQ\"],"
         "\"jobs\":[{\"cmd\":[\"a\"]}]}", "env[0]"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\\u0000b\"]}]}",
         "request"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"name\":\"a\\nb\"}]}", "jobs[0].name"},
        {"{\"op\":\"ls\",\"op\":\"ls\"}", "request"},
        {"{\"op\":\"drain\",\"gpu\":64}", "gpu"},
        /* nothing is rounded, dropped or cut short */
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"gpus\":1.9}]}", "jobs[0].gpus"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":2.5}]}", "jobs[0].after"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":0}]}", "jobs[0].after"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"after\":1e300}]}", "jobs[0].after"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mps_threads_pct\":50.5}]}", "jobs[0].mps_threads_pct"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"feed_producer\":true}]}", "jobs[0].feed_producer: feed_producer "
         "without a feed"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"feed\":\"f\",\"feed_producer\":1}]}", "jobs[0].feed_producer"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":2e6}]}", "jobs[0].mem_mib"},
        /* under 1 MiB admitted a job as if it needed no memory */
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":0}]}", "jobs[0].mem_mib: must be a number in [1, "},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":0.001}]}", "jobs[0].mem_mib"},
        {"{\"op\":\"update\",\"id\":1,\"mem_mib\":0}",
         "update.mem_mib: must be a number in [1, "},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":\"nan\"}]}", "jobs[0].mem_mib"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":1e999}]}", "request"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"mem_mib\":NaN}]}", "request"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"name\":\"\xff\"}]}", "request"},
        {"{\"op\":\"submit\",\"cwd\":\"/\xff\",\"jobs\":[{\"cmd\":[\"a\"]}]}",
         "request"},
        {"{\"op\":\"submit\",\"cwd\":\"/\",\"jobs\":[{\"cmd\":[\"a\"],"
         "\"name\":\"\\ud800\"}]}", "request"},
        {"{\"op\":\"report\",\"since\":-1}", "since"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        proto_request req;
        char err[256] = "";
        int rc = parse(cases[i].line, &req, err);
        if (rc != -1 || !strstr(err, cases[i].field))
            fail_msg("case %zu '%s': rc %d, err '%s'", i, cases[i].line, rc,
                     err);
        proto_request_free(&req);
    }
}

/* The Slurm plugin's ops (docs/slurm.md): lease, lease_exit, lease_end. */
static void test_proto_lease(void **state) {
    proto_request req;
    char err[256];
    assert_int_equal(parse("{\"op\":\"lease\",\"slurm_job\":4294967295,"
                           "\"restart\":1,\"uid\":1000,\"mem_mib\":4000,"
                           "\"mode\":\"mps\",\"pid\":4242,\"gpus\":2,"
                           "\"name\":\"train\"}", &req, err), 0);
    assert_int_equal(req.op, PROTO_LEASE);
    assert_true(req.lease.slurm_job == 4294967295u);
    assert_int_equal(req.lease.restart, 1);
    assert_int_equal(req.lease.uid, 1000);
    assert_true(req.lease.mem_mib == 4000);
    assert_string_equal(req.lease.mode, "mps");
    assert_int_equal(req.lease.pid, 4242);
    assert_int_equal(req.lease.gpus, 2);
    assert_string_equal(req.lease.name, "train");
    proto_request_free(&req);
    /* the defaults: restart 0, one GPU, no estimate, shared, no name */
    assert_int_equal(parse("{\"op\":\"lease\",\"slurm_job\":7,\"uid\":0,"
                           "\"pid\":2}", &req, err), 0);
    assert_int_equal(req.lease.restart, 0);
    assert_int_equal(req.lease.gpus, 1);
    assert_true(req.lease.mem_mib == -1);
    assert_string_equal(req.lease.mode, "shared");
    assert_string_equal(req.lease.name, "");
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"lease_exit\",\"slurm_job\":7,"
                           "\"restart\":2,\"pid\":99,\"status\":256,"
                           "\"stderr_tail\":\"CUDA out of memory\"}", &req,
                           err), 0);
    assert_int_equal(req.op, PROTO_LEASE_EXIT);
    assert_int_equal(req.lease.restart, 2);
    assert_int_equal(req.lease.pid, 99);
    assert_int_equal(req.lease.status, 256);
    assert_string_equal(req.lease.stderr_tail, "CUDA out of memory");
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"lease_exit\",\"slurm_job\":7,"
                           "\"pid\":99,\"status\":0}", &req, err), 0);
    assert_string_equal(req.lease.stderr_tail, "");
    proto_request_free(&req);
    assert_int_equal(parse("{\"op\":\"lease_end\",\"slurm_job\":12}", &req,
                           err), 0);
    assert_int_equal(req.op, PROTO_LEASE_END);
    assert_true(req.lease.slurm_job == 12);
    proto_request_free(&req);
    static const struct { const char *line, *field; } bad[] = {
        {"{\"op\":\"lease\",\"uid\":0,\"pid\":2}", "slurm_job: missing"},
        {"{\"op\":\"lease\",\"slurm_job\":0,\"uid\":0,\"pid\":2}", "slurm_job"},
        {"{\"op\":\"lease\",\"slurm_job\":4294967296,\"uid\":0,\"pid\":2}",
         "slurm_job"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"pid\":2}", "uid: missing"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":-1,\"pid\":2}", "uid"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0}", "pid: missing"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":1.5}", "pid"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":0}", "pid"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"restart\":-1}", "restart"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"mem_mib\":-3}", "mem_mib"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"mode\":\"naive\"}", "mode"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"gpus\":0}", "gpus"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"name\":\"a\\tb\"}", "name"},
        {"{\"op\":\"lease\",\"slurm_job\":1,\"uid\":0,\"pid\":2,"
         "\"status\":0}", "unknown field 'status'"},
        {"{\"op\":\"lease_exit\",\"slurm_job\":1,\"pid\":2}", "status: missing"},
        {"{\"op\":\"lease_exit\",\"slurm_job\":1,\"pid\":2,\"status\":\"x\"}",
         "status"},
        {"{\"op\":\"lease_exit\",\"slurm_job\":1,\"pid\":2,\"status\":0,"
         "\"stderr_tail\":7}", "stderr_tail"},
        {"{\"op\":\"lease_end\"}", "slurm_job: missing"},
        {"{\"op\":\"lease_end\",\"slurm_job\":1,\"pid\":2}",
         "unknown field 'pid'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char e[256] = "";
        int rc = parse(bad[i].line, &req, e);
        if (rc != -1 || !strstr(e, bad[i].field))
            fail_msg("case %zu '%s': rc %d, err '%s'", i, bad[i].line, rc, e);
        proto_request_free(&req);
    }
    /* stderr_tail: at most PROTO_MAX_TAIL bytes */
    size_t n = PROTO_MAX_TAIL + 1;
    char *line = malloc(n + 128);
    assert_non_null(line);
    int at = snprintf(line, 128, "{\"op\":\"lease_exit\",\"slurm_job\":1,"
                      "\"pid\":2,\"status\":0,\"stderr_tail\":\"");
    memset(line + at, 'x', n);
    strcpy(line + at + n, "\"}");
    assert_int_equal(parse(line, &req, err), -1);
    assert_non_null(strstr(err, "stderr_tail"));
    proto_request_free(&req);
    free(line);
}

static void test_proto_oversized(void **state) {
    size_t n = PROTO_MAX_REQUEST + 1;
    char *line = malloc(n);
    memset(line, ' ', n);
    proto_request req;
    char err[256];
    assert_int_equal(proto_parse(line, n, &req, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "longer than"));
    proto_request_free(&req);
    free(line);
}

/* ---- usock ---------------------------------------------------------------- */

/* A socket file answers while its server listens, and is stale after. */
static void test_usock_answers(void **state) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char *path = a.sun_path;
    snprintf(path, sizeof(a.sun_path), "%.80s/probe.sock", tmpdir);
    assert_false(usock_answers(path, SOCK_STREAM));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_false(usock_answers(path, SOCK_STREAM)); /* bound, not listening */
    assert_int_equal(listen(fd, 1), 0);
    assert_true(usock_answers(path, SOCK_STREAM));
    /* a full backlog is still a live server, and asking never blocks */
    for (int i = 0; i < 8; i++) assert_true(usock_answers(path, SOCK_STREAM));
    close(fd);
    assert_false(usock_answers(path, SOCK_STREAM));
    unlink(path);
}

/* MPS's control socket is SOCK_SEQPACKET (nvidia-cuda-mps-control's
 * <pipe>/control): a daemon listening there is found, where a stream
 * connect() is refused with EPROTOTYPE and would start a second one. */
static void test_mps_running_seqpacket(void **state) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/control", tmpdir);
    assert_false(mps_running(tmpdir));
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_true(mps_running(tmpdir));
    assert_false(usock_answers(a.sun_path, SOCK_STREAM));
    close(fd);
    assert_false(mps_running(tmpdir));
    unlink(a.sun_path);
}

/* ---- store ---------------------------------------------------------------- */

static void count_active(void *ctx, json_t *job) {
    json_array_append(ctx, job);
}

/* The ids store_list() gives for q, as "1 2 3", and its count. */
static void store_check_query(store *st, store_query q, const char *ids,
                              int64_t count) {
    json_t *rows = store_list(st, &q);
    char got[64] = "";
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld",
                 i ? " " : "",
                 (long long)json_integer_value(json_object_get(row, "id")));
    json_decref(rows);
    assert_string_equal(got, ids);
    assert_int_equal(store_count(st, &q), count);
}

/* Jobs 1 queued, 2 running, 3 done, all alice's (uid 1000): the limit
 * keeps the head of the queue, or with `all` the newest, after the user
 * and states filter; the count counts what passes the filter. */
static void store_check_list(store *st) {
    store_check_query(st, (store_query){.all = true}, "1 2 3", 3);
    store_check_query(st, (store_query){.all = true, .limit = 2}, "2 3", 3);
    store_check_query(st, (store_query){.limit = 1}, "1", 2);
    store_check_query(st, (store_query){.all = true, .user = "1000",
                                        .states = "[\"queued\",\"done\"]",
                                        .limit = 1}, "3", 2);
    store_check_query(st, (store_query){.user = "alice", .limit = 1}, "1", 2);
    store_check_query(st, (store_query){.all = true, .user = "bob"}, "", 0);
    store_check_query(st, (store_query){.user = "100"}, "", 0);
    /* a uid as CAST(uid AS TEXT) writes it, or a login name */
    store_check_query(st, (store_query){.user = "01000"}, "", 0);
    store_check_query(st, (store_query){.user = "1000", .limit = 2}, "1 2",
                      2);
    store_check_query(st, (store_query){.states = "[\"done\"]"}, "", 0);
}

static void test_store_submit_and_reopen(void **state) {
    char path[300], err[256];
    snprintf(path, sizeof(path), "%s/s.db", tmpdir);
    store *st = store_open(path, err, sizeof(err));
    assert_non_null(st);
    proto_request req;
    assert_int_equal(parse("{\"op\":\"submit\",\"cwd\":\"/tmp\",\"env\":[\"A=1\"],"
                           "\"jobs\":[{\"cmd\":[\"a\"]},{\"cmd\":[\"b\"]},"
                           "{\"cmd\":[\"c\"],\"after\":[{\"index\":1,"
                           "\"kind\":\"afterany\"}],\"meta\":{\"k\":1}}]}",
                           &req, err), 0);
    store_owner owner = {.uid = 1000, .gid = 1000, .user = "alice"};
    int64_t first = 0;
    assert_int_equal(store_submit(st, &owner, &req, 1.0, &first, err,
                                  sizeof(err)), 0);
    assert_int_equal(first, 1);
    proto_request_free(&req);
    store_attempt a = {.n = 1, .gpus = "0", .floor_mib = 5120, .shim_pid = 42,
                       .shim_start = 99, .job_pid = 43, .err_offset = 7};
    store_begin(st);
    store_attempt_start(st, 2, &a, 2.0);
    store_job_state(st, 2, "running", NULL, 2.0);
    store_commit(st);
    store_job_state(st, 3, "done", "exit 0", 3.0);
    store_close(st); /* as if aegisd died here */

    st = store_open(path, err, sizeof(err));
    assert_non_null(st);
    json_t *active = json_array();
    store_each_active(st, count_active, active);
    assert_int_equal(json_array_size(active), 2);
    json_t *j2 = json_array_get(active, 1);
    assert_string_equal(json_string_value(json_object_get(j2, "state")),
                        "running");
    json_t *att = json_object_get(j2, "attempt");
    assert_int_equal(json_integer_value(json_object_get(att, "shim_pid")), 42);
    assert_int_equal(json_integer_value(json_object_get(att, "err_offset")), 7);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(j2, "env"), 0)), "A=1");
    json_decref(active);
    json_t *j3 = store_job(st, 3, true);
    char *deps = json_dumps(json_object_get(j3, "deps"), JSON_COMPACT);
    assert_string_equal(deps, "[{\"id\":2,\"kind\":\"afterany\"}]");
    free(deps);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(j3, "meta"), "k")), 1);
    json_decref(j3);
    store_check_list(st);
    /* `aegis clear` hides the finished job 3 from a list by user too */
    assert_int_equal(store_clear(st, 1000), 1);
    store_check_query(st, (store_query){.all = true, .user = "alice"}, "1 2",
                      2);
    store_check_query(st, (store_query){.all = true, .user = "1000",
                                        .cleared = true}, "1 2 3", 3);
    assert_null(store_job(st, 99, false));
    store_close(st);
}

/* A loop turn's job events are one commit (one fsync), not one each: the
 * pairs of N exits inside a turn's pair join it. A commit_now inside it
 * (a launch) commits the turn so far at once; the turn's end the rest. */
static void test_store_turn_commits(void **state) {
    char path[300], err[256];
    snprintf(path, sizeof(path), "%s/turn.db", tmpdir);
    store *st = store_open(path, err, sizeof(err));
    assert_non_null(st);
    proto_request req;
    char text[1024] = "{\"op\":\"submit\",\"cwd\":\"/tmp\",\"env\":[],\"jobs\":[";
    for (int i = 0; i < 10; i++)
        strcat(text, i ? ",{\"cmd\":[\"true\"]}" : "{\"cmd\":[\"true\"]}");
    strcat(text, "]}");
    assert_int_equal(parse(text, &req, err), 0);
    store_owner owner = {.uid = 1000, .gid = 1000, .user = "alice"};
    int64_t first = 0;
    assert_int_equal(store_submit(st, &owner, &req, 1.0, &first, err,
                                  sizeof(err)), 0);
    proto_request_free(&req);
    unsigned long before = store_commits(st);
    store_begin(st); /* the turn */
    for (int64_t id = first; id < first + 5; id++) { /* five exits */
        store_begin(st);
        store_attempt_end(st, id, 1, "ok", 0, 2.0);
        store_job_state(st, id, "done", "exit 0", 2.0);
        store_event(st, id, 2.0, "done: exit 0");
        assert_int_equal(store_commit(st), 0);
    }
    assert_true(store_in_transaction(st));
    assert_int_equal(store_commits(st), before);
    store_attempt a = {.n = 1, .gpus = "0"};
    store_begin(st); /* a launch: durable before it starts */
    store_attempt_start(st, first + 5, &a, 3.0);
    assert_int_equal(store_commit_now(st), 0);
    assert_int_equal(store_commits(st), before + 1);
    store_job_state(st, first + 6, "done", "exit 0", 3.0);
    assert_int_equal(store_commit(st), 0); /* the turn's end */
    assert_false(store_in_transaction(st));
    assert_int_equal(store_commits(st), before + 2);
    store_close(st);
    st = store_open(path, err, sizeof(err)); /* all of it saved */
    json_t *j = store_job(st, first + 4, false);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "done");
    json_decref(j);
    j = store_job(st, first + 6, false);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "done");
    json_decref(j);
    store_close(st);
}

/* A row an older aegisd wrote, with its one afterok id in `after`, reads
 * as a list of dependencies like the rows written now. */
static void test_store_old_after(void **state) {
    char path[300], err[256];
    snprintf(path, sizeof(path), "%s/old.db", tmpdir);
    store *st = store_open(path, err, sizeof(err));
    assert_non_null(st);
    store_close(st);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
        "INSERT INTO envs(id, cwd, env) VALUES(1, '/', '[]');"
        "INSERT INTO jobs(uid, gid, user, name, cmd, env_id, gpus, after,"
        " state, submitted) VALUES(0, 0, 'root', '', '[\"a\"]', 1, 1, 5,"
        " 'queued', 1.0);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    st = store_open(path, err, sizeof(err));
    json_t *job = store_job(st, 1, true);
    char *deps = json_dumps(json_object_get(job, "deps"), JSON_COMPACT);
    assert_string_equal(deps, "[{\"id\":5,\"kind\":\"afterok\"}]");
    free(deps);
    json_decref(job);
    store_close(st);
}

/* The tables and columns of the jobs' histories and of Slurm's leases came
 * from two branches: a database either aegisd wrote (or one older than
 * both) gets what it lacks of both when opened, whatever order its
 * columns are in. */
static void test_store_old_schemas(void **state) {
    static const char *const history =
        "DROP TABLE history;"
        "ALTER TABLE jobs DROP COLUMN history_step;"
        "ALTER TABLE jobs DROP COLUMN notify;";
    static const char *const slurm =
        "DROP TABLE slurm_ladder;"
        "ALTER TABLE jobs DROP COLUMN slurm_job;"
        "ALTER TABLE jobs DROP COLUMN slurm_restart;"
        "ALTER TABLE jobs DROP COLUMN slurm_mode;"
        "ALTER TABLE jobs DROP COLUMN slurm_pids;"
        "ALTER TABLE jobs DROP COLUMN slurm_env;";
    const char *const lacks[][2] = {{slurm, ""}, {history, ""},
                                    {history, slurm}};
    for (int k = 0; k < 3; k++) {
        char path[300], err[256];
        snprintf(path, sizeof(path), "%s/schema%d.db", tmpdir, k);
        store *st = store_open(path, err, sizeof(err));
        assert_non_null(st);
        store_close(st);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, lacks[k][0], NULL, NULL, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, lacks[k][1], NULL, NULL, NULL),
                         SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
            "INSERT INTO envs(id, cwd, env) VALUES(1, '/', '[]');"
            "INSERT INTO jobs(uid, gid, user, name, cmd, env_id, gpus,"
            " state, submitted) VALUES(0, 0, 'root', '', '[\"a\"]', 1, 1,"
            " 'running', 1.0);", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        st = store_open(path, err, sizeof(err));
        assert_non_null(st);
        json_t *job = store_job(st, 1, true);
        assert_non_null(job);
        assert_true(json_is_null(json_object_get(job, "notify")));
        assert_true(json_is_null(json_object_get(job, "slurm_job")));
        json_decref(job);
        int count = -1, step = -1;
        store_history_state(st, 1, &count, &step);
        assert_int_equal(count, 0);
        assert_int_equal(step, 1);
        store_history_add(st, 1, &(store_sample){.t = 2, .mem_mib = 100,
                                                 .sm_pct = -1,
                                                 .gpu_used_mib = 200,
                                                 .gpu_total_mib = 1000});
        json_t *samples = store_history(st, 1);
        assert_int_equal(json_array_size(samples), 1);
        json_decref(samples);
        store_ladder_set(st, 42, 2, 3000, false);
        int attempt = 0;
        double floor = 0;
        bool alone = true;
        assert_true(store_ladder_get(st, 42, &attempt, &floor, &alone));
        assert_int_equal(attempt, 2);
        assert_true(floor == 3000 && !alone);
        store_close(st);
    }
}

/* ---- config --------------------------------------------------------------- */

static const char *write_file(const char *name, const char *text) {
    static char path[300];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_config_good(void **state) {
    core_config cfg;
    char err[256];
    const char *path = write_file("good.yaml", "# comment\npolicy: lucid\n"
                                  "smact_max: 0.5\nwindow_samples: 10\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.policy, "lucid");
    assert_true(cfg.smact_max == 0.5);
    assert_int_equal(cfg.window_samples, 10);
    path = write_file("empty.yaml", "");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    assert_int_equal(config_load("/nonexistent/x.yaml", true, &cfg, err,
                                 sizeof(err)), 0);
    /* Without a config the daemon runs aegis-plus, which takes users'
     * --mem into account. */
    assert_string_equal(cfg.policy, "aegis-plus");
}

/* The shipped configuration sets every key to its default. */
static void test_config_shipped(void **state) {
    core_config cfg, def;
    char err[256];
    assert_int_equal(config_load(AEGIS_SHIPPED_CONFIG, false, &cfg, err,
                                 sizeof(err)), 0);
    assert_int_equal(config_load("/nonexistent/x.yaml", true, &def, err,
                                 sizeof(err)), 0);
    assert_true(cfg.smact_max == def.smact_max);
    assert_string_equal(cfg.placement, def.placement);
    assert_string_equal(cfg.policy, def.policy);
    assert_true(cfg.est_cap_mib == def.est_cap_mib);
    assert_int_equal(cfg.backfill_max_passes, def.backfill_max_passes);
    assert_true(cfg.fairshare_half_life_s == def.fairshare_half_life_s);
    assert_int_equal(cfg.max_gpus_per_user, def.max_gpus_per_user);
    assert_int_equal(cfg.max_jobs_per_user, def.max_jobs_per_user);
    assert_true(cfg.default_time == def.default_time);
    /* the per-user limits and default_time are YAML keys like any core
     * parameter */
    const char *path = write_file("limits.yaml", "max_gpus_per_user: 2\n"
                                  "max_jobs_per_user: 3\n"
                                  "default_time: 3600\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    assert_int_equal(cfg.max_gpus_per_user, 2);
    assert_int_equal(cfg.max_jobs_per_user, 3);
    assert_true(cfg.default_time == 3600);
}

/* max_gpus_per_user in aegis.yaml: aegisd's default policy applies it, so
 * a job asking more GPUs than it is refused at submission, naming the
 * limit (handlers.c), as Slurm's DenyOnLimit refuses one; under a policy
 * without the limits it is not. */
static void test_config_gpu_limit_refuses(void **state) {
    core_config cfg;
    char err[256];
    const char *path = write_file("gpulimit.yaml", "max_gpus_per_user: 1\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    assert_int_equal(core_job_within_limits(&cfg, 1, err, sizeof(err)), 0);
    assert_int_equal(core_job_within_limits(&cfg, 2, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "over max_gpus_per_user 1"));
    path = write_file("gpulimit.yaml", "policy: aegis\n"
                      "max_gpus_per_user: 1\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), 0);
    assert_int_equal(core_job_within_limits(&cfg, 2, err, sizeof(err)), 0);
}

static void test_config_bad(void **state) {
    core_config cfg;
    char err[256];
    const char *path = write_file("bad.yaml", "policy: aegis\n\nsmact_mux: 1\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad.yaml:3:"));
    assert_non_null(strstr(err, "smact_mux"));
    path = write_file("bad2.yaml", "observe_s: [1, 2]\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad2.yaml:1:"));
    path = write_file("bad3.yaml", "policy: nope\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(config_load("/nonexistent/x.yaml", false, &cfg, err,
                                 sizeof(err)), -1);
    /* out-of-range values name the file, line and key */
    static const struct { const char *text, *where; } ranges[] = {
        {"policy: aegis\nwindow_samples: 0\n", "range.yaml:2: config window_samples"},
        {"window_samples: 1e9\n", "range.yaml:1: config window_samples"},
        {"\nobserve_s: -100\n", "range.yaml:2: config observe_s"},
        {"guard_frac: 5\n", "range.yaml:1: config guard_frac"},
        {"smact_max: -1\n", "range.yaml:1: config smact_max"},
        {"est_margin_mib: 1e308\n", "range.yaml:1: config est_margin_mib"},
    };
    for (size_t i = 0; i < sizeof(ranges) / sizeof(*ranges); i++) {
        path = write_file("range.yaml", ranges[i].text);
        err[0] = '\0';
        if (config_load(path, false, &cfg, err, sizeof(err)) != -1 ||
            !strstr(err, ranges[i].where))
            fail_msg("'%s': '%s', not '%s'", ranges[i].text, err,
                     ranges[i].where);
    }
}

/* What the file says is read or refused: a second YAML document (it was
 * ignored), a top-level list and an alias (it was "expected a single
 * value"); and a path that is no regular file (a
 * FIFO stopped aegisd in open() at a SIGHUP). A key given again still
 * overrides: a line appended changes a setting. */
static void test_config_read_whole_or_refused(void **state) {
    core_config cfg;
    char err[256], fifo[300];
    static const struct { const char *text, *where; } bad[] = {
        {"window_samples: 5\n---\nwindow_samples: 0\n",
         "twice.yaml:2: config: a second YAML document"},
        {"- 1\n- 2\n", "twice.yaml:1: expected a mapping"},
        {"a: &n 5\nwindow_samples: *n\n",
         "twice.yaml:2: *n: YAML aliases are not read"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        const char *path = write_file("twice.yaml", bad[i].text);
        err[0] = '\0';
        if (config_load(path, false, &cfg, err, sizeof(err)) != -1 ||
            !strstr(err, bad[i].where))
            fail_msg("'%s': '%s', not '%s'", bad[i].text, err, bad[i].where);
    }
    snprintf(fifo, sizeof(fifo), "%s/fifo.yaml", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(config_load(fifo, false, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "fifo.yaml: not a regular file"));
    unlink(fifo);
    assert_int_equal(config_load(tmpdir, false, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a regular file"));
}

/* Every problem of a file is reported, one line each in file order, with
 * a name's valid values; a cut-short buffer still fails the load. */
static void test_config_every_problem(void **state) {
    core_config cfg;
    char err[1024], tiny[16];
    const char *path = write_file("many.yaml",
                                  "policy: fifo\nobserve_s: 5\nplacement: x\n"
                                  "guard_frac: 5\nsmact_mux: 1\n");
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), -1);
    const char *want[] = {"many.yaml:1: config policy: unknown name 'fifo' "
                          "(valid: exclusive, ",
                          "many.yaml:3: config placement: unknown name 'x' "
                          "(valid: ",
                          "many.yaml:4: config guard_frac",
                          "many.yaml:5: config: unknown field 'smact_mux'"};
    const char *at = err;
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        const char *found = strstr(at, want[i]);
        if (!found) fail_msg("no '%s' after '%s'", want[i], at);
        at = found + 1;
    }
    assert_null(strstr(err, "many.yaml:2:"));
    assert_int_equal(config_load(path, false, &cfg, tiny, sizeof(tiny)), -1);
    assert_true(strlen(tiny) < sizeof(tiny));
}

/* Problems past err's end are not cut mid-line, which lost the key a
 * line named ("config: u"), nor left unsaid: the lines that fit are
 * whole, and a last one says how many more there are. */
static void test_config_problems_past_end(void **state) {
    core_config cfg;
    char text[512] = "", err[400];
    for (int i = 0; i < 20; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text),
                 "key%02d: 1\n", i);
    const char *path = write_file("past.yaml", text);
    assert_int_equal(config_load(path, false, &cfg, err, sizeof(err)), -1);
    int lines = 0, more = 0;
    for (char *line = strtok(err, "\n"); line; line = strtok(NULL, "\n")) {
        if (sscanf(line, "... and %d more problems, not shown", &more) == 1)
            break;
        char want[32];
        snprintf(want, sizeof(want), "unknown field 'key%02d'", lines++);
        if (!strstr(line, want)) fail_msg("'%s' lacks %s", line, want);
    }
    assert_true(lines > 0 && more > 0);
    assert_int_equal(lines + more, 20);
}

/* log_max_mib: 1024 MiB unless set, at least 1 MiB, named by file:line;
 * slurm_scontrol: "scontrol" unless set. */
static void test_config_log_max(void **state) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[256];
    assert_int_equal(config_load_daemon("/nonexistent/x.yaml", true, &cfg,
                                        &acct, &share, &keys, err,
                                        sizeof(err)), 0);
    assert_true(keys.log_max_mib == 1024);
    assert_string_equal(keys.slurm_scontrol, "scontrol");
    assert_int_equal(config_load_daemon(AEGIS_SHIPPED_CONFIG, false, &cfg,
                                        &acct, &share, &keys, err,
                                        sizeof(err)), 0);
    assert_true(keys.log_max_mib == 1024); /* the shipped file shows the default */
    assert_string_equal(keys.slurm_scontrol, "scontrol");
    const char *path = write_file("log.yaml", "pue: 1.2\nlog_max_mib: 8\n"
                                  "slurm_scontrol: /opt/slurm/bin/scontrol\n");
    assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share, &keys,
                                        err, sizeof(err)), 0);
    assert_true(keys.log_max_mib == 8);
    assert_string_equal(keys.slurm_scontrol, "/opt/slurm/bin/scontrol");
    static const char *const bad[] = {"log_max_mib: 0.5\n",
                                      "log_max_mib: lots\n",
                                      "log_max_mib: 2e6\n",
                                      "slurm_scontrol: \"\"\n"};
    for (int i = 0; i < 4; i++) {
        path = write_file("log.yaml", bad[i]);
        assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share,
                                            &keys, err, sizeof(err)), -1);
        assert_non_null(strstr(err, i < 3 ? "log.yaml:1: log_max_mib"
                                          : "log.yaml:1: slurm_scontrol"));
    }
}

/* YAML's null (plain ~, null, nothing) is refused for every key, at its
 * file:line; quoted, the same text is text. It was read as text: notify
 * "~" ran at every job's end. */
static void test_config_null(void **state) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[512], text[128];
    static const char *const names[] = {
        "notify", "cgroup_root", "slurm_scontrol", "socket_group",
        "metrics_listen", "mps_control", "mps_dir", "policy", "sharing",
        "window_samples"};
    static const char *const nulls[] = {"~", "null", "NULL", ""};
    for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++)
        for (size_t n = 0; n < sizeof(nulls) / sizeof(*nulls); n++) {
            snprintf(text, sizeof(text), "pue: 1.1\n%s: %s\n", names[k],
                     nulls[n]);
            const char *path = write_file("null.yaml", text);
            assert_int_equal(config_load_daemon(path, false, &cfg, &acct,
                                                &share, &keys, err,
                                                sizeof(err)), -1);
            char want[128];
            snprintf(want, sizeof(want), "null.yaml:2: %s: YAML null ('%s')",
                     names[k], nulls[n]);
            if (!strstr(err, want))
                fail_msg("%s: got \"%s\", want \"%s\"", text, err, want);
        }
    const char *path = write_file("null.yaml", "sharing:\n  1: ~\n");
    assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share,
                                        &keys, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "null.yaml:2: sharing: 1: YAML null ('~')"));
    path = write_file("null.yaml", "notify: '~'\ncgroup_root: \"\"\n");
    assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share,
                                        &keys, err, sizeof(err)), 0);
    assert_string_equal(keys.notify, "~");
    assert_string_equal(keys.cgroup_root, "");
}

/* cgroup_root: '' or an absolute path to a folder, else refused at its
 * line (a relative or missing one failed every job asking for a limit). */
static void test_config_cgroup_root(void **state) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[512], text[600];
    const char *file = write_file("not-a-folder", "x");
    char not_folder[512];
    snprintf(not_folder, sizeof(not_folder), "%s", file);
    const char *bad[] = {"sys/fs/cgroup", "/nonexistent/cgroup", not_folder};
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof(text), "pue: 1.1\ncgroup_root: '%s'\n", bad[i]);
        const char *path = write_file("cg.yaml", text);
        assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share,
                                            &keys, err, sizeof(err)), -1);
        char want[600];
        snprintf(want, sizeof(want), "cg.yaml:2: cgroup_root: '%s' is not %s",
                 bad[i], i == 0 ? "an absolute path" : "a folder");
        if (!strstr(err, want))
            fail_msg("%s: got \"%s\", want \"%s\"", bad[i], err, want);
    }
    snprintf(text, sizeof(text), "cgroup_root: %s\n", tmpdir);
    assert_int_equal(config_load_daemon(write_file("cg.yaml", text), false,
                                        &cfg, &acct, &share, &keys, err,
                                        sizeof(err)), 0);
    assert_string_equal(keys.cgroup_root, tmpdir);
}

/* A config file named name holding text is refused, its message holding
 * want. */
static void assert_config_refused(const char *name, const char *text,
                                  const char *want) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[512] = "";
    const char *path = write_file(name, text);
    if (config_load_daemon(path, false, &cfg, &acct, &share, &keys, err,
                           sizeof(err)) != -1 ||
        !strstr(err, want))
        fail_msg("%s: got \"%s\", want \"%s\"", text, err, want);
}

/* Numbers are plain decimals: hex, spaces, a NUL and what follows it,
 * inf and nan are refused at their line, as are fractions of MiB and a
 * signed port; strtod had read "0x10" as 16 and " 30" as 30. */
static void test_config_numbers(void **state) {
    core_config cfg;
    acct_params acct;
    sharing_config share;
    config_keys keys;
    char err[512];
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"window_samples: 0x10\n", "num.yaml:1: config window_samples: '0x10'"},
        {"window_samples: \" 30\"\n", "num.yaml:1: config window_samples: ' 30'"},
        {"window_samples: \"30 \"\n", "num.yaml:1: config window_samples: '30 '"},
        {"window_samples: \"3\\0junk\"\n",
         "num.yaml:1: window_samples: the value holds a NUL byte"},
        {"smact_max: nan\n", "num.yaml:1: config smact_max: 'nan'"},
        {"big_advance_s: 1e\n", "num.yaml:1: config big_advance_s: '1e'"},
        {"pue: 0x1p1\n", "num.yaml:1: pue: '0x1p1'"},
        {"notify_timeout_s: \" 5\"\n", "num.yaml:1: notify_timeout_s: ' 5'"},
        {"log_max_mib: 1.5\n", "num.yaml:1: log_max_mib: '1.5' is not a whole number"},
        {"host_mem_per_gpu_mib: 0.5\n",
         "num.yaml:1: host_mem_per_gpu_mib: '0.5' is not a whole number"},
        {"job_session_nice: 20\n",
         "num.yaml:1: job_session_nice: '20' is not a whole number in [0, 19]"},
        {"job_session_nice: -5\n", "num.yaml:1: job_session_nice: '-5'"},
        /* bounds in full: %g said [1, 1.04858e+06] */
        {"log_max_mib: 2000000\n",
         "num.yaml:1: log_max_mib: '2000000' is not a whole number in "
         "[1, 1048576]"},
        {"backfill_max_passes: 2000000\n",
         "num.yaml:1: config backfill_max_passes: '2000000' is not a whole "
         "number in [0, 1000000]"},
        {"metrics_listen: 127.0.0.1:+80\n", "num.yaml:1: metrics_listen: '127.0.0.1:+80'"},
        {"metrics_listen: \"127.0.0.1: 80\"\n", "num.yaml:1: metrics_listen:"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_config_refused("num.yaml", bad[i].text, bad[i].want);
    const char *path = write_file("num.yaml", "window_samples: 10\n"
                                  "smact_max: .5\nbig_advance_s: 1e3\n"
                                  "log_max_mib: 8\nmetrics_listen: "
                                  "127.0.0.1:9464\njob_session_nice: 0\n");
    assert_int_equal(config_load_daemon(path, false, &cfg, &acct, &share,
                                        &keys, err, sizeof(err)), 0);
    assert_int_equal(cfg.window_samples, 10);
    assert_true(keys.job_session_nice == 0);
    assert_true(cfg.smact_max == 0.5 && cfg.big_advance_s == 1000);
    /* `aegis sim --set` goes through the same parser */
    assert_int_equal(core_config_set(&cfg, "window_samples", "0x10", err,
                                     sizeof(err)), -1);
}

/* A NUL byte in a name, or in a sharing entry, is refused at its line as
 * one in a value is: C strings end at it, so "window_samples\0junk: 3"
 * set window_samples and "0: naive\0x" made GPU 0 naive. */
static void test_config_nul_names(void **state) {
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"\"window_samples\\0junk\": 3\n",
         "nul.yaml:1: window_samples: the name holds a NUL byte"},
        {"pue: 1\n\"sharing\\0x\": mps\n",
         "nul.yaml:2: sharing: the name holds a NUL byte"},
        {"sharing:\n  \"0\\0x\": naive\n",
         "nul.yaml:2: sharing: 0: the GPU key holds a NUL byte"},
        {"sharing:\n  default: \"mps\\0x\"\n",
         "nul.yaml:2: sharing: default: the mode holds a NUL byte"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_config_refused("nul.yaml", bad[i].text, bad[i].want);
}

/* ---- exit classification --------------------------------------------------- */

static void test_classify(void **state) {
    char why[256];
    uid_t me = geteuid();
    int dir = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dir >= 0);
    write_file("1.err", "old attempt: CUDA out of memory\n");
    long long offset = (long long)strlen("old attempt: CUDA out of memory\n");
    assert_int_equal(exec_classify(0, dir, 1, me, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_OK);
    /* the earlier attempt's OOM is before the offset: not this one's */
    assert_int_equal(exec_classify(1 << 8, dir, 1, me, offset, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_int_equal(exec_classify(1 << 8, dir, 1, me, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_OOM);
    static const char *const lines[] = {
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: x",
        "RuntimeError: out of memory",
    };
    for (int i = 0; i < 3; i++) {
        write_file("1.err", lines[i]);
        assert_int_equal(exec_classify(1 << 8, dir, 1, me, 0, NULL, 0, why,
                                       sizeof(why)),
                         CORE_EXIT_OOM);
    }
    write_file("1.err", "Segmentation fault\n");
    assert_int_equal(exec_classify(9, dir, 1, me, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_non_null(strstr(why, "signal 9"));
    /* no log at all */
    assert_int_equal(exec_classify(1 << 8, dir, 999, me, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    /* a log that is not the job's user's, or a link, is not read */
    write_file("1.err", "CUDA out of memory\n");
    assert_int_equal(exec_classify(1 << 8, dir, 1, me + 1, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_non_null(strstr(why, "not searched for an OOM message: not this "
                                "job's user's"));
    assert_int_equal(symlinkat("1.err", dir, "2.err"), 0);
    assert_int_equal(exec_classify(1 << 8, dir, 2, me, 0, NULL, 0, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_non_null(strstr(why, "a symbolic link"));
    /* checked against its GPU's last reading (oom_check.h): 36,000 of
     * 40,960 MiB in use bear the message out; 2,000 contradict it */
    write_file("1.err", "torch.OutOfMemoryError: CUDA out of memory.\n");
    oom_gpu_mem full = {1, 36000, 40960}, roomy = {1, 2000, 40960};
    assert_int_equal(exec_classify(1 << 8, dir, 1, me, 0, &full, 1, why,
                                   sizeof(why)),
                     CORE_EXIT_OOM);
    assert_int_equal(exec_classify(1 << 8, dir, 1, me, 0, &roomy, 1, why,
                                   sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_string_equal(why, "exit 1: stderr says out of GPU memory (\"CUDA "
                        "out of memory\"), but GPU 1 had 38,960 of 40,960 "
                        "MiB free at its last sample: not retried as an OOM");
    close(dir);
}

/* A Slurm task's exit (lease_exit): the same rules on a tail already
 * read, which may hold NUL bytes and need not end in one. */
static void test_classify_tail(void **state) {
    char why[256];
    assert_int_equal(exec_classify_tail(0, "CUDA out of memory", 18, why,
                                        sizeof(why)), CORE_EXIT_OK);
    assert_string_equal(why, "exit 0");
    static const char tail[] = "junk\0RuntimeError: CUDA out of memory. x";
    assert_int_equal(exec_classify_tail(1 << 8, tail, sizeof(tail) - 1, why,
                                        sizeof(why)), CORE_EXIT_OOM);
    assert_non_null(strstr(why, "exit 1, out of GPU memory"));
    /* only n bytes are searched */
    assert_int_equal(exec_classify_tail(1 << 8, tail, 10, why, sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_string_equal(why, "exit 1");
    assert_int_equal(exec_classify_tail(9, "", 0, why, sizeof(why)),
                     CORE_EXIT_FAILED);
    assert_string_equal(why, "killed by signal 9");
}

/* The variables of an attempt, in the order a lease's grant lists them. */
static void test_job_vars(void **state) {
    const char *extra[] = {"CUDA_MPS_PIPE_DIRECTORY=/run/mps/0", NULL};
    exec_spec spec = {.id = 7, .attempt = 2, .visible = "GPU-a,GPU-b",
                      .extra_env = extra};
    size_t n = 0;
    unsetenv("AEGIS_TEST_GPUS"); /* a test GPU's, as below, aside */
    unsetenv("AEGIS_TEST_GPU_DIR");
    unsetenv("AEGIS_TEST_GPU_MODEL");
    char **vars = exec_job_vars(&spec, &n);
    assert_non_null(vars);
    assert_int_equal(n, 4);
    assert_string_equal(vars[0], "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b");
    assert_string_equal(vars[1], "AEGIS_JOB_ID=7");
    assert_string_equal(vars[2], "AEGIS_ATTEMPT=2");
    assert_string_equal(vars[3], "CUDA_MPS_PIPE_DIRECTORY=/run/mps/0");
    assert_null(vars[4]);
    exec_job_vars_free(vars);
    /* aegisd's test GPU settings go to every job, after the others */
    setenv("AEGIS_TEST_GPUS", "2x1000", 1);
    setenv("AEGIS_TEST_GPU_DIR", "/tmp/tgpu", 1);
    vars = exec_job_vars(&spec, &n);
    assert_non_null(vars);
    assert_int_equal(n, 6);
    assert_string_equal(vars[4], "AEGIS_TEST_GPUS=2x1000");
    assert_string_equal(vars[5], "AEGIS_TEST_GPU_DIR=/tmp/tgpu");
    assert_null(vars[6]);
    exec_job_vars_free(vars);
    unsetenv("AEGIS_TEST_GPUS");
    unsetenv("AEGIS_TEST_GPU_DIR");
}

/* ---- status files ---------------------------------------------------------- */

/* Probes attempt 1 of job id in tmpdir after writing text to its status
 * file (NULL: no file). */
static exec_record probe_text(int64_t id, const char *text) {
    if (text) {
        char name[64];
        snprintf(name, sizeof(name), "%lld.1.status", (long long)id);
        write_file(name, text);
    }
    exec_record rec;
    exec_probe(tmpdir, id, 1, &rec);
    return rec;
}

static void test_status_probe(void **state) {
    assert_int_equal(probe_text(1, NULL).state, EXEC_ABSENT);
    exec_record rec = probe_text(2, "aegis-status 7 100 200 300 ended 256 2\n");
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_int_equal(rec.status, 256);
    assert_int_equal(rec.left, 2);
    assert_int_equal(rec.err_offset, 7);
    rec = probe_text(3, "aegis-status 0 100 200 300 running 0 0\n");
    assert_int_equal(rec.state, EXEC_LOST); /* no shim holds it */
    assert_int_equal(rec.job_pid, 300);
    assert_int_equal(probe_text(4, "aegis-status 9 0 0 0 running 0 0\n").state,
                     EXEC_UNSTARTED);
    assert_int_equal(probe_text(5, "").state, EXEC_UNSTARTED);
    rec = probe_text(6, "256\n"); /* an older shim's */
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_int_equal(rec.status, 256);
    assert_int_equal(probe_text(7, "garbage").state, EXEC_LOST);
    /* a held lock is a live shim, whatever the record says */
    char path[300];
    snprintf(path, sizeof(path), "%s/2.1.status", tmpdir);
    int fd = open(path, O_RDONLY);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    assert_int_equal(probe_text(2, NULL).state, EXEC_LIVE);
    close(fd);
    assert_int_equal(probe_text(2, NULL).state, EXEC_ENDED);
}

/* Probes attempt 1 of job id until it is live with its job's pid
 * recorded (started) or not live (ended), for at most 10 s. */
static exec_record wait_probe(const char *run_dir, int64_t id, bool started) {
    exec_record rec;
    for (int i = 0; i < 1000; i++) {
        exec_probe(run_dir, id, 1, &rec);
        if (started ? rec.job_pid > 0 : rec.state != EXEC_LIVE) break;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    return rec;
}

/* Makes tmpdir's run-SUFFIX and logs-SUFFIX into run_dir and log_dir
 * (300 bytes each); returns the log folder's descriptor. */
static int attempt_dirs(const char *suffix, char *run_dir, char *log_dir) {
    snprintf(run_dir, 300, "%s/run%s", tmpdir, suffix);
    snprintf(log_dir, 300, "%s/logs%s", tmpdir, suffix);
    mkdir(run_dir, 0700);
    mkdir(log_dir, 0700);
    int log_dirfd = open(log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(log_dirfd >= 0);
    return log_dirfd;
}

/* Attempt 1 of job id as aegisd would spec it, its files in those
 * folders. */
static exec_spec attempt_spec(int64_t id, const char **argv, const char *run_dir,
                              int log_dirfd, const char *log_dir) {
    static const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    return (exec_spec){.id = id, .attempt = 1, .argv = argv, .cwd = tmpdir,
                       .env = env, .visible = "", .log_dirfd = log_dirfd,
                       .log_dir = log_dir, .log_max_bytes = 1 << 20,
                       .run_dir = run_dir, .shim_path = TEST_SHIM};
}

/* Which watchers a SIGCHLD turn reads the status file of: one reaped
 * (first, last, not past the n given), one whose pid is unknown yet;
 * none other, whatever was reaped. */
static void test_watcher_may_have_ended(void **state) {
    (void)state;
    const pid_t reaped[] = {4100, 4200, 4300};
    assert_true(exec_watcher_may_have_ended(4100, reaped, 3));
    assert_true(exec_watcher_may_have_ended(4300, reaped, 3));
    assert_false(exec_watcher_may_have_ended(4150, reaped, 3));
    assert_false(exec_watcher_may_have_ended(4300, reaped, 2));
    assert_false(exec_watcher_may_have_ended(4100, reaped, 0));
    assert_true(exec_watcher_may_have_ended(0, reaped, 3));
    assert_true(exec_watcher_may_have_ended(0, reaped, 0));
}

/* A real attempt: its record names its pids while it runs, and its wait
 * status, and the processes it left behind (killed), once it ended. */
static void test_status_of_a_run(void **state) {
    char run_dir[300], log_dir[300];
    int log_dirfd = attempt_dirs("", run_dir, log_dir);
    const char *argv[] = {"sh", "-c", "sleep 30 & setsid sleep 30 & i=0; "
                          "until [ -e go ] || [ $i = 1000 ]; do sleep 0.01; "
                          "i=$((i + 1)); done; exit 3", NULL};
    exec_spec spec = attempt_spec(9, argv, run_dir, log_dirfd, log_dir);
    exec_run run;
    exec_pending *pending;
    char err[512];
    assert_int_equal(exec_prepare(&spec, &run, &pending, err, sizeof(err)), 0);
    /* made ready, not spawned yet: its locked status file says live */
    exec_record rec;
    exec_probe(run_dir, 9, 1, &rec);
    assert_int_equal(rec.state, EXEC_LIVE);
    assert_int_equal(exec_spawn(pending, &run, err, sizeof(err)), 0);
    exec_pending_free(pending);
    rec = wait_probe(run_dir, 9, true);
    assert_int_equal(rec.state, EXEC_LIVE);
    assert_true(rec.job_pid > 0); /* the record names it; exec_spawn did
                                     not wait for it */
    assert_int_equal(rec.shim_pid, run.shim_pid);
    /* its leader is the watcher's child; no other process is, nor is it
     * under a watcher of another start */
    assert_true(exec_leads_job(rec.job_pid, run.shim_pid, run.shim_start));
    assert_false(exec_leads_job(getpid(), run.shim_pid, run.shim_start));
    assert_false(exec_leads_job(rec.job_pid, run.shim_pid,
                                run.shim_start + 1));
    /* a turn that reaped another child skips its status file */
    pid_t other = getpid();
    assert_false(exec_watcher_may_have_ended(run.shim_pid, &other, 1));
    write_file("go", "");
    rec = wait_probe(run_dir, 9, false);
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_true(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 3);
    assert_int_equal(rec.left, 2);
    /* its end is a child of ours reaped, the pid its spawn reported */
    pid_t reaped = waitpid(run.shim_pid, NULL, 0);
    assert_int_equal(reaped, run.shim_pid);
    assert_true(exec_watcher_may_have_ended(run.shim_pid, &reaped, 1));
    assert_false(exec_leads_job(rec.job_pid, run.shim_pid, run.shim_start));
    exec_spares spares = {0};
    exec_status_retire(run_dir, &spares, 9, 1);
    exec_probe(run_dir, 9, 1, &rec);
    assert_int_equal(rec.state, EXEC_ABSENT);
    close(log_dirfd);
}

/* Writes an ended status record of attempt 1 of job id, in the format of
 * `fields` (its end time or not), then dates the file's last write at
 * mtime. */
static void ended_record(const char *run_dir, int64_t id, const char *fields,
                         time_t mtime) {
    char path[400], line[128];
    snprintf(path, sizeof(path), "%s/%lld.1.status", run_dir, (long long)id);
    memset(line, ' ', sizeof(line));
    memcpy(line, fields, strlen(fields));
    line[sizeof(line) - 1] = '\n';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(line, 1, sizeof(line), f), sizeof(line));
    fclose(f);
    struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* When an attempt ended: the time its record holds, as the shim read the
 * clock, not the file's last write (the kernel's coarse clock, up to a
 * tick early); an older shim's record without it, that write. */
static void test_status_end_time(void **state) {
    char run_dir[300], log_dir[300];
    int log_dirfd = attempt_dirs("endtime", run_dir, log_dir);
    exec_record rec;
    ended_record(run_dir, 11,
                 "aegis-status 0 123 456 789 ended 0 0 1700000000.250000",
                 1600000000);
    exec_probe(run_dir, 11, 1, &rec);
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_true(rec.ended_at == 1700000000.25);
    ended_record(run_dir, 12, "aegis-status 0 123 456 789 ended 0 0",
                 1600000000);
    exec_probe(run_dir, 12, 1, &rec);
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_true(rec.ended_at == 1600000000.0);
    close(log_dirfd);
}

/* An attempt whose stderr log has an earlier attempt's lines: the spawn,
 * which opens the logs, puts where this attempt's start in the run and in
 * the status record, and the shim keeps it there. */
static void test_err_offset_from_spawn(void **state) {
    char run_dir[300], log_dir[300], earlier[400];
    int log_dirfd = attempt_dirs("-offset", run_dir, log_dir);
    snprintf(earlier, sizeof(earlier), "%s/10.err", log_dir);
    FILE *f = fopen(earlier, "w");
    assert_non_null(f);
    fputs("earlier\n", f); /* 8 bytes */
    fclose(f);
    const char *argv[] = {"true", NULL};
    exec_spec spec = attempt_spec(10, argv, run_dir, log_dirfd, log_dir);
    exec_run run;
    exec_pending *pending;
    char err[512];
    assert_int_equal(exec_prepare(&spec, &run, &pending, err, sizeof(err)), 0);
    assert_int_equal(run.err_offset, 0); /* not opened yet */
    assert_int_equal(exec_spawn(pending, &run, err, sizeof(err)), 0);
    exec_pending_free(pending);
    assert_int_equal(run.err_offset, 8);
    exec_record rec = wait_probe(run_dir, 10, false);
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_int_equal(rec.err_offset, 8);
    waitpid(run.shim_pid, NULL, 0);
    close(log_dirfd);
}

/* ---- the watcher launcher (launcher.h) -------------------------------------- */

/* The pid of a child of this process named comm, or 0. */
static pid_t child_named(const char *comm) {
    DIR *proc = opendir("/proc");
    assert_non_null(proc);
    pid_t found = 0;
    for (struct dirent *e; !found && (e = readdir(proc));) {
        char path[300], name[32];
        int pid, ppid;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fscanf(f, "%d (%31[^)]) %*c %d", &pid, name, &ppid) == 3 &&
            ppid == getpid() && strcmp(name, comm) == 0)
            found = pid;
        fclose(f);
    }
    closedir(proc);
    return found;
}

static pid_t launcher_of_test(void) { return child_named("aegis-launcher"); }

/* /proc/PID/cmdline's bytes into buf; their count. */
static size_t cmdline_of(pid_t pid, char *buf, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = '\0';
    return (size_t)n;
}

/* Starts attempt 1 of job id, a shell waiting for the file go-ID, through
 * exec_spawn; reads what ps shows of its watcher into shown (*len bytes),
 * lets it end, and checks that it ended well and that its watcher was this
 * process's child. */
static void launch_and_show(int64_t id, char *shown, size_t size,
                            size_t *len) {
    char run_dir[300], log_dir[300], suffix[32], go[64], cmd[128];
    snprintf(suffix, sizeof(suffix), "-launch%lld", (long long)id);
    int log_dirfd = attempt_dirs(suffix, run_dir, log_dir);
    snprintf(go, sizeof(go), "go-%lld", (long long)id);
    snprintf(cmd, sizeof(cmd), "until [ -e %s ]; do sleep 0.01; done", go);
    const char *argv[] = {"sh", "-c", cmd, NULL};
    exec_spec spec = attempt_spec(id, argv, run_dir, log_dirfd, log_dir);
    exec_run run;
    exec_pending *pending;
    char err[512];
    assert_int_equal(exec_prepare(&spec, &run, &pending, err, sizeof(err)), 0);
    assert_int_equal(exec_spawn(pending, &run, err, sizeof(err)), 0);
    exec_pending_free(pending);
    exec_record rec = wait_probe(run_dir, id, true);
    assert_true(rec.job_pid > 0);
    *len = cmdline_of(run.shim_pid, shown, size);
    write_file(go, "");
    rec = wait_probe(run_dir, id, false);
    assert_int_equal(rec.state, EXEC_ENDED);
    assert_true(WIFEXITED(rec.status) && WEXITSTATUS(rec.status) == 0);
    assert_int_equal(waitpid(run.shim_pid, NULL, 0), run.shim_pid);
    close(log_dirfd);
}

/* Watchers are forked by one launcher, started on first use, and are the
 * caller's children (CLONE_PARENT); ps shows them as it shows a spawned
 * one, in one string. */
static void test_launcher_forks_watchers(void **state) {
    char shown[256];
    size_t len;
    launch_and_show(21, shown, sizeof(shown), &len);
    pid_t launcher = launcher_of_test();
    assert_true(launcher > 0);
    assert_string_equal(shown, "aegis-shim job 21");
    assert_int_equal(len, strlen(shown) + 1); /* not three strings */
    launch_and_show(22, shown, sizeof(shown), &len);
    assert_string_equal(shown, "aegis-shim job 22");
    assert_int_equal(launcher_of_test(), launcher);
}

/* A launcher gone: the next watcher is spawned (three strings in ps) and
 * its job runs. (That no new launcher is tried for 10 s is not checked:
 * a slow machine may take that long for the jobs.) */
static void test_launcher_gone(void **state) {
    char shown[256];
    size_t len;
    pid_t launcher = launcher_of_test();
    if (launcher == 0) { /* this test run alone */
        launch_and_show(23, shown, sizeof(shown), &len);
        launcher = launcher_of_test();
    }
    assert_true(launcher > 0);
    kill(launcher, SIGKILL);
    assert_int_equal(waitpid(launcher, NULL, 0), launcher);
    launch_and_show(24, shown, sizeof(shown), &len);
    static const char spawned[] = "aegis-shim\0job\0" "24";
    assert_int_equal(len, sizeof(spawned));
    assert_memory_equal(shown, spawned, sizeof(spawned));
}

/* Starts `aegis-shim launcher` on one end of a socket pair (its stderr to
 * /dev/null); the other end in *sock. */
static pid_t start_test_launcher(int *sock) {
    int pair[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair),
                     0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pair[1], SHIM_OUT_FD);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *const argv[] = {"aegis-shim", "launcher", "room", NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, TEST_SHIM, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(pair[1]);
    *sock = pair[0];
    return pid;
}

/* Sends len bytes on sock with the first nfds of fds (up to 4). */
static void send_with_fds(int sock, const void *bytes, size_t len,
                          const int *fds, int nfds) {
    union {
        struct cmsghdr align;
        char bytes[CMSG_SPACE(sizeof(int) * 4)];
    } ctl = {0};
    struct iovec iov = {.iov_base = (void *)bytes, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        msg.msg_control = ctl.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        *c = (struct cmsghdr){.cmsg_level = SOL_SOCKET,
                              .cmsg_type = SCM_RIGHTS,
                              .cmsg_len = CMSG_LEN(sizeof(int) * nfds)};
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    assert_int_equal(sendmsg(sock, &msg, 0), (ssize_t)len);
}

/* How pid exited (128 + a signal), once it has. */
static int exit_of(pid_t pid) {
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Starts a launcher, sends it len bytes with nfds descriptors, closes the
 * socket, and returns how the launcher exited. */
static int launcher_exit_after(const void *bytes, size_t len, int nfds) {
    int sock;
    pid_t pid = start_test_launcher(&sock);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    int fds[4] = {null, null, null, null};
    if (len > 0) send_with_fds(sock, bytes, len, fds, nfds);
    close(sock);
    close(null);
    return exit_of(pid);
}

/* A launcher that cannot answer aegisd (whose end reads no more, here)
 * lets its watcher go no further: aegisd, seeing the launcher gone, spawns
 * the watcher itself, so this one must end before it starts the job. */
static void test_launcher_unanswered_starts_nothing(void **state) {
    char marker[300], cmd[400];
    snprintf(marker, sizeof(marker), "%s/ran-31", tmpdir);
    snprintf(cmd, sizeof(cmd), "touch %s", marker);
    char *const job_argv[] = {"sh", "-c", cmd, NULL};
    char *const job_env[] = {"PATH=/usr/bin:/bin", NULL};
    exec_shim_args a = {.mode = "job", .id = 31, .attempt = 1,
                        .log_max_bytes = 1 << 20, .cwd = tmpdir};
    char **argv = exec_shim_argv(&a, 1, job_argv);
    char **envp = exec_shim_environ(job_env, 0);
    char **env = exec_args_in_env(argv, envp);
    assert_true(argv && envp && env);
    /* the request as aegisd writes it: the shown arguments, then env */
    char req[1 << 16];
    launcher_request *h = (launcher_request *)req;
    char *at = req + sizeof(*h);
    *h = (launcher_request){.magic = LAUNCHER_MAGIC, .nargv = 3};
    const int shown[] = {0, SHIM_MODE, SHIM_ID};
    for (int i = 0; i < 3; i++) at = stpcpy(at, argv[shown[i]]) + 1;
    for (; env[h->nenv]; h->nenv++) at = stpcpy(at, env[h->nenv]) + 1;
    h->bytes = (uint32_t)(at - req - sizeof(*h));
    int fds[3];
    for (int i = 0; i < 3; i++) {
        char path[300];
        snprintf(path, sizeof(path), "%s/unanswered.%d", tmpdir, i);
        fds[i] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fds[i] >= 0);
    }
    int sock;
    pid_t launcher = start_test_launcher(&sock);
    assert_int_equal(shutdown(sock, SHUT_RD), 0); /* its answer: EPIPE */
    send_with_fds(sock, req, (size_t)(at - req), fds, 3);
    assert_int_equal(exit_of(launcher), 2);
    /* its watcher, forked before the answer failed, is this process's
     * child, the next to end (it may not have run yet when the launcher
     * ended): it ends, and well, without a job */
    siginfo_t ended = {0};
    assert_int_equal(waitid(P_ALL, 0, &ended, WEXITED | WNOWAIT), 0);
    char path[64], stat[128] = "";
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)ended.si_pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(stat, sizeof(stat), f));
    fclose(f);
    assert_non_null(strstr(stat, "(aegis-shim)"));
    assert_int_equal(exit_of(ended.si_pid), 0);
    assert_int_equal(access(marker, F_OK), -1);
    for (int i = 0; i < 3; i++) close(fds[i]);
    close(sock);
    exec_args_in_env_free(env, envp);
    exec_shim_argv_free(argv);
    exec_shim_argv_free(envp);
}

/* A request followed by its strings, in one buffer. */
typedef struct launcher_bytes {
    launcher_request req;
    char strings[8];
} launcher_bytes;

/* The launcher ends at the end of its stream (0), and on a request not as
 * aegisd writes it (2, with a message), never by a signal. */
static void test_launcher_refuses_bad_requests(void **state) {
    const launcher_bytes good = {{LAUNCHER_MAGIC, 1, 1, 4}, "a\0b"};
    assert_int_equal(launcher_exit_after(NULL, 0, 0), 0);
    assert_int_equal(launcher_exit_after("not a request!!!", 16, 3), 2);
    launcher_bytes b = good;
    b.req.magic ^= 1;
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    b = good;
    b.req.nargv = 0; /* no program */
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    b = good;
    b.req.bytes = LAUNCHER_MAX_BYTES + 1;
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    b = good;
    b.req.nenv = UINT32_MAX;
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    b = good; /* more strings than there are */
    b.req.nargv = 3;
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    b = good; /* the last string without its NUL */
    memcpy(b.strings, "a\0bc", 4);
    assert_int_equal(launcher_exit_after(&b, sizeof(b.req) + 4, 3), 2);
    /* descriptors: one, none */
    assert_int_equal(launcher_exit_after(&good, sizeof(good.req) + 4, 1), 2);
    assert_int_equal(launcher_exit_after(&good, sizeof(good.req) + 4, 0), 2);
    /* its strings cut by the end of the stream */
    assert_int_equal(launcher_exit_after(&good, sizeof(good.req) + 2, 3), 2);
}

/* The inode of run_dir/name, or 0 when there is none. */
static ino_t inode_of(const char *run_dir, const char *name) {
    char path[400];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", run_dir, name);
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Prepares (never spawns) attempt 1 of job id with spares; returns
 * exec_prepare's result and, when it made one, the status file's inode. */
static int prepare_with_spares(const char *run_dir, int log_dirfd, int64_t id,
                               exec_spares *spares, ino_t *ino) {
    const char *argv[] = {"true", NULL};
    exec_spec spec = attempt_spec(id, argv, run_dir, log_dirfd, run_dir);
    spec.spares = spares;
    exec_run run;
    exec_pending *pending;
    char err[512], name[64];
    int rc = exec_prepare(&spec, &run, &pending, err, sizeof(err));
    snprintf(name, sizeof(name), "%lld.1.status", (long long)id);
    *ino = inode_of(run_dir, name);
    if (rc == 0) exec_pending_free(pending);
    return rc;
}

/* Settled attempts' status files become the next attempts' (a rename, no
 * new inode), never over a file of the same attempt that a watcher holds,
 * and a spare somebody holds is replaced by a new file. */
static void test_status_files_recycled(void **state) {
    char run_dir[300];
    snprintf(run_dir, sizeof(run_dir), "%s/spares", tmpdir);
    mkdir(run_dir, 0700);
    int dirfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dirfd >= 0);
    exec_spares spares = {0};
    ino_t first, again;
    assert_int_equal(prepare_with_spares(run_dir, dirfd, 5, &spares, &first), 0);
    exec_status_retire(run_dir, &spares, 5, 1);
    assert_int_equal(spares.count, 1);
    assert_int_equal(inode_of(run_dir, "0.spare"), first);
    assert_int_equal(prepare_with_spares(run_dir, dirfd, 6, &spares, &again), 0);
    assert_int_equal(again, first); /* recycled */
    assert_int_equal(spares.count, 0);
    assert_int_equal(inode_of(run_dir, "0.spare"), 0);
    exec_record rec;
    exec_probe(run_dir, 6, 1, &rec);
    assert_int_equal(rec.state, EXEC_UNSTARTED); /* a fresh record */
    /* a held spare: a new file instead */
    exec_status_retire(run_dir, &spares, 6, 1);
    char spare[400];
    snprintf(spare, sizeof(spare), "%s/0.spare", run_dir);
    int holder = open(spare, O_RDONLY | O_CLOEXEC);
    assert_int_equal(flock(holder, LOCK_SH), 0);
    assert_int_equal(prepare_with_spares(run_dir, dirfd, 7, &spares, &again), 0);
    assert_true(again != 0 && again != first);
    close(holder);
    /* an attempt's own file that its watcher holds: refused, and kept */
    char path[400];
    snprintf(path, sizeof(path), "%s/8.1.status", run_dir);
    holder = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_int_equal(flock(holder, LOCK_SH), 0);
    ino_t watched = inode_of(run_dir, "8.1.status");
    exec_status_retire(run_dir, &spares, 7, 1);
    assert_int_equal(spares.count, 1);
    assert_int_not_equal(prepare_with_spares(run_dir, dirfd, 8, &spares, &again), 0);
    assert_int_equal(again, watched);
    close(holder);
    exec_spares_clear(run_dir);
    assert_int_equal(inode_of(run_dir, "0.spare"), 0);
    close(dirfd);
}

/* A spare never takes an attempt's name with the last attempt's record in
 * it: moved first and written after, an aegisd stopped between the two (a
 * kill -9; here, no descriptor left for the open) left "ended 0" under the
 * new attempt's name, and the next aegisd took that job for done without
 * it having run (daemon_e2e_life_crash: "never ran"). */
static void test_spare_never_named_stale(void **state) {
    char run_dir[300];
    snprintf(run_dir, sizeof(run_dir), "%s/stale", tmpdir);
    mkdir(run_dir, 0700);
    int dirfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dirfd >= 0);
    ended_record(run_dir, 5, "aegis-status 0 123 456 789 ended 0 0",
                 time(NULL));
    exec_spares spares = {0};
    exec_status_retire(run_dir, &spares, 5, 1);
    assert_int_equal(spares.count, 1);
    /* no descriptor to open: the lowest free one is the limit */
    struct rlimit saved;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    int lowest = dup(0);
    assert_true(lowest >= 0);
    close(lowest);
    struct rlimit none = {.rlim_cur = (rlim_t)lowest, .rlim_max = saved.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
    ino_t ino;
    int rc = prepare_with_spares(run_dir, dirfd, 6, &spares, &ino);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_int_not_equal(rc, 0);
    exec_record rec;
    exec_probe(run_dir, 6, 1, &rec);
    assert_int_not_equal(rec.state, EXEC_ENDED);
    exec_spares_clear(run_dir);
    close(dirfd);
}

/* exec_shim_args_read in an environment of v (environ put back after). */
static int shim_read_in(char **v, int argc, char **argv, exec_shim_args *a,
                        char ***envp, char ***tail) {
    char **saved = environ;
    environ = v;
    int rc = exec_shim_args_read(argc, argv, a, envp, tail);
    environ = saved;
    return rc;
}

/* What aegisd hands the shim (its arguments and the job's environment,
 * all in the shim's environment) is what the shim reads back; a job's
 * variable missing, given twice, numbered past the count or not numbered
 * is refused, as is a shim argument numbered past theirs. */
static void test_shim_args_round_trip(void **state) {
    (void)state;
    exec_shim_args in = {.mode = "job", .id = 12, .attempt = 3,
                         .log_max_bytes = 4096, .as_user = true, .uid = 1000,
                         .gid = 1001, .user = "ann", .cwd = "/home/ann",
                         .out_path = "out=%j", .has_umask = true,
                         .umask = 027};
    char *job_env[] = {"PATH=/bin", "X=a=b", "EMPTY=", NULL};
    char *job_argv[] = {"train.py", "--lr", "0.1", NULL};
    char **argv = exec_shim_argv(&in, 3, job_argv);
    char **shim_env = exec_shim_environ(job_env, 19);
    char **env = exec_args_in_env(argv, shim_env);
    assert_non_null(env);
    char *shown[] = {argv[0], argv[SHIM_MODE], argv[SHIM_ID], NULL};
    exec_shim_args a;
    char **envp = NULL, **tail = NULL;
    assert_int_equal(shim_read_in(env, 3, shown, &a, &envp, &tail), 0);
    assert_string_equal(a.mode, "job");
    assert_int_equal(a.id, 12);
    assert_int_equal(a.attempt, 3);
    assert_int_equal(a.log_max_bytes, 4096);
    assert_true(a.as_user && a.has_umask);
    assert_int_equal(a.uid, 1000);
    assert_int_equal(a.gid, 1001);
    assert_int_equal(a.umask, 027);
    assert_int_equal(a.session_nice, 19);
    assert_string_equal(a.user, "ann");
    assert_string_equal(a.out_path, "out=%j");
    for (int i = 0; i < 3; i++) assert_string_equal(envp[i], job_env[i]);
    assert_null(envp[3]);
    for (int i = 0; i < 3; i++) assert_string_equal(tail[i], job_argv[i]);
    assert_null(tail[3]);
    free(envp);
    free(tail - SHIM_FIXED); /* the arguments read from env: tail's vector */
    /* the arguments as an older aegisd passed them: argv itself */
    assert_int_equal(shim_read_in(shim_env, exec_count(argv), argv, &a, &envp,
                                  &tail), 0);
    assert_string_equal(envp[1], "X=a=b");
    free(envp);
    /* each bad variable in turn, added to the good ones; then the job's
     * last one left out */
    static const char *const bad[] = {
        "AEGIS_SHIM_ENV_1=X=again", "AEGIS_SHIM_ENV_3=PAST=count",
        "AEGIS_SHIM_ENV_=UNNUMBERED=1", "AEGIS_SHIM_ENV_+0=SIGNED=1",
        "AEGIS_SHIM_ARG_99=past", "AEGIS_SHIM_ARG_-1=negative", NULL};
    size_t n = exec_count(env);
    char **with = calloc(n + 2, sizeof(*with));
    assert_non_null(with);
    memcpy(with, env, n * sizeof(*with));
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        with[n] = (char *)bad[i];
        if (!bad[i]) /* no AEGIS_SHIM_ENV_2 */
            for (size_t k = 0; k < n; k++)
                if (strncmp(with[k], "AEGIS_SHIM_ENV_2=", 17) == 0)
                    with[k] = "OTHER=1";
        envp = NULL;
        assert_int_equal(shim_read_in(with, 3, shown, &a, &envp, &tail), -1);
        assert_null(envp);
    }
    free(with);
    /* a session's weight past the kernel's nice values, or none (an older
     * aegisd's environment): 0 */
    for (size_t k = 0; shim_env[k]; k++)
        if (strcmp(shim_env[k], "AEGIS_SHIM_NICE=19") == 0) {
            shim_env[k][16] = '2';
            shim_env[k][17] = '0';
            assert_int_equal(shim_read_in(shim_env, exec_count(argv), argv,
                                          &a, &envp, &tail), -1);
            strcpy(shim_env[k], "OTHER=1");
        }
    assert_int_equal(shim_read_in(shim_env, exec_count(argv), argv, &a, &envp,
                                  &tail), 0);
    assert_int_equal(a.session_nice, 0);
    free(envp);
    exec_args_in_env_free(env, shim_env);
    exec_shim_argv_free(shim_env);
    exec_shim_argv_free(argv);
}

/* A thread kept to a budget of real-time CPU (the front's): past its
 * budget it runs as an ordinary thread, and in the next window as a
 * real-time one again. The window's end is written into the budget, not
 * waited for. */
static void test_cpu_budget_steps_down(void **state) {
    (void)state;
    cpu_budget b;
    if (cpu_budget_take(&b, 5000000, 1000000000) != 0)
        skip(); /* no right to the real-time class here */
    assert_int_equal(sched_getscheduler(0), SCHED_FIFO);
    cpu_budget_check(&b); /* nothing used yet */
    assert_int_equal(sched_getscheduler(0), SCHED_FIFO);
    struct timespec used;
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &used);
    while ((uint64_t)used.tv_sec * 1000000000u + (uint64_t)used.tv_nsec <
           b.cpu_at_start_ns + 6000000);
    cpu_budget_check(&b);
    assert_true(b.demoted);
    assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
    int wait = cpu_budget_wait_ms(&b); /* until the window ends */
    assert_true(wait > 0 && wait <= 1000);
    b.window_start_ns -= b.window_ns; /* the window is over */
    assert_int_equal(cpu_budget_wait_ms(&b), 0);
    cpu_budget_check(&b);
    assert_false(b.demoted);
    assert_int_equal(sched_getscheduler(0), SCHED_FIFO);
    assert_int_equal(cpu_budget_wait_ms(&b), -1);
    struct sched_param ordinary = {0};
    assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &ordinary), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proto_submit),
        cmocka_unit_test(test_proto_deps),
        cmocka_unit_test(test_proto_other_ops),
        cmocka_unit_test(test_proto_bad),
        cmocka_unit_test(test_proto_oversized),
        cmocka_unit_test(test_proto_lease),
        cmocka_unit_test(test_usock_answers),
        cmocka_unit_test(test_mps_running_seqpacket),
        cmocka_unit_test(test_store_submit_and_reopen),
        cmocka_unit_test(test_store_turn_commits),
        cmocka_unit_test(test_store_old_after),
        cmocka_unit_test(test_store_old_schemas),
        cmocka_unit_test(test_config_good),
        cmocka_unit_test(test_config_shipped),
        cmocka_unit_test(test_config_log_max),
        cmocka_unit_test(test_config_null),
        cmocka_unit_test(test_config_cgroup_root),
        cmocka_unit_test(test_config_numbers),
        cmocka_unit_test(test_config_nul_names),
        cmocka_unit_test(test_config_gpu_limit_refuses),
        cmocka_unit_test(test_config_bad),
        cmocka_unit_test(test_config_every_problem),
        cmocka_unit_test(test_config_problems_past_end),
        cmocka_unit_test(test_config_read_whole_or_refused),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_classify_tail),
        cmocka_unit_test(test_job_vars),
        cmocka_unit_test(test_status_probe),
        cmocka_unit_test(test_watcher_may_have_ended),
        cmocka_unit_test(test_status_of_a_run),
        cmocka_unit_test(test_status_files_recycled),
        cmocka_unit_test(test_spare_never_named_stale),
        cmocka_unit_test(test_status_end_time),
        cmocka_unit_test(test_err_offset_from_spawn),
        cmocka_unit_test(test_launcher_forks_watchers),
        cmocka_unit_test(test_launcher_gone),
        cmocka_unit_test(test_launcher_refuses_bad_requests),
        cmocka_unit_test(test_launcher_unanswered_starts_nothing),
        cmocka_unit_test(test_shim_args_round_trip),
        cmocka_unit_test(test_cpu_budget_steps_down),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
