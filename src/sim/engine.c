/* engine.c -- replays a trace server by server, in parallel, into one
 * sim_result.
 *
 * The dispatcher decides up front which server runs which job (dispatch.h),
 * so each server's replay (replay.h) needs nothing from the others. Worker
 * threads take servers one at a time from a shared counter. A replay writes
 * its jobs' records and its server's log of attempts straight into the
 * result; when every server is done, their figures are summed in server
 * order. Nothing depends on which thread ran which server: the output is
 * the same on any number of threads. Under Slurm's dispatch the servers
 * are stepped together instead (slurm_step.h), into the same result.
 */
#include "engine.h"

#include "dispatch.h"
#include "prefault.h"
#include "replay.h"
#include "slurm_step.h"
#include "waits.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct engine {
    const trace *trace;
    const sim_options *opt;
    sim_dispatch dispatch;
    replay *servers;            /* opt->servers replays */
    sim_result *res;
    atomic_int next_server;     /* the next server a worker takes */
    atomic_bool failed;         /* a replay failed: take no more */
} engine;

/* ---- workers --------------------------------------------------------------- */

/* Replays servers until none is left or one has failed, each on the
 * per-job arrays of the one before it on this thread. */
static void *worker(void *arg) {
    engine *e = arg;
    replay *last = NULL;
    for (;;) {
        if (atomic_load(&e->failed)) break;
        int s = atomic_fetch_add(&e->next_server, 1);
        if (s >= e->opt->servers) break;
        if (last) replay_reuse(&e->servers[s], last);
        last = &e->servers[s];
        if (replay_run(last) < 0) atomic_store(&e->failed, true);
    }
    return NULL;
}

static int thread_count(const sim_options *opt) {
    long n = opt->threads > 0 ? opt->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n < opt->servers ? (int)n : opt->servers;
}

/* Replays every server on up to thread_count() threads, the calling one
 * included. A thread that cannot be started leaves its share to the
 * others. */
static void replay_servers(engine *e) {
    enum { MAX_THREADS = 256 };
    pthread_t threads[MAX_THREADS];
    int wanted = thread_count(e->opt), started = 0;
    if (wanted > MAX_THREADS) wanted = MAX_THREADS;
    atomic_store(&e->next_server, 0);
    while (started < wanted - 1 &&
           pthread_create(&threads[started], NULL, worker, e) == 0)
        started++;
    worker(e);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
}

/* ---- the result ------------------------------------------------------------ */

/* The result, its jobs' records and its servers' logs to be filled by the
 * replays. */
static sim_result *result_new(engine *e, const char *policy) {
    sim_result *r = calloc(1, sizeof(*r));
    if (!r) return NULL;
    r->trace = e->trace;
    r->policy = policy;
    r->sharing = share_mode_name(e->opt->sharing);
    r->dispatch = sim_dispatch_name(e->opt->dispatch);
    r->servers = e->opt->servers;
    r->gpus_per_server = e->opt->gpus;
    r->njobs = e->trace->count;
    r->start_s = e->trace->jobs[0].submit_s;
    for (int i = 0; i < r->njobs && !r->loads; i++)
        r->loads = e->trace->jobs[i].load_cpus > 0;
    r->jobs = malloc((size_t)r->njobs * sizeof(*r->jobs));
    r->logs = calloc((size_t)r->servers, sizeof(*r->logs));
    if (e->opt->reasons)
        r->wait_by_reason = calloc((size_t)r->njobs * SIM_WAIT_KINDS,
                                   sizeof(*r->wait_by_reason));
    if (!r->jobs || !r->logs || (e->opt->reasons && !r->wait_by_reason)) {
        sim_result_free(r);
        return NULL;
    }
    return r;
}

/* Closes every server's books at the run's last end and sums the servers'
 * figures in server order. */
static void result_close(engine *e) {
    sim_result *r = e->res;
    int nservers = e->opt->servers;
    double last = r->start_s;
    for (int s = 0; s < nservers; s++)
        if (e->servers[s].last_end_s > last) last = e->servers[s].last_end_s;
    int finished = 0;
    for (int s = 0; s < nservers; s++) {
        replay *p = &e->servers[s];
        replay_close_books(p, last);
        r->energy_j += p->energy_j;
        r->busy_gpu_s += p->busy_gpu_s;
        r->load_cpu_s += p->load_cpu_s;
        r->ooms += p->ooms;
        r->stopped += p->stopped;
        r->timeouts += p->timeouts;
        finished += p->finished;
    }
    r->makespan_s = last - r->start_s;
    r->unfinished = r->njobs - finished;
}

/* The first failed server's reason, so the message does not depend on
 * which thread failed first. */
static void first_error(const engine *e, char *err, size_t errlen) {
    for (int s = 0; s < e->opt->servers; s++)
        if (e->servers[s].err[0]) {
            snprintf(err, errlen, "%s", e->servers[s].err);
            return;
        }
    snprintf(err, errlen, "simulator: a server's replay failed");
}

/* Sends the jobs to servers and sets up their replays. The dispatch is one
 * pass on one thread, so the result's job records meanwhile have their
 * pages mapped on the other (prefault.h): the replays then write them
 * without stopping for page faults. Under Slurm's dispatch the servers
 * start with no jobs: they get them as they go (slurm_step.h). */
static int engine_init(engine *e, const trace *t, const sim_options *opt,
                       const char *policy) {
    e->res = result_new(e, policy);
    if (!e->res) return -1;
    bool planned = opt->dispatch == SIM_DISPATCH_WORK;
    prefault pages;
    prefault_start(&pages, e->res->jobs, (size_t)t->count * sizeof(*e->res->jobs));
    int rc = planned ? sim_dispatch_plan(&e->dispatch, t, opt->servers, opt->gpus)
                     : 0;
    prefault_finish(&pages);
    e->servers = calloc((size_t)opt->servers, sizeof(*e->servers));
    if (rc < 0 || !e->servers) return -1;
    const int32_t *start = e->dispatch.start;
    int most = 0;
    for (int s = 0; planned && s < opt->servers; s++)
        if (start[s + 1] - start[s] > most) most = start[s + 1] - start[s];
    for (int s = 0; s < opt->servers; s++) {
        e->servers[s] = (replay){
            .opt = opt, .policy = policy, .server = s, .trace = t->jobs,
            .ids = planned ? &e->dispatch.ids[start[s]] : NULL,
            .njobs = planned ? start[s + 1] - start[s] : 0, .jobs_room = most,
            .start_s = t->jobs[0].submit_s, .out = e->res->jobs,
            .wait_by_reason = e->res->wait_by_reason,
            .log = &e->res->logs[s]};
    }
    return 0;
}

static void engine_free(engine *e) {
    for (int s = 0; e->servers && s < e->opt->servers; s++)
        replay_free(&e->servers[s]);
    free(e->servers);
    sim_dispatch_free(&e->dispatch);
}

sim_result *sim_run(const trace *t, const sim_options *opt, const char *policy,
                    char *err, size_t errlen) {
    engine e = {.trace = t, .opt = opt};
    int rc = engine_init(&e, t, opt, policy);
    if (rc == 0) {
        if (opt->dispatch == SIM_DISPATCH_SLURM) {
            if (slurm_step_run(e.servers, t, opt, e.res->jobs) < 0)
                atomic_store(&e.failed, true);
        } else {
            replay_servers(&e);
        }
        if (atomic_load(&e.failed)) {
            first_error(&e, err, errlen);
            rc = -2;
        } else {
            result_close(&e);
        }
    }
    if (rc == -1) snprintf(err, errlen, "simulator: out of memory");
    sim_result *r = rc == 0 ? e.res : NULL;
    if (!r) sim_result_free(e.res);
    engine_free(&e);
    return r;
}

void sim_result_free(sim_result *r) {
    if (!r) return;
    for (int s = 0; r->logs && s < r->servers; s++) {
        free(r->logs[s].attempts);
        free(r->logs[s].gpus);
    }
    free(r->logs);
    free(r->jobs);
    free(r->wait_by_reason);
    free(r);
}

const sim_attempt *sim_attempt_of(const sim_result *r, const sim_job *job,
                                  int32_t a) {
    return &r->logs[job->server].attempts[a];
}

int sim_attempt_gpu(const sim_result *r, int s, const sim_attempt *at, int k) {
    return s * r->gpus_per_server + r->logs[s].gpus[at->gpu_off + k];
}
