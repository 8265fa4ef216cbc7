/* dish_compile_tok.c -- the compiler's view of the token stream: looking
 * at and consuming tokens, keywords and names, and the one way out on an
 * error, "FILE:LINE:COL: what" and a jump back to dish_compile. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dish_compile_int.h"

_Noreturn void dc_fail(comp *c, const dish_tok *t, const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(c->err, c->errlen, "%s:%d:%d: %s", c->file, t->line, t->col, what);
    longjmp(c->fail, 1);
}

const dish_tok *dc_peek(comp *c) {
    return &c->t[c->i];
}

int dc_is(const dish_tok *t, const char *word) {
    size_t n = strlen(word);
    if (t->kind == DISH_T_PUNCT)
        return !strcmp(t->p, word);
    return t->kind == DISH_T_NAME && (size_t)t->len == n && !strncmp(t->s, word, n);
}

int dc_accept(comp *c, const char *word) {
    if (!dc_is(dc_peek(c), word))
        return 0;
    c->i++;
    return 1;
}

const dish_tok *dc_expect(comp *c, const char *word) {
    const dish_tok *t = dc_peek(c);
    if (!dc_accept(c, word))
        dc_fail(c, t, "'%s' expected, found '%.*s'", word, t->len ? t->len : 3,
                t->len ? t->s : "end");
    return t;
}

int dc_is_keyword(const dish_tok *t) {
    static const char *kw[] = {"proc", "const", "slot", "let", "if", "else", "repeat",
                               "as", "break", "return", "wait", "within", "sleep",
                               "until", "and", "or", "not", "wake", "suspend", "fix",
                               "int", "now", "hasfix", "lat", "lon", "param", "set",
                               "inside", "start", "pipe", "tm"};
    for (size_t k = 0; k < sizeof kw / sizeof *kw; k++)
        if (dc_is(t, kw[k]))
            return 1;
    return 0;
}

const dish_tok *dc_name(comp *c, char *out) {
    const dish_tok *t = dc_peek(c);
    if (t->kind != DISH_T_NAME || dc_is_keyword(t))
        dc_fail(c, t, "a name expected, found '%.*s'", t->len ? t->len : 3,
                t->len ? t->s : "end");
    if (t->len > NAME_MAX_LEN)
        dc_fail(c, t, "name longer than %d characters", NAME_MAX_LEN);
    memcpy(out, t->s, (size_t)t->len);
    out[t->len] = 0;
    c->i++;
    return t;
}
