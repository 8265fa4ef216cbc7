/* dish_lex.h -- DISH source text into tokens, each with its line and
 * column so that every later error can name them. */
#ifndef DISH_LEX_H
#define DISH_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum dish_tkind {
    DISH_T_EOF,
    DISH_T_NAME,  /* names and keywords alike; the parser tells them apart */
    DISH_T_INT,
    DISH_T_FIX,   /* a literal with a point: value is Q16.16 */
    DISH_T_PUNCT, /* p holds one or two characters */
} dish_tkind;

typedef struct dish_tok {
    dish_tkind kind;
    const char *s; /* into the source */
    int len;
    int line, col;
    /* a number's value as written, never negative: an int's, or a fix's
     * Q16.16; up to 2^31, one past int32, which only a minus before it
     * makes a value (the least, -2147483648 or -32768.0): the parser,
     * which sees the minus, takes or refuses it (dc_number) */
    int64_t value;
    char p[3];
} dish_tok;

/* Tokens of src[0..len) into toks (cap entries, the last an EOF): the
 * count, or -1 with "FILE:LINE:COL: what" in err. */
int dish_lex(const char *file, const char *src, size_t len, dish_tok *toks, int cap,
             char *err, size_t errlen);

#endif
