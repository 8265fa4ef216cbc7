/* errors.c -- names and the published number of DIPP's error codes. The
 * flight DIPP's codes a module may publish as they are (100-517) are named
 * as that DIPP's README names them, so the ground decodes a number the same
 * whichever DIPP sent it. */
#include "errors.h"

#include <stdarg.h>
#include <stdio.h>

uint32_t dipp_error_number(int code, unsigned pipeline, unsigned module) {
    return (uint32_t)code * 1000u + pipeline * 100u + module;
}

int dipp_module_code(int rc) {
    if (rc >= 1 && rc <= 99)
        return DIPP_E_MODULE + rc;
    return rc >= 100 && rc <= 999 ? rc : DIPP_E_OUTPUT;
}

/* The flight DIPP's table (discosat/DIPP README, dipp_error.h) for the
 * codes this DIPP publishes only when a module returns them. */
static const char *flight_name(int code) {
    static const struct { int code; const char *name; } tab[] = {
        {101, "realloc failed"}, {102, "free failed"},
        {200, "message queue not found"}, {201, "message queue empty"},
        {300, "shared memory not found"}, {301, "shared memory detach"},
        {302, "shared memory remove"}, {303, "shared memory attach"},
        {304, "shared memory stats"}, {400, "pipe read"}, {401, "pipe empty"},
        {402, "pipe create"}, {500, "pid not found"},
        {503, "bool parameter not found"}, {504, "int parameter not found"},
        {505, "float parameter not found"}, {506, "string parameter not found"},
        {507, "bool metadata not found"}, {508, "int metadata not found"},
        {509, "float metadata not found"}, {510, "string metadata not found"},
        {511, "duplicate metadata key"}, {512, "remote parameter pull failed"},
        {513, "remote parameter push failed"}, {514, "vmem not found"},
        {515, "vmem upload failed"}, {516, "brotli decode failed"},
        {517, "clock_gettime failed"},
    };
    for (size_t k = 0; k < sizeof tab / sizeof tab[0]; k++)
        if (tab[k].code == code)
            return tab[k].name;
    return NULL;
}

const char *dipp_code_name(int code) {
    switch (code) {
    case DIPP_E_OK: return "ok";
    case DIPP_E_NOMEM: return "allocation failed";
    case DIPP_E_MISSING_MODULE: return "missing module";
    case DIPP_E_MISSING_SYMBOL: return "missing symbol";
    case DIPP_E_ABI: return "wrong ABI version";
    case DIPP_E_PARAM: return "bad parameter";
    case DIPP_E_INPUT: return "malformed input batch";
    case DIPP_E_CRASH: return "crash";
    case DIPP_E_EXITED: return "exited without a result";
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
    default: break;
    }
    const char *f = flight_name(code);
    if (f)
        return f;
    if (code > DIPP_E_MODULE && code < 800)
        return "module error";
    return code >= 100 && code < 1000 ? "module's own code" : "unknown";
}

int dipp_say(char *detail, size_t cap, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, cap, fmt, ap);
    va_end(ap);
    return code;
}
