/* test_b64.c -- the base64 that carries job logs (b64.c): RFC 4648's test
 * vectors, every byte value and length round-tripping, and malformed input
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "b64.h"

static void test_vectors(void **state) {
    (void)state;
    static const char *const plain[] = {"", "f", "fo", "foo", "foob",
                                        "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg==", "Zm8=", "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char out[16];
        unsigned char back[16];
        size_t n = strlen(plain[i]), got;
        assert_int_equal(b64_encode(plain[i], n, out), B64_ENCODED_LEN(n));
        assert_string_equal(out, coded[i]);
        assert_int_equal(b64_decode(out, strlen(out), back, &got), 0);
        assert_int_equal(got, n);
        assert_memory_equal(back, plain[i], n);
    }
}

/* NUL, bytes above 0x7f and every length modulo 3. */
static void test_round_trip(void **state) {
    (void)state;
    unsigned char in[259], back[259];
    char coded[B64_ENCODED_LEN(259) + 1];
    for (size_t i = 0; i < sizeof(in); i++) in[i] = (unsigned char)(i * 7);
    for (size_t n = 0; n <= sizeof(in); n++) {
        size_t len = b64_encode(in, n, coded), got;
        assert_int_equal(b64_decode(coded, len, back, &got), 0);
        assert_int_equal(got, n);
        assert_memory_equal(back, in, n);
    }
}

static void test_malformed(void **state) {
    (void)state;
    static const char *const bad[] = {"Zg=", "Zg", "Z===", "=Zg=", "Zg==Zg==",
                                      "Zm9v\n", "Zm 9", "Zm9*", "Z=g="};
    unsigned char out[16];
    size_t got;
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        assert_int_equal(b64_decode(bad[i], strlen(bad[i]), out, &got), -1);
    assert_int_equal(b64_decode("Zm\0v", 4, out, &got), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
