/* errors.h -- DIPP's published error codes. A lost batch is reported as
 * code * 1000 + pipeline * 100 + module (the module's 1-based place in the
 * pipeline), the scheme of the flight DIPP; codes 503-505 and 601-605 are
 * this implementation's additions (docs/orbit.md lists them all). */
#ifndef DIPP_ERRORS_H
#define DIPP_ERRORS_H

#include <stddef.h>
#include <stdint.h>

enum dipp_code {
    DIPP_E_OK = 0,
    DIPP_E_MISSING_MODULE = 501, /* no such module file, or dlopen failed */
    DIPP_E_MISSING_SYMBOL = 502, /* no dipp_module symbol, or no run */
    DIPP_E_ABI = 503,            /* built for another DIPP_ABI_VERSION */
    DIPP_E_PARAM = 504,          /* a parameter it does not declare, or out of range */
    DIPP_E_INPUT = 505,          /* the batch handed to it is malformed */
    DIPP_E_CRASH = 600,          /* ended by a signal or exited without a result */
    DIPP_E_NOMEM = 601,          /* reported an allocation failure (memory limit) */
    DIPP_E_TIMEOUT = 602,        /* past its time limit: killed by the watchdog */
    DIPP_E_SANDBOX = 603,        /* killed by the seccomp filter (SIGSYS) */
    DIPP_E_OUTPUT = 604,         /* its output batch or return value is malformed */
    DIPP_E_RUNNER = 605,         /* the runner could not start it (fork, memory) */
    DIPP_E_MODULE = 700,         /* 700 + the module's own code (1..299) */
    /* updates (upload.h), above the modules' 700-999; published with
     * pipeline 0 and module 0 */
    DIPP_E_UP_MESSAGE = 1001,  /* a malformed manifest, chunk or key message */
    DIPP_E_UP_SIGNATURE = 1002, /* the signature does not verify */
    DIPP_E_UP_REPLAY = 1003,   /* version not above the highest accepted */
    DIPP_E_UP_ARCH = 1004,     /* built for another architecture */
    DIPP_E_UP_HASH = 1005,     /* SHA-256 of the payload or result differs */
    DIPP_E_UP_DELTA = 1006,    /* delta base not on board, or it does not apply */
    DIPP_E_UP_QUOTA = 1007,    /* over the on-board storage quota */
    DIPP_E_UP_STORE = 1008,    /* the store could not be read or written */
    DIPP_E_UP_ROLLBACK = 1009, /* failed in flight too often: rolled back */
    DIPP_E_UP_TESTRUN = 1010,  /* test-run output not of the declared shape */
    DIPP_E_UP_PROCS = 1011,    /* procedures refused by the DISH runtime on board */
};

/* The published number: code*1000 + pipeline*100 + module. */
uint32_t dipp_error_number(int code, unsigned pipeline, unsigned module);
/* A short name for code ("crash", "timeout", "module error"...). */
const char *dipp_code_name(int code);
/* Writes why (printf) into detail[cap]: returns code, so a refusal is
 * one statement. */
int dipp_say(char *detail, size_t cap, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
