/* test_cgroup.c -- the per-job cgroups of cgroup.h against fake cgroupfs
 * folders: a v2 tree and a v1 pair of trees laid out as the kernel lays
 * them out (their interface files made by the test, as mkdir makes them
 * in a real cgroupfs). The v2 path is tested only so: the machines that
 * run the suite have a writable v1 hierarchy alone; e2e_cgroup.sh runs
 * v1 for real. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

/* Makes root/rel, an empty file (or a folder when rel ends in '/'), and
 * the folders above it. */
static void make(const char *rel) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    if (path[strlen(path) - 1] != '/') close(open(path, O_CREAT | O_WRONLY, 0644));
}

/* The text of root/rel. */
static const char *text_of(const char *rel) {
    static char buf[256];
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    return buf;
}

static void put(const char *rel, const char *text) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(root, sizeof(root), "/tmp/aegis-cg-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* v2: the controllers enabled in aegis/ (processes only in leaves), the
 * job's leaf with memory.max, no swap and a CPU quota; its kill count. */
static void test_v2(void **state) {
    (void)state;
    make("cgroup.controllers");
    make("aegis/cgroup.subtree_control");
    make("aegis/job-7.2/memory.max");
    make("aegis/job-7.2/memory.swap.max");
    make("aegis/job-7.2/cpu.max");
    make("aegis/job-7.2/cgroup.procs");
    assert_int_equal(cg_detect(root), CG_V2);
    cg_job cg;
    char err[512], procs[1100];
    assert_int_equal(cg_job_create(root, CG_V2, 7, 2, 3, 64, &cg, err,
                                   sizeof(err)), 0);
    assert_string_equal(text_of("aegis/cgroup.subtree_control"),
                        "+memory +cpu");
    assert_string_equal(text_of("aegis/job-7.2/memory.max"), "67108864");
    assert_string_equal(text_of("aegis/job-7.2/memory.swap.max"), "0");
    assert_string_equal(text_of("aegis/job-7.2/cpu.max"), "300000 100000");
    cg_job_procs(&cg, procs, sizeof(procs));
    assert_non_null(strstr(procs, "aegis/job-7.2/cgroup.procs"));
    assert_null(strchr(procs, ':'));
    assert_false(cg_oom_killed(&cg));
    put("aegis/job-7.2/memory.events", "low 0\nhigh 0\nmax 3\noom 1\n"
        "oom_kill 1\n");
    assert_true(cg_oom_killed(&cg));
    assert_int_equal(cg_join(procs), 0);
    assert_string_equal(text_of("aegis/job-7.2/cgroup.procs"), "0");
}

/* This process's path in the unified tree ("" for its root). */
static void self_path(char *out, size_t len) {
    char line[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    out[0] = '\0';
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "%s", strcmp(line + 3, "/") ? line + 3 : "");
        }
    if (f) fclose(f);
}

/* v2 under a delegated cgroup (the unit's): aegisd moves itself into its
 * leaf, and enables the controllers where it made room. */
static void test_v2_delegate(void **state) {
    (void)state;
    char self[256], rel[320], base[512], err[512], want[600];
    self_path(self, sizeof(self));
    snprintf(rel, sizeof(rel), "%s/aegisd/cgroup.procs", self + (self[0] == '/'));
    make(rel);
    snprintf(rel, sizeof(rel), "%s/cgroup.subtree_control",
             self + (self[0] == '/'));
    make(rel);
    assert_int_equal(cg_v2_delegate(root, 0, base, sizeof(base), err,
                                    sizeof(err)), 0);
    snprintf(want, sizeof(want), "%s%s", root, self);
    assert_string_equal(base, want);
    assert_string_equal(text_of(rel), "+memory +cpu");
    snprintf(rel, sizeof(rel), "%s/aegisd/cgroup.procs", self + (self[0] == '/'));
    assert_string_equal(text_of(rel), "0");
    /* with the launcher: it follows aegisd into the leaf (written last,
     * so the file holds its pid), or its watchers would start in the
     * folder divided, and the kernel would refuse the controllers */
    assert_int_equal(cg_v2_delegate(root, 4321, base, sizeof(base), err,
                                    sizeof(err)), 0);
    assert_string_equal(text_of(rel), "4321");
}

/* v1: memory and cpu trees, each job's folder in both; swap counted
 * (memsw) is limited as the memory is; the kill count in oom_control. */
static void test_v1(void **state) {
    (void)state;
    make("memory/memory.limit_in_bytes");
    make("cpu/cpu.cfs_quota_us");
    make("memory/aegis/job-9.1/memory.limit_in_bytes");
    make("memory/aegis/job-9.1/memory.memsw.limit_in_bytes");
    make("memory/aegis/job-9.1/memory.oom_control");
    make("cpu/aegis/job-9.1/cpu.cfs_period_us");
    make("cpu/aegis/job-9.1/cpu.cfs_quota_us");
    assert_int_equal(cg_detect(root), CG_V1);
    cg_job cg;
    char err[512], procs[1100];
    assert_int_equal(cg_job_create(root, CG_V1, 9, 1, 2, 1024, &cg, err,
                                   sizeof(err)), 0);
    assert_string_equal(text_of("memory/aegis/job-9.1/memory.limit_in_bytes"),
                        "1073741824");
    assert_string_equal(
        text_of("memory/aegis/job-9.1/memory.memsw.limit_in_bytes"),
        "1073741824");
    assert_string_equal(text_of("cpu/aegis/job-9.1/cpu.cfs_quota_us"),
                        "200000");
    cg_job_procs(&cg, procs, sizeof(procs));
    assert_non_null(strstr(procs, "memory/aegis/job-9.1/cgroup.procs:"));
    assert_non_null(strstr(procs, "cpu/aegis/job-9.1/cgroup.procs"));
    put("memory/aegis/job-9.1/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    assert_false(cg_oom_killed(&cg));
    put("memory/aegis/job-9.1/memory.oom_control",
        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    assert_true(cg_oom_killed(&cg));
}

/* After a restart: the folders an attempt's cgroup had, found again by
 * its id and attempt (v1: both trees; v2: under aegisd's own cgroup, or
 * its parent once aegisd moved into the leaf); none for another attempt. */
static void test_find(void **state) {
    (void)state;
    char self[256], rel[400], want[600];
    cg_job cg;
    make("memory/memory.limit_in_bytes");
    make("cpu/cpu.cfs_quota_us");
    make("memory/aegis/job-9.1/");
    make("cpu/aegis/job-9.1/");
    make("memory/aegis/job-4.1/");
    cg_job_find(root, 9, 1, &cg);
    snprintf(want, sizeof(want), "%s/memory/aegis/job-9.1", root);
    assert_string_equal(cg.memory, want);
    snprintf(want, sizeof(want), "%s/cpu/aegis/job-9.1", root);
    assert_string_equal(cg.cpu, want);
    cg_job_find(root, 4, 1, &cg); /* a memory limit alone */
    assert_string_not_equal(cg.memory, "");
    assert_string_equal(cg.cpu, "");
    cg_job_find(root, 9, 2, &cg);
    assert_string_equal(cg.memory, "");
    self_path(self, sizeof(self));
    make("cgroup.controllers");
    snprintf(rel, sizeof(rel), "%s/aegis/job-3.2/", self + (self[0] == '/'));
    make(rel);
    cg_job_find(root, 3, 2, &cg);
    snprintf(want, sizeof(want), "%s%s/aegis/job-3.2", root, self);
    assert_string_equal(cg.memory, want);
    assert_string_equal(cg.cpu, "");
}

/* No hierarchy, or no limit asked: none made; a job asking one fails. */
static void test_none(void **state) {
    (void)state;
    cg_job cg;
    char err[512];
    assert_int_equal(cg_detect(root), CG_NONE);
    assert_int_equal(cg_job_create(root, CG_NONE, 1, 1, 0, 0, &cg, err,
                                   sizeof(err)), 0);
    assert_string_equal(cg.memory, "");
    assert_int_equal(cg_job_create(root, CG_NONE, 1, 1, 1, 0, &cg, err,
                                   sizeof(err)), -1);
    assert_non_null(strstr(err, "no writable cgroup hierarchy"));
    assert_int_equal(cg_join(""), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_delegate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
