/* timelimit.c -- Slurm's time limit forms to seconds and back (see
 * timelimit.h). Strict: a field out of range ("1:60") or a form Slurm
 * does not have ("1.5:00") is refused, never wrapped or rounded, so a job
 * is never stopped at another time than the one meant.
 */
#include "timelimit.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number of 1..9 digits at *p (advanced past it); -1 when none. */
static long timelimit_field(const char **p) {
    long v = 0;
    int n = 0;
    while (isdigit((unsigned char)**p)) {
        if (++n > 9) return -1;
        v = v * 10 + (*(*p)++ - '0');
    }
    return n > 0 ? v : -1;
}

/* A number with one unit letter: 90s, 30m, 1.5h, 2d. */
static int timelimit_unit(const char *text, double *seconds) {
    static const char units[] = "smhd";
    static const double unit_s[] = {1, 60, 3600, 86400};
    size_t len = strlen(text);
    int last = len > 1 ? tolower((unsigned char)text[len - 1]) : 0;
    const char *u = last ? strchr(units, last) : NULL;
    if (!u || !*u) return -1;
    size_t digits = strspn(text, "0123456789."), dots = 0;
    for (size_t i = 0; i < digits; i++) dots += text[i] == '.';
    if (digits != len - 1 || dots > 1 || !isdigit((unsigned char)text[0]) ||
        digits > 12)
        return -1;
    double v = strtod(text, NULL) * unit_s[u - units];
    if (v != floor(v)) return -1; /* 1.5s */
    *seconds = v;
    return 0;
}

int timelimit_parse(const char *text, double *seconds) {
    double s;
    if (timelimit_unit(text, &s) != 0) {
        const char *p = text;
        long f[3], days = -1;
        int n = 0;
        if (strchr(text, '-')) {
            if ((days = timelimit_field(&p)) < 0 || *p++ != '-') return -1;
        }
        do {
            if (n == 3 || (f[n++] = timelimit_field(&p)) < 0) return -1;
        } while (*p == ':' && p++);
        if (*p) return -1;
        for (int i = 1; i < n; i++)
            if (f[i] >= 60) return -1;
        /* the fields from the largest unit down: minutes first without
         * days (MM, MM:SS) unless there are three; hours first with days */
        double scale = days >= 0 || n == 3 ? 3600 : 60;
        if (days >= 0 && f[0] >= 24) return -1;
        s = days > 0 ? days * 86400.0 : 0;
        for (int i = 0; i < n; i++, scale /= 60) s += f[i] * scale;
    }
    if (s < 1 || s > TIMELIMIT_MAX_S) return -1;
    *seconds = s;
    return 0;
}

void timelimit_format(double seconds, char *out, size_t outlen) {
    long long s = llround(seconds);
    long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
    if (d > 0)
        snprintf(out, outlen, "%lld-%02lld:%02lld:%02lld", d, h, m, s % 60);
    else if (h > 0)
        snprintf(out, outlen, "%lld:%02lld:%02lld", h, m, s % 60);
    else
        snprintf(out, outlen, "%lld:%02lld", m, s % 60);
}
