/* oom_check.c -- an OOM message checked against its GPUs' memory
 * (oom_check.h): the message's own numbers first, then each GPU's last
 * reading with the job on it. */
#include "oom_check.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>

#include "oom_numbers.h"
#include "oom_text.h"

/* Whether free MiB of total leave no room for request (< 0: not said):
 * less than the request, or under OOM_ROOM_FRACTION of the GPU. */
static bool oom_no_room(double free_mib, double total_mib,
                        double request_mib) {
    return free_mib < request_mib || free_mib < OOM_ROOM_FRACTION * total_mib;
}

/* mib as the reasons write it: whole MiB with thousands separated
 * ("30,000"), or two decimals under 1 MiB. */
static void oom_mib_text(double mib, char *buf, size_t len) {
    if (mib < 1) {
        snprintf(buf, len, "%.2f", mib > 0 ? mib : 0);
        return;
    }
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%.0f", mib);
    size_t at = 0;
    for (int i = 0; i < n && at + 2 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
}

/* "GPU 0 had 30,000 of 40,960 MiB free" */
static void oom_gpu_text(const oom_gpu_mem *g, char *buf, size_t len) {
    char free_text[32], total_text[32];
    oom_mib_text(g->total_mib - g->used_mib, free_text, sizeof(free_text));
    oom_mib_text(g->total_mib, total_text, sizeof(total_text));
    snprintf(buf, len, "GPU %d had %s of %s MiB free", g->gpu, free_text,
             total_text);
}

/* The GPU of the job that was fullest at its last reading. */
static const oom_gpu_mem *oom_fullest(const oom_gpu_mem *gpus, int ngpus) {
    const oom_gpu_mem *full = &gpus[0];
    for (int k = 1; k < ngpus; k++)
        if ((gpus[k].total_mib - gpus[k].used_mib) / gpus[k].total_mib <
            (full->total_mib - full->used_mib) / full->total_mib)
            full = &gpus[k];
    return full;
}

/* The first GPU whose last reading left no room for the request. */
static const oom_gpu_mem *oom_full_gpu(const oom_gpu_mem *gpus, int ngpus,
                                       double request_mib) {
    for (int k = 0; k < ngpus; k++) {
        assert(gpus[k].total_mib > 0);
        if (oom_no_room(gpus[k].total_mib - gpus[k].used_mib,
                        gpus[k].total_mib, request_mib))
            return &gpus[k];
    }
    return NULL;
}

/* The reason of a message every GPU contradicts. */
static void oom_contradiction(const char *message, const oom_numbers *said,
                              const oom_gpu_mem *gpus, int ngpus, char *why,
                              size_t len) {
    char asked[64] = "", gpu[96], request[32];
    if (said->request_mib >= 0) {
        oom_mib_text(said->request_mib, request, sizeof(request));
        snprintf(asked, sizeof(asked), ", asking for %s MiB", request);
    }
    oom_gpu_text(oom_fullest(gpus, ngpus), gpu, sizeof(gpu));
    if (ngpus == 1)
        snprintf(why, len, "stderr says out of GPU memory (\"%s\"%s), but %s "
                 "at its last sample: not retried as an OOM", message, asked,
                 gpu);
    else
        snprintf(why, len, "stderr says out of GPU memory (\"%s\"%s), but "
                 "its %d GPUs had room at their last samples (the fullest: "
                 "%s): not retried as an OOM", message, asked, ngpus, gpu);
}

oom_verdict oom_check(const char *text, size_t n, const oom_gpu_mem *gpus,
                      int ngpus, char *why, size_t len) {
    const char *message = oom_text_find(text, n);
    if (!message) {
        snprintf(why, len, "no out-of-memory message");
        return OOM_NOT_SAID;
    }
    oom_numbers said;
    oom_numbers_find(text, n, &said);
    if (said.free_mib >= 0 &&
        oom_no_room(said.free_mib, said.total_mib, said.request_mib)) {
        char free_text[32];
        oom_mib_text(said.free_mib, free_text, sizeof(free_text));
        snprintf(why, len, "the message's own numbers: %s MiB free as it "
                 "failed", free_text);
        return OOM_CONFIRMED;
    }
    if (ngpus == 0) {
        snprintf(why, len, "no sample of its GPUs with it on them");
        return OOM_TRUSTED;
    }
    const oom_gpu_mem *full = oom_full_gpu(gpus, ngpus, said.request_mib);
    if (full) {
        oom_gpu_text(full, why, len);
        return OOM_CONFIRMED;
    }
    oom_contradiction(message, &said, gpus, ngpus, why, len);
    return OOM_CONTRADICTED;
}
