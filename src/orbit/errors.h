/* errors.h -- DIPP's published error codes. A lost batch is reported as
 * code * 1000 + pipeline * 100 + module (the module's 1-based place in the
 * pipeline), the scheme of the flight DIPP. Every code the flight DIPP's
 * table defines (discosat/DIPP src/include/dipp_error.h: 100-102, 200-201,
 * 300-304, 400-402, 500-517, 600-602, 700 + n) means here what it means
 * there; this implementation's own codes take numbers that table leaves
 * free (520-522, 603-605, 1001-1011), so a ground tool reading either
 * DIPP's log_status reads the same meaning (docs/orbit.md lists them). */
#ifndef DIPP_ERRORS_H
#define DIPP_ERRORS_H

#include <stddef.h>
#include <stdint.h>

enum dipp_code {
    DIPP_E_OK = 0,
    /* the flight's own numbers, with the flight's meaning */
    DIPP_E_NOMEM = 100,          /* flight MEMORY_MALLOC: an allocation failed */
    DIPP_E_MISSING_MODULE = 501, /* flight SO_NOT_FOUND: no module file, or dlopen failed */
    DIPP_E_MISSING_SYMBOL = 502, /* flight RUN_NOT_FOUND: no dipp_module, or no run */
    DIPP_E_CRASH = 600,          /* flight EXIT_CRASH: ended by a signal */
    DIPP_E_EXITED = 601,         /* flight EXIT_NORMAL: exited without a result */
    DIPP_E_TIMEOUT = 602,        /* flight EXIT_TIMEOUT: past its time limit, killed */
    DIPP_E_MODULE = 700,         /* flight EXIT_CUSTOM: 700 + the module's code 1..99 */
    /* this implementation's, where the flight's table is free (its 503-506
     * are "parameter not found", 601 an exit without a code) */
    DIPP_E_ABI = 520,            /* built for another DIPP_ABI_VERSION */
    DIPP_E_PARAM = 521,          /* a parameter it does not declare, or out of range */
    DIPP_E_INPUT = 522,          /* the batch handed to it is malformed */
    DIPP_E_SANDBOX = 603,        /* killed by the seccomp filter (SIGSYS) */
    DIPP_E_OUTPUT = 604,         /* its output batch or return value is malformed */
    DIPP_E_RUNNER = 605,         /* the runner could not start it (fork, memory) */
    /* updates (upload.h), above the modules' 100-999 (the flight defines
     * nothing from 1000); published with pipeline 0 and module 0 */
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
/* The code a module's own return value rc (not 0) publishes, as the flight
 * DIPP maps it: 1-99 are 700 + rc, 100-999 are published as they are (a
 * flight code, 100 for a failed allocation); anything else is
 * DIPP_E_OUTPUT (1000 and above would read as an update's code). */
int dipp_module_code(int rc);
/* A short name for code ("crash", "timeout", "module error"...). */
const char *dipp_code_name(int code);
/* Writes why (printf) into detail[cap]: returns code, so a refusal is
 * one statement. */
int dipp_say(char *detail, size_t cap, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
