/* errors.c -- names and the published number of DIPP's error codes. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

uint32_t dipp_error_number(int code, unsigned pipeline, unsigned module) {
    return (uint32_t)code * 1000u + pipeline * 100u + module;
}

const char *dipp_code_name(int code) {
    switch (code) {
    case DIPP_E_OK: return "ok";
    case DIPP_E_MISSING_MODULE: return "missing module";
    case DIPP_E_MISSING_SYMBOL: return "missing symbol";
    case DIPP_E_ABI: return "wrong ABI version";
    case DIPP_E_PARAM: return "bad parameter";
    case DIPP_E_INPUT: return "malformed input batch";
    case DIPP_E_CRASH: return "crash";
    case DIPP_E_NOMEM: return "out of memory";
    case DIPP_E_TIMEOUT: return "timeout";
    case DIPP_E_SANDBOX: return "killed by the sandbox";
    case DIPP_E_OUTPUT: return "malformed output";
    case DIPP_E_RUNNER: return "runner failure";
    case DIPP_E_UP_MESSAGE: return "malformed update message";
    case DIPP_E_UP_SIGNATURE: return "bad signature";
    case DIPP_E_UP_REPLAY: return "old or replayed version";
    case DIPP_E_UP_ARCH: return "wrong architecture";
    case DIPP_E_UP_HASH: return "hash mismatch";
    case DIPP_E_UP_DELTA: return "delta does not apply";
    case DIPP_E_UP_QUOTA: return "over storage quota";
    case DIPP_E_UP_STORE: return "store I/O error";
    case DIPP_E_UP_ROLLBACK: return "rolled back";
    case DIPP_E_UP_TESTRUN: return "test-run output of the wrong shape";
    case DIPP_E_UP_PROCS: return "refused by the procedure runtime";
    default: return code > DIPP_E_MODULE && code < 1000 ? "module error" : "unknown";
    }
}

int dipp_say(char *detail, size_t cap, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, cap, fmt, ap);
    va_end(ap);
    return code;
}
