/* dish_compile.c -- DISH's recursive-descent parser, which emits bytecode
 * as it goes (no tree: the language is small and every construct's code
 * is known when its closing brace is read). Types are int and fix
 * (Q16.16); an int meets a fix by widening, never the other way without
 * int(). A first scan reads every procedure's header, so calls may come
 * before the callee's definition. docs/orbit.md, "DISH" has the grammar. */
#include "dish_compile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dish.h"
#include "dish_lex.h"
#include "dish_verify.h"

enum { TY_INT, TY_FIX };
#define NAME_MAX_LEN 31
#define MAX_CONSTS 64

typedef struct sig {
    char name[NAME_MAX_LEN + 1];
    int nargs, slot, ret;
    uint8_t argty[DISH_MAX_LOCALS];
} sig;

typedef struct sym {
    char name[NAME_MAX_LEN + 1];
    int idx, ty;
    int32_t value; /* constants */
} sym;

typedef struct loopctx {
    int breaks[32], nbreaks;
} loopctx;

typedef struct comp {
    const char *file;
    dish_tok *t;
    int i;
    sig procs[DISH_MAX_PROCS];
    int nprocs;
    sym consts[MAX_CONSTS];
    int nconsts;
    /* the procedure being compiled */
    uint8_t code[DISH_MAX_CODE];
    int pc;
    sym locals[DISH_MAX_LOCALS];
    int nactive, maxlocals, ncounters;
    loopctx loops[DISH_MAX_COUNTERS];
    int nloops;
    int ret;              /* its return type */
    int in_wait;          /* compiling a wait condition: pure code only */
    unsigned wait_events; /* what that condition reads */
    /* the image */
    uint8_t body[DISH_MAX_IMAGE];
    int bodylen;
    dish_proc recs[DISH_MAX_PROCS];
    jmp_buf fail;
    char *err;
    size_t errlen;
} comp;

static void parse_block(comp *c);
static int parse_expr(comp *c);

/* ---- errors and tokens ---- */

static _Noreturn void fail_at(comp *c, const dish_tok *t, const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->file, t->line, t->col, what);
    longjmp(c->fail, 1);
}

static const dish_tok *peek(comp *c) {
    return &c->t[c->i];
}

static int is(const dish_tok *t, const char *word) {
    size_t n = strlen(word);
    if (t->kind == DISH_T_PUNCT)
        return !strcmp(t->p, word);
    return t->kind == DISH_T_NAME && (size_t)t->len == n && !strncmp(t->s, word, n);
}

static int accept(comp *c, const char *word) {
    if (!is(peek(c), word))
        return 0;
    c->i++;
    return 1;
}

static const dish_tok *expect(comp *c, const char *word) {
    const dish_tok *t = peek(c);
    if (!accept(c, word))
        fail_at(c, t, "'%s' expected, found '%.*s'", word, t->len ? t->len : 3,
                t->len ? t->s : "end");
    return t;
}

static int is_keyword(const dish_tok *t) {
    static const char *kw[] = {"proc", "const", "slot", "let", "if", "else", "repeat",
                               "as", "break", "return", "wait", "within", "sleep",
                               "until", "and", "or", "not", "wake", "suspend", "fix",
                               "int", "now", "hasfix", "lat", "lon", "param", "set",
                               "inside", "start", "pipe", "tm"};
    for (size_t k = 0; k < sizeof kw / sizeof *kw; k++)
        if (is(t, kw[k]))
            return 1;
    return 0;
}

/* A name that is not a keyword, copied into out. */
static const dish_tok *name(comp *c, char *out) {
    const dish_tok *t = peek(c);
    if (t->kind != DISH_T_NAME || is_keyword(t))
        fail_at(c, t, "a name expected, found '%.*s'", t->len ? t->len : 3,
                t->len ? t->s : "end");
    if (t->len > NAME_MAX_LEN)
        fail_at(c, t, "name longer than %d characters", NAME_MAX_LEN);
    memcpy(out, t->s, (size_t)t->len);
    out[t->len] = 0;
    c->i++;
    return t;
}

/* ---- emitting ---- */

static void emit(comp *c, int byte) {
    if (c->pc >= DISH_MAX_CODE)
        fail_at(c, peek(c), "procedure over %d bytes of code", DISH_MAX_CODE);
    c->code[c->pc++] = (uint8_t)byte;
}

static void emit16(comp *c, int v) {
    emit(c, v & 0xFF);
    emit(c, (v >> 8) & 0xFF);
}

static void emit_push(comp *c, int32_t v) {
    if (v >= -128 && v <= 127) {
        emit(c, DISH_OP_PUSH8);
        emit(c, (uint8_t)(v & 0xFF));
        return;
    }
    emit(c, DISH_OP_PUSH32);
    uint8_t b[4];
    dish_put32(b, (uint32_t)v);
    for (int k = 0; k < 4; k++)
        emit(c, b[k]);
}

/* Emits a jump with its target to fill in later: where the target goes. */
static int emit_jump(comp *c, int op) {
    emit(c, op);
    emit16(c, 0);
    return c->pc - 2;
}

static void patch(comp *c, int at, int target) {
    dish_put16(c->code + at, (uint16_t)target);
}

/* Inserts op at code position at: widens an int operand already emitted
 * when the other turns out fix. Expression code holds no jumps, so
 * nothing else moves. */
static void insert_op(comp *c, int at, int op) {
    emit(c, 0);
    memmove(c->code + at + 1, c->code + at, (size_t)(c->pc - 1 - at));
    c->code[at] = (uint8_t)op;
}

/* ---- names ---- */

static sym *find_local(comp *c, const char *n) {
    for (int k = c->nactive - 1; k >= 0; k--)
        if (!strcmp(c->locals[k].name, n))
            return &c->locals[k];
    return NULL;
}

static sym *find_const(comp *c, const char *n) {
    for (int k = 0; k < c->nconsts; k++)
        if (!strcmp(c->consts[k].name, n))
            return &c->consts[k];
    return NULL;
}

static sig *find_proc(comp *c, const dish_tok *t) {
    for (int k = 0; k < c->nprocs; k++)
        if ((size_t)t->len == strlen(c->procs[k].name) &&
            !strncmp(t->s, c->procs[k].name, (size_t)t->len))
            return &c->procs[k];
    return NULL;
}

static int declare(comp *c, const dish_tok *at, const char *n, int ty) {
    if (find_local(c, n) || find_const(c, n))
        fail_at(c, at, "'%s' is already declared", n);
    if (c->nactive >= DISH_MAX_LOCALS)
        fail_at(c, at, "more than %d locals", DISH_MAX_LOCALS);
    sym *s = &c->locals[c->nactive];
    snprintf(s->name, sizeof s->name, "%s", n);
    s->idx = c->nactive++;
    s->ty = ty;
    if (c->nactive > c->maxlocals)
        c->maxlocals = c->nactive;
    return s->idx;
}

/* An integer known at compile time: a literal or a constant. */
static int32_t const_int(comp *c, int32_t lo, int32_t hi, const char *what) {
    const dish_tok *t = peek(c);
    int32_t v;
    char n[NAME_MAX_LEN + 1];
    if (t->kind == DISH_T_INT) {
        v = t->value;
        c->i++;
    } else {
        sym *k = t->kind == DISH_T_NAME && !is_keyword(t) ? (name(c, n), find_const(c, n)) : NULL;
        if (!k || k->ty != TY_INT)
            fail_at(c, t, "%s must be an integer constant", what);
        v = k->value;
    }
    if (v < lo || v > hi)
        fail_at(c, t, "%s %d out of range %d..%d", what, v, lo, hi);
    return v;
}

/* ---- expressions: each returns its type ---- */

static void need_pure(comp *c, const dish_tok *t, const char *what) {
    if (c->in_wait)
        fail_at(c, t, "%s is not allowed in a wait condition", what);
}

/* Converts the value on top (of type ty) to want, or fails at t. */
static void coerce(comp *c, const dish_tok *t, int ty, int want) {
    if (ty == want)
        return;
    if (want == TY_INT)
        fail_at(c, t, "a fix value where an int is wanted (use int())");
    emit(c, DISH_OP_ITOF);
}

static int call_args(comp *c, const dish_tok *at, int n, const uint8_t *types) {
    expect(c, "(");
    int k = 0;
    if (!accept(c, ")")) {
        do {
            const dish_tok *t = peek(c);
            int ty = parse_expr(c);
            if (k < n)
                coerce(c, t, ty, types ? types[k] : ty);
            k++;
        } while (accept(c, ","));
        expect(c, ")");
    }
    if (k != n)
        fail_at(c, at, "%d arguments given, %d expected", k, n);
    return k;
}

static int call_proc(comp *c, const dish_tok *t, sig *s) {
    need_pure(c, t, "a call");
    c->i++;
    call_args(c, t, s->nargs, s->argty);
    emit(c, DISH_OP_CALL);
    emit(c, s->slot);
    emit(c, s->nargs);
    return s->ret;
}

static void int_expr(comp *c, const char *what);

/* param(NODE, ID), pipe(P), start(P) */
static int builtin_fixed_args(comp *c, const dish_tok *t, int op) {
    c->i++;
    expect(c, "(");
    if (op == DISH_OP_PGET) {
        int node = const_int(c, 0, DISH_NODES - 1, "node");
        expect(c, ",");
        int id = const_int(c, 0, DISH_PARAMS - 1, "parameter");
        emit(c, op);
        emit(c, node);
        emit(c, id);
        c->wait_events |= DISH_EV_PARAM;
    } else {
        if (op == DISH_OP_PSTART)
            need_pure(c, t, "start()");
        int_expr(c, "a pipeline number");
        emit(c, op);
        c->wait_events |= op == DISH_OP_PSTAT ? DISH_EV_PIPE : 0;
    }
    expect(c, ")");
    return TY_INT;
}

static int builtin_call(comp *c, const dish_tok *t) {
    if (is(t, "param"))
        return builtin_fixed_args(c, t, DISH_OP_PGET);
    if (is(t, "pipe"))
        return builtin_fixed_args(c, t, DISH_OP_PSTAT);
    if (is(t, "start"))
        return builtin_fixed_args(c, t, DISH_OP_PSTART);
    c->i++;
    if (is(t, "inside")) {
        static const uint8_t fx[4] = {TY_FIX, TY_FIX, TY_FIX, TY_FIX};
        call_args(c, t, 4, fx);
        emit(c, DISH_OP_INBOX);
        c->wait_events |= DISH_EV_GNSS;
        return TY_INT;
    }
    expect(c, "(");
    int ty = parse_expr(c);
    expect(c, ")");
    int want = is(t, "fix") ? TY_FIX : TY_INT;
    if (ty != want)
        emit(c, want == TY_FIX ? DISH_OP_ITOF : DISH_OP_FTOI);
    return want;
}

static int reading(comp *c, const dish_tok *t) {
    static const struct { const char *w; int op, ty; unsigned ev; } rd[] = {
        {"now", DISH_OP_NOW, TY_INT, DISH_EV_TIME},
        {"hasfix", DISH_OP_HASFIX, TY_INT, DISH_EV_GNSS},
        {"lat", DISH_OP_LAT, TY_FIX, DISH_EV_GNSS},
        {"lon", DISH_OP_LON, TY_FIX, DISH_EV_GNSS}};
    for (size_t k = 0; k < sizeof rd / sizeof *rd; k++)
        if (is(t, rd[k].w)) {
            c->i++;
            emit(c, rd[k].op);
            c->wait_events |= rd[k].ev;
            return rd[k].ty;
        }
    return -1;
}

static int primary_name(comp *c, const dish_tok *t) {
    int ty = reading(c, t);
    if (ty >= 0)
        return ty;
    static const char *calls[] = {"param", "pipe", "start", "inside", "int", "fix"};
    for (size_t k = 0; k < sizeof calls / sizeof *calls; k++)
        if (is(t, calls[k]))
            return builtin_call(c, t);
    sig *s = find_proc(c, t);
    if (s && is(&c->t[c->i + 1], "("))
        return call_proc(c, t, s);
    char n[NAME_MAX_LEN + 1];
    name(c, n);
    sym *v = find_local(c, n);
    if (v) {
        emit(c, DISH_OP_LOAD);
        emit(c, v->idx);
        return v->ty;
    }
    sym *k = find_const(c, n);
    if (!k)
        fail_at(c, t, "'%s' is not declared", n);
    emit_push(c, k->value);
    return k->ty;
}

static int primary(comp *c) {
    const dish_tok *t = peek(c);
    if (t->kind == DISH_T_INT || t->kind == DISH_T_FIX) {
        c->i++;
        emit_push(c, t->value);
        return t->kind == DISH_T_FIX ? TY_FIX : TY_INT;
    }
    if (accept(c, "(")) {
        int ty = parse_expr(c);
        expect(c, ")");
        return ty;
    }
    if (t->kind == DISH_T_NAME)
        return primary_name(c, t);
    fail_at(c, t, "an expression expected, found '%.*s'", t->len ? t->len : 3,
            t->len ? t->s : "end");
}

static int unary(comp *c) {
    if (accept(c, "-")) {
        const dish_tok *n = peek(c);
        if (n->kind == DISH_T_INT || n->kind == DISH_T_FIX) { /* a negative literal */
            c->i++;
            emit_push(c, -n->value);
            return n->kind == DISH_T_FIX ? TY_FIX : TY_INT;
        }
        int ty = unary(c);
        emit(c, DISH_OP_NEG);
        return ty;
    }
    if (accept(c, "not")) {
        unary(c);
        emit(c, DISH_OP_NOT);
        return TY_INT;
    }
    return primary(c);
}

/* Brings two operands to one type: the right one's code starts at rpos. */
static int unify(comp *c, int rpos, int lt, int rt) {
    if (lt == rt)
        return lt;
    if (lt == TY_INT)
        insert_op(c, rpos, DISH_OP_ITOF);
    else
        emit(c, DISH_OP_ITOF);
    return TY_FIX;
}

static int mul_op(comp *c, const dish_tok *t, int ty) {
    if (is(t, "%")) {
        if (ty == TY_FIX)
            fail_at(c, t, "'%%' takes ints");
        return DISH_OP_MOD;
    }
    if (is(t, "*"))
        return ty == TY_FIX ? DISH_OP_FMUL : DISH_OP_MUL;
    return ty == TY_FIX ? DISH_OP_FDIV : DISH_OP_DIV;
}

static int term(comp *c) {
    int ty = unary(c);
    for (;;) {
        const dish_tok *t = peek(c);
        if (!is(t, "*") && !is(t, "/") && !is(t, "%"))
            return ty;
        c->i++;
        int rpos = c->pc;
        ty = unify(c, rpos, ty, unary(c));
        emit(c, mul_op(c, t, ty));
    }
}

static int sum(comp *c) {
    int ty = term(c);
    for (;;) {
        const dish_tok *t = peek(c);
        if (!is(t, "+") && !is(t, "-"))
            return ty;
        c->i++;
        int rpos = c->pc;
        ty = unify(c, rpos, ty, term(c));
        emit(c, is(t, "+") ? DISH_OP_ADD : DISH_OP_SUB);
    }
}

static int comparison(comp *c) {
    static const struct { const char *p; int op, negate; } rel[] = {
        {"==", DISH_OP_EQ, 0}, {"!=", DISH_OP_NE, 0}, {"<", DISH_OP_LT, 0},
        {"<=", DISH_OP_LE, 0}, {">", DISH_OP_LE, 1}, {">=", DISH_OP_LT, 1}};
    int ty = sum(c);
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++)
        if (accept(c, rel[k].p)) {
            int rpos = c->pc;
            unify(c, rpos, ty, sum(c));
            emit(c, rel[k].op);
            if (rel[k].negate)
                emit(c, DISH_OP_NOT);
            return TY_INT;
        }
    return ty;
}

static int conjunction(comp *c) {
    int ty = comparison(c);
    while (accept(c, "and")) {
        comparison(c);
        emit(c, DISH_OP_AND);
        ty = TY_INT;
    }
    return ty;
}

static int parse_expr(comp *c) {
    int ty = conjunction(c);
    while (accept(c, "or")) {
        conjunction(c);
        emit(c, DISH_OP_OR);
        ty = TY_INT;
    }
    return ty;
}

static void int_expr(comp *c, const char *what) {
    const dish_tok *t = peek(c);
    if (parse_expr(c) != TY_INT)
        fail_at(c, t, "%s must be an int (use int())", what);
}

/* ---- statements ---- */

static void stmt_let(comp *c) {
    char n[NAME_MAX_LEN + 1];
    const dish_tok *at = name(c, n);
    expect(c, "=");
    int ty = parse_expr(c);
    emit(c, DISH_OP_STORE);
    emit(c, declare(c, at, n, ty));
}

static void stmt_assign(comp *c) {
    char n[NAME_MAX_LEN + 1];
    const dish_tok *at = name(c, n);
    sym *v = find_local(c, n);
    if (!v)
        fail_at(c, at, "'%s' is not a local (declare it with let)", n);
    expect(c, "=");
    const dish_tok *t = peek(c);
    coerce(c, t, parse_expr(c), v->ty);
    emit(c, DISH_OP_STORE);
    emit(c, v->idx);
}

/* A block in a scope of its own: its locals end with it. */
static void scoped_block(comp *c) {
    int saved = c->nactive;
    parse_block(c);
    c->nactive = saved;
}

static void stmt_if(comp *c) {
    parse_expr(c);
    int jz = emit_jump(c, DISH_OP_JZ);
    scoped_block(c);
    if (!accept(c, "else")) {
        patch(c, jz, c->pc);
        return;
    }
    int jend = emit_jump(c, DISH_OP_JMP);
    patch(c, jz, c->pc);
    if (accept(c, "if"))
        stmt_if(c);
    else
        scoped_block(c);
    patch(c, jend, c->pc);
}

/* INIT c N; top: TEST c exit; [i = N-1-ctr]; body; NEXT top; exit: */
static void stmt_repeat(comp *c, const dish_tok *at) {
    int n = const_int(c, 0, DISH_MAX_LOOP, "loop bound");
    if (c->ncounters >= DISH_MAX_COUNTERS)
        fail_at(c, at, "more than %d loops in a procedure", DISH_MAX_COUNTERS);
    int ctr = c->ncounters++, saved = c->nactive;
    emit(c, DISH_OP_INIT);
    emit(c, ctr);
    emit16(c, n);
    int top = c->pc;
    emit(c, DISH_OP_TEST);
    emit(c, ctr);
    int exit_at = c->pc;
    emit16(c, 0);
    if (accept(c, "as")) {
        char iname[NAME_MAX_LEN + 1];
        const dish_tok *it = name(c, iname);
        emit_push(c, n - 1);
        emit(c, DISH_OP_CTR);
        emit(c, ctr);
        emit(c, DISH_OP_SUB);
        emit(c, DISH_OP_STORE);
        emit(c, declare(c, it, iname, TY_INT));
    }
    loopctx *l = &c->loops[c->nloops++];
    l->nbreaks = 0;
    parse_block(c);
    emit(c, DISH_OP_NEXT);
    emit16(c, top);
    patch(c, exit_at, c->pc);
    for (int k = 0; k < l->nbreaks; k++)
        patch(c, l->breaks[k], c->pc);
    c->nloops--;
    c->nactive = saved;
}

static void stmt_break(comp *c, const dish_tok *at) {
    if (!c->nloops)
        fail_at(c, at, "break outside a repeat");
    loopctx *l = &c->loops[c->nloops - 1];
    if (l->nbreaks >= (int)(sizeof l->breaks / sizeof *l->breaks))
        fail_at(c, at, "too many breaks in one loop");
    l->breaks[l->nbreaks++] = emit_jump(c, DISH_OP_JMP);
}

static void stmt_return(comp *c) {
    const dish_tok *t = peek(c);
    if (is(t, "}")) {
        emit_push(c, 0);
    } else {
        coerce(c, t, parse_expr(c), c->ret);
    }
    emit(c, DISH_OP_RET);
}

/* timeout; WSET; top: cond; WAIT top else mask; [JMP end; else: block]; end: */
static void stmt_wait(comp *c) {
    int cond_tok = c->i;
    while (!is(peek(c), "within") && peek(c)->kind != DISH_T_EOF && !is(peek(c), "{") &&
           !is(peek(c), "}"))
        c->i++; /* the timeout is evaluated first: skip to it, come back */
    expect(c, "within");
    int_expr(c, "a wait's timeout");
    int after = c->i;
    emit(c, DISH_OP_WSET);
    int top = c->pc;
    c->i = cond_tok;
    c->in_wait = 1;
    c->wait_events = 0;
    parse_expr(c);
    c->in_wait = 0;
    if (!is(peek(c), "within"))
        fail_at(c, peek(c), "'within' expected after the wait's condition");
    c->i = after;
    emit(c, DISH_OP_WAIT);
    emit16(c, top);
    int els = c->pc;
    emit16(c, 0);
    emit(c, (int)c->wait_events);
    if (!accept(c, "else")) {
        patch(c, els, c->pc);
        return;
    }
    int jend = emit_jump(c, DISH_OP_JMP);
    patch(c, els, c->pc);
    scoped_block(c);
    patch(c, jend, c->pc);
}

static void stmt_builtin(comp *c, int op, int nargs) {
    const dish_tok *at = &c->t[c->i - 1];
    if (op == DISH_OP_PSET) {
        expect(c, "(");
        int node = const_int(c, 0, DISH_NODES - 1, "node");
        expect(c, ",");
        int id = const_int(c, 0, DISH_PARAMS - 1, "parameter");
        expect(c, ",");
        int_expr(c, "a parameter's value");
        expect(c, ")");
        emit(c, op);
        emit(c, node);
        emit(c, id);
        return;
    }
    if (nargs)
        call_args(c, at, nargs, NULL);
    emit(c, op);
}

static void stmt_expr(comp *c) {
    const dish_tok *t = peek(c);
    if (t->kind != DISH_T_NAME || !is(&c->t[c->i + 1], "("))
        fail_at(c, t, "a statement expected, found '%.*s'", t->len ? t->len : 3,
                t->len ? t->s : "end");
    parse_expr(c);
    emit(c, DISH_OP_POP);
}

static void stmt_sleep(comp *c) {
    int op = accept(c, "until") ? DISH_OP_SLEEPU : DISH_OP_SLEEP;
    int_expr(c, "a sleep's time");
    emit(c, op);
}

static void statement(comp *c) {
    const dish_tok *t = peek(c);
    if (accept(c, "let")) stmt_let(c);
    else if (accept(c, "if")) stmt_if(c);
    else if (accept(c, "repeat")) stmt_repeat(c, t);
    else if (accept(c, "break")) stmt_break(c, t);
    else if (accept(c, "return")) stmt_return(c);
    else if (accept(c, "wait")) stmt_wait(c);
    else if (accept(c, "sleep")) stmt_sleep(c);
    else if (accept(c, "set")) stmt_builtin(c, DISH_OP_PSET, 3);
    else if (accept(c, "tm")) stmt_builtin(c, DISH_OP_TLM, 2);
    else if (accept(c, "wake")) stmt_builtin(c, DISH_OP_WAKE, 0);
    else if (accept(c, "suspend")) stmt_builtin(c, DISH_OP_SUSPEND, 0);
    else if (t->kind == DISH_T_NAME && is(&c->t[c->i + 1], "=")) stmt_assign(c);
    else stmt_expr(c);
}

static void parse_block(comp *c) {
    expect(c, "{");
    while (!accept(c, "}")) {
        if (peek(c)->kind == DISH_T_EOF)
            fail_at(c, peek(c), "'}' expected before the end of the file");
        statement(c);
    }
}

/* ---- procedures and the file ---- */

/* NAME '(' [NAME [':' 'fix'] {',' ...}] ')' [':' 'fix'] into s; declares
 * the arguments as locals when declare_args. */
static void parse_header(comp *c, sig *s, int declare_args) {
    name(c, s->name);
    expect(c, "(");
    s->nargs = 0;
    if (!accept(c, ")")) {
        do {
            char n[NAME_MAX_LEN + 1];
            const dish_tok *at = name(c, n);
            if (s->nargs >= DISH_MAX_LOCALS)
                fail_at(c, at, "more than %d arguments", DISH_MAX_LOCALS);
            int ty = accept(c, ":") ? (expect(c, "fix"), TY_FIX) : TY_INT;
            s->argty[s->nargs++] = (uint8_t)ty;
            if (declare_args)
                declare(c, at, n, ty);
        } while (accept(c, ","));
        expect(c, ")");
    }
    s->ret = accept(c, ":") ? (expect(c, "fix"), TY_FIX) : TY_INT;
}

/* Skips a brace-balanced body. */
static void skip_body(comp *c) {
    int depth = 0;
    do {
        const dish_tok *t = peek(c);
        if (t->kind == DISH_T_EOF)
            fail_at(c, t, "'}' expected before the end of the file");
        depth += is(t, "{") - is(t, "}");
        c->i++;
    } while (depth > 0);
}

/* First scan: every procedure's name, slot and signature. */
static void scan_headers(comp *c) {
    int slot = 1;
    while (peek(c)->kind != DISH_T_EOF) {
        const dish_tok *t = peek(c);
        if (accept(c, "slot")) {
            slot = const_int(c, 0, DISH_SLOTS - 1, "slot");
        } else if (accept(c, "proc")) {
            if (c->nprocs >= DISH_MAX_PROCS)
                fail_at(c, t, "more than %d procedures in one file", DISH_MAX_PROCS);
            sig *s = &c->procs[c->nprocs];
            parse_header(c, s, 0);
            for (int k = 0; k < c->nprocs; k++)
                if (!strcmp(c->procs[k].name, s->name))
                    fail_at(c, t, "procedure '%s' defined twice", s->name);
            if (slot >= DISH_SLOTS)
                fail_at(c, t, "procedure '%s' would take slot %d, past %d", s->name, slot,
                        DISH_SLOTS - 1);
            s->slot = slot++;
            c->nprocs++;
            skip_body(c);
        } else {
            c->i++; /* constants and stray tokens: the second pass judges */
        }
    }
}

static void parse_const(comp *c) {
    sym *k = &c->consts[c->nconsts];
    const dish_tok *at = name(c, k->name);
    if (c->nconsts >= MAX_CONSTS)
        fail_at(c, at, "more than %d constants", MAX_CONSTS);
    if (find_const(c, k->name))
        fail_at(c, at, "'%s' is already declared", k->name);
    expect(c, "=");
    int neg = accept(c, "-");
    const dish_tok *t = peek(c);
    if (t->kind != DISH_T_INT && t->kind != DISH_T_FIX)
        fail_at(c, t, "a constant must be a number");
    c->i++;
    k->value = neg ? -t->value : t->value;
    k->ty = t->kind == DISH_T_FIX ? TY_FIX : TY_INT;
    c->nconsts++;
}

static void parse_proc(comp *c, int idx) {
    sig s;
    c->pc = c->nactive = c->maxlocals = c->ncounters = c->nloops = 0;
    parse_header(c, &s, 1);
    c->ret = s.ret;
    parse_block(c);
    emit_push(c, 0); /* falling off the end returns 0 */
    emit(c, DISH_OP_RET);
    if (c->bodylen + c->pc > DISH_MAX_IMAGE)
        fail_at(c, peek(c), "the file's code is over %d bytes", DISH_MAX_IMAGE);
    c->recs[idx] = (dish_proc){(uint8_t)c->procs[idx].slot, (uint8_t)s.nargs,
                               (uint8_t)c->maxlocals, (uint8_t)c->ncounters,
                               (uint16_t)c->bodylen, (uint16_t)c->pc};
    memcpy(c->body + c->bodylen, c->code, (size_t)c->pc);
    c->bodylen += c->pc;
}

static void parse_file(comp *c) {
    scan_headers(c);
    c->i = 0;
    int idx = 0;
    while (peek(c)->kind != DISH_T_EOF) {
        if (accept(c, "slot"))
            c->i++;
        else if (accept(c, "const"))
            parse_const(c);
        else if (accept(c, "proc"))
            parse_proc(c, idx++);
        else
            fail_at(c, peek(c), "'proc', 'const' or 'slot' expected");
    }
    if (!c->nprocs)
        fail_at(c, peek(c), "no procedure in the file");
}

/* Header, procedure table, code and CRC into out: bytes, or -1. */
static int assemble(comp *c, uint8_t *out, size_t cap) {
    size_t n = DISH_HDR + (size_t)c->nprocs * DISH_PROC_REC + (size_t)c->bodylen;
    if (n > cap || n > DISH_MAX_IMAGE) {
        snprintf(c->err, c->errlen, "%s: the image would be %zu bytes, over %d", c->file,
                 n, DISH_MAX_IMAGE);
        return -1;
    }
    memcpy(out, "DISH", 4);
    out[4] = DISH_VERSION;
    out[5] = (uint8_t)c->nprocs;
    dish_put16(out + 6, (uint16_t)c->bodylen);
    for (int k = 0; k < c->nprocs; k++) {
        uint8_t *r = out + DISH_HDR + k * DISH_PROC_REC;
        const dish_proc *p = &c->recs[k];
        r[0] = p->slot, r[1] = p->nargs, r[2] = p->nlocals, r[3] = p->ncounters;
        dish_put16(r + 4, p->off);
        dish_put16(r + 6, p->len);
    }
    memcpy(out + n - c->bodylen, c->body, (size_t)c->bodylen);
    dish_put32(out + 8, dish_crc32(out + DISH_HDR, n - DISH_HDR));
    return (int)n;
}

/* The verifier on the compiler's own output: a refusal names the
 * procedure by its source name. */
static int verify_output(comp *c, const uint8_t *img, int n) {
    static dish_image im;
    char why[200];
    if (!dish_verify(img, (size_t)n, NULL, &im, why, sizeof why))
        return n;
    snprintf(c->err, c->errlen, "%s: the verifier refuses the result: %s", c->file, why);
    return -1;
}

static int run_compiler(comp *c, uint8_t *out, size_t cap) {
    if (setjmp(c->fail))
        return -1;
    parse_file(c);
    int n = assemble(c, out, cap);
    return n > 0 ? verify_output(c, out, n) : -1;
}

int dish_compile(const char *file, const char *src, size_t len, uint8_t *out,
                 size_t cap, char *err, size_t errlen) {
    int cap_toks = (int)len + 2, n = -1;
    comp *c = calloc(1, sizeof *c);
    dish_tok *toks = malloc(sizeof *toks * (size_t)cap_toks);
    if (!c || !toks) {
        snprintf(err, errlen, "%s: out of memory", file);
    } else if (dish_lex(file, src, len, toks, cap_toks, err, errlen) >= 0) {
        *c = (comp){.file = file, .t = toks, .err = err, .errlen = errlen};
        n = run_compiler(c, out, cap);
    }
    free(toks);
    free(c);
    return n;
}
