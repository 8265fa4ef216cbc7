/* test_dish_procs.c -- the ten procedures of data/orbit/procedures: each
 * .dish (with its .lua beside it) compiles and verifies, and all ten
 * loaded together on one simulated satellite run to their ends within 12
 * simulated hours without a fault, leaving the main processor asleep. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dish_helpers.h"

#define NPROCS 10

static bench b;
static uint8_t imgs[NPROCS][DISH_MAX_IMAGE];
static int lens[NPROCS];

/* Reads and compiles dir/name into imgs[k]. */
static void compile_one(const char *name, int k) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", DISH_PROC_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char src[65536];
    size_t n = fread(src, 1, sizeof src - 1, f);
    fclose(f);
    lens[k] = dish_compile(path, src, n, imgs[k], DISH_MAX_IMAGE, err, sizeof err);
    if (lens[k] < 0)
        print_message("%s\n", err);
    assert_true(lens[k] > 0);
    snprintf(path + strlen(path) - 5, 6, ".lua");
    assert_int_equal(access(path, R_OK), 0);
}

static void all_ten_compile(void **state) {
    (void)state;
    DIR *d = opendir(DISH_PROC_DIR);
    assert_non_null(d);
    int k = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".dish")) {
            assert_true(k < NPROCS);
            compile_one(e->d_name, k++);
        }
    }
    closedir(d);
    assert_int_equal(k, NPROCS);
}

static void all_ten_run_together(void **state) {
    (void)state;
    char err[256];
    bench_init(&b);
    for (int k = 0; k < NPROCS; k++) {
        assert_int_equal(dish_vm_load(&b.vm, imgs[k], (size_t)lens[k], err, sizeof err), 0);
        assert_true(dish_vm_start(&b.vm, imgs[k][DISH_HDR], NULL, 0) >= 0);
    }
    assert_int_equal(dish_vm_run(&b.vm, 12 * 3600 * 1000LL), 0);
    assert_null(dish_sim_find(&b.sim, DISH_TLM_FAULT, -1));
    int ends = 0;
    for (int k = 0; k < b.sim.ntlm && k < DISH_SIM_TLM; k++)
        ends += b.sim.tlm[k].kind == DISH_TLM_END;
    assert_int_equal(ends, NPROCS);
    assert_int_equal(b.sim.awake, 0);
    assert_true(b.sim.nawake > 0);
    assert_true(b.vm.synced);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_ten_compile),
        cmocka_unit_test(all_ten_run_together),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
