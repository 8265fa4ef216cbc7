/* dish_compile_stmt.c -- statements and blocks, emitted as they are
 * parsed: every construct's code is known when its closing brace is
 * read, so jumps are patched then. The shapes of the code each emits
 * (a counted loop, a wait) are the ones dish_verify.c accepts. */
#include "dish_compile_int.h"

static void stmt_let(comp *c) {
    char n[NAME_MAX_LEN + 1];
    const dish_tok *at = dc_name(c, n);
    dc_expect(c, "=");
    int ty = dc_expr(c);
    dc_emit(c, DISH_OP_STORE);
    dc_emit(c, dc_declare(c, at, n, ty));
}

static void stmt_assign(comp *c) {
    char n[NAME_MAX_LEN + 1];
    const dish_tok *at = dc_name(c, n);
    sym *v = dc_find_local(c, n);
    if (!v)
        dc_fail(c, at, "'%s' is not a local (declare it with let)", n);
    dc_expect(c, "=");
    const dish_tok *t = dc_peek(c);
    dc_coerce(c, t, dc_expr(c), v->ty);
    dc_emit(c, DISH_OP_STORE);
    dc_emit(c, v->idx);
}

/* A block in a scope of its own: its locals end with it. */
static void scoped_block(comp *c) {
    int saved = c->nactive;
    dc_block(c);
    c->nactive = saved;
}

static void stmt_if(comp *c) {
    dc_expr(c);
    int jz = dc_emit_jump(c, DISH_OP_JZ);
    scoped_block(c);
    if (!dc_accept(c, "else")) {
        dc_patch(c, jz, c->pc);
        return;
    }
    int jend = dc_emit_jump(c, DISH_OP_JMP);
    dc_patch(c, jz, c->pc);
    if (dc_accept(c, "if"))
        stmt_if(c);
    else
        scoped_block(c);
    dc_patch(c, jend, c->pc);
}

/* "as NAME": the local counting up 0..n-1, from the counter counting down. */
static void loop_index(comp *c, int ctr, int n) {
    char iname[NAME_MAX_LEN + 1];
    const dish_tok *it = dc_name(c, iname);
    dc_emit_push(c, n - 1);
    dc_emit(c, DISH_OP_CTR);
    dc_emit(c, ctr);
    dc_emit(c, DISH_OP_SUB);
    dc_emit(c, DISH_OP_STORE);
    dc_emit(c, dc_declare(c, it, iname, TY_INT));
}

/* INIT c N; top: TEST c exit; [i = N-1-ctr]; body; NEXT top; exit: */
static void stmt_repeat(comp *c, const dish_tok *at) {
    int n = dc_const_int(c, 0, DISH_MAX_LOOP, "loop bound");
    if (c->ncounters >= DISH_MAX_COUNTERS)
        dc_fail(c, at, "more than %d loops in a procedure", DISH_MAX_COUNTERS);
    int ctr = c->ncounters++, saved = c->nactive;
    dc_emit(c, DISH_OP_INIT);
    dc_emit(c, ctr);
    dc_emit16(c, n);
    int top = c->pc;
    dc_emit(c, DISH_OP_TEST);
    dc_emit(c, ctr);
    int exit_at = c->pc;
    dc_emit16(c, 0);
    if (dc_accept(c, "as"))
        loop_index(c, ctr, n);
    loopctx *l = &c->loops[c->nloops++];
    l->nbreaks = 0;
    dc_block(c);
    dc_emit(c, DISH_OP_NEXT);
    dc_emit16(c, top);
    dc_patch(c, exit_at, c->pc);
    for (int k = 0; k < l->nbreaks; k++)
        dc_patch(c, l->breaks[k], c->pc);
    c->nloops--;
    c->nactive = saved;
}

static void stmt_break(comp *c, const dish_tok *at) {
    if (!c->nloops)
        dc_fail(c, at, "break outside a repeat");
    loopctx *l = &c->loops[c->nloops - 1];
    if (l->nbreaks >= MAX_BREAKS)
        dc_fail(c, at, "too many breaks in one loop");
    l->breaks[l->nbreaks++] = dc_emit_jump(c, DISH_OP_JMP);
}

static void stmt_return(comp *c) {
    const dish_tok *t = dc_peek(c);
    if (dc_is(t, "}"))
        dc_emit_push(c, 0);
    else
        dc_coerce(c, t, dc_expr(c), c->ret);
    dc_emit(c, DISH_OP_RET);
}

/* A sleep's or a wait's seconds (what names them): an int expression.
 * The runtime cuts any time over DISH_MAX_WAIT_S to 7 days without a
 * word, which a literal or a constant can only ask by mistake: such a
 * one is refused here. A time computed on board is cut there. */
static void duration(comp *c, const char *what) {
    const dish_tok *t = dc_peek(c);
    int from = c->pc;
    int32_t v;
    dc_int_expr(c, what);
    if (dc_pushed_constant(c, from, &v) && v > DISH_MAX_WAIT_S)
        dc_fail(c, t, "%s is %ld s, over the %d s (7 days) the runtime allows", what,
                (long)v, DISH_MAX_WAIT_S);
}

/* The condition starting at token cond_tok, as pure code; the tokens
 * are read again from there (the timeout came first). Its events. */
static unsigned wait_condition(comp *c, int cond_tok) {
    c->i = cond_tok;
    c->in_wait = 1;
    c->wait_events = 0;
    dc_expr(c);
    c->in_wait = 0;
    if (!dc_is(dc_peek(c), "within"))
        dc_fail(c, dc_peek(c), "'within' expected after the wait's condition");
    return c->wait_events;
}

/* Skips the condition to its "within": the timeout is evaluated first. */
static void skip_to_within(comp *c) {
    while (!dc_is(dc_peek(c), "within") && dc_peek(c)->kind != DISH_T_EOF &&
           !dc_is(dc_peek(c), "{") && !dc_is(dc_peek(c), "}"))
        c->i++;
    dc_expect(c, "within");
}

/* timeout; WSET; top: cond; WAIT top else mask; [JMP end; else: block]; end: */
static void stmt_wait(comp *c) {
    int cond_tok = c->i;
    skip_to_within(c);
    duration(c, "a wait's timeout");
    int after = c->i;
    dc_emit(c, DISH_OP_WSET);
    int top = c->pc;
    unsigned events = wait_condition(c, cond_tok);
    c->i = after;
    dc_emit(c, DISH_OP_WAIT);
    dc_emit16(c, top);
    int els = c->pc;
    dc_emit16(c, 0);
    dc_emit(c, (int)events);
    if (!dc_accept(c, "else")) {
        dc_patch(c, els, c->pc);
        return;
    }
    int jend = dc_emit_jump(c, DISH_OP_JMP);
    dc_patch(c, els, c->pc);
    scoped_block(c);
    dc_patch(c, jend, c->pc);
}

/* set(NODE, ID, value) */
static void stmt_set(comp *c) {
    dc_expect(c, "(");
    int node, id;
    dc_param_address(c, &node, &id);
    dc_expect(c, ",");
    dc_int_expr(c, "a parameter's value");
    dc_expect(c, ")");
    dc_emit(c, DISH_OP_PSET);
    dc_emit(c, node);
    dc_emit(c, id);
}

/* tm(code, value), wake, suspend: nargs values, then op. tm's two are
 * ints, as set's value and return's are: a fix would be recorded as its
 * raw Q16.16 bits (1.5 as 98304), which no reader of the telemetry could
 * tell from an int. */
static void stmt_builtin(comp *c, int op, int nargs) {
    static const uint8_t ints[2] = {TY_INT, TY_INT};
    const dish_tok *at = &c->t[c->i - 1];
    if (nargs)
        dc_call_args(c, at, nargs, ints);
    dc_emit(c, op);
}

static void stmt_expr(comp *c) {
    const dish_tok *t = dc_peek(c);
    if (t->kind != DISH_T_NAME || !dc_is(&c->t[c->i + 1], "("))
        dc_fail(c, t, "a statement expected, found '%.*s'", t->len ? t->len : 3,
                t->len ? t->s : "end");
    dc_expr(c);
    dc_emit(c, DISH_OP_POP);
}

static void stmt_sleep(comp *c) {
    int op = dc_accept(c, "until") ? DISH_OP_SLEEPU : DISH_OP_SLEEP;
    if (op == DISH_OP_SLEEPU) /* a clock reading: how far ahead is known on board */
        dc_int_expr(c, "a sleep's time");
    else
        duration(c, "a sleep's time");
    dc_emit(c, op);
}

static void statement(comp *c) {
    const dish_tok *t = dc_peek(c);
    int saved = c->site;
    c->site = c->i; /* until a nested statement or call says otherwise */
    if (dc_accept(c, "let")) stmt_let(c);
    else if (dc_accept(c, "if")) stmt_if(c);
    else if (dc_accept(c, "repeat")) stmt_repeat(c, t);
    else if (dc_accept(c, "break")) stmt_break(c, t);
    else if (dc_accept(c, "return")) stmt_return(c);
    else if (dc_accept(c, "wait")) stmt_wait(c);
    else if (dc_accept(c, "sleep")) stmt_sleep(c);
    else if (dc_accept(c, "set")) stmt_set(c);
    else if (dc_accept(c, "tm")) stmt_builtin(c, DISH_OP_TLM, 2);
    else if (dc_accept(c, "wake")) stmt_builtin(c, DISH_OP_WAKE, 0);
    else if (dc_accept(c, "suspend")) stmt_builtin(c, DISH_OP_SUSPEND, 0);
    else if (t->kind == DISH_T_NAME && dc_is(&c->t[c->i + 1], "=")) stmt_assign(c);
    else stmt_expr(c);
    c->site = saved;
}

void dc_block(comp *c) {
    dc_expect(c, "{");
    while (!dc_accept(c, "}")) {
        if (dc_peek(c)->kind == DISH_T_EOF)
            dc_fail(c, dc_peek(c), "'}' expected before the end of the file");
        statement(c);
    }
}
