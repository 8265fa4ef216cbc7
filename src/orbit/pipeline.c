/* pipeline.c -- a definition's modules in turn over one batch. Each
 * step's output has room for 4x the input's bytes (RGB from Bayer is 3x)
 * plus 1 MiB; pages untouched cost nothing. The steps before the last
 * write into the runner's kept step outputs (step_pool.h); the last
 * writes a fresh batch, which the caller gets and closes. Every step of
 * a batch starts on the CPU its caller was on when the batch began: each
 * module then reads what the step before wrote from that CPU's cache, as
 * the same steps in one process would. */
#include "pipeline.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

static uint64_t room_for(const dbatch *in) {
    return 4 * batch_used(in) + (1u << 20);
}

static uint32_t lose(pipe_report *rep, const pdef *d, unsigned k, int code) {
    rep->code = code;
    rep->module = k + 1;
    snprintf(rep->name, sizeof rep->name, "%s", d->step[k].name);
    return rep->number = dipp_error_number(code, d->id, k + 1);
}

dbatch *pipeline_step_output(step_pool *pool, const pdef *d, unsigned k,
                             const dbatch *src, dbatch *fresh) {
    if (k + 1 < d->count)
        return step_pool_take(pool, d->id, k, room_for(src));
    return batch_create(fresh, room_for(src)) == 0 ? fresh : NULL;
}

static uint32_t run_steps(runner *r, const pdef *d, const dbatch *in, dbatch *out,
                          pipe_report *rep) {
    static dbatch fresh;
    const dbatch *src = in;
    for (unsigned k = 0; k < d->count; k++) {
        dbatch *dst = pipeline_step_output(&r->pool, d, k, src, &fresh);
        if (!dst) {
            snprintf(rep->detail, sizeof rep->detail, "no shared memory for the output");
            return lose(rep, d, k, DIPP_E_RUNNER);
        }
        run_report rr;
        int code = runner_run(r, d->step[k].name, &d->step[k].params, src, dst, &rr);
        rep->ms[k] = rr.ms;
        rep->run_us[k] = rr.run_us;
        rep->cpu[k] = rr.cpu;
        if (code) {
            if (dst == &fresh)
                batch_close(dst);
            snprintf(rep->detail, sizeof rep->detail, "%s", rr.detail);
            return lose(rep, d, k, code);
        }
        src = dst;
    }
    *out = *src;
    return 0;
}

uint32_t pipeline_run(runner *r, const pdef *d, const dbatch *in, dbatch *out,
                      pipe_report *rep) {
    assert(d->count >= 1 && d->count <= PDEF_MAX_STEPS); /* decoders refuse others */
    memset(rep, 0, sizeof *rep);
    r->cpu = plat_cpu_now();
    uint32_t number = run_steps(r, d, in, out, rep);
    r->cpu = PLAT_CPU_ANY; /* a single run (a test-run) goes where it may */
    return number;
}
