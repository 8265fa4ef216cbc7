/* dish_lex.c -- the DISH lexer (dish_lex.h). Comments run from '#' to the
 * end of the line; numbers are decimal, with a point for fixed point. */
#include "dish_lex.h"

#include "dish.h"
#include "utf8.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct lexer {
    const char *file, *s, *end;
    int line, col;
    char *err;
    size_t errlen;
} lexer;

static int lex_fail(lexer *x, const char *what) {
    snprintf(x->err, x->errlen, "%s:%d:%d: %s", x->file, x->line, x->col, what);
    return -1;
}

/* Whether the character at p ends a line: \n, or a \r not before one
 * (old Mac files; in CRLF files the \n counts). */
static int ends_line(const lexer *x, const char *p) {
    return *p == '\n' || (*p == '\r' && (p + 1 == x->end || p[1] != '\n'));
}

static void advance(lexer *x) {
    if (ends_line(x, x->s)) {
        x->line++;
        x->col = 1;
    } else {
        x->col++;
    }
    x->s++;
}

static void skip_space(lexer *x) {
    while (x->s < x->end) {
        if (*x->s == '#')
            while (x->s < x->end && !ends_line(x, x->s))
                advance(x);
        else if (isspace((unsigned char)*x->s))
            advance(x);
        else
            return;
    }
}

/* Digits into *v (at most max: -1 past it), counting them in *ndig. */
static int digits(lexer *x, int64_t max, int64_t *v, int *ndig) {
    *v = 0;
    *ndig = 0;
    while (x->s < x->end && isdigit((unsigned char)*x->s)) {
        *v = *v * 10 + (*x->s - '0');
        if (*v > max)
            return -1;
        ++*ndig;
        advance(x);
    }
    return 0;
}

/* The fraction after a point, as a rounded Q16.16 part; *tiny is set when
 * it is not 0 but below one Q16.16 step (1/65536). */
static int fraction(lexer *x, int64_t *q, int *tiny) {
    int64_t f;
    int n;
    /* at most 9 digits: more cannot change a Q16.16 part, and leading
     * zeros, which never reach the value's bound, would overflow scale */
    if (digits(x, 999999999, &f, &n) || n > 9)
        return lex_fail(x, "too many digits after the point (9 at most)");
    if (!n)
        return lex_fail(x, "digits expected after the point");
    int64_t scale = 1;
    while (n--)
        scale *= 10;
    *q = (f * DISH_FIX_ONE + scale / 2) / scale;
    *tiny = f > 0 && f * DISH_FIX_ONE < scale;
    return 0;
}

/* A fix literal other than 0 but below one Q16.16 step: a fix holds it
 * as 0 or as one step (0.00001 as 0.0000153), never as written, and a
 * threshold or divisor of 0 is silently another program; so it is
 * refused. The literal's text is t's, up to x->s. */
static int fix_underflows(lexer *x, const dish_tok *t, const char *text) {
    size_t len = (size_t)(x->s - text);
    char what[160];
    snprintf(what, sizeof what,
             "%.*s is below the smallest fix step, 1/65536 (about 0.0000153): a fix "
             "cannot hold it (write 0, or scale the value up)",
             len > 40 ? 40 : (int)len, text);
    x->line = t->line, x->col = t->col;
    return lex_fail(x, what);
}

/* One past INT32_MAX: the magnitude of the least int32, which a literal
 * after a minus may have (dish_lex.h). */
#define MAGNITUDE_MAX ((int64_t)INT32_MAX + 1)

/* A fix literal past the least fix's magnitude, named at its start. */
static int fix_too_large(lexer *x, const dish_tok *t) {
    x->line = t->line, x->col = t->col;
    return lex_fail(x, "fixed-point number too large: a fix is -32768.0 to 32767.99998");
}

static int number(lexer *x, dish_tok *t) {
    int64_t v, q = 0;
    int n, tiny = 0;
    const char *text = x->s;
    if (digits(x, MAGNITUDE_MAX, &v, &n)) {
        x->line = t->line, x->col = t->col; /* name the number's start */
        return lex_fail(x, "number too large: an int is -2147483648 to 2147483647");
    }
    t->kind = DISH_T_INT;
    if (x->s < x->end && *x->s == '.') {
        advance(x);
        if (fraction(x, &q, &tiny))
            return -1;
        if (v == 0 && tiny)
            return fix_underflows(x, t, text);
        t->kind = DISH_T_FIX;
        v = v * DISH_FIX_ONE + q; /* at most 2^31 * 65536 + 65536: no overflow */
        if (v > MAGNITUDE_MAX) /* 32768.0 is -32768.0's magnitude; more is none */
            return fix_too_large(x, t);
    }
    t->value = v;
    return 0;
}

/* Whether code point cp, printed as itself, could vanish or mislead the
 * reader of a message: C1 controls, the soft hyphen, invisible spaces,
 * joiners and marks, direction overrides and isolates, the byte-order
 * mark, tag characters. Such a one is named by number only. */
static int invisible(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0xAD || (cp >= 0x2000 && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) ||
           cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB) ||
           (cp >= 0xE0000 && cp <= 0xE007F);
}

/* The refusal of what is at x->s, which starts no token, named so the
 * writer can find it: an ASCII character as itself, a control byte in
 * hex, a UTF-8 character as itself and U+ (by number alone when it would
 * not show), a byte of another encoding in hex. '?' said none of it. */
static int unexpected(lexer *x) {
    const unsigned char *b = (const unsigned char *)x->s;
    char what[192];
    uint32_t cp = 0;
    size_t n = *b < 0x80 ? 0 : utf8_char(b, (size_t)(x->end - x->s), &cp);
    if (*b < 0x80 && isprint(*b))
        snprintf(what, sizeof what, "unexpected character '%c'", *b);
    else if (*b < 0x80)
        snprintf(what, sizeof what, "unexpected control byte 0x%02X", *b);
    else if (!n)
        snprintf(what, sizeof what, "unexpected byte 0x%02X: not ASCII, nor the start "
                 "of a UTF-8 character (is the file in another encoding?)", *b);
    else if (invisible(cp))
        snprintf(what, sizeof what, "unexpected character U+%04X (an invisible or "
                 "direction-changing one): outside comments DISH is ASCII", (unsigned)cp);
    else
        snprintf(what, sizeof what, "unexpected character '%.*s' (U+%04X): outside "
                 "comments DISH is ASCII", (int)n, (const char *)b, (unsigned)cp);
    return lex_fail(x, what);
}

static int punct(lexer *x, dish_tok *t) {
    static const char *two[] = {"==", "!=", "<=", ">="};
    static const char one[] = "(){},:=+-*/%<>";
    for (size_t k = 0; k < sizeof two / sizeof *two; k++)
        if (x->end - x->s >= 2 && !strncmp(x->s, two[k], 2)) {
            memcpy(t->p, two[k], 3);
            advance(x);
            advance(x);
            return 0;
        }
    if (!strchr(one, *x->s) || !*x->s)
        return unexpected(x);
    t->p[0] = *x->s;
    advance(x);
    return 0;
}

static int one_token(lexer *x, dish_tok *t) {
    memset(t, 0, sizeof *t);
    t->s = x->s;
    t->line = x->line;
    t->col = x->col;
    int rc = 0;
    if (x->s == x->end) {
        t->kind = DISH_T_EOF;
    } else if (isdigit((unsigned char)*x->s)) {
        rc = number(x, t);
    } else if (isalpha((unsigned char)*x->s) || *x->s == '_') {
        t->kind = DISH_T_NAME;
        while (x->s < x->end && (isalnum((unsigned char)*x->s) || *x->s == '_'))
            advance(x);
    } else {
        t->kind = DISH_T_PUNCT;
        rc = punct(x, t);
    }
    t->len = (int)(x->s - t->s);
    return rc;
}

int dish_lex(const char *file, const char *src, size_t len, dish_tok *toks, int cap,
             char *err, size_t errlen) {
    lexer x = {file, src, src + len, 1, 1, err, errlen};
    if (len >= 3 && !memcmp(src, "\xEF\xBB\xBF", 3))
        x.s += 3; /* a UTF-8 byte-order mark, as some editors write */
    for (int n = 0; n < cap; n++) {
        skip_space(&x);
        if (one_token(&x, &toks[n]))
            return -1;
        if (toks[n].kind == DISH_T_EOF)
            return n + 1;
    }
    return lex_fail(&x, "too many tokens");
}
