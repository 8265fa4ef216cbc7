/* dish_compile_int.h -- what the pieces of the ground compiler share: its
 * state (tokens, names in scope, the procedure being emitted, the image
 * being built) and each piece's entry points. The pieces, in the order a
 * source goes through them: dish_compile_tok.c reads tokens and reports
 * errors, dish_compile_names.c resolves names, dish_compile_expr.c and
 * dish_compile_stmt.c parse and emit through dish_compile_emit.c,
 * dish_compile.c drives a file and dish_compile_image.c writes the image.
 * Not part of the runtime: nothing here flies. */
#ifndef DISH_COMPILE_INT_H
#define DISH_COMPILE_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "dish.h"
#include "dish_lex.h"

enum { TY_INT, TY_FIX };
#define NAME_MAX_LEN 31
#define MAX_CONSTS 64
#define MAX_BREAKS 32 /* per loop */

/* A procedure's name, slot and signature, known from the first scan. */
typedef struct sig {
    char name[NAME_MAX_LEN + 1];
    int nargs, slot, ret;
    uint8_t argty[DISH_MAX_LOCALS];
} sig;

/* A local (idx: its number in the frame) or a constant (value). */
typedef struct sym {
    char name[NAME_MAX_LEN + 1];
    int idx, ty;
    int32_t value;
} sym;

/* The breaks of a loop being compiled, patched to its exit at the end. */
typedef struct loopctx {
    int breaks[MAX_BREAKS], nbreaks;
} loopctx;

/* Expressions (parentheses, arguments) and unary operators nested in
 * each other: the parser recurses for each (twice for a parenthesis), so
 * a bound keeps a deep nesting from overflowing its stack, where nothing
 * else would (parentheses make no code). */
#define DC_MAX_NESTING 256

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
    /* The token each code byte comes from (the statement's first, or a
     * call's name): a verifier's refusal at an instruction is reported
     * at that token's line and column. site: the one emitting now. */
    int site, code_site[DISH_MAX_CODE];
    sym locals[DISH_MAX_LOCALS];
    int nactive, maxlocals, ncounters;
    loopctx loops[DISH_MAX_COUNTERS];
    int nloops;
    int ret;              /* its return type */
    int in_wait;          /* compiling a wait condition: pure code only */
    int nesting;          /* expressions and unary operators open now */
    unsigned wait_events; /* what that condition reads */
    /* the image */
    uint8_t body[DISH_MAX_IMAGE];
    int body_site[DISH_MAX_IMAGE]; /* code_site of each procedure, as body */
    int bodylen;
    dish_proc recs[DISH_MAX_PROCS];
    jmp_buf fail;
    char *err;
    size_t errlen;
} comp;

/* ---- tokens and errors (dish_compile_tok.c) ---- */
/* "FILE:LINE:COL: what" at token t into c->err; back to dish_compile. */
_Noreturn void dc_fail(comp *c, const dish_tok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const dish_tok *dc_peek(comp *c);
int dc_is(const dish_tok *t, const char *word);
/* Consumes the next token when it is word: 1, else 0. */
int dc_accept(comp *c, const char *word);
const dish_tok *dc_expect(comp *c, const char *word);
int dc_is_keyword(const dish_tok *t);
/* A name that is not a keyword, copied into out: its token. */
const dish_tok *dc_name(comp *c, char *out);

/* ---- emitting (dish_compile_emit.c) ---- */
void dc_emit(comp *c, int byte);
void dc_emit16(comp *c, int v);
void dc_emit_push(comp *c, int32_t v);
/* The value of the code emitted since from, when that code is one push:
 * the expression was a literal or a constant. 1 and *v, else 0. */
int dc_pushed_constant(const comp *c, int from, int32_t *v);
/* Emits a jump whose target is filled in later: where the target goes. */
int dc_emit_jump(comp *c, int op);
void dc_patch(comp *c, int at, int target);
void dc_insert_op(comp *c, int at, int op);

/* ---- names (dish_compile_names.c) ---- */
sym *dc_find_local(comp *c, const char *n);
sym *dc_find_const(comp *c, const char *n);
sig *dc_find_proc(comp *c, const dish_tok *t);
/* A new local of type ty in the current scope: its index. */
int dc_declare(comp *c, const dish_tok *at, const char *n, int ty);
/* The value of number token t, negated when a minus stands before it
 * (neg): an int from -2147483648 to 2147483647, a fix from -32768.0 to
 * 32767.99998; a magnitude of 2^31 without the minus is refused at t. */
int32_t dc_number(comp *c, const dish_tok *t, int neg);
/* An integer literal or constant in lo..hi (what names it in errors). */
int32_t dc_const_int(comp *c, int32_t lo, int32_t hi, const char *what);
/* NODE "," ID of param() and set(): constants, within what the bytecode
 * carries (DISH_NODES, DISH_PARAMS), else an error saying so. */
void dc_param_address(comp *c, int *node, int *id);
void dc_parse_const(comp *c);

/* ---- expressions (dish_compile_expr.c): each returns its type ---- */
int dc_expr(comp *c);
void dc_int_expr(comp *c, const char *what);
/* Converts the value on top (of type ty) to want, or fails at t. */
void dc_coerce(comp *c, const dish_tok *t, int ty, int want);
/* '(' n arguments ')', each converted to types[k] unless types is NULL. */
int dc_call_args(comp *c, const dish_tok *at, int n, const uint8_t *types);

/* ---- statements (dish_compile_stmt.c) ---- */
void dc_block(comp *c);

/* ---- the image (dish_compile_image.c) ---- */
/* Header, procedure table, code and CRC into out, then the verifier on
 * it: the image's bytes, or -1 with c->err filled. */
int dc_write_image(comp *c, uint8_t *out, size_t cap);

#endif
