/* feeds.c -- the jobs of one data feed together (docs/feed.md, "The feed
 * in the scheduler").
 *
 * Jobs that read one feed run best beside each other and its producer:
 * the feed's batches on one GPU reach its consumers there by CUDA IPC,
 * not through host memory, and a simulated feed pays its data loading
 * once per GPU it runs on (docs/simulator.md). So a job of a feed whose
 * jobs run already tries their GPUs before any other, idle ones
 * included, and waits for them while they only observe their newest job
 * (for observe_s at most while it is not seen active) or fill their
 * telemetry window: both end by themselves, within seconds. Not where
 * the GPU's memory as it reads now could not take the job: that gate
 * waits for a job to leave, and the wait would be for nothing.
 * Where a gate that waits for a job to leave (memory, pressure, the
 * policy's rule) refuses it, it goes elsewhere as any job would, so the
 * preference never leaves a job waiting on a full GPU.
 *
 * Nor an MPS GPU whose jobs are another user's (a producer of one user,
 * consumers of another): MPS serves one user at a time, so such a feed's
 * jobs share only GPUs that do not share through MPS (core_place_shared()
 * turns the GPU away), and a consumer goes elsewhere rather than wait.
 *
 * The feed's producer comes first: while it waits in the queue, the
 * feed's other jobs wait for it, since they read nothing until it runs,
 * and where it lands says where they go.
 */
#include "core_priv.h"
#include "alloc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int core_feed_index(core_state *core, const core_job_spec *spec, char *err,
                    size_t errlen) {
    if (!spec->feed || !spec->feed[0]) return -1;
    if (strlen(spec->feed) > CORE_FEED_NAME_MAX) {
        snprintf(err, errlen, "job %lld: feed name longer than %d bytes",
                 (long long)spec->id, CORE_FEED_NAME_MAX);
        return -2;
    }
    for (int i = 0; i < core->nfeeds; i++)
        if (strcmp(core->feeds[i]->name, spec->feed) == 0 &&
            core->feeds[i]->owner == spec->feed_owner)
            return i;
    if (core->nfeeds == core->feeds_cap) {
        int cap = core->feeds_cap ? core->feeds_cap * 2 : 4;
        core_feed **more =
            core_realloc(core->feeds, (size_t)cap * sizeof(*more));
        if (!more) goto oom;
        core->feeds = more;
        core->feeds_cap = cap;
    }
    core_feed *f = core_calloc(1, sizeof(*f));
    if (!f) goto oom;
    snprintf(f->name, sizeof(f->name), "%s", spec->feed);
    f->owner = spec->feed_owner;
    core->feeds[core->nfeeds] = f;
    return core->nfeeds++;
oom:
    snprintf(err, errlen, "job %lld: out of memory", (long long)spec->id);
    return -2;
}

void core_feeds_free(core_state *core) {
    for (int i = 0; i < core->nfeeds; i++) free(core->feeds[i]);
    free(core->feeds);
}

void core_feed_queued(core_state *core, const core_job *job, int sign) {
    if (job->feed < 0 || !job->spec.feed_producer) return;
    core_feed *f = core->feeds[job->feed];
    f->producers_queued += sign;
    assert(f->producers_queued >= 0);
    if (sign > 0) f->producer = job->spec.id;
}

void core_feed_runs(core_state *core, const core_job *job, int sign) {
    if (job->feed < 0) return;
    core_feed *f = core->feeds[job->feed];
    for (int k = 0; k < job->spec.num_gpus; k++) {
        int g = job->gpus[k];
        f->on_gpu[g] += sign;
        assert(f->on_gpu[g] >= 0);
        uint64_t bit = (uint64_t)1 << g;
        f->gpus = f->on_gpu[g] > 0 ? f->gpus | bit : f->gpus & ~bit;
    }
}

uint64_t core_feed_gpus(const core_state *core, const core_job *job,
                        uint64_t allowed) {
    if (job->feed < 0 || !core->cfg.feed_colocate ||
        !core_may_share(core, job))
        return 0;
    return core->feeds[job->feed]->gpus & allowed;
}

/* A wait for one of the feed's GPUs: the gates that end by themselves. */
static bool feed_gpu_opens_later(core_state *core, const core_job *job,
                                 int g, double now, core_reason *r) {
    core_gpu *gpu = &core->gpus[g];
    if (gpu->drained || gpu->alone || !share_gpu_collocates(&gpu->share) ||
        core_gpu_other_user(gpu, job) ||
        core_wants_mig(core, job, core_demand(core, job), gpu))
        return false;
    /* A job never seen active (a producer whose batches stay in host
     * memory, a job that never touches its GPU) would keep the GPU
     * closed for ever: waited for observe_s after its placement at most. */
    bool unseen = gpu->unseen > 0 && now < gpu->placed_at + core->cfg.observe_s;
    bool observing = unseen || now < gpu->open_at;
    bool filling = (core->pol->uses_telemetry || job->floor_mib > 0) &&
                   !win_full(&gpu->win, now);
    if (!observing && !filling) return false;
    /* Nor a GPU whose memory, as it reads now, could not take the job once
     * open: it would only send the job elsewhere after the wait. */
    if (core_gpu_free_now(gpu, now) <
        core_demand(core, job) + core_guard(core, gpu))
        return false;
    if (r) {
        r->gpu = g;
        r->until = !observing ? win_full_at(&gpu->win)
                   : unseen ? -1 : gpu->open_at;
    }
    return true;
}

bool core_feed_waits(core_state *core, const core_job *job, double now,
                     core_reason *r) {
    if (job->feed < 0) return false;
    const core_feed *f = core->feeds[job->feed];
    core_reason why = {.kind = CORE_WAIT_FEED, .gpu = -1, .feed = f->name,
                       .job = f->producer};
    bool waits = !job->spec.feed_producer && f->producers_queued > 0;
    uint64_t gpus = core_feed_gpus(core, job, CORE_ALL_GPUS);
    if (!waits && __builtin_popcountll(gpus) >= job->spec.num_gpus)
        for (uint64_t m = gpus; m && !waits; m &= m - 1)
            waits = feed_gpu_opens_later(core, job, __builtin_ctzll(m), now,
                                         &why);
    if (waits && r) *r = why;
    return waits;
}
