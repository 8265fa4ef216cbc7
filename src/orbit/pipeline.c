/* pipeline.c -- a definition's modules in turn over one batch. Each output
 * is a fresh shared memory batch with room for 4x the input's bytes (RGB
 * from Bayer is 3x) plus 1 MiB; pages untouched cost nothing. */
#include "pipeline.h"

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

uint32_t pipeline_run(runner *r, const pdef *d, const dbatch *in, dbatch *out,
                      pipe_report *rep) {
    memset(rep, 0, sizeof *rep);
    dbatch cur[2];
    const dbatch *src = in;
    for (unsigned k = 0; k < d->count; k++) {
        dbatch *dst = &cur[k % 2];
        if (batch_create(dst, room_for(src))) {
            snprintf(rep->detail, sizeof rep->detail, "no shared memory for the output");
            if (src != in)
                batch_close((dbatch *)src);
            return lose(rep, d, k, DIPP_E_RUNNER);
        }
        run_report rr;
        int code = runner_run(r, d->step[k].name, &d->step[k].params, src, dst, &rr);
        rep->ms[k] = rr.ms;
        if (src != in)
            batch_close((dbatch *)src);
        if (code) {
            batch_close(dst);
            snprintf(rep->detail, sizeof rep->detail, "%s", rr.detail);
            return lose(rep, d, k, code);
        }
        src = dst;
    }
    *out = *src;
    return 0;
}
