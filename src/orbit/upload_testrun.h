/* upload_testrun.h -- the test-run of an uploaded module before it is
 * activated: one run in the sandbox, with the flight limits, on a
 * reference image of the format its manifest declares. */
#ifndef DIPP_UPLOAD_TESTRUN_H
#define DIPP_UPLOAD_TESTRUN_H

#include <stddef.h>

#include "runner.h"
#include "upload_msg.h"

#define UP_TEST_SIDE 448 /* the reference image: 2x2 tiles of 224 */

/* up_test_fn with ctx a started runner: the module's code (errors.h), or
 * DIPP_E_UP_TESTRUN when it succeeded with no output or output of another
 * format or shape than declared. */
int up_test_in_sandbox(void *ctx, const char *path, const up_manifest *m,
                       char *detail, size_t cap);

#endif
