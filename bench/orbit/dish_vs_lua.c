/* dish_vs_lua.c -- DISH and Lua runs side by side (dish_vs_lua.h). */
#include "dish_vs_lua.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dish_compile.h"
#include "dish_lex.h"
#include "dish_verify.h"
#include "dish_vm.h"
#include "lua_tokens.h"

#define MAX_SOURCE 65536

const char *const dvl_procs[DVL_NPROCS] = {
    "calibration",      "capture_region", "downlink_wait", "exposure_ladder",
    "fix_then_capture", "multi_target",   "night_skip",    "periodic_survey",
    "power_budget",     "retry_capture",
};

/* ---- scenarios ---- */

/* Runs sim alone up to local time t. */
static void advance(dish_sim *sim, int64_t t) {
    while (sim->local_ms < t)
        sim->pl.wait_event(sim->pl.ctx, t);
}

/* The first local second, from 0 on, at which the default simulation's
 * fix is inside the box [lat0, lat1] x [lon0, lon1] (degrees). */
static int64_t first_pass(double lat0, double lat1, double lon0, double lon1) {
    static dish_sim sim;
    dish_sim_init(&sim);
    for (int64_t t = 0; t < 7 * 86400000LL; t += 1000) {
        dish_fix f;
        advance(&sim, t);
        sim.pl.gnss(sim.pl.ctx, &f);
        double la = (double)f.lat / DISH_FIX_ONE, lo = (double)f.lon / DISH_FIX_ONE;
        if (f.valid && la >= lat0 && la <= lat1 && lo >= lon0 && lo <= lon1)
            return t;
    }
    return -1;
}

void dvl_scenarios(dvl_scenario out[DVL_NSCENARIOS]) {
    static int64_t alps = -2;
    if (alps == -2) /* capture_region's box */
        alps = first_pass(45.5, 47.5, 6.0, 11.0);
    int64_t before = alps > 1200000 ? (alps - 1200000) / 1000 * 1000 : 0;
    const dvl_scenario sc[DVL_NSCENARIOS] = {
        {"defaults", 0, 0, 0, 0, 0},
        {"two pipeline failures, battery 30 %", 1000, 30.0, 2, 0, 0},
        {"eclipse, GNSS cold for 20 min", DVL_ORBIT_MS / 2, 0, 0, DVL_ORBIT_MS / 2 + 1200000, 0},
        {"20 min before the Alps", before, 0, 0, 0, 0},
        {"EPS, ADCS, camera, COMM not answering", 0, 0, 0, 0,
         1u << 2 | 1u << 3 | 1u << 5 | 1u << 6},
    };
    memcpy(out, sc, sizeof sc);
}

void dvl_sim(dish_sim *sim, const dvl_scenario *sc) {
    dish_sim_init(sim);
    if (sc->battery > 0)
        sim->battery = sc->battery;
    sim->fail_next = sc->fail_next;
    if (sc->fix_after_ms)
        sim->fix_after_ms = sc->fix_after_ms;
    sim->down_nodes = sc->down_nodes;
    advance(sim, sc->start_ms);
}

/* ---- sources ---- */

/* path into a malloc'ed, NUL-ended buffer: its length, or -1. */
static long slurp(const char *path, char **out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(MAX_SOURCE + 1) : NULL;
    size_t n = buf ? fread(buf, 1, MAX_SOURCE + 1, f) : 0;
    if (f)
        fclose(f);
    if (!buf || n > MAX_SOURCE) {
        snprintf(err, errlen, "%s: %s", path, !f ? "cannot be read" : "too large");
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *out = buf;
    return (long)n;
}

int dvl_compile(const char *path, uint8_t *img, int *tokens, char *err, size_t errlen) {
    static dish_tok toks[8192];
    char *src;
    long n = slurp(path, &src, err, errlen);
    if (n < 0)
        return -1;
    int nt = dish_lex(path, src, (size_t)n, toks, 8192, err, errlen);
    int len = nt < 0 ? -1 : dish_compile(path, src, (size_t)n, img, DISH_MAX_IMAGE, err, errlen);
    free(src);
    if (tokens)
        *tokens = nt - 1; /* the EOF */
    return len;
}

int dvl_lua_tokens(const char *path, char *err, size_t errlen) {
    char *src;
    long n = slurp(path, &src, err, errlen);
    if (n < 0)
        return -1;
    int nt = lua_tokens(path, src, (size_t)n, err, errlen);
    free(src);
    return nt;
}

/* ---- outcomes ---- */

static void collect(const dish_sim *sim, dvl_outcome *o) {
    int first = sim->ntlm > DISH_SIM_TLM ? sim->ntlm - DISH_SIM_TLM : 0;
    for (int k = first; k < sim->ntlm; k++) {
        const dish_tlm *t = &sim->tlm[k % DISH_SIM_TLM];
        if (t->kind == DISH_TLM_START)
            continue;
        if (t->kind == DISH_TLM_END || t->kind == DISH_TLM_FAULT) {
            o->ended = t->kind == DISH_TLM_END ? 1 : -1;
            o->result = t->value;
        }
        if (o->ntlm < DVL_TLM)
            o->tlm[o->ntlm] = *t;
        o->ntlm++;
    }
    o->nawake = sim->nawake;
    o->awake_ms = sim->awake_total_ms + (sim->awake ? sim->local_ms - sim->awake_since : 0);
}

/* The bytes run r of vm holds for the procedure of img (verified as im),
 * taken while it runs: its arena is the reservation the VM made. */
static void dish_mem(const dish_vm *vm, int r, const uint8_t *img, const dish_image *im,
                     dvl_dish_mem *mem) {
    memset(mem, 0, sizeof *mem);
    mem->run = sizeof(dish_run);
    mem->arena = sizeof(int32_t) * vm->runs[r].arena_words;
    for (int k = 0; k < im->nprocs; k++) {
        mem->code += im->proc[k].len;
        mem->slots += sizeof(dish_slot);
        if (im->proc[k].slot == img[DISH_HDR])
            mem->need_words = im->need[k];
    }
    mem->vm = sizeof *vm - sizeof vm->slots - sizeof vm->runs - sizeof vm->pool -
              sizeof vm->code_pool;
    mem->total = mem->run + mem->arena + mem->code + mem->slots + mem->vm;
}

int dvl_run_dish(const uint8_t *img, int len, const dvl_scenario *sc, dvl_outcome *o,
                 dvl_dish_mem *mem) {
    static dish_sim sim;
    static dish_vm vm;
    static dish_image im;
    memset(o, 0, sizeof *o);
    dvl_sim(&sim, sc);
    dish_vm_init(&vm, &sim.pl);
    if (dish_vm_load(&vm, img, (size_t)len, o->err, sizeof o->err) ||
        dish_verify(img, (size_t)len, NULL, &im, o->err, sizeof o->err))
        return -1;
    int r = dish_vm_start(&vm, img[DISH_HDR], NULL, 0);
    if (r < 0) {
        dish_vm_refusal(&vm, img[DISH_HDR], r, o->err, sizeof o->err);
        return -1;
    }
    if (mem)
        dish_mem(&vm, r, img, &im, mem);
    dish_vm_run(&vm, sim.local_ms + DVL_HOURS * 3600000LL);
    collect(&sim, o);
    return 0;
}

int dvl_run_lua(const char *path, const char *name, const dvl_scenario *sc, dvl_outcome *o,
                dish_lua_mem *mem) {
    static dish_sim sim;
    static dish_lua h;
    memset(o, 0, sizeof *o);
    dvl_sim(&sim, sc);
    if (dish_lua_open(&h, &sim.pl, path) || dish_lua_start(&h, name, NULL, 0)) {
        snprintf(o->err, sizeof o->err, "%s", h.err);
        dish_lua_close(&h);
        return -1;
    }
    dish_lua_run(&h, sim.local_ms + DVL_HOURS * 3600000LL);
    collect(&sim, o);
    snprintf(o->err, sizeof o->err, "%s", h.err);
    if (mem)
        *mem = h.mem;
    dish_lua_close(&h);
    return 0;
}

static const char *kind_name(dish_tlm_kind k) {
    static const char *names[] = {"tm", "start", "end", "fault", "clock"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

static void say(const dish_tlm *t, char *buf, size_t n) {
    if (!t)
        snprintf(buf, n, "nothing");
    else
        snprintf(buf, n, "%s %d %d at %.3f s", kind_name(t->kind), t->code, t->value,
                 (double)t->t_ms / 1000.0);
}

int dvl_compare(const dvl_outcome *a, const dvl_outcome *b, char *why, size_t n) {
    int na = a->ntlm < DVL_TLM ? a->ntlm : DVL_TLM, nb = b->ntlm < DVL_TLM ? b->ntlm : DVL_TLM;
    for (int k = 0; k < na || k < nb; k++) {
        const dish_tlm *x = k < na ? &a->tlm[k] : NULL, *y = k < nb ? &b->tlm[k] : NULL;
        if (x && y && x->kind == y->kind && x->t_ms == y->t_ms && x->code == y->code &&
            (x->value == y->value || x->kind == DISH_TLM_FAULT))
            continue;
        char sx[96], sy[96];
        say(x, sx, sizeof sx);
        say(y, sy, sizeof sy);
        snprintf(why, n, "record %d: DISH %s, Lua %s", k + 1, sx, sy);
        return -1;
    }
    if (a->ntlm != b->ntlm || a->nawake != b->nawake || a->awake_ms != b->awake_ms) {
        snprintf(why, n, "DISH %d records, awake %d times %.3f s; Lua %d, %d times %.3f s",
                 a->ntlm, a->nawake, (double)a->awake_ms / 1000.0, b->ntlm, b->nawake,
                 (double)b->awake_ms / 1000.0);
        return -1;
    }
    why[0] = 0;
    return 0;
}

/* ---- the power day ---- */

static int32_t q16(double deg) {
    return (int32_t)lround(deg * DISH_FIX_ONE);
}

static double wrap_lon(double lon) {
    return lon > 180.0 ? lon - 360.0 : lon < -180.0 ? lon + 360.0 : lon;
}

void dvl_day_boxes(dvl_box out[DVL_DAY_TARGETS]) {
    static dish_sim sim;
    dish_sim_init(&sim);
    for (int k = 0; k < DVL_DAY_TARGETS; k++) {
        int orbit = k / 2;
        double f = k % 2 ? 0.30 + 0.01 * (orbit % 4) : 0.12 + 0.01 * (orbit % 3);
        dish_fix fx;
        advance(&sim, (int64_t)((orbit + f) * (double)DVL_ORBIT_MS) / 1000 * 1000);
        sim.pl.gnss(sim.pl.ctx, &fx);
        double la = (double)fx.lat / DISH_FIX_ONE, lo = (double)fx.lon / DISH_FIX_ONE;
        out[k] = (dvl_box){q16(la - 0.75), q16(la + 0.75), q16(wrap_lon(lo - 1.5)),
                           q16(wrap_lon(lo + 1.5))};
    }
}

/* The platform under the day's runs, metering the pipelines: each one's
 * time from its start to the moment the simulator reports it ended (at a
 * wait's return, or at the cores' suspension, which ends it). */
typedef struct meter {
    dish_platform pl;
    const dish_platform *in;
    int64_t t0[DISH_PIPELINES + 1];
    int running[DISH_PIPELINES + 1];
    dvl_day *d;
} meter;

static void ended(meter *m) {
    const dish_platform *in = m->in;
    for (int p = 1; p <= DISH_PIPELINES; p++) {
        int st = m->running[p] ? in->pipe_status(in->ctx, p) : DISH_PIPE_RUNNING;
        if (st == DISH_PIPE_RUNNING)
            continue;
        m->running[p] = 0;
        m->d->need_ms += in->now_ms(in->ctx) - m->t0[p];
        m->d->ok += st == DISH_PIPE_OK;
    }
}

static int64_t m_now(void *ctx) {
    meter *m = ctx;
    return m->in->now_ms(m->in->ctx);
}

static unsigned m_wait(void *ctx, int64_t until) {
    meter *m = ctx;
    unsigned ev = m->in->wait_event(m->in->ctx, until);
    ended(m);
    return ev;
}

static int m_pget(void *ctx, int node, int id, int32_t *v) {
    meter *m = ctx;
    return m->in->param_get(m->in->ctx, node, id, v);
}

static int m_pset(void *ctx, int node, int id, int32_t v) {
    meter *m = ctx;
    return m->in->param_set(m->in->ctx, node, id, v);
}

static void m_gnss(void *ctx, dish_fix *f) {
    meter *m = ctx;
    m->in->gnss(m->in->ctx, f);
}

static void m_power(void *ctx, int awake) {
    meter *m = ctx;
    m->in->power(m->in->ctx, awake);
    ended(m);
}

static int m_start(void *ctx, int p) {
    meter *m = ctx;
    int rc = m->in->pipe_start(m->in->ctx, p);
    if (!rc) {
        m->t0[p] = m->in->now_ms(m->in->ctx);
        m->running[p] = 1;
        m->d->captures++;
    }
    return rc;
}

static int m_status(void *ctx, int p) {
    meter *m = ctx;
    return m->in->pipe_status(m->in->ctx, p);
}

static void m_tlm(void *ctx, const dish_tlm *t) {
    meter *m = ctx;
    m->in->telemetry(m->in->ctx, t);
}

/* One side of the day: the VM with the target image, or a Lua state. */
typedef struct side {
    const char *dish_path, *lua_path; /* lua_path NULL: DISH */
    dish_vm vm;
    dish_lua h;
    uint8_t img[DISH_MAX_IMAGE];
} side;

static int side_open(side *e, const dish_platform *pl, char *err, size_t n) {
    if (e->lua_path) {
        int rc = dish_lua_open(&e->h, pl, e->lua_path);
        if (rc)
            snprintf(err, n, "%s", e->h.err);
        return rc;
    }
    int len = dvl_compile(e->dish_path, e->img, NULL, err, n);
    dish_vm_init(&e->vm, pl);
    return len < 0 || dish_vm_load(&e->vm, e->img, (size_t)len, err, n) ? -1 : 0;
}

/* Starts the target procedure on box b and runs it to its end, or to
 * local time end: 0, or -1 when it could not start. */
static int side_target(side *e, const dvl_box *b, int64_t end, char *err, size_t n) {
    if (e->lua_path) {
        double a[4] = {(double)b->lat0 / DISH_FIX_ONE, (double)b->lat1 / DISH_FIX_ONE,
                       (double)b->lon0 / DISH_FIX_ONE, (double)b->lon1 / DISH_FIX_ONE};
        if (dish_lua_start(&e->h, "target", a, 4)) {
            snprintf(err, n, "%s", e->h.err);
            return -1;
        }
        dish_lua_run(&e->h, end);
        return 0;
    }
    int32_t a[4] = {b->lat0, b->lat1, b->lon0, b->lon1};
    int r = dish_vm_start(&e->vm, e->img[DISH_HDR], a, 4);
    if (r < 0) {
        char why[160];
        dish_vm_refusal(&e->vm, e->img[DISH_HDR], r, why, sizeof why);
        snprintf(err, n, "%s: %s", e->dish_path, why);
        return -1;
    }
    dish_vm_run(&e->vm, end);
    return 0;
}

/* The records since *seen: misses counted, USER, END and FAULT kept. */
static void day_records(const dish_sim *sim, int *seen, dvl_day *d, dish_tlm *all, int cap,
                        int *nall) {
    for (; *seen < sim->ntlm; ++*seen) {
        const dish_tlm *t = &sim->tlm[*seen % DISH_SIM_TLM];
        d->missed += t->kind == DISH_TLM_USER && t->code == 100;
        if ((t->kind == DISH_TLM_USER || t->kind == DISH_TLM_END || t->kind == DISH_TLM_FAULT) &&
            *nall < cap)
            all[(*nall)++] = *t;
    }
}

int dvl_run_day(const char *dish_path, const char *lua_path, dvl_day *d, dish_tlm *all,
                int cap, int *nall) {
    static dish_sim sim;
    static side e;
    static meter m;
    dvl_box box[DVL_DAY_TARGETS];
    int64_t end = DVL_DAY_ORBITS * DVL_ORBIT_MS;
    memset(d, 0, sizeof *d);
    *nall = 0;
    dvl_day_boxes(box);
    dish_sim_init(&sim);
    m = (meter){{&m, m_now, m_wait, m_pget, m_pset, m_gnss, m_power, m_start, m_status, m_tlm},
                &sim.pl, {0}, {0}, d};
    e.dish_path = dish_path;
    e.lua_path = lua_path;
    int rc = side_open(&e, &m.pl, d->err, sizeof d->err), seen = 0;
    for (int k = 0; !rc && k < DVL_DAY_TARGETS && sim.local_ms < end; k++) {
        rc = side_target(&e, &box[k], end, d->err, sizeof d->err);
        day_records(&sim, &seen, d, all, cap, nall);
    }
    if (lua_path)
        dish_lua_close(&e.h);
    d->nawake = sim.nawake;
    d->awake_ms = sim.awake_total_ms + (sim.awake ? sim.local_ms - sim.awake_since : 0);
    return rc;
}
