/* dish_compile.c -- the ground compiler's entry (dish_compile.h) and its
 * outer level: a file of constants and procedures. A first scan reads
 * every procedure's header, so calls may come before the callee's
 * definition; the second pass compiles each body (dish_compile_stmt.c)
 * into the image's code. There is no tree: the language is small and
 * every construct's code is known when its closing brace is read.
 * docs/orbit.md, "DISH" has the grammar; dish_compile_int.h maps the
 * other pieces. */
#include "dish_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dish_compile_int.h"

/* NAME '(' [NAME [':' 'fix'] {',' ...}] ')' [':' 'fix'] into s; declares
 * the arguments as locals when declare_args. */
static void parse_header(comp *c, sig *s, int declare_args) {
    dc_name(c, s->name);
    dc_expect(c, "(");
    s->nargs = 0;
    if (!dc_accept(c, ")")) {
        do {
            char n[NAME_MAX_LEN + 1];
            const dish_tok *at = dc_name(c, n);
            if (s->nargs >= DISH_MAX_LOCALS)
                dc_fail(c, at, "more than %d arguments", DISH_MAX_LOCALS);
            int ty = dc_accept(c, ":") ? (dc_expect(c, "fix"), TY_FIX) : TY_INT;
            s->argty[s->nargs++] = (uint8_t)ty;
            if (declare_args)
                dc_declare(c, at, n, ty);
        } while (dc_accept(c, ","));
        dc_expect(c, ")");
    }
    s->ret = dc_accept(c, ":") ? (dc_expect(c, "fix"), TY_FIX) : TY_INT;
}

/* Skips a brace-balanced body. */
static void skip_body(comp *c) {
    int depth = 0;
    do {
        const dish_tok *t = dc_peek(c);
        if (t->kind == DISH_T_EOF)
            dc_fail(c, t, "'}' expected before the end of the file");
        depth += dc_is(t, "{") - dc_is(t, "}");
        c->i++;
    } while (depth > 0);
}

/* One procedure's signature, in the next slot, its body skipped. */
static void scan_proc(comp *c, const dish_tok *t, int slot) {
    if (c->nprocs >= DISH_MAX_PROCS)
        dc_fail(c, t, "more than %d procedures in one file", DISH_MAX_PROCS);
    sig *s = &c->procs[c->nprocs];
    parse_header(c, s, 0);
    for (int k = 0; k < c->nprocs; k++) {
        if (!strcmp(c->procs[k].name, s->name))
            dc_fail(c, t, "procedure '%s' defined twice", s->name);
        if (c->procs[k].slot == slot) /* the verifier said it without a line */
            dc_fail(c, t, "procedure '%s' would take slot %d, which '%s' has",
                    s->name, slot, c->procs[k].name);
    }
    if (slot >= DISH_SLOTS)
        dc_fail(c, t, "procedure '%s' would take slot %d, past %d", s->name, slot,
                DISH_SLOTS - 1);
    s->slot = slot;
    c->nprocs++;
    skip_body(c);
}

/* First scan: every procedure's name, slot and signature. */
static void scan_headers(comp *c) {
    int slot = 1;
    while (dc_peek(c)->kind != DISH_T_EOF) {
        const dish_tok *t = dc_peek(c);
        if (dc_accept(c, "slot"))
            slot = dc_const_int(c, 0, DISH_SLOTS - 1, "slot");
        else if (dc_accept(c, "proc"))
            scan_proc(c, t, slot++);
        else
            c->i++; /* constants and stray tokens: the second pass judges */
    }
}

static void parse_proc(comp *c, int idx) {
    sig s;
    c->pc = c->nactive = c->maxlocals = c->ncounters = c->nloops = 0;
    parse_header(c, &s, 1);
    c->ret = s.ret;
    dc_block(c);
    c->site = c->i - 1; /* its closing brace */
    dc_emit_push(c, 0); /* falling off the end returns 0 */
    dc_emit(c, DISH_OP_RET);
    if (c->bodylen + c->pc > DISH_MAX_IMAGE)
        dc_fail(c, dc_peek(c), "the file's code is over %d bytes", DISH_MAX_IMAGE);
    c->recs[idx] = (dish_proc){(uint8_t)c->procs[idx].slot, (uint8_t)s.nargs,
                               (uint8_t)c->maxlocals, (uint8_t)c->ncounters,
                               (uint16_t)c->bodylen, (uint16_t)c->pc};
    memcpy(c->body + c->bodylen, c->code, (size_t)c->pc);
    memcpy(c->body_site + c->bodylen, c->code_site, sizeof *c->code_site * (size_t)c->pc);
    c->bodylen += c->pc;
}

static void parse_file(comp *c) {
    scan_headers(c);
    c->i = 0;
    int idx = 0;
    while (dc_peek(c)->kind != DISH_T_EOF) {
        if (dc_accept(c, "slot"))
            c->i++;
        else if (dc_accept(c, "const"))
            dc_parse_const(c);
        else if (dc_accept(c, "proc"))
            parse_proc(c, idx++);
        else
            dc_fail(c, dc_peek(c), "'proc', 'const' or 'slot' expected");
    }
    if (!c->nprocs)
        dc_fail(c, dc_peek(c), "no procedure in the file");
}

static int run_compiler(comp *c, uint8_t *out, size_t cap) {
    if (setjmp(c->fail))
        return -1;
    parse_file(c);
    return dc_write_image(c, out, cap);
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
