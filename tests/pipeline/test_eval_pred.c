/* test_eval_pred.c -- a predictions file, binary or CSV, of labels or of
 * scores, is read exactly and comes out sorted by key; every kind of
 * damage is refused with the file's name and the line (CSV) or row
 * (binary) where it is; and no input, however broken, crashes the reader
 * (a run under ASan/UBSan checks the mutated files). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "eval.h"

static char dir[] = "/tmp/aegis-evalpred-XXXXXX";
static char path[256];

static int make_dir(void **state)
{
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/pred", dir);
    return 0;
}

static int remove_dir(void **state)
{
    unlink(path);
    rmdir(dir);
    return 0;
}

static void write_bytes(const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void write_text(const char *text)
{
    write_bytes(text, strlen(text));
}

/* ---- building binary files ---- */

typedef struct bin {
    unsigned char b[4096];
    size_t len;
} bin;

static void put_le(bin *f, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        f->b[f->len++] = (unsigned char)(v >> (8 * i));
}

static void put_f32(bin *f, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    put_le(f, u, 4);
}

/* Score v at byte off of a built file. */
static void set_f32(bin *f, size_t off, float v)
{
    size_t len = f->len;
    f->len = off;
    put_f32(f, v);
    f->len = len;
}

static void put_header(bin *f, uint64_t count, uint32_t width)
{
    memcpy(f->b, PL_PRED_MAGIC, 8);
    f->len = 8;
    put_le(f, count, 8);
    put_le(f, width, 4);
    put_le(f, 0, 4);
}

static void put_label_row(bin *f, uint64_t key, int64_t label)
{
    put_le(f, key, 8);
    put_le(f, (uint64_t)label, 8);
}

/* Keys 30, 10, 20 (unsorted) with labels 3, 1, 2. */
static bin three_labels(void)
{
    bin f;
    put_header(&f, 3, 0);
    put_label_row(&f, 30, 3);
    put_label_row(&f, 10, 1);
    put_label_row(&f, 20, 2);
    return f;
}

/* Keys 7, 5 with three scores each; key 5's first two tie. */
static bin two_score_rows(void)
{
    bin f;
    put_header(&f, 2, 3);
    put_le(&f, 7, 8);
    put_f32(&f, 0.1f), put_f32(&f, 0.2f), put_f32(&f, 0.7f);
    put_le(&f, 5, 8);
    put_f32(&f, 0.4f), put_f32(&f, 0.4f), put_f32(&f, 0.2f);
    return f;
}

static void load_ok(pl_pred *p)
{
    char err[512] = "";
    int rc = pl_pred_load(path, p, err, sizeof err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err);
    assert_int_equal(rc, 0);
}

/* The load must fail, its error naming the file and holding each of the
 * NULL-ended parts (a line or row, the reason). */
static void expect_refused(const char *part, ...)
{
    pl_pred p;
    char err[512] = "";
    assert_int_equal(pl_pred_load(path, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    va_list ap;
    va_start(ap, part);
    for (; part; part = va_arg(ap, const char *))
        if (!strstr(err, part))
            fail_msg("'%s' lacks '%s'", err, part);
    va_end(ap);
    assert_null(p.keys);  /* left empty */
    assert_int_equal(p.count, 0);
}

/* ---- reading ---- */

static void binary_labels(void **state)
{
    bin f = three_labels();
    write_bytes(f.b, f.len);
    pl_pred p;
    load_ok(&p);
    assert_int_equal(p.count, 3);
    assert_int_equal(p.width, 0);
    assert_null(p.scores);
    uint64_t keys[] = {10, 20, 30};
    for (size_t r = 0; r < 3; r++) {
        assert_int_equal(p.keys[r], keys[r]);
        assert_int_equal(p.labels[r], r + 1);  /* moved with its key */
        assert_int_equal(pl_pred_class(&p, r), r + 1);
        assert_int_equal(pl_pred_find(&p, keys[r]), r);
    }
    assert_int_equal(pl_pred_find(&p, 15), -1);
    assert_int_equal(pl_pred_find(&p, 0), -1);
    assert_int_equal(pl_pred_find(&p, 31), -1);
    pl_pred_free(&p);
    assert_null(p.keys);
}

static void binary_scores(void **state)
{
    bin f = two_score_rows();
    write_bytes(f.b, f.len);
    pl_pred p;
    load_ok(&p);
    assert_int_equal(p.count, 2);
    assert_int_equal(p.width, 3);
    assert_null(p.labels);
    assert_int_equal(p.keys[0], 5);
    assert_int_equal(p.keys[1], 7);
    assert_float_equal(p.scores[0], 0.4, 1e-6);
    assert_float_equal(p.scores[2], 0.2, 1e-6);
    assert_float_equal(p.scores[3], 0.1, 1e-6);
    assert_float_equal(p.scores[5], 0.7, 1e-6);
    assert_int_equal(pl_pred_class(&p, 0), 0);  /* tie: the lower class */
    assert_int_equal(pl_pred_class(&p, 1), 2);
    pl_pred_free(&p);
}

static void csv_labels(void **state)
{
    /* A header, unsorted keys, no final newline. */
    write_text("key,label\n5,1\n3,0\n18446744073709551615,2");
    pl_pred p;
    load_ok(&p);
    assert_int_equal(p.count, 3);
    assert_int_equal(p.width, 0);
    assert_int_equal(p.keys[0], 3);
    assert_int_equal(p.labels[0], 0);
    assert_int_equal(p.keys[1], 5);
    assert_int_equal(p.labels[1], 1);
    assert_true(p.keys[2] == UINT64_MAX);
    assert_int_equal(p.labels[2], 2);
    pl_pred_free(&p);
}

static void csv_scores_crlf(void **state)
{
    write_text("key,s0,s1\r\n2,0.1,0.9\r\n1,-1.5e1,0x1p-2\r\n");
    pl_pred p;
    load_ok(&p);
    assert_int_equal(p.count, 2);
    assert_int_equal(p.width, 2);
    assert_int_equal(p.keys[0], 1);
    assert_float_equal(p.scores[0], -15.0, 1e-6);
    assert_float_equal(p.scores[1], 0.25, 1e-6);
    assert_float_equal(p.scores[2], 0.1, 1e-6);
    assert_float_equal(p.scores[3], 0.9, 1e-6);
    assert_int_equal(pl_pred_class(&p, 0), 1);
    pl_pred_free(&p);
}

static void csv_trims_blanks(void **state)
{
    write_text("4 ,\t2\n3\t, 1 \n");
    pl_pred p;
    load_ok(&p);
    assert_int_equal(p.count, 2);
    assert_int_equal(p.keys[0], 3);
    assert_int_equal(p.labels[0], 1);
    assert_int_equal(p.labels[1], 2);
    pl_pred_free(&p);
}

static void empty_files(void **state)
{
    pl_pred p;
    write_bytes("", 0);
    load_ok(&p);
    assert_int_equal(p.count, 0);
    assert_int_equal(pl_pred_find(&p, 1), -1);
    pl_pred_free(&p);
    write_text("key,label\r\n");
    load_ok(&p);
    assert_int_equal(p.count, 0);
    pl_pred_free(&p);
    bin f;
    put_header(&f, 0, 4);
    write_bytes(f.b, f.len);
    load_ok(&p);
    assert_int_equal(p.count, 0);
    assert_int_equal(p.width, 4);
    pl_pred_free(&p);
}

/* ---- refusals ---- */

static void duplicate_keys(void **state)
{
    write_text("1,0\n2,1\n1,1\n");
    expect_refused(":3:", "key 1", "line 1", NULL);
    write_text("key,label\n1,0\n2,1\n2,1\n");
    expect_refused(":4:", "key 2", "line 3", NULL);
    bin f;
    put_header(&f, 3, 0);
    put_label_row(&f, 9, 0);
    put_label_row(&f, 4, 0);
    put_label_row(&f, 9, 1);
    write_bytes(f.b, f.len);
    expect_refused("row 2", "key 9", "row 0", NULL);
}

static void non_finite_scores(void **state)
{
    write_text("1,0.5,0.5\n2,0.5,nan\n");
    expect_refused(":2:", "class 1", "not finite", NULL);
    write_text("1,-inf,0.5\n");
    expect_refused(":1:", "class 0", "not finite", NULL);
    write_text("1,1e50,0.5\n");  /* beyond float */
    expect_refused(":1:", "not finite", NULL);
    bin f = two_score_rows();
    set_f32(&f, f.len - 4, INFINITY);
    write_bytes(f.b, f.len);
    expect_refused("row 1", "class 2", "not finite", NULL);
    f = two_score_rows();
    set_f32(&f, 24 + 8, NAN);
    write_bytes(f.b, f.len);
    expect_refused("row 0", "class 0", "not finite", NULL);
}

static void negative_labels(void **state)
{
    write_text("1,0\n2,-2\n");
    expect_refused(":2:", "label -2 is negative", NULL);
    bin f = three_labels();
    put_label_row(&f, 40, -1);
    f.b[8] = 4;  /* the count */
    write_bytes(f.b, f.len);
    expect_refused("row 3", "label -1 is negative", NULL);
}

static void bad_fields(void **state)
{
    write_text("1,0\n2,0.5,0.5\n");
    expect_refused(":2:", "3 fields", "first row has 2", NULL);
    write_text("1,0.5,0.5\n2,1\n");
    expect_refused(":2:", "2 fields", NULL);
    write_text("1,0.5\n");
    expect_refused(":1:", "not an integer", NULL);
    write_text("1,0\n2,abc\n");
    expect_refused(":2:", "'abc' is not an integer", NULL);
    write_text("1,0\n2,\n");
    expect_refused(":2:", "not an integer", NULL);
    write_text("1,0\n2,9223372036854775808\n");  /* beyond int64 */
    expect_refused(":2:", "not an integer", NULL);
    write_text("1,0.5,x\n");
    expect_refused(":1:", "'x' of class 1 is not a number", NULL);
    write_text("1,0.5,0.5 0.1\n");
    expect_refused(":1:", "not a number", NULL);
    write_text("1\n");
    expect_refused(":1:", "one field", NULL);
}

static void bad_keys(void **state)
{
    write_text("1,0\n-1,0\n");
    expect_refused(":2:", "key '-1'", NULL);
    write_text("1,0\n18446744073709551616,0\n");  /* 2^64 */
    expect_refused(":2:", "not an unsigned 64-bit integer", NULL);
    write_text("1,0\n\n2,0\n");
    expect_refused(":2:", "empty line", NULL);
    write_text("1,0\n1x,0\n");
    expect_refused(":2:", "key '1x'", NULL);
    write_bytes("1,0\n2\0,0\n", 9);  /* a NUL byte inside a key */
    expect_refused(":2:", NULL);
}

static void too_wide_csv(void **state)
{
    size_t n = PL_PRED_MAX_WIDTH + 1, len = 2 + 2 * n + 1;
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, "1,", 2);
    for (size_t i = 0; i < n; i++)
        memcpy(text + 2 + 2 * i, i + 1 < n ? "0," : "0\n", 2);
    text[len - 1] = '\0';
    write_text(text);
    free(text);
    expect_refused(":1:", "65537 scores", NULL);
}

static void truncated_binary(void **state)
{
    bin f = three_labels();
    write_bytes(f.b, f.len - 1);
    expect_refused("truncated", NULL);
    write_bytes(f.b, f.len - 16);
    expect_refused("header says 3 rows", "truncated", NULL);
    f.b[f.len++] = 0;
    write_bytes(f.b, f.len);
    expect_refused("extended", NULL);
    write_bytes(f.b, 12);
    expect_refused("shorter than the 24-byte header", NULL);
    f = three_labels();
    f.b[15] = 0x80;  /* a count of 2^63 + 3 */
    write_bytes(f.b, f.len);
    expect_refused("truncated", NULL);
}

static void bad_header(void **state)
{
    bin f = two_score_rows();
    f.b[16] = 1;  /* width 1 */
    write_bytes(f.b, f.len);
    expect_refused("width 1:", NULL);
    f = two_score_rows();
    put_header(&f, 0, PL_PRED_MAX_WIDTH + 1);
    write_bytes(f.b, f.len);
    expect_refused("width 65537", NULL);
    f = two_score_rows();
    f.b[20] = 1;
    write_bytes(f.b, f.len);
    expect_refused("reserved", NULL);
}

static void not_predictions(void **state)
{
    bin f = three_labels();
    f.b[7] = '2';  /* AEGPRED2 */
    write_bytes(f.b, f.len);
    expect_refused("neither", "magic", NULL);
    write_text("hello,1\n");
    expect_refused("neither", NULL);
    write_text(" 1,0\n");  /* the first byte decides */
    expect_refused("neither", NULL);
    write_bytes("AEGPRED", 7);
    expect_refused("neither", NULL);
    unlink(path);
    expect_refused("No such file", NULL);
    assert_int_equal(mkdir(path, 0700), 0);
    expect_refused("not a regular file", NULL);
    assert_int_equal(rmdir(path), 0);
}

/* ---- robustness ---- */

static uint32_t next_rand(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* A valid file with a few bytes changed or cut off must load or be
 * refused, never crash (ASan and UBSan runs check the reads). */
static void mutate_and_load(const unsigned char *orig, size_t len,
                            uint32_t *seed)
{
    unsigned char buf[4096];
    memcpy(buf, orig, len);
    size_t n = len ? len - next_rand(seed) % (len / 4 + 1) : 0;
    for (int k = next_rand(seed) % 4; k > 0 && n; k--)
        buf[next_rand(seed) % n] = (unsigned char)next_rand(seed);
    write_bytes(buf, n);
    pl_pred p;
    char err[256];
    if (pl_pred_load(path, &p, err, sizeof err) == 0) {
        for (size_t r = 0; r < p.count; r++)
            assert_int_equal(pl_pred_find(&p, p.keys[r]), r);
        pl_pred_free(&p);
    } else {
        assert_non_null(strstr(err, path));
    }
}

static void fuzzed(void **state)
{
    static const char *csv[] = {
        "key,label\n5,1\n3,0\n9,2\n",
        "2,0.1,0.9,0\r\n1,0.5,0.5,1e3\r\n7,1,2,3",
    };
    bin f1 = three_labels(), f2 = two_score_rows();
    uint32_t seed = 12345;
    for (int i = 0; i < 500; i++) {
        mutate_and_load((const unsigned char *)csv[i % 2],
                        strlen(csv[i % 2]), &seed);
        mutate_and_load(i % 2 ? f1.b : f2.b, i % 2 ? f1.len : f2.len, &seed);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_labels), cmocka_unit_test(binary_scores),
        cmocka_unit_test(csv_labels), cmocka_unit_test(csv_scores_crlf),
        cmocka_unit_test(csv_trims_blanks), cmocka_unit_test(empty_files),
        cmocka_unit_test(duplicate_keys), cmocka_unit_test(non_finite_scores),
        cmocka_unit_test(negative_labels), cmocka_unit_test(bad_fields),
        cmocka_unit_test(bad_keys), cmocka_unit_test(too_wide_csv),
        cmocka_unit_test(truncated_binary), cmocka_unit_test(bad_header),
        cmocka_unit_test(not_predictions), cmocka_unit_test(fuzzed),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
