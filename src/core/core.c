/* core.c -- skeleton of the scheduling loop. */
#include "core.h"
#include <stdlib.h>

struct core_state { int num_gpus; };

core_state *core_create(const core_config *cfg, int num_gpus,
                        const double *gpu_total_mib, char *err, size_t errlen) {
    core_state *c = calloc(1, sizeof(*c));
    if (c) c->num_gpus = num_gpus;
    return c;
}
void core_destroy(core_state *core) { free(core); }
int core_submit(core_state *core, const core_job_spec *job, double now,
                char *err, size_t errlen) { return 0; }
int core_cancel(core_state *core, int64_t job_id, double now) { return -1; }
void core_sample(core_state *core, int gpu, const struct core_sample *s,
                 double now) {}
void core_job_active(core_state *core, int64_t job_id, double now) {}
core_outcome core_job_exit(core_state *core, int64_t job_id, core_exit how,
                           double now, double *next_floor_mib) {
    return CORE_DONE;
}
void core_gpu_drain(core_state *core, int gpu, bool drained) {}
int core_schedule(core_state *core, double now, core_launch *out, int max) {
    return 0;
}
double core_next_wakeup(const core_state *core, double now) { return -1; }
int core_queued_count(const core_state *core) { return 0; }
int core_running_count(const core_state *core) { return 0; }
int core_idle_gpu_count(const core_state *core) { return core->num_gpus; }
int core_ladder(double total_mib, double max_step_mib, double *buckets,
                int max) { return 0; }
