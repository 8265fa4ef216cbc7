/* dish_vm.c -- the DISH runtime (dish_vm.h). Code reaches a slot only
 * through the verifier, so the interpreter's checks of stack and frame
 * bounds are a second line: every arena access is checked against the
 * run's own range of the pool, and a verifier bug ends one run, never the
 * VM or another run. Arithmetic saturates instead of wrapping, division
 * by zero stops the run. A run yields at a wait, a sleep, or after
 * DISH_BUDGET instructions. */
#include "dish_vm.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* ---- telemetry and run lifetime ---- */

static void report(dish_vm *vm, dish_tlm_kind kind, int run, int slot, int32_t code,
                   int32_t value) {
    dish_tlm t = {dish_vm_clock(vm), kind, run, slot, code, value};
    vm->pl->telemetry(vm->pl->ctx, &t);
}

static void end_run(dish_vm *vm, int ri, dish_tlm_kind kind, int32_t code, int32_t value) {
    dish_run *r = &vm->runs[ri];
    report(vm, kind, ri, r->fr[0].slot, code, value);
    r->state = DISH_R_FREE;
    r->nfr = 0;
    r->arena_words = 0; /* back to the pool */
}

static void fault(dish_vm *vm, int ri, dish_fault why) {
    dish_run *r = &vm->runs[ri];
    end_run(vm, ri, DISH_TLM_FAULT, why, r->nfr ? r->fr[r->nfr - 1].pc : 0);
}

/* ---- the clock ---- */

static int64_t local_now(const dish_vm *vm) {
    return vm->pl->now_ms(vm->pl->ctx);
}

int64_t dish_vm_clock(const dish_vm *vm) {
    return local_now(vm) + vm->offset_ms;
}

/* A wait on the clock re-checks as the second it may wait for begins: a
 * re-check DISH_POLL_MS after the wait began woke it up to a second late
 * (the flight's block re-checks every 250 ms; at 7 km/s a second is 7 km
 * of ground track). */
int64_t dish_vm_next_second(const dish_vm *vm, int64_t now) {
    int64_t into = (now + vm->offset_ms) % DISH_POLL_MS;
    return now + DISH_POLL_MS - (into < 0 ? into + DISH_POLL_MS : into);
}

int64_t dish_vm_clock_bound(const dish_vm *vm) {
    if (!vm->synced)
        return -1;
    return (local_now(vm) - vm->last_fix_local) * DISH_DRIFT_PPM / 1000000;
}

/* A new fix sets the clock: the first one from nothing, later ones
 * correct the drift since, reported when it grew past the threshold. */
static void take_fix(dish_vm *vm) {
    vm->pl->gnss(vm->pl->ctx, &vm->fix);
    if (!vm->fix.valid)
        return;
    int64_t local = local_now(vm), err = local + vm->offset_ms - vm->fix.time_ms;
    int was = vm->synced;
    vm->offset_ms = vm->fix.time_ms - local;
    vm->last_fix_local = local;
    vm->synced = 1;
    if (!was) {
        report(vm, DISH_TLM_CLOCK, -1, -1, 0, 0);
        return;
    }
    int64_t mag = err < 0 ? -err : err;
    if (mag > vm->max_drift_ms)
        vm->max_drift_ms = mag;
    if (mag >= DISH_DRIFT_REPORT_MS)
        report(vm, DISH_TLM_CLOCK, -1, -1, 1, (int32_t)(err > INT32_MAX ? INT32_MAX : err));
}

/* ---- the run's arena and operand stack ---- */

/* Word i of the run's arena, or NULL past its range of the pool. */
static int32_t *word(dish_vm *vm, const dish_run *r, unsigned i) {
    return i < r->arena_words ? &vm->pool[r->arena_at + i] : NULL;
}

static dish_frame *top_frame(dish_run *r) {
    return &r->fr[r->nfr - 1];
}

/* Where the operand stack of the current frame starts. */
static unsigned stack_base(const dish_vm *vm, dish_run *r) {
    const dish_frame *f = top_frame(r);
    const dish_proc *p = &vm->slots[f->slot].p;
    return (unsigned)f->base + p->nlocals + p->ncounters;
}

static int push(dish_vm *vm, dish_run *r, int32_t v) {
    int32_t *w = word(vm, r, r->sp);
    if (!w)
        return -1;
    *w = v;
    r->sp++;
    return 0;
}

static int pop(dish_vm *vm, dish_run *r, int32_t *v) {
    if (r->sp <= stack_base(vm, r))
        return -1;
    int32_t *w = word(vm, r, --r->sp);
    assert(w); /* push and enter keep sp inside the arena */
    *v = *w;
    return 0;
}

/* ---- arithmetic ---- */

static int32_t sat(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

/* a op b for the binary opcodes; -1 on division by zero. */
static int binary(int op, int32_t a, int32_t b, int32_t *out) {
    int64_t x = a, y = b;
    if ((op == DISH_OP_DIV || op == DISH_OP_MOD || op == DISH_OP_FDIV) && !b)
        return -1;
    switch (op) {
    case DISH_OP_ADD: *out = sat(x + y); break;
    case DISH_OP_SUB: *out = sat(x - y); break;
    case DISH_OP_MUL: *out = sat(x * y); break;
    case DISH_OP_DIV: *out = sat(x / y); break;
    case DISH_OP_MOD: *out = (int32_t)(x % y); break;
    case DISH_OP_FMUL: *out = sat(x * y / DISH_FIX_ONE); break;
    case DISH_OP_FDIV: *out = sat(x * DISH_FIX_ONE / y); break;
    case DISH_OP_EQ: *out = a == b; break;
    case DISH_OP_NE: *out = a != b; break;
    case DISH_OP_LT: *out = a < b; break;
    case DISH_OP_LE: *out = a <= b; break;
    case DISH_OP_AND: *out = a && b; break;
    default: *out = a || b; break; /* OR */
    }
    return 0;
}

static int32_t unary(int op, int32_t a) {
    switch (op) {
    case DISH_OP_NEG: return sat(-(int64_t)a);
    case DISH_OP_NOT: return !a;
    case DISH_OP_ITOF: return sat((int64_t)a * DISH_FIX_ONE);
    default: return a / DISH_FIX_ONE; /* FTOI: toward zero */
    }
}

static int is_binary(int op) {
    return op >= DISH_OP_ADD && op <= DISH_OP_OR;
}

static int is_unary(int op) {
    return op >= DISH_OP_NEG && op <= DISH_OP_FTOI;
}

/* ---- platform readings ---- */

/* PSTART or PSTAT of pipeline p, which only the range check guards. */
static int32_t pipeline(const dish_vm *vm, int op, int32_t p) {
    const dish_platform *pl = vm->pl;
    if (p < 1 || p > DISH_PIPELINES)
        return op == DISH_OP_PSTART ? -1 : DISH_PIPE_IDLE;
    return op == DISH_OP_PSTART ? pl->pipe_start(pl->ctx, p) : pl->pipe_status(pl->ctx, p);
}

static int in_box(const dish_fix *f, const int32_t *b) {
    if (!f->valid || f->lat < b[0] || f->lat > b[1])
        return 0;
    if (b[2] <= b[3])
        return f->lon >= b[2] && f->lon <= b[3];
    return f->lon >= b[2] || f->lon <= b[3]; /* across the antimeridian */
}

static int32_t clock_s(const dish_vm *vm) {
    return sat(dish_vm_clock(vm) / 1000);
}

static int64_t seconds_ms(int32_t s) {
    int64_t c = s < 0 ? 0 : s > DISH_MAX_WAIT_S ? DISH_MAX_WAIT_S : s;
    return c * 1000;
}

static int64_t wake_at(const dish_vm *vm, const dish_run *r) {
    return r->wake_abs ? r->wake - vm->offset_ms : r->wake;
}

/* ---- instructions ---- */

typedef enum { GO, YIELD, STOP } flow;

/* Pushes a frame for slot, whose nargs arguments are on top of the stack
 * (the root's, at a start, make the whole stack), its other locals and
 * its counters zeroed: GO, or STOP with the fault past the run's limits. */
static flow enter(dish_vm *vm, int ri, dish_run *r, unsigned slot, unsigned nargs) {
    const dish_slot *s = &vm->slots[slot];
    unsigned base = r->sp - nargs, bottom = r->nfr ? stack_base(vm, r) : 0;
    if (!s->info.used) {
        fault(vm, ri, DISH_FAULT_SLOT);
        return STOP;
    }
    unsigned top = base + s->p.nlocals + s->p.ncounters;
    if (r->nfr >= DISH_MAX_DEPTH || r->sp < nargs || base < bottom || top < r->sp ||
        top > r->arena_words) {
        fault(vm, ri, DISH_FAULT_STACK);
        return STOP;
    }
    if (top > r->sp)
        memset(word(vm, r, r->sp), 0, sizeof(int32_t) * (top - r->sp));
    r->sp = (uint16_t)top;
    r->fr[r->nfr++] = (dish_frame){(uint8_t)slot, 0, (uint16_t)base};
    return GO;
}

static flow do_ret(dish_vm *vm, int ri, dish_run *r, int32_t v) {
    r->sp = top_frame(r)->base;
    if (--r->nfr == 0) {
        r->nfr = 1; /* end_run names the root's slot */
        end_run(vm, ri, DISH_TLM_END, 0, v);
        return STOP;
    }
    return push(vm, r, v) ? (fault(vm, ri, DISH_FAULT_STACK), STOP) : GO;
}

/* WAIT: go on when the condition held, take the else branch past the
 * deadline, otherwise sleep on the condition's events. */
static flow do_wait(dish_vm *vm, dish_run *r, const uint8_t *o, int32_t cond) {
    if (cond)
        return GO;
    int64_t now = local_now(vm);
    if (now >= r->deadline) {
        top_frame(r)->pc = dish_get16(o + 2);
        return GO;
    }
    top_frame(r)->pc = dish_get16(o);
    r->mask = o[4];
    r->next_poll = dish_vm_next_second(vm, now);
    r->state = DISH_R_WAIT;
    return YIELD;
}

/* `sleep S` or `sleep until T` (the synced clock's seconds), neither
 * past DISH_MAX_WAIT_S from now: a run asleep until 2038 held its place
 * among the DISH_MAX_RUNS for good. */
static flow do_sleep(dish_vm *vm, dish_run *r, int op, int32_t s) {
    r->wake_abs = op == DISH_OP_SLEEPU;
    if (r->wake_abs) {
        int64_t now = dish_vm_clock(vm), until = (int64_t)s * 1000;
        int64_t latest = now + seconds_ms(DISH_MAX_WAIT_S);
        r->wake = until < latest ? until : latest;
    } else {
        r->wake = local_now(vm) + seconds_ms(s);
    }
    r->state = DISH_R_SLEEP;
    return YIELD;
}

/* Local (or, past the locals, loop counter) idx of the current frame, or
 * NULL outside the frame's limit. */
static int32_t *cell(dish_vm *vm, dish_run *r, unsigned idx, unsigned counter) {
    const dish_frame *f = top_frame(r);
    const dish_proc *p = &vm->slots[f->slot].p;
    unsigned limit = counter ? p->ncounters : p->nlocals;
    return idx < limit ? word(vm, r, f->base + (counter ? p->nlocals : 0) + idx) : NULL;
}

/* Opcodes that pop one value and act on it. */
static flow pop_one(dish_vm *vm, int ri, dish_run *r, int op, const uint8_t *o, int32_t v) {
    const dish_platform *pl = vm->pl;
    dish_frame *f = top_frame(r);
    int32_t *c;
    switch (op) {
    case DISH_OP_STORE:
        if (!(c = cell(vm, r, o[0], 0)))
            return fault(vm, ri, DISH_FAULT_STACK), STOP;
        *c = v;
        return GO;
    case DISH_OP_POP: return GO;
    case DISH_OP_JZ: if (!v) f->pc = dish_get16(o); return GO;
    case DISH_OP_WSET: r->deadline = local_now(vm) + seconds_ms(v); return GO;
    case DISH_OP_WAIT: return do_wait(vm, r, o, v);
    case DISH_OP_SLEEP: case DISH_OP_SLEEPU: return do_sleep(vm, r, op, v);
    case DISH_OP_RET: return do_ret(vm, ri, r, v);
    case DISH_OP_PSET:
        if (pl->param_set(pl->ctx, o[0], o[1], v)) {
            fault(vm, ri, DISH_FAULT_PARAM);
            return STOP;
        }
        vm->events |= DISH_EV_PARAM;
        return GO;
    }
    int32_t code;
    if (pop(vm, r, &code)) { /* TLM: code under value */
        fault(vm, ri, DISH_FAULT_STACK);
        return STOP;
    }
    report(vm, DISH_TLM_USER, ri, r->fr[0].slot, code, v);
    return GO;
}

/* Opcodes that push one value without popping: 0 and the value, or the
 * fault. */
static int produce(dish_vm *vm, dish_run *r, int op, const uint8_t *o, int32_t *v) {
    const dish_platform *pl = vm->pl;
    const int32_t *c;
    switch (op) {
    case DISH_OP_PUSH8: *v = (int8_t)o[0]; return 0;
    case DISH_OP_PUSH32: *v = dish_get32(o); return 0;
    case DISH_OP_LOAD: case DISH_OP_CTR:
        if (!(c = cell(vm, r, o[0], op == DISH_OP_CTR)))
            return DISH_FAULT_STACK;
        *v = *c;
        return 0;
    case DISH_OP_NOW: *v = clock_s(vm); return 0;
    case DISH_OP_HASFIX: *v = vm->fix.valid; return 0;
    case DISH_OP_LAT: *v = vm->fix.valid ? vm->fix.lat : 0; return 0;
    case DISH_OP_LON: *v = vm->fix.valid ? vm->fix.lon : 0; return 0;
    default: return pl->param_get(pl->ctx, o[0], o[1], v) ? DISH_FAULT_PARAM : 0;
    }
}

/* INIT, TEST, NEXT on the counter in the frame: -1 outside its limit. */
static int counted_loop(dish_vm *vm, dish_run *r, int op, const uint8_t *o) {
    dish_frame *f = top_frame(r);
    if (op == DISH_OP_NEXT) {
        f->pc = dish_get16(o);
        return 0;
    }
    int32_t *c = cell(vm, r, o[0], 1);
    if (!c)
        return -1;
    if (op == DISH_OP_INIT)
        *c = dish_get16(o + 1);
    else if (*c <= 0)
        f->pc = dish_get16(o + 1);
    else
        --*c;
    return 0;
}

/* Pops n values into v[0..n) in push order; -1 when the frame lacks them. */
static int pop_n(dish_vm *vm, dish_run *r, int32_t *v, int n) {
    for (int k = n - 1; k >= 0; k--)
        if (pop(vm, r, &v[k]))
            return -1;
    return 0;
}

static flow step_stack(dish_vm *vm, int ri, dish_run *r, int op, const uint8_t *o) {
    const dish_opinfo *in = &dish_ops[op];
    int32_t v[4], out;
    int bad;
    /* TLM pops its second value itself (pop_one) */
    if (pop_n(vm, r, v, op == DISH_OP_TLM ? 1 : in->pops))
        return fault(vm, ri, DISH_FAULT_STACK), STOP;
    if (is_binary(op)) {
        if (binary(op, v[0], v[1], &out))
            return fault(vm, ri, DISH_FAULT_DIV0), STOP;
    } else if (is_unary(op)) {
        out = unary(op, v[0]);
    } else if (op == DISH_OP_INBOX) {
        out = in_box(&vm->fix, v);
    } else if (op == DISH_OP_PSTART || op == DISH_OP_PSTAT) {
        out = pipeline(vm, op, v[0]);
    } else if (in->pops) {
        return pop_one(vm, ri, r, op, o, v[0]);
    } else if ((bad = produce(vm, r, op, o, &out))) {
        return fault(vm, ri, (dish_fault)bad), STOP;
    }
    return push(vm, r, out) ? (fault(vm, ri, DISH_FAULT_STACK), STOP) : GO;
}

/* The code of slot s, in the code pool. */
static const uint8_t *slot_code(const dish_vm *vm, const dish_slot *s) {
    return vm->code_pool + s->p.off;
}

/* Executes the instruction at the run's pc. */
static flow step(dish_vm *vm, int ri, dish_run *r) {
    dish_frame *f = top_frame(r);
    const dish_slot *s = &vm->slots[f->slot];
    if (f->pc >= s->p.len)
        return fault(vm, ri, DISH_FAULT_STACK), STOP;
    const uint8_t *code = slot_code(vm, s);
    int op = code[f->pc];
    const uint8_t *o = code + f->pc + 1;
    f->pc = (uint16_t)(f->pc + 1 + dish_ops[op].operand_bytes);
    switch (op) {
    case DISH_OP_JMP: f->pc = dish_get16(o); return GO;
    case DISH_OP_INIT: case DISH_OP_TEST: case DISH_OP_NEXT:
        return counted_loop(vm, r, op, o) ? (fault(vm, ri, DISH_FAULT_STACK), STOP) : GO;
    case DISH_OP_CALL: return enter(vm, ri, r, o[0], o[1]);
    case DISH_OP_WAKE: case DISH_OP_SUSPEND:
        vm->pl->power(vm->pl->ctx, op == DISH_OP_WAKE);
        return GO;
    }
    return step_stack(vm, ri, r, op, o);
}

static void execute(dish_vm *vm, int ri) {
    dish_run *r = &vm->runs[ri];
    for (int n = 0; n < DISH_BUDGET && r->state == DISH_R_READY; n++) {
        r->executed++;
        if (step(vm, ri, r) != GO)
            return;
    }
}

/* ---- slots ---- */

void dish_vm_init(dish_vm *vm, const dish_platform *pl) {
    memset(vm, 0, sizeof *vm);
    vm->pl = pl;
    take_fix(vm);
}

/* A CALL takes 3 bytes, so the code pool holds at most this many. */
_Static_assert(DISH_CODE_POOL / 3 <= UINT16_MAX, "call_sites can wrap");

/* Adds d to the call count of every slot the procedure calls. */
static void count_calls(dish_vm *vm, const dish_slot *s, int d) {
    const uint8_t *code = slot_code(vm, s);
    for (unsigned pc = 0; pc < s->p.len; pc += 1u + dish_ops[code[pc]].operand_bytes)
        if (code[pc] == DISH_OP_CALL)
            vm->slots[code[pc + 1]].call_sites =
                (uint16_t)(vm->slots[code[pc + 1]].call_sites + d);
}

/* The code bytes of a verified image's procedures. */
static unsigned image_code(const dish_image *im) {
    unsigned n = 0;
    for (int k = 0; k < im->nprocs; k++)
        n += im->proc[k].len;
    return n;
}

/* Installs procedure k of im, its code appended to the code pool (which
 * the caller has found room in). */
static void install(dish_vm *vm, const dish_image *im, int k) {
    const dish_proc *p = &im->proc[k];
    dish_slot *s = &vm->slots[p->slot];
    assert(vm->code_used + p->len <= DISH_CODE_POOL);
    s->p = *p;
    s->p.off = vm->code_used;
    s->info = dish_image_slotinfo(im, k);
    memcpy(vm->code_pool + vm->code_used, im->code + p->off, p->len);
    vm->code_used = (uint16_t)(vm->code_used + p->len);
}

int dish_vm_load(dish_vm *vm, const uint8_t *img, size_t len, char *err, size_t errlen) {
    static dish_image im; /* one load at a time: kept off the task's stack */
    dish_slotinfo onboard[DISH_SLOTS];
    for (int k = 0; k < DISH_SLOTS; k++)
        onboard[k] = vm->slots[k].info;
    if (dish_verify(img, len, onboard, &im, err, errlen))
        return -1;
    unsigned need = image_code(&im), room = DISH_CODE_POOL - vm->code_used;
    if (need > room) {
        snprintf(err, errlen, "image of %d procedures: %u code bytes, the code pool has %u of "
                 "%d free: not loaded", im.nprocs, need, room, DISH_CODE_POOL);
        return -1;
    }
    for (int k = 0; k < im.nprocs; k++)
        install(vm, &im, k);
    for (int k = 0; k < im.nprocs; k++)
        count_calls(vm, &vm->slots[im.proc[k].slot], 1);
    return 0;
}

/* Frees the code of slot s: the code above it moves down over it, so
 * that the pool stays packed and any free room is one range at its end.
 * Runs name code by slot and pc, never by address, so none is disturbed. */
static void free_code(dish_vm *vm, const dish_slot *s) {
    unsigned at = s->p.off, len = s->p.len;
    assert(at + len <= vm->code_used);
    memmove(vm->code_pool + at, vm->code_pool + at + len, vm->code_used - at - len);
    for (int k = 0; k < DISH_SLOTS; k++)
        if (vm->slots[k].info.used && vm->slots[k].p.off > at)
            vm->slots[k].p.off = (uint16_t)(vm->slots[k].p.off - len);
    vm->code_used = (uint16_t)(vm->code_used - len);
}

/* Whether run r is inside the procedure in slot: started there, or
 * calling it from another procedure. */
static int run_inside(const dish_run *r, unsigned slot) {
    for (int j = 0; r->state != DISH_R_FREE && j < r->nfr; j++)
        if (r->fr[j].slot == slot)
            return 1;
    return 0;
}

static int slot_running(const dish_vm *vm, unsigned slot) {
    for (int k = 0; k < DISH_MAX_RUNS; k++)
        if (run_inside(&vm->runs[k], slot))
            return 1;
    return 0;
}

int dish_vm_delete(dish_vm *vm, unsigned slot, char *err, size_t errlen) {
    dish_slot *s = slot < DISH_SLOTS ? &vm->slots[slot] : NULL;
    const char *why = !s || !s->info.used ? "is empty"
                      : s->call_sites     ? "is called by another procedure"
                      : slot_running(vm, slot) ? "is running"
                                               : NULL;
    if (why) {
        snprintf(err, errlen, "slot %u %s: not deleted", slot, why);
        return -1;
    }
    count_calls(vm, s, -1);
    free_code(vm, s);
    memset(s, 0, sizeof *s);
    return 0;
}

/* ---- runs and the scheduler ---- */

static int free_run(const dish_vm *vm) {
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++)
        if (vm->runs[ri].state == DISH_R_FREE)
            return ri;
    return -1;
}

/* A live run whose arena overlaps pool[at..at+words), or NULL. */
static const dish_run *overlap(const dish_vm *vm, unsigned at, unsigned words) {
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++) {
        const dish_run *r = &vm->runs[ri];
        if (r->state != DISH_R_FREE && r->arena_at < at + words &&
            at < (unsigned)r->arena_at + r->arena_words)
            return r;
    }
    return NULL;
}

/* First fit: the lowest offset of the pool where words are free, or -1.
 * Each turn moves past one live run's arena, never to come back to it:
 * at most DISH_MAX_RUNS turns. */
static int find_room(const dish_vm *vm, unsigned words) {
    unsigned at = 0;
    while (at + words <= DISH_POOL_WORDS) {
        const dish_run *r = overlap(vm, at, words);
        if (!r)
            return (int)at;
        at = (unsigned)r->arena_at + r->arena_words;
    }
    return -1;
}

/* Run ri's start: its arena zeroed, the arguments pushed and the root
 * frame entered over them (a fault, should the verifier's need be short). */
static void begin(dish_vm *vm, int ri, unsigned slot, const int32_t *args, int nargs,
                  unsigned at) {
    dish_run *r = &vm->runs[ri];
    memset(r, 0, sizeof *r);
    r->arena_at = (uint16_t)at;
    r->arena_words = vm->slots[slot].info.need;
    memset(vm->pool + at, 0, sizeof(int32_t) * r->arena_words);
    r->fr[0].slot = (uint8_t)slot; /* what a fault before the frame names */
    r->state = DISH_R_READY;
    report(vm, DISH_TLM_START, ri, (int)slot, (int32_t)slot, 0);
    for (int k = 0; k < nargs; k++)
        if (push(vm, r, args[k])) {
            fault(vm, ri, DISH_FAULT_STACK);
            return;
        }
    enter(vm, ri, r, slot, (unsigned)nargs);
}

int dish_vm_start(dish_vm *vm, unsigned slot, const int32_t *args, int nargs) {
    if (slot >= DISH_SLOTS || !vm->slots[slot].info.used || nargs != vm->slots[slot].p.nargs)
        return DISH_START_NOPROC;
    int ri = free_run(vm), at = find_room(vm, vm->slots[slot].info.need);
    if (ri < 0 || at < 0)
        return ri < 0 ? DISH_START_BUSY : DISH_START_NOROOM;
    begin(vm, ri, slot, args, nargs, (unsigned)at);
    return ri;
}

/* The pool's words not held by a live run. */
static unsigned pool_free(const dish_vm *vm) {
    unsigned held = 0;
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++)
        held += vm->runs[ri].state != DISH_R_FREE ? vm->runs[ri].arena_words : 0;
    return DISH_POOL_WORDS - held;
}

void dish_vm_refusal(const dish_vm *vm, unsigned slot, int rc, char *err, size_t errlen) {
    const dish_slot *s = slot < DISH_SLOTS ? &vm->slots[slot] : NULL;
    unsigned free_words = pool_free(vm);
    if (rc == DISH_START_BUSY)
        snprintf(err, errlen, "slot %u: all %d runs busy: not started", slot, DISH_MAX_RUNS);
    else if (rc == DISH_START_NOROOM && s)
        snprintf(err, errlen, "slot %u needs %u arena words in one range, the %d-word pool "
                 "has %u free%s: not started", slot, s->info.need, DISH_POOL_WORDS, free_words,
                 free_words >= s->info.need ? ", none of them that long" : "");
    else if (s && s->info.used)
        snprintf(err, errlen, "slot %u takes %u arguments: not started", slot, s->p.nargs);
    else
        snprintf(err, errlen, "slot %u is empty: not started", slot);
}

void dish_vm_stop(dish_vm *vm, int r) {
    if (r >= 0 && r < DISH_MAX_RUNS && vm->runs[r].state != DISH_R_FREE)
        fault(vm, r, DISH_FAULT_KILLED);
}

int dish_vm_stop_slot(dish_vm *vm, unsigned slot) {
    int stopped = 0;
    for (int r = 0; r < DISH_MAX_RUNS; r++)
        if (run_inside(&vm->runs[r], slot)) {
            dish_vm_stop(vm, r);
            stopped++;
        }
    return stopped;
}

static void wake(const dish_vm *vm, dish_run *r, unsigned ev, int64_t now) {
    if (r->state == DISH_R_WAIT &&
        ((ev & r->mask) || now >= r->deadline ||
         ((r->mask & DISH_EV_TIME) && now >= r->next_poll)))
        r->state = DISH_R_READY;
    if (r->state == DISH_R_SLEEP && now >= wake_at(vm, r))
        r->state = DISH_R_READY;
}

void dish_vm_tick(dish_vm *vm, unsigned events) {
    events |= vm->events;
    vm->events = 0;
    if (events & DISH_EV_GNSS)
        take_fix(vm);
    int64_t now = local_now(vm);
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++) {
        wake(vm, &vm->runs[ri], events, now);
        if (vm->runs[ri].state == DISH_R_READY)
            execute(vm, ri);
    }
}

static int64_t due(const dish_vm *vm, const dish_run *r, int64_t now) {
    switch (r->state) {
    case DISH_R_READY: return now;
    case DISH_R_SLEEP: return wake_at(vm, r);
    case DISH_R_WAIT:
        return (r->mask & DISH_EV_TIME) && r->next_poll < r->deadline ? r->next_poll
                                                                       : r->deadline;
    default: return INT64_MAX;
    }
}

int64_t dish_vm_next(const dish_vm *vm) {
    int64_t now = local_now(vm), next = INT64_MAX;
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++) {
        int64_t d = due(vm, &vm->runs[ri], now);
        next = d < next ? d : next;
    }
    return vm->events && next != INT64_MAX ? now : next;
}

int dish_vm_alive(const dish_vm *vm) {
    int n = 0;
    for (int ri = 0; ri < DISH_MAX_RUNS; ri++)
        n += vm->runs[ri].state != DISH_R_FREE;
    return n;
}

int dish_vm_run(dish_vm *vm, int64_t until_ms) {
    unsigned ev = 0;
    for (;;) {
        dish_vm_tick(vm, ev);
        int64_t next = dish_vm_next(vm);
        if (!dish_vm_alive(vm) || local_now(vm) >= until_ms)
            return dish_vm_alive(vm);
        ev = vm->pl->wait_event(vm->pl->ctx, next < until_ms ? next : until_ms);
    }
}
