/* cli_number.c -- the numbers every aegis command takes on its command
 * line, and its job specs take as values (cli.h).
 *
 * strtol and strtod take more than a user means to type: leading spaces,
 * a '+', hex (0x10), inf and nan. A value in one of those forms is more
 * often a slip (a quoted ' 1', a pasted 0x400) than a wish, and read
 * anyway it names something else than the user sees (drain ' 1' drained
 * GPU 1), so only plain decimal numbers are taken.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the run of digits at text. */
static size_t digits(const char *text) {
    size_t n = 0;
    while (isdigit((unsigned char)text[n])) n++;
    return n;
}

bool cli_is_decimal(const char *text, bool real) {
    const char *p = text + (text[0] == '-');
    size_t whole = digits(p), frac = 0;
    p += whole;
    if (real && *p == '.') {
        frac = digits(p + 1);
        p += 1 + frac;
    }
    if (whole + frac == 0) return false;
    if (real && (*p == 'e' || *p == 'E')) {
        p += 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = digits(p);
        if (exp == 0) return false;
        p += exp;
    }
    return *p == '\0';
}

void cli_number_text(double v, char *buf, size_t len) {
    /* %g would print 1048576 as 1.04858e+06: a bound the user must type
     * is printed as they would type it when it is whole */
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, len, "%.0f", v);
    else snprintf(buf, len, "%g", v);
}

/* "--mem" for an option, "-n" for a one-letter one, "ID" for an operand
 * (see cli.h). */
static const char *dashes(const char *opt) {
    if (isupper((unsigned char)opt[0])) return "";
    return opt[1] == '\0' ? "-" : "--";
}

int cli_parse_long(const char *cmd, const char *opt, const char *text,
                   long lo, long hi, long *out) {
    errno = 0;
    long v = cli_is_decimal(text, false) ? strtol(text, NULL, 10) : 0;
    if (!cli_is_decimal(text, false) || errno || v < lo || v > hi) {
        fprintf(stderr, "aegis %s: %s%s: '%s' is not a whole number in "
                "[%ld, %ld]\n", cmd, dashes(opt), opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *text,
                     double lo, double hi, double *out) {
    errno = 0;
    double v = cli_is_decimal(text, true) ? strtod(text, NULL) : NAN;
    /* ERANGE: over DBL_MAX, or under the smallest double (1e-400), which
     * strtod makes 0 */
    if (!cli_is_decimal(text, true) || errno || !isfinite(v) || v < lo ||
        v > hi) {
        char low[32], high[32];
        cli_number_text(lo, low, sizeof(low));
        cli_number_text(hi, high, sizeof(high));
        fprintf(stderr, "aegis %s: %s%s: '%s' is not a number in [%s, %s]\n",
                cmd, dashes(opt), opt, text, low, high);
        return -1;
    }
    *out = v;
    return 0;
}
