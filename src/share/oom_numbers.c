/* oom_numbers.c -- the sizes in a framework's out-of-memory message
 * (oom_numbers.h): each size on a line is told by the words around it. */
#include "oom_numbers.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "oom_text.h"

/* The units the frameworks print, in MiB. */
static const struct {
    const char *name;
    double mib;
} oom_units[] = {
    {"bytes", 1.0 / 1048576}, {"B", 1.0 / 1048576}, {"KiB", 1.0 / 1024},
    {"MiB", 1.0}, {"GiB", 1024.0}, {"TiB", 1048576.0},
};

/* The size at p ("2.00 GiB", "1.25GiB", "123456 bytes"): its MiB, and
 * *end past it; -1 when p holds no number with a unit. */
static double oom_size_at(const char *p, const char **end) {
    if (!isdigit((unsigned char)*p)) return -1;
    char *after;
    double value = strtod(p, &after);
    if (!isfinite(value)) return -1;
    const char *unit = after + (*after == ' ');
    for (size_t u = 0; u < sizeof(oom_units) / sizeof(*oom_units); u++) {
        size_t len = strlen(oom_units[u].name);
        if (strncmp(unit, oom_units[u].name, len) == 0 &&
            !isalpha((unsigned char)unit[len])) {
            *end = unit + len;
            return value * oom_units[u].mib;
        }
    }
    return -1;
}

/* Whether the text of line before p ends with word. */
static bool oom_after(const char *line, const char *p, const char *word) {
    size_t len = strlen(word);
    return (size_t)(p - line) >= len && strncmp(p - len, word, len) == 0;
}

/* Whether what follows a size says it was free: "... is free" (PyTorch
 * 2.1 on) or "...; 47.06 MiB free;" (earlier). */
static bool oom_free_follows(const char *end) {
    return strncmp(end, " is free", 8) == 0 ||
           (strncmp(end, " free", 5) == 0 && (end[5] == ';' || end[5] == ')'));
}

/* One size of a message, filed by the words around it. */
static void oom_file_size(const char *line, const char *p, double mib,
                          const char *end, oom_numbers *out) {
    if (oom_after(line, p, "allocate "))
        out->request_mib = mib;
    else if (oom_after(line, p, "capacity of ") ||
             strncmp(end, " total capacity", 15) == 0)
        out->total_mib = mib;
    else if (oom_free_follows(end))
        out->free_mib = mib;
}

/* The numbers of one line (NUL-terminated); each not said stays -1. */
static void oom_line_numbers(const char *line, oom_numbers *out) {
    *out = (oom_numbers){-1, -1, -1};
    for (const char *p = line; *p; p++) {
        bool starts = p == line || p[-1] == ' ' || p[-1] == '(';
        const char *end;
        double mib = starts ? oom_size_at(p, &end) : -1;
        if (mib < 0) continue;
        oom_file_size(line, p, mib, end, out);
        p = end - 1;
    }
}

void oom_numbers_find(const char *text, size_t n, oom_numbers *out) {
    char line[1024];
    *out = (oom_numbers){-1, -1, -1};
    for (size_t at = 0; oom_text_line(text, n, &at, line, sizeof(line));) {
        oom_numbers said;
        oom_line_numbers(line, &said);
        if (said.request_mib >= 0) *out = said;
    }
}
