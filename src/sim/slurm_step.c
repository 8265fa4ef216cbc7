/* slurm_step.c -- Slurm's FIFO over aegis_mem, stepping the servers'
 * replays together (slurm_step.h). */
#include "slurm_step.h"

#include "dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct slurm {
    replay *servers;
    const trace *trace;
    const sim_options *opt;
    double *free_mib;   /* each node's unallocated aegis_mem */
    bool *touched;      /* the node replayed or took a job this moment */
    int head;           /* the first job Slurm has not started or refused */
} slurm;

/* The earliest moment due on any server, or the head's submit if it is
 * new since `now` (a head that waited already waits for a job to end). */
static double next_moment(const slurm *s, double now) {
    double t = INFINITY;
    for (int n = 0; n < s->opt->servers; n++) {
        double due = replay_next_t(&s->servers[n]);
        if (due < t) t = due;
    }
    if (s->head < s->trace->count) {
        double submit = s->trace->jobs[s->head].submit_s;
        if (submit > now && submit < t) t = submit;
    }
    return t;
}

/* Starts the submitted jobs at the head of the queue that a node has
 * room for, in order, until one fits none. */
static int start_jobs(slurm *s, double t, double node_mib) {
    while (s->head < s->trace->count && s->trace->jobs[s->head].submit_s <= t) {
        double need = sim_dispatch_mem_mib(&s->trace->jobs[s->head],
                                           s->opt->estimator);
        if (need > floor(node_mib)) { /* refused at submit: never starts */
            s->head++;
            continue;
        }
        int n = 0;
        while (n < s->opt->servers && s->free_mib[n] < need) n++;
        if (n == s->opt->servers) return 0;
        if (replay_add(&s->servers[n], s->head, t) < 0) return -1;
        s->free_mib[n] -= need;
        s->touched[n] = true;
        s->head++;
    }
    return 0;
}

/* One moment t: the servers' events, Slurm's starts, then each touched
 * server's arrivals and decisions. Returns 0, or -1 with the failed
 * server's err set. */
static int step(slurm *s, double t, double node_mib) {
    int nservers = s->opt->servers;
    for (int n = 0; n < nservers; n++) {
        replay *r = &s->servers[n];
        s->touched[n] = replay_next_t(r) == t;
        if (s->touched[n] && replay_events(r, t) < 0) return -1;
        s->free_mib[n] += replay_take_left(r);
    }
    int rc = start_jobs(s, t, node_mib);
    if (rc < 0) return rc;
    for (int n = 0; n < nservers; n++)
        if (s->touched[n] && replay_settle(&s->servers[n], t) < 0)
            return -1;
    return 0;
}

/* The record of a job Slurm never started. */
static sim_job never_started(const trace_job *row) {
    return (sim_job){.src = row, .first_attempt = -1, .last_attempt = -1,
                     .server = 0, .state = SIM_PENDING};
}

int slurm_step_run(replay *servers, const trace *t, const sim_options *opt,
                   sim_job *out) {
    int nservers = opt->servers, rc = 0;
    double node_mib = opt->gpus * opt->gpu_mem_mib;
    slurm s = {.servers = servers, .trace = t, .opt = opt,
               .free_mib = malloc((size_t)nservers * sizeof(double)),
               .touched = calloc((size_t)nservers, sizeof(bool))};
    if (!s.free_mib || !s.touched) {
        snprintf(servers[0].err, sizeof(servers[0].err),
                 "simulator: out of memory");
        rc = -1;
    }
    for (int n = 0; rc == 0 && n < nservers; n++) {
        s.free_mib[n] = floor(node_mib);
        rc = replay_start(&servers[n]);
    }
    for (double now = -INFINITY; rc == 0;) {
        now = next_moment(&s, now);
        if (now == INFINITY) break;
        rc = step(&s, now, node_mib);
    }
    /* Jobs refused, or still in Slurm's queue, have no server's record. */
    for (int j = 0; j < t->count; j++) out[j] = never_started(&t->jobs[j]);
    for (int n = 0; n < nservers; n++) replay_finish(&servers[n], rc);
    free(s.free_mib);
    free(s.touched);
    return rc;
}
