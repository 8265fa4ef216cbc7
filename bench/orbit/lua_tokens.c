/* lua_tokens.c -- a token count of Lua 5.4 source (lua_tokens.h). */
#include "lua_tokens.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct scan {
    const char *file, *s, *end;
    int line;
    char *err;
    size_t errlen;
} scan;

static int fail(scan *x, const char *what) {
    snprintf(x->err, x->errlen, "%s:%d: %s", x->file, x->line, what);
    return -1;
}

static int at(const scan *x, size_t k) {
    return x->s + k < x->end ? (unsigned char)x->s[k] : -1;
}

/* Moves past n characters, counting lines. */
static void skip(scan *x, size_t n) {
    for (; n && x->s < x->end; n--, x->s++)
        x->line += *x->s == '\n';
}

/* At "[" followed by "="s and "[": the number of "="s, else -1. */
static int long_open(const scan *x) {
    if (at(x, 0) != '[')
        return -1;
    size_t k = 1;
    while (at(x, k) == '=')
        k++;
    return at(x, k) == '[' ? (int)k - 1 : -1;
}

/* Past a long bracket of level eq (x->s at its opening "["). */
static int long_bracket(scan *x, int eq, const char *what) {
    skip(x, (size_t)eq + 2);
    for (; x->s < x->end; skip(x, 1)) {
        if (at(x, 0) != ']')
            continue;
        size_t k = 1;
        while (at(x, k) == '=')
            k++;
        if ((int)k - 1 == eq && at(x, k) == ']') {
            skip(x, k + 1);
            return 0;
        }
    }
    return fail(x, what);
}

/* Whitespace and comments; -1 on an unfinished long comment. */
static int blanks(scan *x) {
    while (x->s < x->end) {
        int c = at(x, 0);
        if (isspace(c)) {
            skip(x, 1);
        } else if (c == '-' && at(x, 1) == '-') {
            skip(x, 2);
            int eq = long_open(x);
            if (eq >= 0) {
                if (long_bracket(x, eq, "unfinished long comment"))
                    return -1;
            } else {
                while (x->s < x->end && *x->s != '\n')
                    skip(x, 1);
            }
        } else {
            return 0;
        }
    }
    return 0;
}

/* A quoted string: escapes are passed over (a backslash takes the next
 * character, an escaped line break included); a bare line break ends it
 * in error. */
static int quoted(scan *x) {
    int q = at(x, 0);
    skip(x, 1);
    while (x->s < x->end) {
        int c = at(x, 0);
        if (c == q) {
            skip(x, 1);
            return 0;
        }
        if (c == '\n' || c == '\r')
            break;
        skip(x, c == '\\' && x->s + 1 < x->end ? 2 : 1);
    }
    return fail(x, "unfinished string");
}

/* A numeral: digits, letters (hex digits, x, exponent letters), points,
 * and a sign right after an exponent letter (e, or p in hexadecimal). */
static void numeral(scan *x) {
    int hex = at(x, 0) == '0' && (at(x, 1) == 'x' || at(x, 1) == 'X');
    char e1 = hex ? 'p' : 'e', e2 = hex ? 'P' : 'E';
    for (;;) {
        int c = at(x, 0);
        if ((c == e1 || c == e2) && (at(x, 1) == '+' || at(x, 1) == '-'))
            skip(x, 2);
        else if (c >= 0 && (isalnum(c) || c == '.'))
            skip(x, 1);
        else
            return;
    }
}

/* An operator or punctuation: its length, 0 for none. */
static size_t op_len(const scan *x) {
    static const char *const three[] = {"..."};
    static const char *const two[] = {"..", "==", "~=", "<=", ">=", "//", "::", "<<", ">>"};
    static const char one[] = "+-*/%^#&~|<>=(){}[];:,.";
    size_t left = (size_t)(x->end - x->s);
    for (size_t k = 0; k < sizeof three / sizeof *three; k++)
        if (left >= 3 && !strncmp(x->s, three[k], 3))
            return 3;
    for (size_t k = 0; k < sizeof two / sizeof *two; k++)
        if (left >= 2 && !strncmp(x->s, two[k], 2))
            return 2;
    return strchr(one, *x->s) ? 1 : 0;
}

int lua_tokens(const char *file, const char *src, size_t len, char *err, size_t errlen) {
    scan x = {file, src, src + len, 1, err, errlen};
    int n = 0;
    if (at(&x, 0) == '#') /* a first line such as "#!/usr/bin/lua" */
        while (x.s < x.end && *x.s != '\n')
            skip(&x, 1);
    for (;;) {
        if (blanks(&x))
            return -1;
        if (x.s >= x.end)
            return n;
        int c = at(&x, 0), eq;
        size_t k;
        if (isalpha(c) || c == '_') {
            while (x.s < x.end && (isalnum(at(&x, 0)) || at(&x, 0) == '_'))
                skip(&x, 1);
        } else if (isdigit(c) || (c == '.' && isdigit(at(&x, 1)))) {
            numeral(&x);
        } else if (c == '"' || c == '\'') {
            if (quoted(&x))
                return -1;
        } else if ((eq = long_open(&x)) >= 0) {
            if (long_bracket(&x, eq, "unfinished long string"))
                return -1;
        } else if ((k = op_len(&x))) {
            skip(&x, k);
        } else {
            char what[40];
            snprintf(what, sizeof what, "unexpected character '%c'", isprint(c) ? c : '?');
            return fail(&x, what);
        }
        n++;
    }
}
