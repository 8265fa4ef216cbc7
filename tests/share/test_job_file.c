/* test_job_file.c -- the safe reader of a job's output file (job_file.h):
 * what it reads as the job's user, and what it refuses to open or read.
 *
 * The files belong to nobody (65534), the user job_file_tail_as reads
 * as; reading as another user needs root, so those cases skip without.
 */
#define _GNU_SOURCE /* syscall(2) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "job_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOBODY 65534
#define TAIL 8192

static char tmpdir[64];

static int setup(void **state) {
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/aegis-jobfile-XXXXXX");
    /* nobody must get through it to the files */
    return mkdtemp(tmpdir) && chmod(tmpdir, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* tmpdir/name, in a static buffer of its own per call slot (two). */
static const char *at(const char *name) {
    static char paths[2][256];
    static int slot;
    slot = !slot;
    snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", tmpdir, name);
    return paths[slot];
}

/* Writes n bytes of a pattern to name (mode 0644, owned by uid); returns
 * its identity. */
static job_file_id make_file(const char *name, size_t n, uid_t uid) {
    int fd = open(at(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    for (size_t i = 0; i < n; i++) {
        char c = (char)('a' + i % 26);
        assert_int_equal(write(fd, &c, 1), 1);
    }
    assert_int_equal(fchown(fd, uid, uid), 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    close(fd);
    return (job_file_id){.dev = st.st_dev, .ino = st.st_ino};
}

static void need_root(void) {
    if (geteuid() != 0) skip();
}

static const job_file_user nobody = {.uid = NOBODY, .gid = NOBODY};

/* job_file_tail_as(nobody) of name with identity id: its errno, 0 when
 * read (n set). */
static int read_as(const job_file_user *who, const char *path,
                   const job_file_id *id, char *buf, ssize_t *n) {
    *n = job_file_tail_as(who, path, id, buf, TAIL);
    return *n < 0 ? errno : 0;
}

/* The tail of a file longer than TAIL: its last TAIL bytes. */
static void test_tail_read(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    job_file_id id = make_file("out", TAIL + 100, NOBODY);
    assert_int_equal(read_as(&nobody, at("out"), &id, buf, &n), 0);
    assert_int_equal(n, TAIL);
    assert_int_equal(buf[0], 'a' + 100 % 26);
    assert_int_equal(buf[TAIL - 1], 'a' + (TAIL + 99) % 26);
    /* a short file whole; an empty one: no bytes */
    id = make_file("short", 5, NOBODY);
    assert_int_equal(read_as(&nobody, at("short"), &id, buf, &n), 0);
    assert_int_equal(n, 5);
    assert_memory_equal(buf, "abcde", 5);
    id = make_file("empty", 0, NOBODY);
    assert_int_equal(read_as(&nobody, at("empty"), &id, buf, &n), 0);
    assert_int_equal(n, 0);
}

/* job_file_tail reads nothing before `from`, and at most len bytes. */
static void test_tail_from(void **state) {
    char buf[16];
    make_file("from", 20, geteuid());
    int fd = job_file_open(AT_FDCWD, at("from"), geteuid(), NULL);
    assert_true(fd >= 0);
    assert_int_equal(job_file_tail(fd, 15, buf, sizeof(buf)), 5);
    assert_memory_equal(buf, "pqrst", 5);
    assert_int_equal(job_file_tail(fd, 0, buf, 4), 4);
    assert_memory_equal(buf, "qrst", 4);
    assert_int_equal(job_file_tail(fd, 30, buf, sizeof(buf)), 0);
    close(fd);
}

/* A link at the file's name is not followed, even to the user's own file,
 * nor by root in-process. */
static void test_symlink_refused(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    job_file_id id = make_file("target", 10, NOBODY);
    assert_int_equal(symlink(at("target"), at("link")), 0);
    assert_int_equal(read_as(&nobody, at("link"), &id, buf, &n), ELOOP);
    assert_int_equal(job_file_open(AT_FDCWD, at("link"), NOBODY, NULL), -1);
    assert_int_equal(errno, ELOOP);
    assert_non_null(strstr(job_file_error(ELOOP), "symbolic link"));
}

/* Whether this kernel has openat2 (Linux 5.6 on). */
static bool have_openat2(void) {
#ifdef SYS_openat2
    return syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) < 0 && errno != ENOSYS;
#else
    return false;
#endif
}

/* A link higher up the path is refused too where openat2 is there, even
 * when it leads to the very file the job started with. */
static void test_symlinked_parent_refused(void **state) {
    need_root();
    if (!have_openat2()) skip();
    char buf[TAIL];
    ssize_t n;
    assert_int_equal(mkdir(at("real"), 0755), 0);
    job_file_id id = make_file("real/out", 10, NOBODY);
    assert_int_equal(symlink(at("real"), at("dirlink")), 0);
    assert_int_equal(read_as(&nobody, at("dirlink/out"), &id, buf, &n), ELOOP);
    assert_int_equal(read_as(&nobody, at("real/out"), &id, buf, &n), 0);
    assert_int_equal(n, 10);
}

/* A FIFO with no writer: refused at once, the opening does not wait. */
static void test_fifo_does_not_block(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    assert_int_equal(mkfifo(at("fifo"), 0644), 0);
    assert_int_equal(chown(at("fifo"), NOBODY, NOBODY), 0);
    struct stat st;
    assert_int_equal(stat(at("fifo"), &st), 0);
    job_file_id id = {.dev = st.st_dev, .ino = st.st_ino};
    assert_int_equal(read_as(&nobody, at("fifo"), &id, buf, &n), EINVAL);
    assert_int_equal(job_file_open(AT_FDCWD, at("fifo"), NOBODY, NULL), -1);
    assert_int_equal(errno, EINVAL);
}

/* Another user's file is not read, though the job's user may read it. */
static void test_other_owner_refused(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    job_file_id id = make_file("roots", 10, 0);
    assert_int_equal(read_as(&nobody, at("roots"), &id, buf, &n), EPERM);
    id = make_file("others", 10, NOBODY - 1);
    assert_int_equal(read_as(&nobody, at("others"), &id, buf, &n), EPERM);
}

/* A file put at the name after the job started (another inode) is not
 * the job's output, whoever owns it. */
static void test_inode_changed_refused(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    job_file_id id = make_file("swapped", 10, NOBODY);
    /* made while the first still is: another inode for sure */
    make_file("swapped.new", 10, NOBODY);
    assert_int_equal(rename(at("swapped.new"), at("swapped")), 0);
    assert_int_equal(read_as(&nobody, at("swapped"), &id, buf, &n), ESTALE);
    assert_int_equal(read_as(&nobody, at("nothing"), &id, buf, &n), ENOENT);
}

/* The file is opened as the user, with the user's groups: a folder
 * closed to them keeps it from being read, one open to a group of
 * theirs does not. */
static void test_reads_as_user(void **state) {
    need_root();
    char buf[TAIL];
    ssize_t n;
    assert_int_equal(mkdir(at("closed"), 0750), 0);
    assert_int_equal(chown(at("closed"), 0, 4242), 0);
    job_file_id id = make_file("closed/out", 10, NOBODY);
    assert_int_equal(read_as(&nobody, at("closed/out"), &id, buf, &n), EACCES);
    gid_t groups[] = {4242};
    job_file_user member = nobody;
    member.groups = groups;
    member.ngroups = 1;
    assert_int_equal(read_as(&member, at("closed/out"), &id, buf, &n), 0);
    assert_int_equal(n, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_read),
        cmocka_unit_test(test_tail_from),
        cmocka_unit_test(test_symlink_refused),
        cmocka_unit_test(test_symlinked_parent_refused),
        cmocka_unit_test(test_fifo_does_not_block),
        cmocka_unit_test(test_other_owner_refused),
        cmocka_unit_test(test_inode_changed_refused),
        cmocka_unit_test(test_reads_as_user),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
