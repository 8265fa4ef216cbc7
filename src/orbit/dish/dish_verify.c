/* dish_verify.c -- the verifier (dish_verify.h). The rules, in order:
 * header (magic, version, sizes, CRC); each procedure record in range;
 * code decodes into whole instructions with operands in range; every
 * jump lands on an instruction and only two kinds go backward: a counted
 * loop's NEXT to its TEST (counter set by the INIT just before, decreased
 * only by TEST) and a wait's re-check of its condition (pure code, ended
 * by a deadline); loops nest and nothing jumps into one from outside; a
 * single stack depth at every instruction (abstract interpretation); no
 * path runs off the end; calls form no cycle and their depth and arena
 * need stay bounded; the instructions one run may execute stay within
 * DISH_MAX_STEPS (dish_bound.c). docs/orbit.md, "DISH" explains why each
 * is enough. */
#include "dish_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dish_bound.h"

typedef struct region {
    uint16_t top, end; /* [top, end]: the loop's TEST..NEXT, or cond..WAIT */
} region;

/* State for one procedure's checks. */
typedef struct vproc {
    const uint8_t *code;
    uint16_t len;
    const dish_proc *p;
    int idx;
    dish_image *img; /* read, and where a refusal lies written */
    const dish_slotinfo *onboard;
    uint8_t start[DISH_MAX_CODE + 1];
    int16_t depth[DISH_MAX_CODE];
    region reg[DISH_MAX_CODE / 3];
    int nreg;
    char *err;
    size_t errlen;
} vproc;

/* The printf-like helpers say so, for the format checks (clang's
 * -Wformat-nonliteral refuses a va_list format otherwise). */
static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(dish_image *im, int k, unsigned pc, char *err, size_t errlen,
                   const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* An error at code offset pc of procedure k, its place kept in the image
 * too: the compiler turns it into the source position. */
static int fail_at(dish_image *im, int k, unsigned pc, char *err, size_t errlen,
                   const char *fmt, va_list ap) {
    char what[160];
    vsnprintf(what, sizeof what, fmt, ap);
    im->fail_proc = k;
    im->fail_pc = (uint16_t)pc;
    return fail(err, errlen, "procedure %d (slot %u) at %u: %s", k, im->proc[k].slot, pc,
                what);
}

/* An error at code offset pc of the procedure being checked. */
static int vfail(vproc *v, unsigned pc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int vfail(vproc *v, unsigned pc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_at(v->img, v->idx, pc, v->err, v->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- header and procedure table ---- */

static int check_header(const uint8_t *img, size_t len, char *err, size_t errlen) {
    if (len < DISH_HDR)
        return fail(err, errlen, "truncated: %zu bytes, the header is %d", len, DISH_HDR);
    if (memcmp(img, "DISH", 4))
        return fail(err, errlen, "not DISH bytecode (bad magic)");
    if (img[4] != DISH_VERSION)
        return fail(err, errlen, "bytecode version %u is unknown (this runtime runs %d)",
                    img[4], DISH_VERSION);
    if (len > DISH_MAX_IMAGE)
        return fail(err, errlen, "image of %zu bytes, the limit is %d", len, DISH_MAX_IMAGE);
    unsigned n = img[5];
    if (n < 1 || n > DISH_MAX_PROCS)
        return fail(err, errlen, "%u procedures, 1 to %d allowed", n, DISH_MAX_PROCS);
    size_t want = DISH_HDR + (size_t)n * DISH_PROC_REC + dish_get16(img + 6);
    if (len != want)
        return fail(err, errlen, "image is %zu bytes, its header says %zu%s", len, want,
                    len < want ? " (truncated)" : "");
    if (dish_crc32(img + DISH_HDR, len - DISH_HDR) != (uint32_t)dish_get32(img + 8))
        return fail(err, errlen, "CRC-32 mismatch: the image is corrupted");
    return 0;
}

static void read_proc(const uint8_t *rec, dish_proc *p) {
    p->slot = rec[0];
    p->nargs = rec[1];
    p->nlocals = rec[2];
    p->ncounters = rec[3];
    p->off = dish_get16(rec + 4);
    p->len = dish_get16(rec + 6);
}

static int slot_in_image(const dish_image *im, unsigned slot) {
    for (int k = 0; k < im->nprocs; k++)
        if (im->proc[k].slot == slot)
            return k;
    return -1;
}

static int check_proc(const dish_image *im, int k, unsigned body,
                      const dish_slotinfo *onboard, char *err, size_t errlen) {
    const dish_proc *p = &im->proc[k];
    if (p->slot >= DISH_SLOTS)
        return fail(err, errlen, "procedure %d: slot %u out of range 0..%d", k, p->slot,
                    DISH_SLOTS - 1);
    if (slot_in_image(im, p->slot) != k)
        return fail(err, errlen, "procedure %d: slot %u used twice", k, p->slot);
    if (onboard && onboard[p->slot].used)
        return fail(err, errlen, "procedure %d: slot %u is taken (delete it first)", k,
                    p->slot);
    if (p->nlocals > DISH_MAX_LOCALS || p->nargs > p->nlocals)
        return fail(err, errlen, "procedure %d: %u arguments, %u locals (limit %d)", k,
                    p->nargs, p->nlocals, DISH_MAX_LOCALS);
    if (p->ncounters > DISH_MAX_COUNTERS)
        return fail(err, errlen, "procedure %d: %u loop counters, limit %d", k,
                    p->ncounters, DISH_MAX_COUNTERS);
    if (p->len < 1 || p->len > DISH_MAX_CODE || (unsigned)p->off + p->len > body)
        return fail(err, errlen, "procedure %d: code [%u, +%u) outside the image or over %d bytes",
                    k, p->off, p->len, DISH_MAX_CODE);
    /* Code lies packed in table order, so no two procedures share bytes:
     * whoever copies a procedure's code out (the store's delete, the VM's
     * code pool) may then count on the image's code bytes bounding it. */
    unsigned packed = k ? (unsigned)im->proc[k - 1].off + im->proc[k - 1].len : 0;
    if (p->off != packed)
        return fail(err, errlen, "procedure %d: code starts at %u, not at %u where the one "
                    "before ends", k, p->off, packed);
    if (k == im->nprocs - 1 && (unsigned)p->off + p->len != body)
        return fail(err, errlen, "procedure %d: code ends at %u, the image's at %u", k,
                    (unsigned)p->off + p->len, body);
    return 0;
}

/* ---- instructions ---- */

/* Pass 1: instruction boundaries, each opcode known and whole. */
static int decode(vproc *v) {
    memset(v->start, 0, sizeof v->start);
    unsigned pc = 0;
    while (pc < v->len) {
        uint8_t op = v->code[pc];
        if (op >= DISH_NOPS)
            return vfail(v, pc, "unknown opcode %u", op);
        v->start[pc] = 1;
        pc += 1u + dish_ops[op].operand_bytes;
    }
    if (pc != v->len)
        return vfail(v, pc, "last instruction cut short");
    return 0;
}

/* The nargs of the procedure in slot, from this image or the board; -1 when
 * the slot is empty. */
static int callee_nargs(const vproc *v, unsigned slot) {
    int k = slot_in_image(v->img, slot);
    if (k >= 0)
        return v->img->proc[k].nargs;
    if (v->onboard && slot < DISH_SLOTS && v->onboard[slot].used)
        return v->onboard[slot].nargs;
    return -1;
}

static int check_target(vproc *v, unsigned pc, unsigned t, int back_ok) {
    if (t >= v->len || !v->start[t])
        return vfail(v, pc, "jump to %u is not an instruction", t);
    if (t <= pc && !back_ok)
        return vfail(v, pc, "backward jump to %u outside a counted loop or wait", t);
    if (t > pc && back_ok)
        return vfail(v, pc, "loop or wait goes forward to %u", t);
    return 0;
}

/* The events a wait condition's code reads, from its opcodes. */
static unsigned events_of(const uint8_t *code, unsigned from, unsigned to) {
    unsigned m = 0;
    for (unsigned pc = from; pc < to; pc += 1u + dish_ops[code[pc]].operand_bytes) {
        uint8_t op = code[pc];
        m |= op == DISH_OP_NOW ? DISH_EV_TIME : 0;
        m |= (op == DISH_OP_HASFIX || op == DISH_OP_LAT || op == DISH_OP_LON ||
              op == DISH_OP_INBOX) ? DISH_EV_GNSS : 0;
        m |= op == DISH_OP_PGET ? DISH_EV_PARAM : 0;
        m |= op == DISH_OP_PSTAT ? DISH_EV_PIPE : 0;
    }
    return m;
}

static int check_wait(vproc *v, unsigned pc) {
    const uint8_t *o = v->code + pc + 1;
    unsigned top = dish_get16(o), els = dish_get16(o + 2), mask = o[4];
    if (check_target(v, pc, top, 1) || check_target(v, pc, els, 0))
        return -1;
    if (top < 1 || !v->start[top - 1] || v->code[top - 1] != DISH_OP_WSET)
        return vfail(v, pc, "wait condition at %u not preceded by its deadline", top);
    for (unsigned q = top; q < pc; q += 1u + dish_ops[v->code[q]].operand_bytes)
        if (!(dish_ops[v->code[q]].flags & DISH_F_PURE))
            return vfail(v, pc, "wait condition holds %s at %u", dish_ops[v->code[q]].name, q);
    unsigned need = events_of(v->code, top, pc);
    if (mask > 15 || (mask & need) != need)
        return vfail(v, pc, "wait mask %u misses the events its condition reads (%u)",
                     mask, need);
    v->reg[v->nreg++] = (region){(uint16_t)top, (uint16_t)pc};
    return 0;
}

/* NEXT at pc: its TEST just after the INIT of the same counter, whose exit
 * is the instruction after this NEXT. */
static int check_next(vproc *v, unsigned pc) {
    unsigned top = dish_get16(v->code + pc + 1);
    if (check_target(v, pc, top, 1))
        return -1;
    const uint8_t *t = v->code + top;
    if (t[0] != DISH_OP_TEST || top < 4 || !v->start[top - 4] ||
        v->code[top - 4] != DISH_OP_INIT || v->code[top - 3] != t[1])
        return vfail(v, pc, "loop back to %u is not a counted loop's test", top);
    if (dish_get16(t + 2) != pc + 3)
        return vfail(v, pc, "loop test at %u exits to %u, not after its end", top,
                     dish_get16(t + 2));
    for (int r = 0; r < v->nreg; r++)
        if (v->reg[r].top == top)
            return vfail(v, pc, "a second end for the loop at %u", top);
    v->reg[v->nreg++] = (region){(uint16_t)top, (uint16_t)pc};
    return 0;
}

static int check_range(vproc *v, unsigned pc, unsigned x, unsigned lo, unsigned hi,
                       const char *what) {
    if (x < lo || x > hi)
        return vfail(v, pc, "%s %u out of range %u..%u", what, x, lo, hi);
    return 0;
}

/* Pass 2: one instruction's operands. */
static int check_operands(vproc *v, unsigned pc, uint8_t *inits) {
    const uint8_t *o = v->code + pc + 1;
    unsigned nl = v->p->nlocals, nc = v->p->ncounters;
    switch (v->code[pc]) {
    case DISH_OP_LOAD: case DISH_OP_STORE:
        return nl ? check_range(v, pc, o[0], 0, nl - 1, "local") : vfail(v, pc, "no locals");
    case DISH_OP_CTR: case DISH_OP_TEST: case DISH_OP_INIT:
        if (!nc || o[0] >= nc)
            return vfail(v, pc, "loop counter %u out of range (%u)", o[0], nc);
        if (v->code[pc] == DISH_OP_INIT && inits[o[0]]++)
            return vfail(v, pc, "loop counter %u set twice", o[0]);
        if (v->code[pc] == DISH_OP_INIT)
            return check_range(v, pc, dish_get16(o + 1), 0, DISH_MAX_LOOP, "loop bound");
        return v->code[pc] == DISH_OP_TEST ? check_target(v, pc, dish_get16(o + 1), 0) : 0;
    case DISH_OP_JMP: case DISH_OP_JZ:
        return check_target(v, pc, dish_get16(o), 0);
    case DISH_OP_NEXT:
        return check_next(v, pc);
    case DISH_OP_WAIT:
        return check_wait(v, pc);
    case DISH_OP_PGET: case DISH_OP_PSET:
        return check_range(v, pc, o[0], 0, DISH_NODES - 1, "node") ||
               check_range(v, pc, o[1], 0, DISH_PARAMS - 1, "parameter");
    case DISH_OP_CALL:
        if (o[0] >= DISH_SLOTS || callee_nargs(v, o[0]) < 0)
            return vfail(v, pc, "call of slot %u, which is empty or out of range", o[0]);
        if (callee_nargs(v, o[0]) != o[1])
            return vfail(v, pc, "call of slot %u with %u arguments, it takes %d", o[0],
                         o[1], callee_nargs(v, o[0]));
        return 0;
    }
    return 0;
}

/* Regions (loops and waits) nest, and nothing enters one from outside. */
static int check_regions(vproc *v) {
    for (int a = 0; a < v->nreg; a++)
        for (int b = 0; b < v->nreg; b++) {
            region x = v->reg[a], y = v->reg[b];
            if (x.top < y.top && y.top <= x.end && x.end < y.end)
                return vfail(v, y.top, "loops overlap without nesting");
        }
    return 0;
}

/* Each target an instruction at pc can jump to, by kind. */
static int targets(const vproc *v, unsigned pc, unsigned *t) {
    const uint8_t *o = v->code + pc + 1;
    switch (v->code[pc]) {
    case DISH_OP_JMP: case DISH_OP_JZ: case DISH_OP_NEXT: t[0] = dish_get16(o); return 1;
    case DISH_OP_TEST: t[0] = dish_get16(o + 1); return 1;
    case DISH_OP_WAIT: t[0] = dish_get16(o); t[1] = dish_get16(o + 2); return 2;
    }
    return 0;
}

static int check_entries(vproc *v) {
    for (unsigned pc = 0; pc < v->len; pc += 1u + dish_ops[v->code[pc]].operand_bytes) {
        unsigned t[2];
        int n = targets(v, pc, t);
        for (int k = 0; k < n; k++)
            for (int r = 0; r < v->nreg; r++) {
                region g = v->reg[r];
                int inside_t = t[k] >= g.top && t[k] <= g.end;
                if (inside_t && !(pc >= g.top && pc <= g.end))
                    return vfail(v, pc, "jump into the loop or wait at %u", g.top);
            }
    }
    return 0;
}

/* ---- stack depth: abstract interpretation over the code ---- */

static int flow(vproc *v, unsigned from, unsigned to, int d, uint16_t *work, int *nw) {
    if (to >= v->len)
        return vfail(v, from, "runs off the end of the procedure");
    if (v->depth[to] < 0) {
        v->depth[to] = (int16_t)d;
        work[(*nw)++] = (uint16_t)to;
    } else if (v->depth[to] != d) {
        return vfail(v, to, "stack depth %d here on one path and %d on another",
                     v->depth[to], d);
    }
    return 0;
}

/* The depth after pc's pops and pushes, or -1. */
static int effect(vproc *v, unsigned pc, int d, int *maxd) {
    uint8_t op = v->code[pc];
    int pops = op == DISH_OP_CALL ? v->code[pc + 2] : dish_ops[op].pops;
    if (d < pops)
        return vfail(v, pc, "%s pops %d values, the stack holds %d", dish_ops[op].name,
                     pops, d);
    d = d - pops + dish_ops[op].pushes;
    if (d > DISH_MAX_STACK)
        return vfail(v, pc, "stack depth %d over the limit %d", d, DISH_MAX_STACK);
    if (d > *maxd)
        *maxd = d;
    return d;
}

static int stack_depths(vproc *v, int *maxd) {
    uint16_t work[DISH_MAX_CODE];
    int nw = 0;
    for (unsigned k = 0; k < v->len; k++)
        v->depth[k] = -1;
    v->depth[0] = 0;
    work[nw++] = 0;
    *maxd = 0;
    while (nw) {
        unsigned pc = work[--nw];
        int d = effect(v, pc, v->depth[pc], maxd);
        if (d < 0)
            return -1;
        uint8_t op = v->code[pc];
        unsigned t[2];
        int n = targets(v, pc, t);
        for (int k = 0; k < n; k++)
            if (flow(v, pc, t[k], d, work, &nw))
                return -1;
        int falls = op != DISH_OP_JMP && op != DISH_OP_NEXT && op != DISH_OP_RET;
        if (falls && flow(v, pc, pc + 1u + dish_ops[op].operand_bytes, d, work, &nw))
            return -1;
    }
    return 0;
}

static int verify_code(vproc *v, int *maxd) {
    uint8_t inits[DISH_MAX_COUNTERS] = {0};
    v->nreg = 0;
    if (decode(v))
        return -1;
    for (unsigned pc = 0; pc < v->len; pc += 1u + dish_ops[v->code[pc]].operand_bytes)
        if (check_operands(v, pc, inits))
            return -1;
    if (check_regions(v) || check_entries(v))
        return -1;
    return stack_depths(v, maxd);
}

/* ---- the call graph ---- */

/* The walk over the calls, callees first. */
typedef struct vgraph {
    dish_image *im;
    const dish_slotinfo *onboard;
    uint8_t state[DISH_MAX_PROCS]; /* 1: on the path being explored, 2: done */
    uint8_t path[DISH_MAX_PROCS];  /* that path, from the procedure it started at */
    int npath;
    uint32_t steps[DISH_SLOTS];    /* each slot's bound, for the calls into it */
    uint32_t scratch[DISH_MAX_CODE];
    char *err;
    size_t errlen;
} vgraph;

dish_slotinfo dish_image_slotinfo(const dish_image *im, int k) {
    return (dish_slotinfo){.used = 1, .nargs = im->proc[k].nargs, .depth = im->depth[k],
                           .need = im->need[k], .steps = im->steps[k],
                           .recheck = im->recheck[k]};
}

/* An error at the call at pc of procedure k. */
static int gfail(vgraph *g, int k, unsigned pc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int gfail(vgraph *g, int k, unsigned pc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_at(g->im, k, pc, g->err, g->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* The call at pc of procedure k (the last on the path) calls procedure j,
 * which is on the path already: the refusal names that call, the one that
 * closes the cycle, and the cycle by slots, "1 -> 2 -> 1". */
static int cycle(vgraph *g, int k, unsigned pc, int j) {
    char slots[DISH_MAX_PROCS * 6 + 8];
    size_t at = 0;
    int from = 0;
    while (g->path[from] != j)
        from++;
    for (int q = from; q < g->npath; q++)
        at += (size_t)snprintf(slots + at, sizeof slots - at, "%u -> ",
                               g->im->proc[g->path[q]].slot);
    snprintf(slots + at, sizeof slots - at, "%u", g->im->proc[j].slot);
    return gfail(g, k, pc, "call of slot %u closes the cycle of calls %s (no recursion)",
                 g->im->proc[j].slot, slots);
}

static int chain(vgraph *g, int k);

/* What procedure k's calls add: the deepest chain, the largest arena
 * need and the longest wait re-check among its callees, and the calls
 * that bring the first two, which a refusal of k's depth or need names. */
typedef struct callee_most {
    dish_slotinfo most;
    unsigned deep_pc, need_pc;
} callee_most;

static int callees(vgraph *g, int k, callee_most *m) {
    const dish_proc *p = &g->im->proc[k];
    const uint8_t *c = g->im->code + p->off;
    *m = (callee_most){0};
    for (unsigned pc = 0; pc < p->len; pc += 1u + dish_ops[c[pc]].operand_bytes) {
        if (c[pc] != DISH_OP_CALL)
            continue;
        int j = slot_in_image(g->im, c[pc + 1]);
        if (j >= 0 && g->state[j] == 1)
            return cycle(g, k, pc, j);
        if (j >= 0 && chain(g, j))
            return -1;
        dish_slotinfo in = j >= 0 ? dish_image_slotinfo(g->im, j) : g->onboard[c[pc + 1]];
        if (in.depth > m->most.depth)
            m->most.depth = in.depth, m->deep_pc = pc;
        if (in.need > m->most.need)
            m->most.need = in.need, m->need_pc = pc;
        if (in.recheck > m->most.recheck)
            m->most.recheck = in.recheck;
    }
    return 0;
}

/* Procedure k's instruction bound, within DISH_MAX_STEPS, and its
 * re-check: its own waits' or, longer, a callee's (callee_recheck), for a
 * run may be waiting in a callee when an event wakes it. */
static int bound(vgraph *g, int k, unsigned callee_recheck) {
    const dish_proc *p = &g->im->proc[k];
    const uint8_t *c = g->im->code + p->off;
    uint32_t steps = dish_bound_steps(c, p->len, g->steps, g->scratch);
    if (steps > DISH_MAX_STEPS)
        return fail(g->err, g->errlen,
                    "slot %u: a run may execute %lu%s instructions, the limit is %lu "
                    "(loops multiply their body, calls add their callee's)",
                    p->slot, (unsigned long)steps, steps == UINT32_MAX ? " or more" : "",
                    (unsigned long)DISH_MAX_STEPS);
    g->im->steps[k] = g->steps[p->slot] = steps;
    unsigned own = dish_bound_recheck(c, p->len);
    g->im->recheck[k] = (uint16_t)(own > callee_recheck ? own : callee_recheck);
    return 0;
}

/* Depth, need and bound of procedure k, its callees first (callees()
 * refuses a call back into the path being explored: recursion). Past a
 * limit the call that leads there is named: a procedure's own frame
 * alone is within both (1 frame; at most 32 + 8 + 32 words). */
static int chain(vgraph *g, int k) {
    dish_image *im = g->im;
    const dish_proc *p = &im->proc[k];
    const uint8_t *c = im->code + p->off;
    callee_most m;
    if (g->state[k] == 2)
        return 0;
    g->state[k] = 1;
    g->path[g->npath++] = (uint8_t)k;
    if (callees(g, k, &m))
        return -1;
    unsigned depth = m.most.depth + 1u;
    unsigned need = m.most.need + (unsigned)p->nlocals + p->ncounters + im->maxstack[k];
    if (depth > DISH_MAX_DEPTH)
        return gfail(g, k, m.deep_pc, "calls nest %u deep through this call of slot %u, "
                     "the limit is %d", depth, c[m.deep_pc + 1], DISH_MAX_DEPTH);
    if (need > DISH_ARENA_WORDS)
        return gfail(g, k, m.need_pc, "needs %u arena words through this call of slot %u, "
                     "a run has %d", need, c[m.need_pc + 1], DISH_ARENA_WORDS);
    im->depth[k] = (uint8_t)depth;
    im->need[k] = (uint16_t)need;
    if (bound(g, k, m.most.recheck))
        return -1;
    g->state[k] = 2;
    g->npath--;
    return 0;
}

/* Each procedure's depth, need and bound, against the slots on board. */
static int check_calls(dish_image *im, const dish_slotinfo *onboard, char *err,
                       size_t errlen) {
    static vgraph g; /* 2 KiB of scratch: kept off the task's stack */
    g = (vgraph){.im = im, .onboard = onboard, .err = err, .errlen = errlen};
    for (int s = 0; onboard && s < DISH_SLOTS; s++)
        g.steps[s] = onboard[s].steps;
    for (int k = 0; k < im->nprocs; k++)
        if (chain(&g, k))
            return -1;
    return 0;
}

int dish_verify(const uint8_t *img, size_t len, const dish_slotinfo *onboard,
                dish_image *out, char *err, size_t errlen) {
    static vproc v; /* 2.5 KiB: kept off the caller's (task's) stack */
    memset(out, 0, sizeof *out);
    out->fail_proc = -1;
    if (check_header(img, len, err, errlen))
        return -1;
    out->nprocs = img[5];
    out->code = img + DISH_HDR + out->nprocs * DISH_PROC_REC;
    unsigned body = dish_get16(img + 6);
    for (int k = 0; k < out->nprocs; k++)
        read_proc(img + DISH_HDR + k * DISH_PROC_REC, &out->proc[k]);
    for (int k = 0; k < out->nprocs; k++)
        if (check_proc(out, k, body, onboard, err, errlen))
            return -1;
    for (int k = 0; k < out->nprocs; k++) {
        v = (vproc){.code = out->code + out->proc[k].off, .len = out->proc[k].len,
                    .p = &out->proc[k], .idx = k, .img = out, .onboard = onboard,
                    .err = err, .errlen = errlen};
        int maxd;
        if (verify_code(&v, &maxd))
            return -1;
        out->maxstack[k] = (uint8_t)maxd;
    }
    return check_calls(out, onboard, err, errlen);
}
