/* errors.c -- names and the published number of DIPP's error codes. */
#include "errors.h"

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
    default: return code > DIPP_E_MODULE && code < 1000 ? "module error" : "unknown";
    }
}
