/* threader.c -- test module: succeeds, but leaves a thread running after
 * its run. Its worker must be ended after the call, so that nothing of the
 * module runs between batches. */
#include <pthread.h>
#include <unistd.h>

#include "dipp_module.h"

static void *linger(void *arg) {
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int run(const dipp_batch *in, const dipp_params *p, dipp_batch *out) {
    (void)in, (void)p, (void)out;
    pthread_t t;
    return pthread_create(&t, NULL, linger, NULL) == 0 ? DIPP_OK : DIPP_ERR_NOMEM;
}

DIPP_MODULE_NO_PARAMS("threader", "1.0.0", run);
