/* oom_text.c -- the frameworks' out-of-memory messages, and where in a
 * line each must stand to count (oom_text.h). */
#include "oom_text.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* What each framework prints when a GPU allocation fails. */
static const char *const oom_messages[] = {
    "CUDA out of memory",          /* PyTorch's caching allocator */
    "CUDA error: out of memory",   /* cudaErrorMemoryAllocation, as
                                      PyTorch and CUDA samples print it */
    "RuntimeError: out of memory", /* older PyTorch */
    "cudaErrorMemoryAllocation",   /* the CUDA runtime's error's name */
    "CUBLAS_STATUS_ALLOC_FAILED",  /* cuBLAS */
    "CUDNN_STATUS_ALLOC_FAILED",   /* cuDNN */
    "ResourceExhaustedError",      /* TensorFlow's exception */
    "OOM when allocating tensor",  /* TensorFlow's message */
    "RESOURCE_EXHAUSTED",          /* JAX / XLA's status */
};

/* Whether the text before `at` on its line (from line) lets a message
 * start there: nothing but blanks, a dotted name (the exception's
 * module), or anything ending in ": " or "] ". */
static bool oom_anchored(const char *line, const char *at) {
    const char *p = line;
    while (p < at && (*p == ' ' || *p == '\t')) p++;
    if (p == at) return true;
    if (at - p >= 2 && (at[-2] == ':' || at[-2] == ']') && at[-1] == ' ')
        return true;
    if (at[-1] != '.') return false;
    for (const char *q = p; q < at; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_' || *q == '.'))
            return false;
    return true;
}

/* The message line (NUL-terminated, no newline) holds where it counts. */
static const char *oom_in_line(const char *line) {
    for (size_t m = 0; m < sizeof(oom_messages) / sizeof(*oom_messages); m++)
        for (const char *at = strstr(line, oom_messages[m]); at;
             at = strstr(at + 1, oom_messages[m]))
            if (oom_anchored(line, at)) return oom_messages[m];
    return NULL;
}

/* Whether a line is a usage text's first: "usage:" at its start. */
static bool oom_usage_line(const char *line) {
    while (*line == ' ' || *line == '\t') line++;
    return strncasecmp(line, "usage:", 6) == 0;
}

bool oom_text_line(const char *text, size_t n, size_t *at, char *buf,
                   size_t size) {
    if (*at >= n) return false;
    size_t len = 0;
    for (; *at < n && text[*at] != '\n' && text[*at] != '\0'; (*at)++)
        if (len + 1 < size) buf[len++] = text[*at];
    buf[len] = '\0';
    (*at)++;
    return true;
}

const char *oom_text_find(const char *text, size_t n) {
    char line[1024];
    const char *found = NULL;
    for (size_t at = 0; oom_text_line(text, n, &at, line, sizeof(line));) {
        if (oom_usage_line(line)) return NULL;
        if (!found) found = oom_in_line(line);
    }
    return found;
}
