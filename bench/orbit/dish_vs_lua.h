/* dish_vs_lua.h -- what bench_dish.c and the fidelity test
 * (tests/orbit/lua) share: the ten procedures of data/orbit/procedures
 * run in DISH on the VM and in Lua on dish_lua_host, each on a fresh
 * simulated satellite with the same settings, their telemetry and power
 * compared; the memory each side holds; the power day. */
#ifndef DISH_VS_LUA_H
#define DISH_VS_LUA_H

#include <stddef.h>
#include <stdint.h>

#include "dish_lua_host.h"
#include "dish_sim.h"

#define DVL_NPROCS 10
#define DVL_TLM 128 /* records an outcome keeps */
#define DVL_HOURS 14 /* simulated time a procedure may take */

/* The procedures, by name: NAME.dish and NAME.lua; the .lua defines the
 * global function NAME, the .dish's first procedure is the one run. */
extern const char *const dvl_procs[DVL_NPROCS];

/* Settings of a simulated satellite, applied after dish_sim_init. */
typedef struct dvl_scenario {
    const char *name;
    int64_t start_ms;     /* the simulation runs alone until then */
    double battery;       /* percent at the start, 0: the default */
    int fail_next;
    int64_t fix_after_ms; /* 0: the default */
    uint64_t down_nodes;
} dvl_scenario;

#define DVL_NSCENARIOS 5
/* The scenarios, the first the simulator's defaults; one starts 20
 * minutes before the ground track's first pass over the Alps box of
 * capture_region (found on the simulator). */
void dvl_scenarios(dvl_scenario out[DVL_NSCENARIOS]);

/* A fresh simulation with sc's settings, run up to sc->start_ms. */
void dvl_sim(dish_sim *sim, const dvl_scenario *sc);

/* What a run left: every telemetry record but START (the runtimes name
 * their runs differently), and the main processor's awake time. */
typedef struct dvl_outcome {
    int ntlm;
    dish_tlm tlm[DVL_TLM];
    int nawake;
    int64_t awake_ms;
    int ended;      /* 1 returned, -1 stopped (fault), 0 still running */
    int32_t result; /* the END value */
    char err[512];  /* the Lua error, or why the run could not start */
} dvl_outcome;

/* The DISH side's bytes for one run, what each part is:
 *   run:    the dish_run struct (state, frames, stack pointer, its
 *           arena's range, wait and sleep fields; the arena is apart)
 *   arena:  the run's range of the VM's arena pool, as the VM reserved it
 *           at the start: the verifier's worst-case need of its call
 *           chain (need_words) x 4
 *   code:   the bytecode of the image's procedures (the one run and its
 *           callees), their ranges of the code pool
 *   slots:  the image's procedures' slot records (table record with the
 *           code's place, the verifier's slot information, caller count)
 *   vm:     the VM's fixed state outside slots, runs and the two pools
 *           (platform pointer, the code pool's fill, pending events, the
 *           fix, the clock's offset and drift)
 * total is their sum. The pools' free space, and the other runs' and
 * slots' records, are capacity for other procedures: not counted, as
 * the Lua side counts what its state holds, not the heap around it. */
typedef struct dvl_dish_mem {
    size_t run, arena, code, slots, vm, total;
    int need_words;
} dvl_dish_mem;

/* Compiles path into img (DISH_MAX_IMAGE bytes): its length, or -1 with
 * the error in err. *tokens: the source's tokens by dish_lex (EOF not
 * counted). */
int dvl_compile(const char *path, uint8_t *img, int *tokens, char *err, size_t errlen);
/* The Lua tokens of path (lua_tokens.h), or -1 with err filled. */
int dvl_lua_tokens(const char *path, char *err, size_t errlen);

/* Runs image img (its first procedure, no arguments) on a fresh
 * simulation of sc for DVL_HOURS: 0, or -1 (refused, not started) with
 * o->err filled. mem: the bytes, if not NULL. */
int dvl_run_dish(const uint8_t *img, int len, const dvl_scenario *sc, dvl_outcome *o,
                 dvl_dish_mem *mem);
/* Runs function name of the Lua file path the same way: 0, or -1 with
 * o->err filled (the file did not load or has no such function). */
int dvl_run_lua(const char *path, const char *name, const dvl_scenario *sc, dvl_outcome *o,
                dish_lua_mem *mem);
/* 0 when a and b agree: the same records (kind, time, code and value;
 * for a fault the code only: DISH reports a pc, Lua a line), the same
 * awake intervals and total. Else -1 and the first difference in why. */
int dvl_compare(const dvl_outcome *a, const dvl_outcome *b, char *why, size_t n);

/* ---- the power day ---- */

#define DVL_DAY_ORBITS 15
#define DVL_DAY_TARGETS (2 * DVL_DAY_ORBITS)
#define DVL_ORBIT_MS 5640000LL /* the simulator's orbit */

/* A target box, Q16.16 degrees (lon0 > lon1 crosses the antimeridian). */
typedef struct dvl_box {
    int32_t lat0, lat1, lon0, lon1;
} dvl_box;

/* The day's 30 boxes: in each orbit, the ground track's places at two
 * moments (about 0.12 and 0.30 of the orbit, shifted a little from orbit
 * to orbit), found on a simulation with the default settings; each box
 * 1.5 degrees of latitude by 3 of longitude around the place. */
void dvl_day_boxes(dvl_box out[DVL_DAY_TARGETS]);

typedef struct dvl_day {
    int captures;      /* pipelines started */
    int ok;            /* of them finished well */
    int missed;        /* targets whose box was not reached in time */
    int64_t need_ms;   /* the sum, over the pipelines, from start to end */
    int64_t awake_ms;  /* the main processor's awake time */
    int nawake;
    char err[512];
} dvl_day;

/* The day in DISH (lua_path NULL: dish_path's first procedure, the
 * target procedure with 4 fix arguments) or in Lua (function target of
 * lua_path): the 30 targets one after the other, each run started when
 * the one before ended, for 15 orbits of simulated time on a fresh
 * default simulation. 0, or -1 with d->err. all: every USER and END
 * record of the day, in order (cap records), and *nall their count. */
int dvl_run_day(const char *dish_path, const char *lua_path, dvl_day *d, dish_tlm *all,
                int cap, int *nall);

#endif
