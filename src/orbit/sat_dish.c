/* sat_dish.c -- DISH on board the DIPP satellite (sat_dish.h): the
 * platform (the simulated satellite's table with two entries replaced:
 * a pipeline start queues a real capture, telemetry goes to the ground's
 * log), the clock the satellite's loop drives, and the procedure port. */
#include "sat_dish.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "csp.h"
#include "errors.h"
#include "proto.h"

/* The platform's ctx is the simulation, the first member. */
_Static_assert(offsetof(sat_dish, sim) == 0, "sat_dish: sim must come first");

static sat_dish *board(void *ctx) {
    return (sat_dish *)ctx;
}

/* ---- the platform ---- */

/* The simulation checks and times the start (cores awake, not running);
 * the satellite's loop runs the real pipeline on the next frame. */
static int board_pipe_start(void *ctx, int p) {
    sat_dish *d = board(ctx);
    if (d->sim.pl.pipe_start(ctx, p))
        return -1;
    d->captures |= 1u << p;
    return 0;
}

/* Suspending the cores fails their running pipelines (the simulation's
 * rule), so no frame is run for a capture still waiting for one. */
static void board_power(void *ctx, int awake) {
    sat_dish *d = board(ctx);
    d->sim.pl.power(ctx, awake);
    if (!awake)
        d->captures = 0;
}

/* Whether record t goes to stdout too: every start, end and fault, and a
 * run's first SAT_DISH_PRINT_TM tm records (a loop of tm writes millions:
 * 447 MB of log in 8 s). The telemetry counts and keeps them all. */
static int printed(sat_dish *d, const dish_tlm *t) {
    if (t->run < 0 || t->run >= DISH_MAX_RUNS)
        return 1;
    uint32_t *n = &d->tm_printed[t->run];
    if (t->kind == DISH_TLM_START)
        *n = 0;
    if (t->kind != DISH_TLM_USER)
        return 1;
    if (++*n == SAT_DISH_PRINT_TM + 1)
        printf("dipp sat: dish run %d: more than %d tm records: the rest are "
               "counted (dish.tm), the last %d kept for proc log, none "
               "printed\n", t->run, SAT_DISH_PRINT_TM, SAT_DISH_LOG);
    return *n <= SAT_DISH_PRINT_TM;
}

static void board_telemetry(void *ctx, const dish_tlm *t) {
    sat_dish *d = board(ctx);
    char line[128];
    d->log[d->logged++ % SAT_DISH_LOG] = *t;
    d->started += t->kind == DISH_TLM_START, d->ended += t->kind == DISH_TLM_END;
    d->faults += t->kind == DISH_TLM_FAULT, d->tms += t->kind == DISH_TLM_USER;
    if (!printed(d, t))
        return;
    dish_tlm_format(line, sizeof line, t);
    printf("dipp sat: dish %u %s\n", d->logged - 1, line);
    fflush(stdout);
}

static void warn_stderr(void *ctx, const char *why) {
    (void)ctx;
    fprintf(stderr, "dipp sat: %s\n", why);
}

void sat_dish_open(sat_dish *d, const char *dir, uint64_t wall) {
    memset(d, 0, sizeof *d);
    dish_sim_init(&d->sim);
    d->pl = d->sim.pl;
    d->pl.pipe_start = board_pipe_start;
    d->pl.power = board_power;
    d->pl.telemetry = board_telemetry;
    sat_dish_configure(d, &(sat_dish_cfg){1, 20, 0}, wall);
    dish_vm_init(&d->vm, &d->pl);
    proc_store_open(&d->store, dir, &d->vm, warn_stderr, NULL);
    d->procs.port = DIPP_PORT_PROCS;
}

void sat_dish_configure(sat_dish *d, const sat_dish_cfg *cfg, uint64_t wall) {
    assert(cfg->speed > 0 && cfg->pipe_s >= 0);
    d->sim.pipe_ms = (int64_t)(cfg->pipe_s * 1000.0);
    d->speed = cfg->speed;
    d->anchor_local = d->sim.local_ms, d->anchor_wall = wall;
    d->sim.pl.power(&d->sim, !cfg->asleep);
    d->sim.nawake = 0, d->sim.awake_total_ms = 0; /* the count starts here */
}

int sat_dish_accept(void *ctx, const up_manifest *m, const uint8_t *bytes, char *detail,
                    size_t cap) {
    sat_dish *d = ctx;
    return proc_store_add(&d->store, m->name, m->version, bytes, m->size, detail, cap);
}

/* ---- the clock ---- */

/* The simulated time the next thing is due: a fix, a pipeline's end, a
 * run's wake-up. */
static int64_t due(const sat_dish *d) {
    int64_t sim = dish_sim_next(&d->sim), vm = dish_vm_next(&d->vm);
    return vm < sim ? vm : sim;
}

/* Where the clock should read at wall time, at the set speed. */
static int64_t target(const sat_dish *d, uint64_t wall) {
    return d->anchor_local + (int64_t)((double)(wall - d->anchor_wall) * d->speed);
}

/* At least a wall ms when anything is ahead: at a high speed the clock
 * then falls behind by up to a wall ms, and the next step catches up. */
int sat_dish_idle_ms(const sat_dish *d, uint64_t wall, int cap) {
    int64_t ahead = due(d) - target(d, wall);
    if (ahead <= 0)
        return 0;
    double ms = (double)ahead / d->speed;
    return ms < 1 ? 1 : ms < cap ? (int)ms : cap;
}

/* Each event on the way is ticked in its turn. A capture started stops
 * the way: the satellite runs it before the clock goes on. So does a
 * long way (the link is looked at again between). */
void sat_dish_step(sat_dish *d, uint64_t wall) {
    int64_t to = target(d, wall);
    int events = 0;
    do {
        int64_t next = due(d);
        dish_vm_tick(&d->vm, dish_sim_advance(&d->sim, to < next ? to : next));
    } while (d->sim.local_ms < to && !d->captures && ++events < SAT_DISH_STEP_EVENTS);
}

int sat_dish_awake(const sat_dish *d) {
    return d->sim.awake;
}

void sat_dish_captured(sat_dish *d, int p, int ok) {
    d->captures &= ~(1u << p);
    dish_sim_pipe_result(&d->sim, p, ok);
}

/* ---- the procedure port ---- */

/* The line a listing ends with when the slots from K on did not fit its
 * frame: the ground asks again from K ('L' seq K). */
#define LIST_MORE "more from slot %u\n"
_Static_assert(DISH_SLOTS <= 100, "LIST_MORE_BYTES: two digits");
#define LIST_MORE_BYTES sizeof "more from slot 99\n" /* its NUL too */

/* One line per slot in use from slot `from` on: name and version of its
 * image, arguments, code bytes, the calls of it on board, runs inside
 * it; whole lines within cap (its NUL included), the last LIST_MORE
 * when the rest did not fit. A full board's listing is longer than a
 * frame: cut inside it, it was answered over a frame, and so never sent
 * (found by fuzz_sat). */
static size_t list(const sat_dish *d, unsigned from, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (unsigned k = from; k < DISH_SLOTS; k++) {
        const dish_slot *s = &d->vm.slots[k];
        const proc_image *im = proc_store_holding(&d->store, k);
        char line[160];
        int runs = 0;
        if (!s->info.used)
            continue;
        for (int r = 0; r < DISH_MAX_RUNS; r++)
            runs += d->vm.runs[r].state != DISH_R_FREE && d->vm.runs[r].fr[0].slot == k;
        size_t len = (size_t)snprintf(line, sizeof line, "slot %u: %s v%u, %u args, %u "
                                      "bytes, called from %u places, %d runs\n", k,
                                      im ? im->name : "?", im ? im->version : 0,
                                      s->p.nargs, s->p.len, s->call_sites, runs);
        if (n + len + LIST_MORE_BYTES > cap) {
            n += (size_t)snprintf(out + n, cap - n, LIST_MORE, k);
            break;
        }
        memcpy(out + n, line, len + 1);
        n += len;
    }
    return n;
}

/* 'X' seq slot nargs arg...: 0 and the run in why, or the code and why
 * not. */
static int run(sat_dish *d, const uint8_t *msg, size_t len, char *why, size_t cap) {
    int32_t args[DISH_MAX_LOCALS];
    unsigned slot = msg[3], nargs = len >= 5 ? msg[4] : 0;
    if (len < 5 || nargs > DISH_MAX_LOCALS || len != 5 + 4 * (size_t)nargs)
        return dipp_say(why, cap, DIPP_E_UP_MESSAGE, "run: %zu bytes, not 5 and 4 per "
                        "argument (%u arguments, at most %d)", len, nargs, DISH_MAX_LOCALS);
    if (slot >= DISH_SLOTS)
        return dipp_say(why, cap, DIPP_E_UP_MESSAGE, "run: slot %u is not one of 0-%d",
                        slot, DISH_SLOTS - 1);
    for (unsigned k = 0; k < nargs; k++)
        args[k] = (int32_t)proto_get32(msg + 5 + 4 * k);
    int r = dish_vm_start(&d->vm, slot, args, (int)nargs);
    if (r < 0) { /* empty, other arguments, all runs busy, no arena room */
        dish_vm_refusal(&d->vm, slot, r, why, cap);
        return DIPP_E_UP_PROCS;
    }
    return dipp_say(why, cap, 0, "slot %u: run %d started", slot, r);
}

/* 'S' seq slot: every run inside the procedure in slot stopped, those
 * started in another slot that called into it too (each with a fault
 * record, DISH_FAULT_KILLED): 0 and how many in why. */
static int stop(sat_dish *d, const uint8_t *msg, size_t len, char *why, size_t cap) {
    unsigned slot = msg[3];
    if (len != 4)
        return dipp_say(why, cap, DIPP_E_UP_MESSAGE, "stop: %zu bytes, not 4", len);
    int stopped = dish_vm_stop_slot(&d->vm, slot);
    return dipp_say(why, cap, 0, "slot %u: %d runs stopped", slot, stopped);
}

/* A run, a stop or a delete the port took (cmd_do_fn): its body is
 * checked here. */
static int change(void *ctx, const uint8_t *msg, size_t body, char *why, size_t cap) {
    sat_dish *d = ctx;
    if (msg[0] == 'X')
        return run(d, msg, body, why, cap);
    if (msg[0] == 'S')
        return stop(d, msg, body, why, cap);
    if (body != 4)
        return dipp_say(why, cap, DIPP_E_UP_MESSAGE, "delete: %zu bytes, not 4", body);
    return proc_store_delete(&d->store, msg[3], why, cap);
}

size_t sat_dish_handle(sat_dish *d, const uint8_t *msg, size_t len, uint8_t *out,
                       size_t cap) {
    char text[CSP_MTU];
    if (len < 3)
        return 0; /* no sequence number to answer */
    if (msg[0] == 'L') { /* 'L' seq [from]: the text within the answer's cap */
        list(d, len >= 4 ? msg[3] : 0, text, cap - 7 < sizeof text ? cap - 6 : sizeof text);
        return proto_answer(msg, 0, text, out, cap);
    }
    if ((msg[0] == 'X' || msg[0] == 'E' || msg[0] == 'S') && len >= 4)
        return cmd_serve(&d->procs, d->store.dir, d->pk, msg, len, change, d, out, cap);
    snprintf(text, sizeof text, "procedure port: message '%c' of %zu bytes is not one of "
             "L, X (5 + 4n bytes), E (4 bytes), S (4 bytes), each of the last three "
             "signed",
             msg[0] >= 32 && msg[0] < 127 ? msg[0] : '?', len);
    return proto_answer(msg, DIPP_E_UP_MESSAGE, text, out, cap);
}

/* ---- telemetry ---- */

size_t sat_dish_status(const sat_dish *d, char *out, size_t cap) {
    const dish_sim *s = &d->sim;
    int64_t awake = s->awake_total_ms + (s->awake ? s->local_ms - s->awake_since : 0);
    int used = 0;
    for (unsigned k = 0; k < DISH_SLOTS; k++)
        used += d->vm.slots[k].info.used;
    int n = snprintf(out, cap,
                     "dish.procs=%d\ndish.runs=%d\ndish.started=%llu\ndish.ended=%llu\n"
                     "dish.faults=%llu\ndish.tm=%llu\ndish.next=%u\ndish.clock_s=%lld\n"
                     "dish.sim_s=%.1f\ndish.awake=%d\ndish.wakes=%d\ndish.awake_s=%.1f\n"
                     "dish.battery=%d\n",
                     used, dish_vm_alive(&d->vm), (unsigned long long)d->started,
                     (unsigned long long)d->ended, (unsigned long long)d->faults,
                     (unsigned long long)d->tms, d->logged,
                     (long long)(dish_vm_clock(&d->vm) / 1000), (double)s->local_ms / 1000.0,
                     s->awake, s->nawake + s->awake, (double)awake / 1000.0,
                     (int)s->battery);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t sat_dish_records(const sat_dish *d, uint32_t from, char *out, size_t cap) {
    uint32_t first = d->logged > SAT_DISH_LOG ? d->logged - SAT_DISH_LOG : 0;
    size_t n = 0;
    for (uint32_t k = from > first ? from : first; k < d->logged; k++) {
        char line[160];
        int len = snprintf(line, sizeof line, "dish.%u=", k);
        dish_tlm_format(line + len, sizeof line - (size_t)len, &d->log[k % SAT_DISH_LOG]);
        len = (int)strlen(line);
        if (n + (size_t)len + 2 > cap)
            break;
        n += (size_t)snprintf(out + n, cap - n, "%s\n", line);
    }
    if (cap)
        out[n] = 0;
    return n;
}
