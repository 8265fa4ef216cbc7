/* dish_compile_expr.c -- expressions, by recursive descent over the
 * precedence levels of docs/orbit.md's grammar, emitting as they parse.
 * Each level returns its type, int or fix (Q16.16): an int meets a fix
 * by widening (an ITOF, inserted after the fact for a left operand),
 * never the other way without int(). Inside a wait's condition only
 * reading is allowed, and what is read is recorded as the wait's events. */
#include "dish_compile_int.h"

static void need_pure(comp *c, const dish_tok *t, const char *what) {
    if (c->in_wait)
        dc_fail(c, t, "%s is not allowed in a wait condition", what);
}

void dc_coerce(comp *c, const dish_tok *t, int ty, int want) {
    if (ty == want)
        return;
    if (want == TY_INT)
        dc_fail(c, t, "a fix value where an int is wanted (use int())");
    dc_emit(c, DISH_OP_ITOF);
}

int dc_call_args(comp *c, const dish_tok *at, int n, const uint8_t *types) {
    dc_expect(c, "(");
    int k = 0;
    if (!dc_accept(c, ")")) {
        do {
            const dish_tok *t = dc_peek(c);
            int ty = dc_expr(c);
            if (k < n)
                dc_coerce(c, t, ty, types ? types[k] : ty);
            k++;
        } while (dc_accept(c, ","));
        dc_expect(c, ")");
    }
    if (k != n)
        dc_fail(c, at, "%d arguments given, %d expected", k, n);
    return k;
}

static int call_proc(comp *c, const dish_tok *t, sig *s) {
    need_pure(c, t, "a call");
    c->i++;
    dc_call_args(c, t, s->nargs, s->argty);
    int saved = c->site;
    c->site = (int)(t - c->t); /* a cycle or a nesting too deep is named here */
    dc_emit(c, DISH_OP_CALL);
    dc_emit(c, s->slot);
    dc_emit(c, s->nargs);
    c->site = saved;
    return s->ret;
}

/* param(NODE, ID): both known at compile time. */
static void param_read(comp *c) {
    int node, id;
    dc_param_address(c, &node, &id);
    dc_emit(c, DISH_OP_PGET);
    dc_emit(c, node);
    dc_emit(c, id);
    c->wait_events |= DISH_EV_PARAM;
}

/* param(NODE, ID), pipe(P), start(P) */
static int builtin_fixed_args(comp *c, const dish_tok *t, int op) {
    c->i++;
    dc_expect(c, "(");
    if (op == DISH_OP_PGET) {
        param_read(c);
    } else {
        if (op == DISH_OP_PSTART)
            need_pure(c, t, "start()");
        dc_int_expr(c, "a pipeline number");
        dc_emit(c, op);
        c->wait_events |= op == DISH_OP_PSTAT ? DISH_EV_PIPE : 0;
    }
    dc_expect(c, ")");
    return TY_INT;
}

/* int(e), fix(e): the conversion when e is of the other type. */
static int conversion(comp *c, const dish_tok *t) {
    dc_expect(c, "(");
    int ty = dc_expr(c);
    dc_expect(c, ")");
    int want = dc_is(t, "fix") ? TY_FIX : TY_INT;
    if (ty != want)
        dc_emit(c, want == TY_FIX ? DISH_OP_ITOF : DISH_OP_FTOI);
    return want;
}

static int builtin_call(comp *c, const dish_tok *t) {
    if (dc_is(t, "param"))
        return builtin_fixed_args(c, t, DISH_OP_PGET);
    if (dc_is(t, "pipe"))
        return builtin_fixed_args(c, t, DISH_OP_PSTAT);
    if (dc_is(t, "start"))
        return builtin_fixed_args(c, t, DISH_OP_PSTART);
    c->i++;
    if (dc_is(t, "inside")) {
        static const uint8_t fx[4] = {TY_FIX, TY_FIX, TY_FIX, TY_FIX};
        dc_call_args(c, t, 4, fx);
        dc_emit(c, DISH_OP_INBOX);
        c->wait_events |= DISH_EV_GNSS;
        return TY_INT;
    }
    return conversion(c, t);
}

/* now, hasfix, lat, lon: their type, or -1 when t is none of them. */
static int reading(comp *c, const dish_tok *t) {
    static const struct { const char *w; int op, ty; unsigned ev; } rd[] = {
        {"now", DISH_OP_NOW, TY_INT, DISH_EV_TIME},
        {"hasfix", DISH_OP_HASFIX, TY_INT, DISH_EV_GNSS},
        {"lat", DISH_OP_LAT, TY_FIX, DISH_EV_GNSS},
        {"lon", DISH_OP_LON, TY_FIX, DISH_EV_GNSS}};
    for (size_t k = 0; k < sizeof rd / sizeof *rd; k++)
        if (dc_is(t, rd[k].w)) {
            c->i++;
            dc_emit(c, rd[k].op);
            c->wait_events |= rd[k].ev;
            return rd[k].ty;
        }
    return -1;
}

/* A local or a constant named by the next token. */
static int variable(comp *c, const dish_tok *t) {
    char n[NAME_MAX_LEN + 1];
    dc_name(c, n);
    sym *v = dc_find_local(c, n);
    if (v) {
        dc_emit(c, DISH_OP_LOAD);
        dc_emit(c, v->idx);
        return v->ty;
    }
    sym *k = dc_find_const(c, n);
    if (!k)
        dc_fail(c, t, "'%s' is not declared", n);
    dc_emit_push(c, k->value);
    return k->ty;
}

static int primary_name(comp *c, const dish_tok *t) {
    int ty = reading(c, t);
    if (ty >= 0)
        return ty;
    static const char *calls[] = {"param", "pipe", "start", "inside", "int", "fix"};
    for (size_t k = 0; k < sizeof calls / sizeof *calls; k++)
        if (dc_is(t, calls[k]))
            return builtin_call(c, t);
    sig *s = dc_find_proc(c, t);
    if (s && dc_is(&c->t[c->i + 1], "("))
        return call_proc(c, t, s);
    return variable(c, t);
}

static int primary(comp *c) {
    const dish_tok *t = dc_peek(c);
    if (t->kind == DISH_T_INT || t->kind == DISH_T_FIX) {
        c->i++;
        dc_emit_push(c, dc_number(c, t, 0));
        return t->kind == DISH_T_FIX ? TY_FIX : TY_INT;
    }
    if (dc_accept(c, "(")) {
        int ty = dc_expr(c);
        dc_expect(c, ")");
        return ty;
    }
    if (t->kind == DISH_T_NAME)
        return primary_name(c, t);
    dc_fail(c, t, "an expression expected, found '%.*s'", t->len ? t->len : 3,
            t->len ? t->s : "end");
}

/* One more level of nesting at t, refused past DC_MAX_NESTING. */
static void nest(comp *c, const dish_tok *t) {
    if (++c->nesting > DC_MAX_NESTING)
        dc_fail(c, t, "expressions nested too deeply");
}

static int unary_nested(comp *c);

static int unary(comp *c) {
    nest(c, dc_peek(c));
    int ty = unary_nested(c);
    c->nesting--;
    return ty;
}

static int unary_nested(comp *c) {
    if (dc_accept(c, "-")) {
        const dish_tok *n = dc_peek(c);
        if (n->kind == DISH_T_INT || n->kind == DISH_T_FIX) { /* a negative literal */
            c->i++;
            /* -2147483648 is one literal here: its magnitude alone fits
             * no int32, so it is not a positive number negated */
            dc_emit_push(c, dc_number(c, n, 1));
            return n->kind == DISH_T_FIX ? TY_FIX : TY_INT;
        }
        int ty = unary(c);
        dc_emit(c, DISH_OP_NEG);
        return ty;
    }
    if (dc_accept(c, "not")) {
        unary(c);
        dc_emit(c, DISH_OP_NOT);
        return TY_INT;
    }
    return primary(c);
}

/* Brings two operands to one type: the right one's code starts at rpos. */
static int unify(comp *c, int rpos, int lt, int rt) {
    if (lt == rt)
        return lt;
    if (lt == TY_INT)
        dc_insert_op(c, rpos, DISH_OP_ITOF);
    else
        dc_emit(c, DISH_OP_ITOF);
    return TY_FIX;
}

static int mul_op(comp *c, const dish_tok *t, int ty) {
    if (dc_is(t, "%")) {
        if (ty == TY_FIX)
            dc_fail(c, t, "'%%' takes ints");
        return DISH_OP_MOD;
    }
    if (dc_is(t, "*"))
        return ty == TY_FIX ? DISH_OP_FMUL : DISH_OP_MUL;
    return ty == TY_FIX ? DISH_OP_FDIV : DISH_OP_DIV;
}

static int term(comp *c) {
    int ty = unary(c);
    for (;;) {
        const dish_tok *t = dc_peek(c);
        if (!dc_is(t, "*") && !dc_is(t, "/") && !dc_is(t, "%"))
            return ty;
        c->i++;
        int rpos = c->pc;
        const dish_tok *rt = dc_peek(c);
        int rty = unary(c);
        int32_t k;
        /* the runtime stops the run at a division by 0 (fault 1); a
         * divisor known now to be 0 can only be a mistake */
        if (!dc_is(t, "*") && dc_pushed_constant(c, rpos, &k) && k == 0)
            dc_fail(c, rt, "division by zero: the divisor is the constant 0 (the "
                           "run would stop with fault 1)");
        ty = unify(c, rpos, ty, rty);
        dc_emit(c, mul_op(c, t, ty));
    }
}

static int sum(comp *c) {
    int ty = term(c);
    for (;;) {
        const dish_tok *t = dc_peek(c);
        if (!dc_is(t, "+") && !dc_is(t, "-"))
            return ty;
        c->i++;
        int rpos = c->pc;
        ty = unify(c, rpos, ty, term(c));
        dc_emit(c, dc_is(t, "+") ? DISH_OP_ADD : DISH_OP_SUB);
    }
}

static int comparison(comp *c) {
    static const struct { const char *p; int op, negate; } rel[] = {
        {"==", DISH_OP_EQ, 0}, {"!=", DISH_OP_NE, 0}, {"<", DISH_OP_LT, 0},
        {"<=", DISH_OP_LE, 0}, {">", DISH_OP_LE, 1}, {">=", DISH_OP_LT, 1}};
    int ty = sum(c);
    for (size_t k = 0; k < sizeof rel / sizeof *rel; k++)
        if (dc_accept(c, rel[k].p)) {
            int rpos = c->pc;
            unify(c, rpos, ty, sum(c));
            dc_emit(c, rel[k].op);
            if (rel[k].negate)
                dc_emit(c, DISH_OP_NOT);
            return TY_INT;
        }
    return ty;
}

static int conjunction(comp *c) {
    int ty = comparison(c);
    while (dc_accept(c, "and")) {
        comparison(c);
        dc_emit(c, DISH_OP_AND);
        ty = TY_INT;
    }
    return ty;
}

int dc_expr(comp *c) {
    nest(c, dc_peek(c));
    int ty = conjunction(c);
    while (dc_accept(c, "or")) {
        conjunction(c);
        dc_emit(c, DISH_OP_OR);
        ty = TY_INT;
    }
    c->nesting--;
    return ty;
}

void dc_int_expr(comp *c, const char *what) {
    const dish_tok *t = dc_peek(c);
    if (dc_expr(c) != TY_INT)
        dc_fail(c, t, "%s must be an int (use int())", what);
}
