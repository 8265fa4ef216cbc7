/* test_trainset.c -- a training set survives a write and read exactly, and
 * every kind of damage (truncation, a flipped byte, a wrong magic, a
 * missing file) is refused with the file's name and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "trainset.h"

static char dir[] = "/tmp/aegis-trainset-XXXXXX";
static char path[256];

static int make_dir(void **state)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/set.bin", dir);
    return 0;
}

static int remove_dir(void **state)
{
    unlink(path);
    rmdir(dir);
    return 0;
}

static void write_three(void)
{
    pl_trainset_item items[3] = {{5, 1.0f, 0}, {9, 0.5f, 77}, {12, 2.0f, 0}};
    char err[256];
    assert_int_equal(pl_trainset_write(path, items, 3, 42, 7, err, sizeof err), 0);
}

static void round_trip(void **state)
{
    write_three();
    pl_trainset_item *items;
    size_t count;
    uint64_t seed;
    uint32_t trigger;
    char err[256];
    assert_int_equal(pl_trainset_read(path, &items, &count, &seed, &trigger,
                                      err, sizeof err), 0);
    assert_int_equal(count, 3);
    assert_int_equal(seed, 42);
    assert_int_equal(trigger, 7);
    assert_int_equal(items[1].key, 9);
    assert_true(items[1].weight == 0.5f);
    assert_int_equal(items[1].reserved, 0);  /* written as 0 whatever given */
    assert_int_equal(items[2].key, 12);
    free(items);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);  /* renamed, not left */
}

static void empty_set(void **state)
{
    char err[256];
    assert_int_equal(pl_trainset_write(path, NULL, 0, 1, 0, err, sizeof err), 0);
    pl_trainset_item *items;
    size_t count;
    uint64_t seed;
    uint32_t trigger;
    assert_int_equal(pl_trainset_read(path, &items, &count, &seed, &trigger,
                                      err, sizeof err), 0);
    assert_int_equal(count, 0);
    free(items);
}

/* Reads after damage must fail with the file's name and the reason. */
static void expect_refused(const char *reason)
{
    pl_trainset_item *items = NULL;
    size_t count;
    uint64_t seed;
    uint32_t trigger;
    char err[512] = "";
    assert_int_equal(pl_trainset_read(path, &items, &count, &seed, &trigger,
                                      err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, reason));
}

static void truncated(void **state)
{
    write_three();
    assert_int_equal(truncate(path, 32 + 16 + 4), 0);
    expect_refused("truncated");
    assert_int_equal(truncate(path, 10), 0);
    expect_refused("shorter than");
}

static void flip_byte(long offset)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void corrupted(void **state)
{
    write_three();
    flip_byte(32 + 16 + 3);  /* a key of the second item */
    expect_refused("checksum");
    write_three();
    flip_byte(0);
    expect_refused("magic");
}

static void missing(void **state)
{
    unlink(path);
    expect_refused("No such file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip), cmocka_unit_test(empty_set),
        cmocka_unit_test(truncated), cmocka_unit_test(corrupted),
        cmocka_unit_test(missing),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
