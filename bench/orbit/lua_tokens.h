/* lua_tokens.h -- counts the lexical tokens of Lua 5.4 source, for the
 * expressiveness comparison of DISH against Lua (bench_dish.c): names and
 * keywords, numbers (decimal and hexadecimal, with fractions and
 * exponents), strings (quoted, with their escapes, and long brackets),
 * and operators and punctuation, the longest first (`...`, `..`, `==`,
 * `~=`, `<=`, `>=`, `//`, `::`, `<<`, `>>`, then one character). Comments
 * (`--` to the end of the line, or a long bracket) and a first line
 * starting with `#` are skipped. Written for this count; it checks what
 * it must to find a token's end, not everything Lua's parser would. */
#ifndef LUA_TOKENS_H
#define LUA_TOKENS_H

#include <stddef.h>

/* The tokens of src[0..len), or -1 with "FILE:LINE: what" in err. */
int lua_tokens(const char *file, const char *src, size_t len, char *err, size_t errlen);

#endif
