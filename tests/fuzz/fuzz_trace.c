/* fuzz_trace.c -- fuzz target (fuzz.h) of `aegis sim`'s trace reader
 * (trace.h) with the bundled catalog: a trace is refused with a message
 * naming its file, or read with every job within the documented bounds
 * (submit times sorted in [0, TRACE_MAX_SUBMIT_S] and never -0, each
 * job_index once, figures finite and in range, user names by their
 * rule). Seeds: seeds/trace/, the reader's column layouts.
 */
#include "fuzz.h"

#include "core.h"
#include "trace.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

FUZZ_TOKENS(",\n#.-0123456789e \"\r");

static bool within(double v, double lo, double hi) {
    return isfinite(v) && v >= lo && v <= hi;
}

static void check_work(const cat_workload *w) {
    FUZZ_CHECK(w && w->name[0], "a job without a workload");
    FUZZ_CHECK(w->num_gpus >= 1 && w->num_gpus <= CORE_MAX_JOB_GPUS,
               "a GPU count out of range");
    FUZZ_CHECK(within(w->solo_s, 1e-3, TRACE_MAX_SUBMIT_S),
               "a duration out of range");
    FUZZ_CHECK(within(w->peak_mib, 0, 1e12) && within(w->peak_b_mib, 0, 1e12),
               "a peak out of range");
    FUZZ_CHECK(within(w->smact, 0, 1) && within(w->smocc, 0, 1) &&
                   within(w->drama, 0, 1),
               "an activity out of [0, 1]");
    for (int e = 0; e < CAT_NEST; e++)
        FUZZ_CHECK(w->est_mib[e] == CORE_UNKNOWN || within(w->est_mib[e], 0, 1e12),
                   "an estimate out of range");
}

static void check_job(const trace *t, int i) {
    const trace_job *j = &t->jobs[i];
    FUZZ_CHECK(within(j->submit_s, 0, TRACE_MAX_SUBMIT_S) &&
                   !signbit(j->submit_s),
               "a submit time out of range");
    FUZZ_CHECK(i == 0 || j->submit_s >= t->jobs[i - 1].submit_s,
               "jobs not sorted by submit time");
    FUZZ_CHECK(j->index >= 0, "a negative job_index");
    for (int k = 0; k < i; k++)
        FUZZ_CHECK(t->jobs[k].index != j->index, "a job_index twice");
    FUZZ_CHECK(within(j->load_cpus, 0, TRACE_MAX_LOAD_CPUS) &&
                   within(j->time_limit_s, 0, TRACE_MAX_LIMIT_S),
               "load_cpus or time_limit_s out of range");
    FUZZ_CHECK(t->has_users || j->user == 0, "a user without the column");
    const char *user = trace_user_name(t, j->user);
    size_t len = strlen(user);
    FUZZ_CHECK(len >= 1 && len <= TRACE_USER_MAX && user[0] != ' ' &&
                   user[len - 1] != ' ',
               "a user name against its rule");
    check_work(j->work);
    FUZZ_CHECK(j->work->num_gpus <= t->max_gpus, "max_gpus below a job's");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static cat_catalog *cat;
    char err[1024] = "", path[128];
    if (!cat && !(cat = cat_load(AEGIS_CATALOG, err, sizeof(err)))) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    fuzz_write_file(data, size, ".csv", path);
    trace *t = trace_load(path, cat, err, sizeof(err));
    if (!t) {
        FUZZ_CHECK(strncmp(err, path, strlen(path)) == 0,
                   "a refusal that does not name the file");
    } else {
        /* a job's order is checked against those before it: keep it short */
        for (int i = 0; i < t->count && i < 256; i++) check_job(t, i);
        trace_free(t);
    }
    unlink(path);
    return 0;
}
