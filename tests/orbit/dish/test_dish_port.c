/* test_dish_port.c -- the Cortex-M7 port's pieces on the host: the
 * heap-less formatter that stands in for newlib's snprintf on the board
 * writes what the C library writes for every form the runtime's messages
 * use, cut short the same way; and the DISH task installs the stub
 * uplink's image and runs it to its end on the stub platform. The board
 * build itself is orbit_dish_m7 (m7_build.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "m7_port.h"

/* fmt with the C library and with m7_vformat into cap bytes: the same
 * text and the same return. */
static void same(size_t cap, const char *fmt, ...) {
    char want[256], got[256];
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int nw = vsnprintf(want, cap, fmt, ap);
    memset(got, 'x', sizeof got);
    int ng = m7_vformat(got, cap, fmt, aq);
    va_end(aq);
    va_end(ap);
    if (cap && strcmp(want, got))
        print_message("format \"%s\" cap %zu: want \"%s\", got \"%s\"\n", fmt, cap, want, got);
    if (cap)
        assert_string_equal(got, want);
    assert_int_equal(ng, nw);
}

static void formatter_as_libc(void **state) {
    (void)state;
    /* the forms of dish_verify.c, dish_vm.c and dish_bytecode.c */
    same(200, "procedure %d (slot %u) at %u: %s", 3, 12u, 511u, "unknown opcode 77");
    same(200, "image is %zu bytes, its header says %zu%s", (size_t)20, (size_t)4096,
         " (truncated)");
    same(200, "slot %u: a run may execute %lu%s instructions, the limit is %lu", 1u,
         4294967295ul, " or more", 10000000ul);
    same(200, "slot %u %s: not deleted", 49u, "is running");
    same(200, "%s%lld.%05lld", "-", 32768LL, 42LL);
    same(200, "%d %d %d %i", 0, -1, -2147483647 - 1, 2147483647);
    same(200, "%u %x %lld %zu", 4294967295u, 0xBEEFu, -9223372036854775807LL - 1,
         (size_t)0);
    same(200, "[%5d] [%-5d] [%05d] [%-05d] [%3s] [%-3s] [%c] [%%]", -42, 42, -42, 7, "a",
         "b", 'z');
    /* cut short: terminated, the full length returned */
    same(8, "procedure %d at %u", 12, 345u);
    same(1, "%s", "anything");
    same(0, "%d", 12345);
}

static void task_runs_the_uplinked_image(void **state) {
    (void)state;
    char err[200] = "";
    int rc = m7_dish_task(err, sizeof err);
    if (rc)
        print_message("task: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(m7_last_result(), M7_IMAGE_RESULT);
    /* the uplink held one image: a second task has nothing to install */
    assert_int_equal(m7_dish_task(err, sizeof err), -1);
    assert_string_equal(err, "no image uplinked");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(formatter_as_libc),
        cmocka_unit_test(task_runs_the_uplinked_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
