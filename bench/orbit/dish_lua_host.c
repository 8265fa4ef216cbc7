/* dish_lua_host.c -- a Lua 5.4 procedure on the DISH board interface
 * (dish_lua_host.h). The clock and the fix are the VM's own (a dish_vm
 * without runs); the run's scheduling mirrors dish_vm.c's wake, due and
 * run loop over the one coroutine, so that a Lua procedure and its DISH
 * version see the same events at the same simulated times. */
#include "dish_lua_host.h"

#include <assert.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dish.h"

/* ---- the counting allocator ---- */

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    dish_lua_mem *m = ud;
    size_t old = ptr ? osize : 0; /* without ptr, osize is the object's kind */
    assert(m->cur >= old);
    if (nsize == 0) {
        free(ptr);
        m->cur -= old;
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (!p)
        return NULL;
    m->cur = m->cur - old + nsize;
    if (m->cur > m->peak)
        m->peak = m->cur;
    m->allocs++;
    return p;
}

/* Every thread of the state carries the host in its extra space. */
static dish_lua *host(lua_State *L) {
    return *(dish_lua **)lua_getextraspace(L);
}

/* ---- the clock (the host's dish_vm) and telemetry ---- */

static int64_t local_now(const dish_lua *h) {
    return h->pl->now_ms(h->pl->ctx);
}

static void report(dish_lua *h, dish_tlm_kind kind, int32_t code, int32_t value) {
    dish_tlm t = {dish_vm_clock(&h->vm), kind, 0, -1, code, value};
    h->pl->telemetry(h->pl->ctx, &t);
}

/* ---- numbers the board takes as int32 ---- */

static int32_t sat(double d) {
    if (d != d)
        return 0;
    return d >= 2147483647.0 ? INT32_MAX : d <= -2147483648.0 ? INT32_MIN : (int32_t)d;
}

/* A number argument, toward zero and saturated. */
static int32_t int_arg(lua_State *L, int idx) {
    if (lua_isinteger(L, idx)) {
        lua_Integer v = lua_tointeger(L, idx);
        return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
    }
    return sat(luaL_checknumber(L, idx));
}

/* A value the board reports (telemetry, a result): a number as int_arg,
 * true 1, false and nil 0; anything else is an error. */
static int32_t value_arg(lua_State *L, int idx) {
    if (lua_isnoneornil(L, idx) || lua_isboolean(L, idx))
        return lua_toboolean(L, idx);
    return int_arg(L, idx);
}

/* A procedure's result, outside any protected call (so raising no
 * error): as value_arg, and 0 for what is not a number or a boolean. */
static int32_t result_value(lua_State *L, int idx) {
    if (lua_isinteger(L, idx) || lua_type(L, idx) == LUA_TNUMBER)
        return int_arg(L, idx);
    return lua_toboolean(L, idx) && lua_isboolean(L, idx);
}

/* Degrees as Q16.16, as a DISH literal or fix() would hold them. */
static int32_t deg_arg(lua_State *L, int idx) {
    return sat(nearbyint(luaL_checknumber(L, idx) * DISH_FIX_ONE));
}

static int64_t seconds_ms(lua_Number s) {
    return s < 0 ? 0 : s > DISH_MAX_WAIT_S ? (int64_t)DISH_MAX_WAIT_S * 1000 : (int64_t)(s * 1000.0);
}

/* What a wait's condition reads: the events that can change it. */
static void reads(lua_State *L, unsigned ev) {
    dish_lua *h = host(L);
    if (h->in_cond)
        h->cond_mask |= ev;
}

/* ---- the platform API (data/orbit/procedures/README.md) ---- */

static int api_now(lua_State *L) {
    reads(L, DISH_EV_TIME);
    int64_t s = dish_vm_clock(&host(L)->vm) / 1000;
    lua_pushinteger(L, s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s);
    return 1;
}

static int api_has_fix(lua_State *L) {
    reads(L, DISH_EV_GNSS);
    lua_pushboolean(L, host(L)->vm.fix.valid);
    return 1;
}

static int api_position(lua_State *L) {
    const dish_fix *f = &host(L)->vm.fix;
    reads(L, DISH_EV_GNSS);
    if (!f->valid)
        return 0;
    lua_pushnumber(L, (lua_Number)f->lat / DISH_FIX_ONE);
    lua_pushnumber(L, (lua_Number)f->lon / DISH_FIX_ONE);
    return 2;
}

/* INBOX's test (dish_vm.c's in_box), over the fix. */
static int api_inside(lua_State *L) {
    const dish_fix *f = &host(L)->vm.fix;
    int32_t b[4] = {deg_arg(L, 1), deg_arg(L, 2), deg_arg(L, 3), deg_arg(L, 4)};
    int in = f->valid && f->lat >= b[0] && f->lat <= b[1] &&
             (b[2] <= b[3] ? f->lon >= b[2] && f->lon <= b[3]
                           : f->lon >= b[2] || f->lon <= b[3]); /* across the antimeridian */
    reads(L, DISH_EV_GNSS);
    lua_pushboolean(L, in);
    return 1;
}

static int no_answer(lua_State *L, int node, int id) {
    host(L)->fault = DISH_FAULT_PARAM;
    return luaL_error(L, "node %d did not answer (parameter %d)", node, id);
}

static int api_param(lua_State *L) {
    int node = int_arg(L, 1), id = int_arg(L, 2);
    const dish_platform *pl = host(L)->pl;
    int32_t v;
    reads(L, DISH_EV_PARAM);
    if (pl->param_get(pl->ctx, node, id, &v))
        return no_answer(L, node, id);
    lua_pushinteger(L, v);
    return 1;
}

static int api_set_param(lua_State *L) {
    int node = int_arg(L, 1), id = int_arg(L, 2);
    int32_t v = int_arg(L, 3);
    dish_lua *h = host(L);
    if (h->pl->param_set(h->pl->ctx, node, id, v))
        return no_answer(L, node, id);
    h->events |= DISH_EV_PARAM;
    return 0;
}

static int power(lua_State *L, int awake) {
    const dish_platform *pl = host(L)->pl;
    pl->power(pl->ctx, awake);
    return 0;
}

static int api_wake(lua_State *L) {
    return power(L, 1);
}

static int api_suspend(lua_State *L) {
    return power(L, 0);
}

static int api_start_pipeline(lua_State *L) {
    int32_t p = int_arg(L, 1);
    const dish_platform *pl = host(L)->pl;
    lua_pushboolean(L, p >= 1 && p <= DISH_PIPELINES && pl->pipe_start(pl->ctx, p) == 0);
    return 1;
}

static int api_pipeline_status(lua_State *L) {
    int32_t p = int_arg(L, 1);
    const dish_platform *pl = host(L)->pl;
    int st = p >= 1 && p <= DISH_PIPELINES ? pl->pipe_status(pl->ctx, p) : DISH_PIPE_IDLE;
    reads(L, DISH_EV_PIPE);
    lua_pushstring(L, st == DISH_PIPE_RUNNING ? "running"
                      : st == DISH_PIPE_OK    ? "ok"
                      : st == DISH_PIPE_FAILED ? "failed"
                                               : "idle");
    return 1;
}

static int api_tm(lua_State *L) {
    int32_t code = int_arg(L, 1), value = value_arg(L, 2);
    report(host(L), DISH_TLM_USER, code, value);
    return 0;
}

/* ---- blocking calls: the coroutine yields to the host ---- */

static void no_block_in_cond(lua_State *L, const char *what) {
    if (host(L)->in_cond)
        luaL_error(L, "%s() inside a wait's condition", what);
}

static int api_sleep(lua_State *L) {
    dish_lua *h = host(L);
    lua_Number s = luaL_checknumber(L, 1);
    no_block_in_cond(L, "sleep");
    h->wake_abs = 0;
    h->wake = local_now(h) + seconds_ms(s);
    h->state = DISH_LUA_SLEEP;
    return lua_yield(L, 0);
}

static int api_sleep_until(lua_State *L) {
    dish_lua *h = host(L);
    lua_Number t = luaL_checknumber(L, 1);
    no_block_in_cond(L, "sleep_until");
    h->wake_abs = 1;
    h->wake = (int64_t)(t * 1000.0);
    h->state = DISH_LUA_SLEEP;
    return lua_yield(L, 0);
}

/* WAIT: true once the condition (argument 1) holds, false past the
 * deadline, otherwise a yield until an event it read (and back here). */
static int wait_check(lua_State *L, int status, lua_KContext k) {
    dish_lua *h = host(L);
    h->in_cond = 1;
    h->cond_mask = 0;
    lua_pushvalue(L, 1);
    lua_call(L, 0, 1);
    h->in_cond = 0;
    int holds = lua_toboolean(L, -1);
    lua_pop(L, 1);
    int64_t now = local_now(h);
    if (holds || now >= h->deadline) {
        lua_pushboolean(L, holds);
        return 1;
    }
    h->mask = h->cond_mask;
    h->next_poll = dish_vm_next_second(&h->vm, now); /* as the VM */
    h->state = DISH_LUA_WAIT;
    return lua_yieldk(L, 0, 0, wait_check);
}

static int api_wait_until(lua_State *L) {
    dish_lua *h = host(L);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_Number s = luaL_checknumber(L, 2);
    no_block_in_cond(L, "wait_until");
    lua_settop(L, 2);
    h->deadline = local_now(h) + seconds_ms(s); /* the timeout first, as WSET */
    return wait_check(L, LUA_OK, 0);
}

static const luaL_Reg api[] = {
    {"now", api_now},
    {"sleep", api_sleep},
    {"sleep_until", api_sleep_until},
    {"wait_until", api_wait_until},
    {"has_fix", api_has_fix},
    {"position", api_position},
    {"inside", api_inside},
    {"param", api_param},
    {"set_param", api_set_param},
    {"wake", api_wake},
    {"suspend", api_suspend},
    {"start_pipeline", api_start_pipeline},
    {"pipeline_status", api_pipeline_status},
    {"tm", api_tm},
    {NULL, NULL},
};

/* ---- the state ---- */

int dish_lua_open(dish_lua *h, const dish_platform *pl, const char *path) {
    memset(h, 0, sizeof *h);
    h->pl = pl;
    h->co_ref = LUA_NOREF;
    snprintf(h->chunk, sizeof h->chunk, "@%s", path);
    h->L = lua_newstate(count_alloc, &h->mem);
    if (!h->L) {
        snprintf(h->err, sizeof h->err, "%s: no memory for a Lua state", path);
        return -1;
    }
    lua_State *L = h->L;
    *(dish_lua **)lua_getextraspace(L) = h; /* new threads copy it */
    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    lua_pop(L, 1);
    lua_pushglobaltable(L);
    luaL_setfuncs(L, api, 0);
    lua_pop(L, 1);
    lua_gc(L, LUA_GCCOLLECT);
    h->mem.base = h->mem.cur;
    dish_vm_init(&h->vm, pl); /* takes a fix if there is one */
    if (luaL_loadfilex(L, path, "t") || lua_pcall(L, 0, 0, 0)) {
        snprintf(h->err, sizeof h->err, "%s", lua_tostring(L, -1));
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

int dish_lua_start(dish_lua *h, const char *name, const double *args, int nargs) {
    lua_State *L = h->L;
    if (h->state != DISH_LUA_FREE) {
        snprintf(h->err, sizeof h->err, "%s: a run is alive", h->chunk + 1);
        return -1;
    }
    if (lua_getglobal(L, name) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        snprintf(h->err, sizeof h->err, "%s: no function %s", h->chunk + 1, name);
        return -1;
    }
    h->co = lua_newthread(L);
    h->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_xmove(L, h->co, 1);
    for (int k = 0; k < nargs; k++)
        lua_pushnumber(h->co, args[k]);
    h->events = 0;
    h->in_cond = 0;
    h->fault = 0;
    h->ended = 0;
    h->result = 0;
    h->err[0] = 0;
    lua_gc(L, LUA_GCCOLLECT);
    h->mem.peak = h->mem.floor = h->mem.cur;
    h->mem.allocs = 0;
    report(h, DISH_TLM_START, 0, 0);
    h->state = DISH_LUA_READY;
    return 0;
}

/* The line where the dead coroutine stopped: its innermost Lua frame. */
static int error_line(lua_State *co) {
    lua_Debug ar;
    for (int level = 0; lua_getstack(co, level, &ar); level++)
        if (lua_getinfo(co, "l", &ar) && ar.currentline > 0)
            return ar.currentline;
    return 0;
}

static void end_run(dish_lua *h) {
    h->state = DISH_LUA_FREE;
    luaL_unref(h->L, LUA_REGISTRYINDEX, h->co_ref);
    h->co_ref = LUA_NOREF;
    h->co = NULL;
}

/* Resumes the run until it yields, returns or fails. */
static void resume(dish_lua *h) {
    lua_State *co = h->co;
    assert(co && h->state == DISH_LUA_READY);
    int first = lua_status(co) == LUA_OK, nres = 0;
    int nargs = first ? lua_gettop(co) - 1 : 0;
    int st = lua_resume(co, h->L, nargs, &nres);
    if (st == LUA_YIELD) {
        lua_pop(co, nres);
        return;
    }
    if (st == LUA_OK) {
        h->result = nres ? result_value(co, -nres) : 0;
        h->ended = 1;
        report(h, DISH_TLM_END, 0, h->result);
    } else {
        const char *msg = lua_tostring(co, -1);
        int line = error_line(co);
        if (msg)
            snprintf(h->err, sizeof h->err, "%s", msg);
        else
            snprintf(h->err, sizeof h->err, "%s:%d: an error object (%s) was raised",
                     h->chunk + 1, line, luaL_typename(co, -1));
        h->ended = -1;
        report(h, DISH_TLM_FAULT, h->fault, line);
    }
    end_run(h);
}

/* ---- the run loop (dish_vm_tick, dish_vm_next, dish_vm_run) ---- */

/* A sleep's end in local ms (sleep_until's is GNSS time). */
static int64_t wake_at(const dish_lua *h) {
    return h->wake_abs ? h->wake - h->vm.offset_ms : h->wake;
}

static void wake(dish_lua *h, unsigned ev, int64_t now) {
    if (h->state == DISH_LUA_WAIT &&
        ((ev & h->mask) || now >= h->deadline ||
         ((h->mask & DISH_EV_TIME) && now >= h->next_poll)))
        h->state = DISH_LUA_READY;
    if (h->state == DISH_LUA_SLEEP && now >= wake_at(h))
        h->state = DISH_LUA_READY;
}

static int64_t next_due(const dish_lua *h) {
    int64_t now = local_now(h), d;
    switch (h->state) {
    case DISH_LUA_READY: d = now; break;
    case DISH_LUA_SLEEP: d = wake_at(h); break;
    case DISH_LUA_WAIT:
        d = (h->mask & DISH_EV_TIME) && h->next_poll < h->deadline ? h->next_poll : h->deadline;
        break;
    default: return INT64_MAX;
    }
    return h->events ? now : d;
}

int dish_lua_run(dish_lua *h, int64_t until_ms) {
    unsigned ev = 0;
    for (;;) {
        ev |= h->events;
        h->events = 0;
        dish_vm_tick(&h->vm, ev); /* no runs: a GNSS event takes the fix */
        wake(h, ev, local_now(h));
        if (h->state == DISH_LUA_READY)
            resume(h);
        int64_t next = next_due(h);
        if (h->state == DISH_LUA_FREE || local_now(h) >= until_ms)
            return h->state != DISH_LUA_FREE;
        ev = h->pl->wait_event(h->pl->ctx, next < until_ms ? next : until_ms);
    }
}

void dish_lua_close(dish_lua *h) {
    if (h->L)
        lua_close(h->L);
    h->L = NULL;
    h->co = NULL;
}
