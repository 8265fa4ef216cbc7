/* dish_sim.h -- a simulated satellite behind dish_platform.h, for tests
 * and `dish run --sim`: a local clock that drifts against GNSS time and
 * can run faster than real time, a circular sun-synchronous ground track
 * for the GNSS, the nodes' parameter tables, the main processor's power
 * (every awake interval kept), and DIPP pipelines that finish after a set
 * time or fail on demand.
 *
 * Parameters the simulation keeps up to date (node, id):
 *   EPS  2,1  battery charge, percent
 *   ADCS 3,1  1 in sunlight, 0 in eclipse
 *   COMM 6,1  1 while a ground station (Svalbard) is in view
 * Node 5 (camera) and the others are plain storage. */
#ifndef DISH_SIM_H
#define DISH_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dish.h"
#include "dish_platform.h"

#define DISH_SIM_TLM 512     /* telemetry records kept */
#define DISH_SIM_INTERVALS 256 /* awake intervals kept */

typedef struct dish_sim_pipe {
    int status;
    int64_t done_at;
} dish_sim_pipe;

typedef struct dish_sim {
    dish_platform pl;
    /* settings, before the first call */
    double speed;        /* simulated per real second; 0: as fast as possible */
    double drift_ppm;    /* the local clock against GNSS time */
    int64_t fix_after_ms; /* no fix before (cold start) */
    int64_t pipe_ms;     /* a pipeline's run time */
    int fail_next;       /* this many pipeline starts will fail */
    uint64_t down_nodes; /* bit n: node n does not answer */
    FILE *print;         /* telemetry lines go here too, if set */
    /* state */
    int64_t local_ms, next_fix_ms, gnss_off_until;
    int32_t params[DISH_NODES][DISH_PARAMS];
    double battery;
    int awake;
    int64_t awake_since;
    int64_t awake_ms[DISH_SIM_INTERVALS][2];
    int nawake;
    int64_t awake_total_ms;
    dish_sim_pipe pipes[DISH_PIPELINES + 1];
    dish_tlm tlm[DISH_SIM_TLM];
    int ntlm; /* all seen; the last DISH_SIM_TLM are kept */
} dish_sim;

/* A fresh simulation with its platform table in sim->pl. Defaults: local
 * clock 40 ppm fast, first fix after 30 s, pipelines take 20 s, battery
 * 80 %, main processor asleep, as fast as possible (speed 0). */
void dish_sim_init(dish_sim *sim);
/* The simulated GNSS loses its fix until local time until_ms. */
void dish_sim_gnss_outage(dish_sim *sim, int64_t until_ms);
/* The last telemetry record of kind (and code when code >= 0), counting
 * back from the newest: NULL if none kept. */
const dish_tlm *dish_sim_find(const dish_sim *sim, dish_tlm_kind kind, int32_t code);
/* Prints one telemetry record as a line. */
void dish_sim_print(FILE *f, const dish_tlm *t);
/* The same line, without its newline, into out: snprintf's count. */
int dish_tlm_format(char *out, size_t cap, const dish_tlm *t);

/* For a host that drives the clock itself (the DIPP satellite, which
 * waits on its link rather than in wait_event): the local time of the
 * next event (a fix, a pipeline ending), and moving the clock to `to`,
 * never past that event: the events it brings (DISH_EV_*). */
int64_t dish_sim_next(const dish_sim *sim);
unsigned dish_sim_advance(dish_sim *sim, int64_t to);
/* How the run of pipeline p now going ends when its time is up: ok, or
 * failed (the host ran the real pipeline and knows). */
void dish_sim_pipe_result(dish_sim *sim, int p, int ok);

#endif
