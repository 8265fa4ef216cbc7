/* fuzz_plfile.c -- fuzz target (fuzz.h) of the pipeline file reader
 * (pl_file.h) and of the evaluation section aegis-pipeline builds from it
 * (eval.h): a file is refused with a message naming it, or read and
 * its evaluation windows worked out within int64 and within
 * PL_EVAL_MAX_INTERVALS. Seeds: seeds/plfile/, Modyn-shaped files.
 */
#include "fuzz.h"

#include "eval.h"
#include "pl_file.h"

#include <string.h>
#include <unistd.h>

FUZZ_TOKENS(":-[]{},#\n &*'\"0123456789dhsy;()");

/* The windows of each handler: any that fails only for want of memory. */
static void check_windows(const pl_eval_config *ev) {
    const int64_t ends[] = {0, 1000, 100000};
    for (size_t i = 0; i < ev->nhandlers; i++) {
        pl_interval *iv = NULL;
        size_t n = 0;
        if (pl_eval_intervals(&ev->handlers[i].strategy, ends, 3, &iv, &n) != 0)
            continue;
        FUZZ_CHECK(n <= PL_EVAL_MAX_INTERVALS, "too many intervals");
        free(iv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[128], err[2048] = "";
    fuzz_write_file(data, size, ".yaml", path);
    pl_file cfg;
    int rc = pl_file_load(path, false, &cfg, err, sizeof(err));
    unlink(path);
    if (rc != 0) {
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0,
                   "a refusal that does not name the file");
        return 0;
    }
    pl_eval_config ev;
    if (cfg.evaluation.section &&
        pl_eval_config_parse(cfg.evaluation.section, &ev, err,
                             sizeof(err)) == 0) {
        check_windows(&ev);
        pl_eval_config_free(&ev);
    }
    pl_file_free(&cfg);
    return 0;
}
