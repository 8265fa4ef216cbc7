/* coder.c -- test module: returns the code its parameter names, or, with
 * exit=1, ends its process with that status and no result: what the
 * runner publishes for each is the flight DIPP's mapping (test_runner). */
#include <unistd.h>

#include "dipp_module.h"

static const dipp_param_decl params[] = {
    {"code", DIPP_PARAM_INT, 42, -100000, 100000, "what run returns"},
    {"exit", DIPP_PARAM_INT, 0, 0, 1, "1: _exit(code) instead of returning"},
};

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)out;
    int code = (int)dipp_param_int(p, "code");
    if (dipp_param_int(p, "exit"))
        _exit(code & 0xff);
    return code;
}

DIPP_MODULE("coder", "1.0.0", params, run);
