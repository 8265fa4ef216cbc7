/* dish_compile_names.c -- what a name means where it is read: a local of
 * the procedure (innermost scope first), a constant of the file, or a
 * procedure of the file; and values the compiler must know, which are
 * literals or constants. */
#include <stdio.h>
#include <string.h>

#include "dish_compile_int.h"

sym *dc_find_local(comp *c, const char *n) {
    for (int k = c->nactive - 1; k >= 0; k--)
        if (!strcmp(c->locals[k].name, n))
            return &c->locals[k];
    return NULL;
}

sym *dc_find_const(comp *c, const char *n) {
    for (int k = 0; k < c->nconsts; k++)
        if (!strcmp(c->consts[k].name, n))
            return &c->consts[k];
    return NULL;
}

sig *dc_find_proc(comp *c, const dish_tok *t) {
    for (int k = 0; k < c->nprocs; k++)
        if ((size_t)t->len == strlen(c->procs[k].name) &&
            !strncmp(t->s, c->procs[k].name, (size_t)t->len))
            return &c->procs[k];
    return NULL;
}

int dc_declare(comp *c, const dish_tok *at, const char *n, int ty) {
    if (dc_find_local(c, n) || dc_find_const(c, n))
        dc_fail(c, at, "'%s' is already declared", n);
    if (c->nactive >= DISH_MAX_LOCALS)
        dc_fail(c, at, "more than %d locals", DISH_MAX_LOCALS);
    sym *s = &c->locals[c->nactive];
    snprintf(s->name, sizeof s->name, "%s", n);
    s->idx = c->nactive++;
    s->ty = ty;
    if (c->nactive > c->maxlocals)
        c->maxlocals = c->nactive;
    return s->idx;
}

int32_t dc_number(comp *c, const dish_tok *t, int neg) {
    if (neg)
        return (int32_t)-t->value; /* -2^31 at least: it fits */
    if (t->value > INT32_MAX)
        dc_fail(c, t, "%.*s is over %s, the largest %s; only %s (a sign, not a "
                "subtraction) fits", t->len, t->s,
                t->kind == DISH_T_FIX ? "32767.99998" : "2147483647",
                t->kind == DISH_T_FIX ? "fix" : "int",
                t->kind == DISH_T_FIX ? "-32768.0" : "-2147483648");
    return (int32_t)t->value;
}

int32_t dc_const_int(comp *c, int32_t lo, int32_t hi, const char *what) {
    const dish_tok *t = dc_peek(c);
    int32_t v;
    char n[NAME_MAX_LEN + 1];
    if (t->kind == DISH_T_INT) {
        v = dc_number(c, t, 0);
        c->i++;
    } else {
        int named = t->kind == DISH_T_NAME && !dc_is_keyword(t);
        sym *k = named ? (dc_name(c, n), dc_find_const(c, n)) : NULL;
        if (!k || k->ty != TY_INT)
            dc_fail(c, t, "%s must be an integer constant", what);
        v = k->value;
    }
    if (v < lo || v > hi)
        dc_fail(c, t, "%s %d out of range %d..%d", what, v, lo, hi);
    return v;
}

void dc_param_address(comp *c, int *node, int *id) {
    const dish_tok *t = dc_peek(c);
    *node = dc_const_int(c, 0, INT32_MAX, "node");
    /* a CSP 2 node has 14 bits and libparam's ids 16, but the bytecode
     * carries each in one byte (docs/orbit.md, "DISH's addresses") */
    if (*node >= DISH_NODES)
        dc_fail(c, t, "node %d out of range 0..%d: DISH's bytecode addresses nodes "
                "0..%d only, not CSP 2's 0..16383 (so not DIPP's 162)",
                *node, DISH_NODES - 1, DISH_NODES - 1);
    dc_expect(c, ",");
    t = dc_peek(c);
    *id = dc_const_int(c, 0, INT32_MAX, "parameter");
    if (*id >= DISH_PARAMS)
        dc_fail(c, t, "parameter %d out of range 0..%d: DISH's bytecode addresses "
                "ids 0..%d only, not libparam's 16-bit ids",
                *id, DISH_PARAMS - 1, DISH_PARAMS - 1);
}

/* const NAME = [-]NUMBER, after the "const". */
void dc_parse_const(comp *c) {
    if (c->nconsts >= MAX_CONSTS) /* before the name is copied into a slot */
        dc_fail(c, dc_peek(c), "more than %d constants", MAX_CONSTS);
    sym *k = &c->consts[c->nconsts];
    const dish_tok *at = dc_name(c, k->name);
    if (dc_find_const(c, k->name))
        dc_fail(c, at, "'%s' is already declared", k->name);
    dc_expect(c, "=");
    int neg = dc_accept(c, "-");
    const dish_tok *t = dc_peek(c);
    if (t->kind != DISH_T_INT && t->kind != DISH_T_FIX)
        dc_fail(c, t, "a constant must be a number");
    c->i++;
    k->value = dc_number(c, t, neg);
    k->ty = t->kind == DISH_T_FIX ? TY_FIX : TY_INT;
    c->nconsts++;
}
