/* dispatch.c -- sends each job to the server whose outstanding work runs
 * out first (dispatch.h), then groups the jobs by server. */
#include "dispatch.h"

#include "core.h"
#include "order_key.h"
#include "prefault.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = {"work", "slurm"};

const char *sim_dispatch_name(sim_dispatch_mode mode) {
    return mode_names[mode];
}

int sim_dispatch_parse(const char *name) {
    for (int m = 0; m < 2; m++)
        if (!strcmp(name, mode_names[m])) return m;
    return -1;
}

double sim_dispatch_mem_mib(const trace_job *job, int estimator) {
    const cat_workload *w = job->work;
    double est = w->est_mib[estimator];
    /* a GRES is a count: whole MiB, which also keeps the nodes' sums exact */
    return ceil((est == CORE_UNKNOWN ? w->peak_mib : est) * w->num_gpus);
}

/* The servers' drain times in a tournament tree: each inner node holds the
 * server, of those below it, whose work runs out first, with its time, so
 * the root is the pick and a change climbs one path comparing keys stored
 * in the nodes: O(log servers) per job, no lookups. */
typedef struct drain_node {
    uint64_t free_at;   /* when the server's outstanding work runs out, as
                           its order_key(): integers, which the compiler
                           picks between without a branch. Which of two
                           servers frees first is a coin toss, and a
                           branch mispredicted at each level of the tree
                           was a tenth of the dispatcher's time. */
    int32_t server;
} drain_node;

typedef struct drain_tree {
    int leaves;         /* power of two >= servers; leaves at [leaves, 2x) */
    drain_node *node;   /* padding leaves never run out: they never win */
} drain_tree;

static drain_node first_free(drain_node a, drain_node b) {
    int b_first = b.free_at < a.free_at; /* ties go to a, the lower index */
    a.free_at = b_first ? b.free_at : a.free_at;
    a.server = b_first ? b.server : a.server;
    return a;
}

static int tree_init(drain_tree *d, int servers) {
    d->leaves = 1;
    while (d->leaves < servers) d->leaves *= 2;
    d->node = malloc(2 * (size_t)d->leaves * sizeof(*d->node));
    if (!d->node) return -1;
    for (int i = 0; i < d->leaves; i++)
        d->node[d->leaves + i] =
            (drain_node){order_key(i < servers ? 0 : INFINITY), i};
    for (int i = d->leaves - 1; i >= 1; i--)
        d->node[i] = first_free(d->node[2 * i], d->node[2 * i + 1]);
    return 0;
}

/* Server s took more work: it now runs out at free_at. */
static void tree_set(drain_tree *d, int32_t s, double free_at) {
    int i = d->leaves + s;
    /* + 0.0: a -0.0 time keys as 0, so it ties with 0 as doubles do */
    d->node[i].free_at = order_key(free_at + 0.0);
    for (i /= 2; i >= 1; i /= 2)
        d->node[i] = first_free(d->node[2 * i], d->node[2 * i + 1]);
}

/* Picks every job's server into server_of[], counting them in count[]. */
static int plan_servers(const trace *t, int servers, int gpus,
                        int32_t *server_of, int32_t *count) {
    drain_tree d;
    if (tree_init(&d, servers) < 0) return -1;
    for (int j = 0; j < t->count; j++) {
        const trace_job *job = &t->jobs[j];
        drain_node pick = d.node[1];
        double free_at = order_key_value(pick.free_at);
        double from = free_at > job->submit_s ? free_at : job->submit_s;
        double work_s = job->work->num_gpus * job->work->solo_s / gpus;
        tree_set(&d, pick.server, from + work_s);
        server_of[j] = pick.server;
        count[pick.server]++;
    }
    free(d.node);
    return 0;
}

/* An array of one int32_t per job of t, on huge pages where they are to
 * be had: the plan's two such arrays, 8 MB of fresh pages on a
 * million-job trace, took a 4 KiB page fault each, a third of the run's
 * faults. */
static int32_t *job_array(const trace *t) {
    return prefault_huge_alloc((size_t)t->count * sizeof(int32_t));
}

int sim_dispatch_plan(sim_dispatch *d, const trace *t, int servers, int gpus) {
    d->servers = servers;
    d->start = calloc((size_t)servers + 1, sizeof(*d->start));
    d->ids = job_array(t);
    int32_t *server_of = job_array(t);
    int rc = -1;
    if (d->start && d->ids && server_of &&
        plan_servers(t, servers, gpus, server_of, d->start + 1) == 0) {
        /* Counts to offsets, then each job after the ones before it on its
         * server: start[s + 1] serves as s's fill point and ends at s's end. */
        for (int s = 1; s <= servers; s++) d->start[s] += d->start[s - 1];
        for (int s = servers; s >= 1; s--) d->start[s] = d->start[s - 1];
        for (int j = 0; j < t->count; j++)
            d->ids[d->start[server_of[j] + 1]++] = j;
        rc = 0;
    }
    free(server_of);
    return rc;
}

void sim_dispatch_free(sim_dispatch *d) {
    free(d->start);
    free(d->ids);
    d->start = d->ids = NULL;
}
