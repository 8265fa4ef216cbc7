/* pdef_scalar.c -- what an unquoted YAML scalar given as a parameter is.
 * It is read as YAML 1.2's core schema reads it (decimal, 0o octal and 0x
 * hexadecimal integers; decimal floats), so a file means here what it
 * means to any YAML tool on the ground. What is neither a number nor a
 * string there (null, a boolean, a non-finite number, which no definition
 * can carry since the decoder on board refuses it), and what YAML 1.1
 * reads otherwise than 1.2 (1_000, 0b101, 017, 1:30, yes/no/on/off), is refused
 * with a sentence saying how to write it, never guessed. */
#include "pdef_scalar.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int one_of(const char *s, const char *const *words) {
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return 1;
    return 0;
}

/* Whether s is one or more digits of base and nothing else. */
static int all_digits(const char *s, int base) {
    if (!*s)
        return 0;
    for (; *s; s++)
        if (base == 8 ? (*s < '0' || *s > '7')
                      : base == 16 ? !isxdigit((unsigned char)*s)
                                   : !isdigit((unsigned char)*s))
            return 0;
    return 1;
}

/* YAML 1.2 core's float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int core_float(const char *s) {
    const char *p = s + (*s == '+' || *s == '-');
    size_t whole = strspn(p, "0123456789");
    p += whole;
    size_t frac = 0;
    if (*p == '.') {
        frac = strspn(p + 1, "0123456789");
        p += 1 + frac;
        if (!whole && !frac)
            return 0;
    } else if (!whole) {
        return 0;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        p += (*p == '+' || *p == '-');
        size_t exp = strspn(p, "0123456789");
        if (!exp)
            return 0;
        p += exp;
    }
    return *p == '\0';
}

/* inf, nan and infinity as C's strtod reads them, and YAML's .inf, .nan. */
static int non_finite(const char *s) {
    const char *p = s + (*s == '+' || *s == '-');
    static const char *const yaml[] = {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN", NULL};
    return one_of(p, yaml) || strcasecmp(p, "inf") == 0 ||
           strcasecmp(p, "infinity") == 0 || strcasecmp(p, "nan") == 0;
}

/* Writes "what (s): advice" into why; returns -1. */
static int refuse(char *why, size_t cap, const char *what, const char *s,
                  const char *advice) {
    snprintf(why, cap, "%s (%.40s)%s%s", what, s, *advice ? ": " : "", advice);
    return -1;
}

/* YAML 1.1's base-60 number, [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+ then, for a
 * float, \.[0-9_]* (an integer's first digit is 1-9). Returns 1 and
 * writes its value (the fraction copied as written, so nothing is
 * rounded) into val; 0 when p (after the sign) is no such number. Times
 * of day like 1:30 are why a YAML 1.1 reader turns them into 90. */
static int sexagesimal(const char *p, char *val, size_t cap) {
    unsigned long long v = 0;
    int big = 0, groups = 0;
    const char *q = p;
    if (!isdigit((unsigned char)*q))
        return 0;
    for (; isdigit((unsigned char)*q) || *q == '_'; q++)
        if (*q != '_') {
            big |= v > 99999999999ULL;
            v = v * 10 + (unsigned)(*q - '0');
        }
    while (*q == ':') {
        size_t n = strspn(q + 1, "0123456789");
        if (n == 0 || n > 2 || (n == 2 && q[1] > '5'))
            return 0;
        big |= v > 99999999999ULL;
        v = v * 60 + (unsigned)atoi(q + 1);
        q += 1 + n;
        groups++;
    }
    const char *frac = q;
    if (!groups || (*q && (*q != '.' || q[1 + strspn(q + 1, "0123456789_")])))
        return 0;
    if (!*frac && *p == '0')
        return 0; /* 1.1's base-60 integer starts 1-9; 01:30 is a string there */
    if (big)
        snprintf(val, cap, "a number");
    else
        snprintf(val, cap, "%llu%.20s", v, frac);
    return 1;
}

/* A number YAML 1.1 reads otherwise than 1.2: -1 with why, else 0. */
static int yaml11_number(const char *s, char *why, size_t cap) {
    const char *p = s + (*s == '+' || *s == '-');
    char val[48];
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return 0;
    if (sexagesimal(p, val, sizeof val)) {
        const char *sign = *s == '-' && strcmp(val, "a number") ? "-" : "";
        snprintf(why, cap,
                 "%.40s is %s%s (base 60) in YAML 1.1 and a string in YAML 1.2: "
                 "write %s%s, or quote it for a string",
                 s, sign, val, sign, strcmp(val, "a number") ? val : "it in decimal");
        return -1;
    }
    if (strchr(p, '_')) {
        char plain[48];
        size_t n = 0;
        for (const char *q = s; *q && n + 1 < sizeof plain; q++)
            if (*q != '_')
                plain[n++] = *q;
        plain[n] = '\0';
        snprintf(why, cap,
                 "%.40s is %s in YAML 1.1 and a string in YAML 1.2: write %s, or "
                 "quote it for a string",
                 s, plain, plain);
        return -1;
    }
    if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
        snprintf(why, cap,
                 "%.40s is a binary integer in YAML 1.1 and a string in YAML 1.2: "
                 "write it in decimal, 0x or 0o, or quote it for a string",
                 s);
        return -1;
    }
    if (p[0] == '0' && all_digits(p + 1, 10)) {
        long long dec = strtoll(p, NULL, 10);
        char octal[48] = "a string";
        if (all_digits(p + 1, 8))
            snprintf(octal, sizeof octal, "%lld (octal)", strtoll(p, NULL, 8));
        snprintf(why, cap,
                 "%.40s is %lld in YAML 1.2 and %s in YAML 1.1: write %lld, or "
                 "0o%.30s for octal",
                 s, dec, octal, dec, p + 1);
        return -1;
    }
    return 0;
}

/* A decimal (base 10), 0o (8) or 0x (16) integer, skip characters of
 * prefix after its sign. */
static int read_int(const char *s, int base, int skip, dipp_param *v, char *why,
                    size_t cap) {
    int neg = *s == '-';
    const char *digits = s + (*s == '+' || *s == '-') + skip;
    errno = 0;
    unsigned long long u = strtoull(digits, NULL, base);
    if (errno || u > (unsigned long long)INT64_MAX + (unsigned)neg)
        return refuse(why, cap, "an integer out of range", s, "");
    v->type = DIPP_PARAM_INT;
    v->i = neg ? (int64_t)(0 - u) : (int64_t)u;
    return 0;
}

/* null, booleans and non-finite numbers: -1 with why, else 0. */
static int no_number_or_string(const char *s, char *why, size_t cap) {
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
    static const char *const bools[] = {"true", "True", "TRUE", "false",
                                        "False", "FALSE", NULL};
    static const char *const bools11[] = {"yes", "Yes", "YES", "no", "No", "NO",
                                          "on", "On", "ON", "off", "Off", "OFF", NULL};
    if (!*s)
        return refuse(why, cap, "an empty value", "null in YAML",
                      "give a number or a string");
    if (one_of(s, nulls))
        return refuse(why, cap, "null in YAML", s,
                      "give a number, or quote it for a string");
    if (one_of(s, bools))
        return refuse(why, cap, "a boolean in YAML", s,
                      "a parameter is a number or a string: write 1 or 0, or quote it");
    if (one_of(s, bools11))
        return refuse(why, cap, "a boolean in YAML 1.1 and a string in YAML 1.2", s,
                      "quote it for a string, or write 1 or 0");
    if (non_finite(s))
        return refuse(why, cap, "a non-finite number", s,
                      "a definition carries finite numbers only (quote it for a string)");
    return 0;
}

int pdef_scalar(const char *s, dipp_param *v, char *why, size_t cap) {
    const char *p = s + (*s == '+' || *s == '-');
    if (no_number_or_string(s, why, cap) || yaml11_number(s, why, cap))
        return -1;
    if (all_digits(p, 10))
        return read_int(s, 10, 0, v, why, cap);
    if (p == s && s[0] == '0' && s[1] == 'o' && all_digits(s + 2, 8))
        return read_int(s, 8, 2, v, why, cap);
    if (p == s && s[0] == '0' && s[1] == 'x' && all_digits(s + 2, 16))
        return read_int(s, 16, 2, v, why, cap);
    if (core_float(s)) {
        errno = 0;
        v->type = DIPP_PARAM_FLOAT;
        v->f = strtod(s, NULL);
        if (errno == ERANGE && (v->f > 1 || v->f < -1))
            return refuse(why, cap, "a number out of range", s, "");
        return 0;
    }
    v->type = DIPP_PARAM_STR;
    return 0;
}
