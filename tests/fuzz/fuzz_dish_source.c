/* fuzz_dish_source.c -- fuzz target (fuzz.h) of the DISH ground compiler
 * (dish_compile.h) on any text: it never crashes, refuses with a
 * "FILE:LINE:COL: what" message, and the code it generates is code the
 * verifier accepts. The compiler runs the verifier on its own output,
 * so a bad translation shows as a refusal passed on from it: only the
 * rules the compiler leaves to the verifier (recursion, call nesting, a
 * call chain's arena, the instruction bound, the operand stack's 32) may
 * be refused so; any other (a jump that lands nowhere, paths meeting at
 * different stack depths, a wait's mask...) is a compiler bug. What it
 * accepts is run on a simulated satellite too (fuzz_dish.c). Seeds:
 * seeds/dish_source/, the example procedures and the language's corners.
 */
#include "fuzz.h"

#include <string.h>

#include "dish_compile.h"
#include "fuzz_dish.h"

FUZZ_TOKENS("(){},:=+-*/%<>!&|.0123456789 \n\tabcdefghijklmnopqrstuvwxyz_#\"");

/* The verifier's refusals that the compiler leaves to it by design. */
static int left_to_verifier(const char *why) {
    static const char *const ok[] = {
        "closes the cycle of calls", "calls nest", "arena words through",
        "a run may execute", "over the limit 32",
    };
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++)
        if (strstr(why, ok[k]))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t img[DISH_MAX_IMAGE];
    char err[512] = "";
    int n = dish_compile("f.dish", (const char *)data, size, img, sizeof img, err,
                         sizeof err);
    if (n < 0) {
        const char *why = strstr(err, "the verifier refuses the result: ");
        FUZZ_CHECK(strncmp(err, "f.dish:", 7) == 0, "a refusal that does not name the file");
        if (why && !left_to_verifier(why))
            fprintf(stderr, "%s\n", err);
        FUZZ_CHECK(!why || left_to_verifier(why),
                   "compiled code the verifier refuses (a compiler bug)");
        return 0;
    }
    dish_image im;
    fuzz_dish_board(0); /* what the compiler verified against */
    FUZZ_CHECK(n <= DISH_MAX_IMAGE &&
                   dish_verify(img, (size_t)n, NULL, &im, err, sizeof err) == 0,
               "an image the compiler returned that the verifier refuses");
    fuzz_dish_run(img, (size_t)n, &im);
    return 0;
}
