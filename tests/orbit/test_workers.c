/* test_workers.c -- a module's worker serves its batches one after another
 * and is ended whenever it cannot be trusted with the next: after a
 * failed call, when its module left a thread running, when its file was
 * replaced, and when it died between calls. The worker likely called
 * next is woken ahead and stopped again. Kept batches (a pipeline's
 * step outputs, a camera buffer) carry each frame's own bytes. A batch's
 * steps start on the CPU their caller was on. */
#define _GNU_SOURCE /* sched_setaffinity */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "batch.h"
#include "camera.h"
#include "errors.h"
#include "pipeline.h"
#include "runner.h"

static runner r;
static dbatch frame;

static int setup(void **state) {
    (void)state;
    plat_limits lim = {3000, 64u << 20}; /* 3 s: a loaded machine */
    if (runner_start(&r, DIPP_TEST_MODULES, lim))
        return -1;
    if (batch_create(&frame, 64 * 64) || camera_shoot(&frame, 64, 7))
        return -1;
    frame.kept = 1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    batch_close(&frame);
    runner_stop(&r);
    return 0;
}

/* Runs the module at path on the frame; its report in *rep. */
static int run_path(const char *path, run_report *rep) {
    static const dipp_params none;
    dbatch out;
    assert_int_equal(batch_create(&out, 1u << 20), 0);
    int code = runner_run_path(&r, path, &none, &frame, &out, rep);
    batch_close(&out);
    return code;
}

static int run_named(const char *name, run_report *rep) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.so", DIPP_TEST_MODULES, name);
    return run_path(path, rep);
}

static void test_worker_serves_again(void **s) {
    (void)s;
    run_report rep;
    assert_int_equal(run_named("copy", &rep), 0);
    uint32_t first = rep.calls;
    assert_int_equal(run_named("copy", &rep), 0);
    assert_int_equal(rep.calls, first + 1);
}

/* Each call of name ends with code, in a new worker each time. */
static void ends_its_worker(const char *name, int code) {
    run_report rep;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(run_named(name, &rep), code);
        assert_int_equal(rep.calls, 1);
    }
}

static void test_failure_ends_worker(void **s) {
    (void)s;
    ends_its_worker("fail", 742);
}

static void test_thread_left_ends_worker(void **s) {
    (void)s;
    ends_its_worker("threader", 0);
}

/* A file put in the module's place (an update) gets a worker of its own. */
static void test_replaced_file_new_worker(void **s) {
    (void)s;
    char dir[] = "/tmp/dipp-workers-XXXXXX", path[256], cmd[1024];
    run_report rep;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/mod.so", dir);
    snprintf(cmd, sizeof cmd, "cp %s/copy.so %s", DIPP_TEST_MODULES, path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run_path(path, &rep), 0);
    assert_int_equal(run_path(path, &rep), 0);
    assert_int_equal(rep.calls, 2);
    snprintf(cmd, sizeof cmd, "cp %s/copy.so %s/new.so && mv %s/new.so %s",
             DIPP_TEST_MODULES, dir, dir, path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(run_path(path, &rep), 0);
    assert_int_equal(rep.calls, 1);
    snprintf(cmd, sizeof cmd, "rm -r %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The fork server's children, as /proc lists them. */
static int children_of(int pid, int *kids, int cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && n < cap && fscanf(f, "%d", &kids[n]) == 1)
        n++;
    if (f)
        fclose(f);
    return n;
}

/* The state letter of /proc/PID/stat ('T': stopped, 'Z': exited), '?'
 * when it is gone. */
static char state_of(int pid) {
    char path[64], state = '?';
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
        state = '?';
    if (f)
        fclose(f);
    return state;
}

/* Waits until pid's state is one of states (signals are delivered, not
 * waited for by kill). */
static void until_state(int pid, const char *states) {
    for (int tries = 0; tries < 100000; tries++) {
        if (strchr(states, state_of(pid)))
            return;
        poll(NULL, 0, 1); /* a millisecond */
    }
    fail_msg("worker %d never reached a state of '%s'", pid, states);
}

/* Runs copy, then lists the fork server's workers into kids: how many. */
static int workers_after_copy(int *kids) {
    run_report rep;
    assert_int_equal(run_named("copy", &rep), 0);
    int n = children_of(r.srv.pid, kids, PLAT_MAX_WORKERS);
    assert_true(n >= 1);
    return n;
}

/* Workers killed between calls: the next call goes to a new one, and
 * nothing is lost. */
static void test_worker_killed_between_calls(void **s) {
    (void)s;
    run_report rep;
    int kids[PLAT_MAX_WORKERS];
    int n = workers_after_copy(kids);
    for (int k = 0; k < n; k++)
        kill(kids[k], SIGKILL);
    for (int k = 0; k < n; k++)
        until_state(kids[k], "Z?"); /* exited: its socket is closed */
    assert_int_equal(run_named("copy", &rep), 0);
    assert_int_equal(rep.calls, 1);
}

/* The field of /proc/PID/status named field, a number in base. */
static uint64_t status_number(int pid, const char *field, int base) {
    char path[64], line[128];
    uint64_t value = 0;
    int found = 0;
    size_t n = strlen(field);
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    while (f && !found && fgets(line, sizeof line, f)) {
        char *end = line + n + 1;
        found = strncmp(line, field, n) == 0 && line[n] == ':';
        if (found)
            value = strtoull(line + n + 1, &end, base);
        found = found && end != line + n + 1;
    }
    if (f)
        fclose(f);
    if (!found)
        fail_msg("no %s in %s", field, path);
    return value;
}

/* A hexadecimal field of /proc/PID/status: a signal mask ("SigBlk",
 * "ShdPnd": bit sig-1 is signal sig) or capabilities ("CapEff"). */
static uint64_t status_hex(int pid, const char *field) {
    return status_number(pid, field, 16);
}

static uint64_t bit_of(int sig) {
    return 1ull << (sig - 1);
}

static int pending(int pid, int sig) {
    return (status_hex(pid, "ShdPnd") & bit_of(sig)) != 0;
}

/* Waits until some process of pids has signal sig pending (a timer's
 * signal comes when it fires, not when asked). */
static void until_pending(const int *pids, int n, int sig) {
    for (int tries = 0; tries < 100000; tries++) {
        for (int k = 0; k < n; k++)
            if (pending(pids[k], sig))
                return;
        poll(NULL, 0, 1); /* a millisecond */
    }
    fail_msg("no worker ever held signal %d pending", sig);
}

/* Between batches a worker is stopped, and blocks all 64 signals (glibc's
 * own 32 and 33 too): a timer its module armed fires, but its signal
 * stays pending, not handled, until the next batch. */
static void test_worker_stopped_between_calls(void **s) {
    (void)s;
    run_report rep;
    int kids[PLAT_MAX_WORKERS];
    assert_int_equal(run_named("ticker", &rep), 0);
    int n = workers_after_copy(kids);
    uint64_t blockable = ~0ull & ~bit_of(SIGKILL) & ~bit_of(SIGSTOP);
    for (int k = 0; k < n; k++) {
        until_state(kids[k], "Tt");
        assert_true(status_hex(kids[k], "SigBlk") == blockable);
        /* root's workers too (CI runs as root) */
        assert_true(status_hex(kids[k], "CapEff") == 0);
    }
    until_pending(kids, n, SIGUSR1);
    assert_int_equal(run_named("ticker", &rep), 0);
    assert_int_equal(rep.calls, 2);
}

/* The fork server's worker that has name's module loaded. */
static int worker_of(const char *name) {
    int kids[PLAT_MAX_WORKERS], n = children_of(r.srv.pid, kids, PLAT_MAX_WORKERS);
    char so[64], path[64], line[512];
    snprintf(so, sizeof so, "/%s.so", name);
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "/proc/%d/maps", kids[k]);
        FILE *f = fopen(path, "r");
        int found = 0;
        while (f && !found && fgets(line, sizeof line, f))
            found = strstr(line, so) != NULL;
        if (f)
            fclose(f);
        if (found)
            return kids[k];
    }
    fail_msg("no worker has %s loaded", so);
    return -1;
}

/* The worker called after copy's last time (ticker's) is woken while
 * copy runs, ahead of its own call, then stopped again, with every signal
 * still blocked: its timer's signal stays pending. Its next call is served
 * by the same worker. */
static void test_next_worker_woken_ahead(void **s) {
    (void)s;
    run_report rep;
    assert_int_equal(run_named("copy", &rep), 0);
    assert_int_equal(run_named("ticker", &rep), 0);
    uint32_t calls = rep.calls;
    int ticker = worker_of("ticker");
    until_state(ticker, "Tt");
    uint64_t switches = status_number(ticker, "voluntary_ctxt_switches", 10);
    assert_int_equal(run_named("copy", &rep), 0);
    until_state(ticker, "Tt");
    assert_true(status_number(ticker, "voluntary_ctxt_switches", 10) > switches);
    assert_true(status_hex(ticker, "SigBlk") ==
                (~0ull & ~bit_of(SIGKILL) & ~bit_of(SIGSTOP)));
    until_pending(&ticker, 1, SIGUSR1);
    assert_int_equal(run_named("ticker", &rep), 0);
    assert_int_equal(rep.calls, calls + 1);
}

/* A descriptor a module kept from one batch is closed before its next:
 * it could be a batch's, to write into later. */
static void test_descriptors_closed_between_calls(void **s) {
    (void)s;
    run_report rep;
    assert_int_equal(run_named("keeper", &rep), 0);
    assert_int_equal(run_named("keeper", &rep), 0);
    assert_int_equal(rep.calls, 2);
}

/* A module that closes its worker's socket and ignores its alarm is still
 * ended at its deadline: its batch is lost as a crash. */
static void test_closed_socket_still_ended(void **s) {
    (void)s;
    run_report rep;
    assert_int_equal(run_named("closer", &rep), DIPP_E_CRASH);
    assert_int_equal(run_named("copy", &rep), 0);
}

/* A kept camera buffer shot anew, through kept step outputs: each frame's
 * output is that frame's, not the last one's. */
static void test_kept_batches_carry_each_frame(void **s) {
    (void)s;
    pdef d = {.id = 3, .count = 3};
    strcpy(d.step[0].name, "copy");
    strcpy(d.step[1].name, "copy");
    strcpy(d.step[2].name, "copy");
    for (unsigned seed = 1; seed <= 3; seed++) {
        dbatch out;
        pipe_report rep;
        batch_reset(&frame);
        assert_int_equal(camera_shoot(&frame, 64, seed), 0);
        assert_int_equal(pipeline_run(&r, &d, &frame, &out, &rep), 0);
        assert_int_equal(out.api.count, 1);
        assert_memory_equal(out.api.images[0].data, frame.api.images[0].data, 64 * 64);
        batch_close(&out);
    }
}

/* The lowest and the highest CPU set in cpus. */
static void ends_of(const cpu_set_t *cpus, int *low, int *high) {
    *low = *high = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, cpus)) {
            *low = *low < 0 ? c : *low;
            *high = c;
        }
}

static void run_only_on(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
}

/* A batch of six steps alternating where and where_too (so that each
 * worker is also woken ahead), run from CPU cpu, into *out and *rep. */
static uint32_t run_where_from(runner *rn, int cpu, dbatch *out, pipe_report *rep) {
    pdef d = {.id = 4, .count = 6};
    for (unsigned k = 0; k < d.count; k++)
        strcpy(d.step[k].name, k % 2 ? "where_too" : "where");
    run_only_on(cpu);
    return pipeline_run(rn, &d, &frame, out, rep);
}

/* A batch of where_from(): every step started on cpu (the runner's
 * report), then ran with `cpus` CPUs it might use (where.c's row). Where
 * it ran after it started is the kernel's choice, so not checked. */
static void check_where(const dbatch *out, const pipe_report *rep, int cpu, int cpus) {
    assert_int_equal(out->api.count, 1);
    assert_int_equal(out->api.images[0].size, 6);
    for (unsigned k = 0; k < 6; k++) {
        assert_int_equal(rep->cpu[k], cpu);
        assert_int_equal(out->api.images[0].data[k], cpus);
    }
}

/* Every step of a batch starts on the CPU its caller was on when the
 * batch began, where its input was written, though the workers last ran
 * on another (the kernel alone often woke them there); and each may then
 * use every CPU its worker was forked with (a module's threads too). */
static void test_batch_steps_run_on_callers_cpu(void **s) {
    (void)s;
    cpu_set_t mine;
    int low, high;
    assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
    ends_of(&mine, &low, &high);
    if (CPU_COUNT(&mine) < 2 || CPU_COUNT(&mine) >= 255)
        skip(); /* one CPU: nowhere else to run; where.c's counts are bytes */
    static runner rn; /* its workers are forked with every CPU of ours */
    assert_int_equal(runner_start(&rn, DIPP_TEST_MODULES, (plat_limits){3000, 64u << 20}), 0);
    dbatch out;
    pipe_report rep;
    /* the first batch forks the workers; then each worker last ran elsewhere */
    for (int round = 0; round < 9; round++) {
        int cpu = round % 2 ? low : high;
        uint32_t number = run_where_from(&rn, cpu, &out, &rep);
        assert_int_equal(sched_setaffinity(0, sizeof mine, &mine), 0);
        assert_int_equal(number, 0);
        check_where(&out, &rep, cpu, CPU_COUNT(&mine));
        batch_close(&out);
    }
    runner_stop(&rn);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_serves_again),
        cmocka_unit_test(test_failure_ends_worker),
        cmocka_unit_test(test_thread_left_ends_worker),
        cmocka_unit_test(test_replaced_file_new_worker),
        cmocka_unit_test(test_worker_killed_between_calls),
        cmocka_unit_test(test_kept_batches_carry_each_frame),
        cmocka_unit_test(test_worker_stopped_between_calls),
        cmocka_unit_test(test_next_worker_woken_ahead),
        cmocka_unit_test(test_closed_socket_still_ended),
        cmocka_unit_test(test_descriptors_closed_between_calls),
        cmocka_unit_test(test_batch_steps_run_on_callers_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
