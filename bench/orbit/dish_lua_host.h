/* dish_lua_host.h -- DISH's baseline: one imaging procedure written in
 * plain Lua 5.4 (data/orbit/procedures/NAME.lua) run on the same board
 * interface as the DISH VM (dish_platform.h), for the comparison of
 * issue 32. The platform API of data/orbit/procedures/README.md is a set
 * of Lua globals written in C over dish_platform; the procedure runs as a
 * coroutine that the host resumes, and every blocking call (sleep,
 * sleep_until, wait_until) yields to the host, which calls the platform's
 * wait_event until the deadline or an event, exactly as dish_vm.c does:
 *
 *  - the clock and the fix are a dish_vm's with no run on it: its tick
 *    takes each GNSS fix, sets and corrects the clock and reports it, as
 *    for DISH runs; inside(), has_fix() and position() read that fix, as
 *    LAT, LON, HASFIX and INBOX do;
 *  - wait_until(fn, s) evaluates fn at once, then only when an event
 *    that fn read fires (the host notes, while fn runs, which readings it
 *    makes: now() the clock, has_fix/position/inside the GNSS,
 *    param the parameters, pipeline_status the pipelines: the event mask
 *    the DISH compiler derives from a wait's condition), at its deadline,
 *    and each DISH_POLL_MS when fn read the clock; false at the deadline;
 *  - set_param raises a parameter event for the next pass, as PSET does.
 *
 * Numbers the board takes as int32 (node, id, parameter values,
 * telemetry, pipelines, a procedure's result) are truncated toward zero
 * and saturated, as DISH's int(); true is 1, false and nil 0. A node that
 * does not answer raises a Lua error, as it stops a DISH run.
 *
 * Memory: the Lua state is made by lua_newstate with a counting
 * allocator (bytes held now and at most, as requested of it: the C
 * library's own overhead is not counted), with only the base library
 * opened (luaL_requiref of luaopen_base) and the API's 14 functions as
 * globals. dish_lua_start makes the coroutine, runs a full collection and
 * resets the peak: mem.peak is then what the run held at most. */
#ifndef DISH_LUA_HOST_H
#define DISH_LUA_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "dish_platform.h"
#include "dish_vm.h"

typedef struct lua_State lua_State;

typedef struct dish_lua_mem {
    size_t cur, peak;  /* bytes held, now and the most since the reset */
    size_t base;       /* the state with the base library and the API, no
                          procedure loaded (after a full collection) */
    size_t floor;      /* held right after dish_lua_start's collection */
    size_t allocs;     /* allocations (and growths) since the reset */
} dish_lua_mem;

typedef enum dish_lua_state {
    DISH_LUA_FREE, DISH_LUA_READY, DISH_LUA_WAIT, DISH_LUA_SLEEP
} dish_lua_state;

typedef struct dish_lua {
    lua_State *L;  /* the state: globals, the procedure's chunk */
    lua_State *co; /* the run's coroutine (kept in the registry) */
    int co_ref;
    const dish_platform *pl;
    char chunk[256]; /* "@path", Lua's name of the file in errors */
    dish_lua_mem mem;
    dish_vm vm;      /* no runs: the clock and the fix */
    unsigned events; /* raised by the run (a parameter set) */
    /* the run */
    dish_lua_state state;
    unsigned mask;                     /* a wait's events */
    int64_t deadline, next_poll, wake; /* local ms */
    int wake_abs;                      /* wake is GNSS-time ms */
    int in_cond;                       /* a wait's condition is running */
    unsigned cond_mask;                /* what it has read so far */
    int fault;                         /* the dish_fault of a Lua error, or 0 */
    int ended;                         /* 1 returned, -1 stopped by an error */
    int32_t result;                    /* what the procedure returned */
    char err[512];                     /* "FILE:LINE: what" of an error */
} dish_lua;

/* A Lua state on pl with the procedure file at path loaded and run (its
 * functions defined): 0, or -1 with "FILE:LINE: what" in h->err. */
int dish_lua_open(dish_lua *h, const dish_platform *pl, const char *path);
/* Starts global function name with nargs numbers as its arguments, then
 * collects all garbage and resets the memory peak: 0, or -1 (no such
 * function, a run already alive). */
int dish_lua_start(dish_lua *h, const char *name, const double *args, int nargs);
/* Drives the run and the platform's wait until local time until_ms or
 * until the run ends: 1 while the run is alive, else 0. */
int dish_lua_run(dish_lua *h, int64_t until_ms);
void dish_lua_close(dish_lua *h);

#endif
