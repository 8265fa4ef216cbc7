/* test_proc_store.c -- the satellite's store of DISH procedures
 * (proc_store.h) over the power-cut fault layer (faultfs.h): images kept
 * and loaded again in order after a restart; a power cut at every step
 * of every change leaves the images before or after it, all of them
 * loaded; a corrupt, torn or foreign file is refused with a sentence and
 * never loaded; a delete (of a whole image, or of one procedure of
 * several, the image rewritten) stays deleted, and one the runtime
 * refuses leaves the store as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dish_compile.h"
#include "errors.h"
#include "faultfs.h"
#include "platform.h"
#include "proc_store.h"

#define DIR "/store"

/* a calls b, in one image; c alone */
static const char src_ab[] = "slot 5\nproc a() {\n  return b(2)\n}\n"
                             "proc b(x) {\n  tm(1, x)\n  return x + 1\n}\n";
static const char src_c[] = "slot 9\nproc c() {\n  return 3\n}\n";

static uint8_t img_ab[DISH_MAX_IMAGE], img_c[DISH_MAX_IMAGE];
static int len_ab, len_c;
static dish_vm vm;
static proc_store ps;
static dish_platform quiet; /* the store never runs anything */
static char warned[4][700];
static int nwarned;

static void warn(void *ctx, const char *why) {
    (void)ctx;
    if (nwarned < 4)
        snprintf(warned[nwarned], sizeof warned[0], "%s", why);
    nwarned++;
}

static int64_t zero_ms(void *ctx) {
    (void)ctx;
    return 0;
}

static void no_fix(void *ctx, dish_fix *f) {
    (void)ctx;
    memset(f, 0, sizeof *f);
}

static int setup(void **s) {
    char err[256];
    (void)s;
    len_ab = dish_compile("ab.dish", src_ab, strlen(src_ab), img_ab, sizeof img_ab, err,
                          sizeof err);
    len_c = dish_compile("c.dish", src_c, strlen(src_c), img_c, sizeof img_c, err,
                         sizeof err);
    quiet.now_ms = zero_ms, quiet.gnss = no_fix;
    return len_ab > 0 && len_c > 0 ? 0 : -1;
}

/* A restart: a fresh runtime, the store opened again. */
static int reopen(void) {
    dish_vm_init(&vm, &quiet);
    nwarned = 0;
    return proc_store_open(&ps, DIR, &vm, warn, NULL);
}

/* What is kept and what is loaded, in words; the two must agree. */
static void state(char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (unsigned k = 0; k < ps.count; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s v%u (%u procs); ", ps.img[k].name,
                              ps.img[k].version, ps.img[k].bytes[5]);
    for (unsigned s = 0; s < DISH_SLOTS; s++) {
        assert_int_equal(vm.slots[s].info.used, proc_store_holding(&ps, s) != NULL);
        if (vm.slots[s].info.used)
            n += (size_t)snprintf(out + n, cap - n, "%u ", s);
    }
}

static int add(const char *name, uint32_t v, const uint8_t *img, int len) {
    char detail[256];
    return proc_store_add(&ps, name, v, img, (size_t)len, detail, sizeof detail);
}

static int del(unsigned slot) {
    char detail[256];
    return proc_store_delete(&ps, slot, detail, sizeof detail);
}

static void test_kept_across_restarts(void **s) {
    char before[512], after[512], detail[256];
    (void)s;
    faultfs_install();
    assert_int_equal(reopen(), 0); /* no file yet: empty, no warning */
    assert_int_equal(nwarned, 0);
    assert_int_equal(proc_store_add(&ps, "ab", 1, img_ab, (size_t)len_ab, detail,
                                    sizeof detail), 0);
    assert_string_equal(detail, "ab v1: slots 5 6 loaded");
    assert_int_equal(add("c", 1, img_c, len_c), 0);
    /* taken slots: refused with the verifier's reason, nothing written */
    assert_int_equal(proc_store_add(&ps, "c2", 1, img_c, (size_t)len_c, detail,
                                    sizeof detail), DIPP_E_UP_PROCS);
    assert_non_null(strstr(detail, "slot 9 is taken"));
    /* the same name, version and bytes again: taken already */
    assert_int_equal(add("c", 1, img_c, len_c), 0);
    state(before, sizeof before);
    assert_int_equal(reopen(), 2);
    state(after, sizeof after);
    assert_string_equal(before, after);
    assert_string_equal(after, "ab v1 (2 procs); c v1 (1 procs); 5 6 9 ");
    faultfs_uninstall();
}

static void test_delete_persisted(void **s) {
    char now[512], detail[256];
    (void)s;
    faultfs_install();
    reopen();
    add("ab", 1, img_ab, len_ab);
    add("c", 1, img_c, len_c);
    /* b is called by a: refused, the store as it was */
    assert_int_equal(proc_store_delete(&ps, 6, detail, sizeof detail), DIPP_E_UP_PROCS);
    assert_string_equal(detail, "slot 6 is called by another procedure: not deleted");
    assert_int_equal(del(40), DIPP_E_UP_PROCS); /* empty */
    assert_int_equal(reopen(), 2);
    state(now, sizeof now);
    assert_string_equal(now, "ab v1 (2 procs); c v1 (1 procs); 5 6 9 ");
    /* a goes, its image rewritten with b alone; then c, its image with it */
    assert_int_equal(del(5), 0);
    assert_int_equal(del(9), 0);
    assert_int_equal(reopen(), 1);
    state(now, sizeof now);
    assert_string_equal(now, "ab v1 (1 procs); 6 ");
    /* the rewritten image verifies and runs b alone */
    assert_int_equal(del(6), 0);
    assert_int_equal(reopen(), 0);
    faultfs_uninstall();
}

/* The scenario cut: each change in turn. */
typedef enum { ADD_AB, ADD_C, DEL_A, DEL_C, CHANGES } change;

static int apply(change c) {
    switch (c) {
    case ADD_AB: return add("ab", 1, img_ab, len_ab);
    case ADD_C: return add("c", 1, img_c, len_c);
    case DEL_A: return del(5);
    default: return del(9);
    }
}

static void test_power_cut_at_every_step(void **s) {
    char was[512], next[512], now[512];
    int cuts = 0;
    (void)s;
    for (int c = 0; c < CHANGES; c++) {
        for (uint64_t step = 1;; step++) {
            faultfs_install();
            reopen();
            for (int k = 0; k < c; k++)
                assert_int_equal(apply((change)k), 0);
            state(was, sizeof was);
            faultfs_cut_at(step);
            int rc = apply((change)c);
            if (!faultfs_off()) { /* the change was over before the cut */
                assert_int_equal(rc, 0);
                break;
            }
            /* the uncut state after this change */
            faultfs_power_up();
            reopen();
            assert_int_equal(nwarned, 0);
            state(now, sizeof now);
            faultfs_install();
            reopen();
            for (int k = 0; k <= c; k++)
                apply((change)k);
            state(next, sizeof next);
            if (strcmp(now, was) && strcmp(now, next))
                print_message("change %d cut at step %llu:\n  now  %s\n  was  %s\n"
                              "  next %s\n", c, (unsigned long long)step, now, was, next);
            assert_true(!strcmp(now, was) || !strcmp(now, next));
            cuts++;
        }
    }
    print_message("%d cuts, each left the images before or after its change\n", cuts);
    assert_true(cuts >= CHANGES * 4); /* write, sync, rename, sync of the folder */
    faultfs_uninstall();
}

/* The file as kept, to damage. */
static void file_bytes(uint8_t **data, size_t *len) {
    assert_int_equal(plat_file_read(DIR "/" PROC_STORE_FILE, data, len), 0);
}

static void put_back(const uint8_t *data, size_t len) {
    assert_int_equal(plat_file_replace(DIR, PROC_STORE_FILE, data, len), 0);
}

static void test_damage_refused(void **s) {
    uint8_t *data;
    size_t len;
    char now[512];
    (void)s;
    faultfs_install();
    reopen();
    add("ab", 1, img_ab, len_ab);
    add("c", 1, img_c, len_c);
    file_bytes(&data, &len);
    /* a byte of the first image flipped: it is refused, the second loads */
    data[4 + 2 + UP_NAME_MAX + 4 + 20] ^= 0x40;
    put_back(data, len);
    assert_int_equal(reopen(), 1);
    assert_int_equal(nwarned, 1);
    assert_string_equal(warned[0], "/store/procedures: record 1 at byte 4 ('ab' v1): "
                                   "CRC-32 mismatch: torn or corrupt: not loaded");
    state(now, sizeof now);
    assert_string_equal(now, "c v1 (1 procs); 9 ");
    /* torn: the second record cut short */
    data[4 + 2 + UP_NAME_MAX + 4 + 20] ^= 0x40;
    put_back(data, len - 5);
    assert_int_equal(reopen(), 1);
    assert_int_equal(nwarned, 1);
    assert_non_null(strstr(warned[0], "record 2 at byte"));
    assert_non_null(strstr(warned[0], "cut short"));
    /* a length past the end, a foreign file, an empty one */
    data[4] = 0xFF, data[5] = 0x7F;
    put_back(data, len);
    assert_int_equal(reopen(), 0);
    assert_non_null(strstr(warned[0], "record 1 at byte 4 ('?' v0): cut short"));
    put_back((const uint8_t *)"DPS2....", 8);
    assert_int_equal(reopen(), -1);
    assert_string_equal(warned[0], "/store/procedures: not a DPS1 store: no procedures loaded");
    put_back((const uint8_t *)"", 0);
    assert_int_equal(reopen(), -1);
    /* a record whole but its image refused by the verifier (an unknown
     * bytecode version): reported with the verifier's reason */
    dish_put16(data + 4, (uint16_t)len_ab); /* the length as written */
    data[4 + 2 + UP_NAME_MAX + 4 + 4] = 9;
    dish_put32(data + 4 + 2 + UP_NAME_MAX + 4 + (size_t)len_ab,
               dish_crc32(data + 4, 2 + UP_NAME_MAX + 4 + (size_t)len_ab));
    put_back(data, len);
    assert_int_equal(reopen(), 1);
    assert_non_null(strstr(warned[0], "bytecode version 9 is unknown"));
    free(data);
    faultfs_uninstall();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_across_restarts),
        cmocka_unit_test(test_delete_persisted),
        cmocka_unit_test(test_power_cut_at_every_step),
        cmocka_unit_test(test_damage_refused),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
