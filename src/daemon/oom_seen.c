/* oom_seen.c -- each attempt's GPUs at the last reading with it on them
 * (oom_seen.h). */
#include "oom_seen.h"

#include <assert.h>

void oom_seen_note(oom_seen *s, int attempt, int gpu, const core_reading *r) {
    if (r->total_mib <= 0) return; /* nothing to measure room by */
    if (s->attempt != attempt) {
        s->attempt = attempt;
        s->ngpus = 0;
    }
    int k = 0;
    while (k < s->ngpus && s->gpus[k].gpu != gpu) k++;
    if (k == s->ngpus) {
        assert(k < CORE_MAX_JOB_GPUS); /* a job has at most that many */
        if (k == CORE_MAX_JOB_GPUS) return;
        s->ngpus++;
    }
    s->gpus[k] = (oom_gpu_mem){gpu, r->used_mib, r->total_mib};
}

int oom_seen_get(const oom_seen *s, int attempt, const oom_gpu_mem **out) {
    *out = s->gpus;
    return s->attempt == attempt ? s->ngpus : 0;
}
