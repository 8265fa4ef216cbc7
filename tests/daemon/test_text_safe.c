/* test_text_safe.c -- what a terminal would act on in another user's text
 * (text_safe.c): UTF-8 as RFC 3629 defines it is a character; overlong
 * forms, UTF-16 surrogates and code points above U+10FFFF are bytes that
 * start none, so a name holding them is refused and shown as '?'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "text_safe.h"

/* The text as text_safe shows it. */
static const char *shown(const char *text) {
    static char out[256];
    text_safe(out, sizeof(out), text);
    return out;
}

/* Well-formed characters of each length pass whole, at both ends of the
 * ranges RFC 3629's table allows. */
static void test_valid(void **state) {
    (void)state;
    static const char *const ok[] = {
        "a", "\xc2\xa0", "\xdf\xbf",              /* U+00A0, U+07FF */
        "\xe0\xa0\x80", "\xed\x9f\xbf",           /* U+0800, U+D7FF */
        "\xee\x80\x80", "\xef\xbf\xbf",           /* U+E000, U+FFFF */
        "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf",   /* U+10000, U+10FFFF */
        "\xf0\x9f\x98\x80"};                      /* U+1F600 */
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
        size_t len = strlen(ok[i]);
        assert_int_equal(text_char_len(ok[i]), len);
        assert_false(text_is_control(ok[i], len));
        assert_string_equal(shown(ok[i]), ok[i]);
    }
}

/* Each byte of an ill-formed sequence starts no character and shows as
 * '?'; the old decoder took these for one ordinary character each. */
static void test_ill_formed(void **state) {
    (void)state;
    static const struct {
        const char *in, *out;
    } bad[] = {
        {"\xc0\x9b", "??"},                 /* overlong ESC-[ (CSI) */
        {"\xc1\xbf", "??"},                 /* overlong DEL */
        {"\xe0\x82\x9b", "???"},            /* overlong U+009B */
        {"\xe0\x9f\xbf", "???"},            /* overlong U+07FF */
        {"\xf0\x80\x82\x9b", "????"},       /* overlong U+009B */
        {"\xf0\x8f\xbf\xbf", "????"},       /* overlong U+FFFF */
        {"\xed\xa0\x80", "???"},            /* surrogate U+D800 */
        {"\xed\xbf\xbf", "???"},            /* surrogate U+DFFF */
        {"\xf4\x90\x80\x80", "????"},       /* U+110000 */
        {"\xf5\x80\x80\x80", "????"},       /* lead byte past F4 */
        {"\xf8\x88\x80\x80\x80", "?????"},  /* 5-byte form */
        {"\xff", "?"},
        {"\xe2\x80", "??"},                 /* cut short */
        {"x\xc0\x9by", "x??y"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        assert_int_equal(text_char_len(bad[i].in + (*bad[i].in == 'x')), 1);
        assert_string_equal(shown(bad[i].in), bad[i].out);
    }
}

/* The controls and marks still count, and their code points are right for
 * every length, so --json writes the escape of the same character. */
static void test_controls_and_code_points(void **state) {
    (void)state;
    assert_true(text_is_control("\x1b", 1));
    assert_true(text_is_control("\xc2\x9b", 2));
    assert_true(text_is_control("\xd8\x9c", 2));
    assert_true(text_is_control("\xe2\x80\xae", 3));
    assert_true(text_is_control("\xe2\x81\xa6", 3));
    assert_int_equal(text_code_point("\xc2\x9b", 2), 0x9b);
    assert_int_equal(text_code_point("\xe2\x80\xae", 3), 0x202e);
    assert_int_equal(text_code_point("\xf0\x9f\x98\x80", 4), 0x1f600);
    assert_int_equal(text_code_point("\xf4\x8f\xbf\xbf", 4), 0x10ffff);
}

/* A character that does not fit whole is left out, never cut. */
static void test_cut(void **state) {
    (void)state;
    char out[4];
    text_safe(out, sizeof(out), "ab\xf0\x9f\x98\x80");
    assert_string_equal(out, "ab");
}

/* text_as_utf8() replaces only the bytes that start no character, each
 * as '?', so that a JSON string can hold the rest: controls and marks are
 * kept (the printer escapes them), and so is every well-formed character. */
static void test_as_utf8(void **state) {
    (void)state;
    char out[32];
    text_as_utf8(out, sizeof(out), "a\xff\xc0\x9b\x1b\xc2\x9b\xe2\x80\xae"
                                   "\xf0\x9f\x98\x80\xe2\x80");
    assert_string_equal(out, "a???\x1b\xc2\x9b\xe2\x80\xae\xf0\x9f\x98\x80??");
    char small[4];
    text_as_utf8(small, sizeof(small), "ab\xf0\x9f\x98\x80");
    assert_string_equal(small, "ab");
}

/* text_is_utf8() is false for a stray byte anywhere, true for controls. */
static void test_is_utf8(void **state) {
    (void)state;
    assert_true(text_is_utf8(""));
    assert_true(text_is_utf8("a\x1b\xc2\x9b\xf0\x9f\x98\x80"));
    assert_false(text_is_utf8("/data\xff"));
    assert_false(text_is_utf8("\xc0\x9b"));
    assert_false(text_is_utf8("ok\xe2\x80"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_ill_formed),
        cmocka_unit_test(test_controls_and_code_points),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_as_utf8),
        cmocka_unit_test(test_is_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
