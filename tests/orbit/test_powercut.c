/* test_powercut.c -- a power cut never leaves a half-installed module
 * active. A scenario of slot writes, uploads (full, delta, one failing its
 * test-run), a key rotation and a rollback runs over the fault layer
 * (faultfs.h) once uncut, recording the store's state after every call;
 * then 100 times with the power cut at a random step. After each cut the
 * store must open in the state of the last call that returned or of the
 * one in flight, with every active and previous module file whole (its
 * hash), and, the ground resuming where it was, end as the uncut run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "errors.h"
#include "faultfs.h"
#include "platform.h"
#include "slots.h"
#include "upload.h"
#include "upload_helpers.h"

#define DIR "/store"
#define MAX_CALLS 4096
#define SUMMARY 1024

typedef enum { SLOT, UPLOAD, DELTA, ROTATE, FAIL_TO_ROLLBACK } op_kind;

typedef struct op {
    op_kind kind;
    const char *name;    /* module, or slot content */
    uint32_t version;    /* module version, or slot number */
    const char *marker;  /* "BAD": fails its test-run */
    uint8_t key;         /* signing key serial */
} op;

static const op scenario[] = {
    {SLOT, "pipeline A", 1, NULL, 0},
    {UPLOAD, "blur", 1, NULL, 1},
    {DELTA, "blur", 2, NULL, 1},
    {SLOT, "pipeline B, longer", 1, NULL, 0},
    {ROTATE, NULL, 2, NULL, 1},
    {UPLOAD, "blur", 3, "BAD", 2},
    {UPLOAD, "blur", 4, NULL, 2},
    {FAIL_TO_ROLLBACK, "blur", 4, NULL, 2},
    {UPLOAD, "edge", 1, NULL, 2},
    {SLOT, "config C", 3, NULL, 0},
};
#define OPS (sizeof scenario / sizeof scenario[0])

static up_store st;
static up_result res;
static char ref[MAX_CALLS][SUMMARY]; /* state after each call, uncut */
static unsigned ref_calls, calls;
static char last[SUMMARY];

/* The store's committed state, in words. */
static void summary(char *out) {
    int n = snprintf(out, SUMMARY, "key %u up %u/%u;", st.idx.key_serial,
                     st.idx.uploading, st.idx.received);
    for (uint32_t k = 0; k < st.idx.nmods; k++) {
        const up_module *m = &st.idx.mod[k];
        n += snprintf(out + n, SUMMARY - (size_t)n, " %s h%u a%u p%u f%u;", m->name,
                      m->highest, m->active, m->previous, m->failures);
    }
    uint8_t data[SLOT_MAX_BYTES + 1] = {0};
    size_t len = 0;
    char err[256];
    for (unsigned s = 1; s <= 3; s++) {
        int rc = slot_read(DIR, s == 3 ? SLOT_CONFIG : SLOT_PIPELINE, s == 3 ? 3 : 1,
                           data, &len, err, sizeof err);
        data[rc == 0 ? len : 0] = 0;
        n += snprintf(out + n, SUMMARY - (size_t)n, " slot%u %d '%s';", s, rc,
                      rc == 0 ? (char *)data : "");
        if (s == 1)
            s = 2; /* pipeline 1 and config 3 only */
    }
}

/* After each call that returned with the power on. */
static void called(int recording) {
    if (faultfs_off())
        return;
    summary(last);
    if (recording)
        snprintf(ref[ref_calls++], SUMMARY, "%s", last);
    calls++;
}

static int module_bytes(const op *o, uint8_t **mod) {
    *mod = test_elf(20000, o->version * 7 + (uint32_t)o->name[0], o->marker);
    return 20000;
}

/* The ground's resend loop, one call at a time. */
static void send_upload(const op *o, int recording) {
    test_key k = test_key_make(o->key);
    uint8_t *mod, *base = NULL, *payload, wire[UP_MANIFEST_BYTES];
    uint8_t chunk[UP_CHUNK_HDR + UP_CHUNK_MAX];
    size_t len = (size_t)module_bytes(o, &mod), base_len = 0;
    if (o->kind == DELTA) {
        op prev = *o;
        prev.version--;
        base_len = (size_t)module_bytes(&prev, &base);
        memcpy(mod, base, len); /* a small change of v-1 */
        memcpy(mod + 9000, "patched", 7);
    }
    up_manifest m = test_manifest(o->name, o->version, mod, len, base, base_len, &k,
                                  &payload);
    up_manifest_encode(&m, wire);
    up_on_manifest(&st, wire, sizeof wire, &res);
    called(recording);
    uint32_t missing[1];
    while (!faultfs_off() && res.code == 0 && up_missing(&st, missing, 1)) {
        up_on_chunk(&st, chunk, up_chunk_build(&m, payload, missing[0], chunk), &res);
        called(recording);
    }
    free(mod), free(base), free(payload);
}

static void perform(const op *o, int recording) {
    char err[256];
    uint8_t rot[UP_ROTATE_BYTES];
    switch (o->kind) {
    case SLOT:
        slot_write(DIR, o->version == 1 ? SLOT_PIPELINE : SLOT_CONFIG, o->version,
                   (const uint8_t *)o->name, strlen(o->name), 1, err, sizeof err);
        break;
    case UPLOAD:
    case DELTA:
        send_upload(o, recording);
        return;
    case ROTATE: {
        test_key old = test_key_make(o->key), next = test_key_make(o->key + 1);
        up_rotate_build(next.serial, next.pk, old.sk, rot);
        up_on_rotate(&st, rot, sizeof rot, &res);
        break;
    }
    case FAIL_TO_ROLLBACK:
        up_on_run(&st, o->name, DIPP_E_CRASH, &res);
        break;
    }
    called(recording);
}

/* Whether the ground sees o as done (it reads the store's state). */
static int done(const op *o) {
    const up_module *m = o->name ? up_find(&st, o->name) : NULL;
    uint8_t data[SLOT_MAX_BYTES];
    size_t len;
    char err[256];
    switch (o->kind) {
    case SLOT:
        return slot_read(DIR, o->version == 1 ? SLOT_PIPELINE : SLOT_CONFIG, o->version,
                         data, &len, err, sizeof err) == 0 &&
               len == strlen(o->name) && memcmp(data, o->name, len) == 0;
    case UPLOAD:
    case DELTA:
        return m && m->highest >= o->version && !st.idx.uploading;
    case ROTATE:
        return st.idx.key_serial > o->key;
    case FAIL_TO_ROLLBACK:
        return m && m->active != o->version;
    }
    return 0;
}

/* Runs the scenario from op *at until the power goes off; 0 when done. */
static int run_scenario(unsigned *at, int recording) {
    for (; *at < OPS; (*at)++) {
        for (int tries = 0; !done(&scenario[*at]); tries++) {
            assert_true(tries < 8);
            perform(&scenario[*at], recording);
            if (faultfs_off())
                return -1;
        }
    }
    return 0;
}

static void open_store(void) {
    test_key k1 = test_key_make(1);
    assert_int_equal(up_open(&st, DIR, k1.pk, NULL, test_stub_run, NULL, &res), 0);
}

/* Every module version the index names is on board whole. */
static void assert_files_whole(void) {
    for (uint32_t k = 0; k < st.idx.nmods; k++) {
        const up_module *m = &st.idx.mod[k];
        for (int which = 0; which < 2; which++) {
            uint32_t v = which ? m->previous : m->active;
            char file[64], path[128];
            uint8_t *bytes, sha[UP_SHA_BYTES];
            size_t len;
            if (!v)
                continue;
            up_version_file(m->name, v, file, sizeof file);
            snprintf(path, sizeof path, "%s/%s", DIR, file);
            assert_int_equal(plat_file_read(path, &bytes, &len), 0);
            up_sha256(bytes, len, sha);
            assert_memory_equal(sha, which ? m->previous_sha : m->active_sha, UP_SHA_BYTES);
            free(bytes);
        }
    }
}

static void test_hundred_cuts(void **s) {
    (void)s;
    unsigned at = 0;
    char final[SUMMARY], now[SUMMARY];
    test_key k1 = test_key_make(1);
    faultfs_install();
    open_store();
    called(1); /* ref[0]: the new store */
    assert_int_equal(run_scenario(&at, 1), 0);
    summary(final);
    uint64_t total = faultfs_steps();
    print_message("uncut: %u calls, %llu file steps; %s\n", ref_calls,
                  (unsigned long long)total, final);
    srand(31);
    for (int cut = 0; cut < 100; cut++) {
        uint64_t when = 1 + (uint64_t)rand() % total;
        faultfs_install();
        faultfs_cut_at(when);
        calls = 0, at = 0;
        up_open(&st, DIR, k1.pk, NULL, test_stub_run, NULL, &res);
        called(0);
        if (!faultfs_off() && run_scenario(&at, 0) == 0)
            continue; /* the cut fell after the end */
        faultfs_power_up();
        open_store();
        summary(now);
        /* the last call that returned, or the one in flight */
        const char *was = ref[calls ? calls - 1 : 0], *next = ref[calls];
        int ok = strcmp(now, was) == 0 || strcmp(now, next) == 0;
        if (!ok)
            print_message("cut at step %llu, after call %u:\n  now  %s\n  was  %s\n"
                          "  next %s\n", (unsigned long long)when, calls, now, was, next);
        assert_true(ok);
        assert_files_whole();
        assert_int_equal(run_scenario(&at, 0), 0);
        summary(now);
        assert_string_equal(now, final);
    }
    faultfs_uninstall();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hundred_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
