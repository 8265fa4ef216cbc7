/* sat_dish.h -- DISH on board the DIPP satellite: the runtime (dish_vm.h)
 * behind a platform whose clock, GNSS ground track, parameters and power
 * are the simulated satellite's (dish_sim.h), whose pipelines are DIPP's
 * real ones on the camera's next frame, and whose telemetry goes down
 * the link; the procedure store (proc_store.h); and the procedure port's
 * messages (proto.h, port 24), whose runs, stops and deletes are signed
 * (cmd_sig.h).
 *
 * The satellite's loop drives the clock, not wait_event: between two
 * looks at the link it moves the simulated clock on by the wall time
 * passed times the speed, but never past the next thing due (a GNSS fix,
 * a pipeline ending, a run's deadline), and ticks the runtime with the
 * events that brought. So a wait on a place, a parameter or a pipeline
 * wakes on its event; only a wait on the clock polls. */
#ifndef DIPP_SAT_DISH_H
#define DIPP_SAT_DISH_H

#include <stddef.h>
#include <stdint.h>

#include "cmd_sig.h"
#include "dish_sim.h"
#include "dish_vm.h"
#include "proc_store.h"

#define SAT_DISH_LOG 256 /* run records kept for the ground */
#define SAT_DISH_PRINT_TM 1000 /* a run's tm records printed on stdout */
#define SAT_DISH_STEP_EVENTS 10000 /* a step's events at most, then the link */

typedef struct sat_dish {
    dish_sim sim;       /* first: the platform's ctx is the simulation */
    dish_platform pl;   /* the simulation's table, with DIPP's pipelines */
    dish_vm vm;
    proc_store store;
    double speed;       /* simulated seconds per wall second, > 0 */
    int64_t anchor_local; /* the clock's reading at wall time anchor_wall */
    uint64_t anchor_wall;
    unsigned captures;  /* bit p: pipeline p waits for the camera's next frame */
    dish_tlm log[SAT_DISH_LOG];
    uint32_t logged;    /* records ever written; the last SAT_DISH_LOG kept */
    uint64_t started, ended, faults, tms;
    uint32_t tm_printed[DISH_MAX_RUNS]; /* each run's tm lines on stdout */
    /* the key that signs commands (cmd_sig.h): the update store's, which
     * a rotation changes in place; set before the first message */
    const uint8_t *pk;
    cmd_port procs;     /* the runs, stops and deletes (port 24) */
} sat_dish;

typedef struct sat_dish_cfg {
    double speed;
    double pipe_s;  /* a pipeline's run, simulated seconds, as the status reports it */
    int asleep;     /* the main processor starts suspended */
} sat_dish_cfg;

/* Sets up the runtime and loads the procedures stored in dir (each left
 * out is reported on stderr). wall: the wall clock now, ms. The clock
 * runs at speed 1, a pipeline takes 20 s, the main processor is awake. */
void sat_dish_open(sat_dish *d, const char *dir, uint64_t wall);
/* Other settings than those, before the first step. */
void sat_dish_configure(sat_dish *d, const sat_dish_cfg *cfg, uint64_t wall);
/* up_config's accept: an uploaded image of procedures. */
int sat_dish_accept(void *ctx, const up_manifest *m, const uint8_t *bytes, char *detail,
                    size_t cap);

/* Wall ms until the runtime has something due (0: now), at most cap. */
int sat_dish_idle_ms(const sat_dish *d, uint64_t wall, int cap);
/* Moves the clock on towards wall time, ticking the runtime at each
 * event on the way; stops early at a capture (the pipelines started are
 * in d->captures). */
void sat_dish_step(sat_dish *d, uint64_t wall);
/* Whether the main processor is awake (frames are processed). */
int sat_dish_awake(const sat_dish *d);
/* The camera's frame ran pipeline p: ok or not, told when its time is up. */
void sat_dish_captured(sat_dish *d, int p, int ok);

/* A port-24 message: the reply's length in out, cap bytes at most (0:
 * none). A listing that does not fit ends "more from slot K": 'L' seq K
 * lists from slot K on. */
size_t sat_dish_handle(sat_dish *d, const uint8_t *msg, size_t len, uint8_t *out,
                       size_t cap);
/* The runtime's status as "dish.KEY=value" lines: their length. */
size_t sat_dish_status(const sat_dish *d, char *out, size_t cap);
/* The run records from index `from` on (those still kept), one
 * "dish.INDEX=record" line each, while they fit: their length. */
size_t sat_dish_records(const sat_dish *d, uint32_t from, char *out, size_t cap);

#endif
