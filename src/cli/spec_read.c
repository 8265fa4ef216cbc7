/* spec_read.c -- a job spec's size and nesting limits, checked before it
 * is parsed (spec_read.h).
 *
 * Parsing first would cost what the limits are there to spare: libyaml
 * loads a whole document into memory (a 38 MB spec took 2 GB), and its
 * scanner checks every pending flow level on each token, so time grows
 * with the square of the depth (a 200 KB spec of 100,000 nested [ took
 * 30 s). So the size is checked on the open file before a byte is read,
 * and the depth on the parser's events, which stop at the first level
 * too deep, before any node is built.
 */
#include "spec_read.h"

#include "yaml_nesting.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Says why path is refused: size (its bytes, in words) is more than
 * SPEC_MAX_BYTES. */
static int spec_too_big(const char *path, const char *size) {
    fprintf(stderr, "aegis submit: %s: a spec or array file may hold %u "
            "bytes (16 MiB) at most; this one holds %s\n", path,
            SPEC_MAX_BYTES, size);
    return -1;
}

/* At most cap bytes of f, and no more than SPEC_MAX_BYTES + 1 (a pipe has
 * no size to check first, a file may grow), into *buf; -1 after saying
 * why when they are too many or f cannot be read. */
static int spec_slurp(const char *path, FILE *f, size_t cap,
                      unsigned char **buf, size_t *len) {
    if (cap > SPEC_MAX_BYTES + 1) cap = SPEC_MAX_BYTES + 1;
    *buf = malloc(cap + 1);
    if (!*buf) {
        fprintf(stderr, "aegis submit: %s: out of memory\n", path);
        return -1;
    }
    *len = fread(*buf, 1, cap, f);
    if (ferror(f)) {
        fprintf(stderr, "aegis submit: %s: %s\n", path, strerror(errno));
        return -1;
    }
    (*buf)[*len] = '\0';
    return *len > SPEC_MAX_BYTES ? spec_too_big(path, "over that") : 0;
}

/* Whether the YAML in buf nests no deeper than SPEC_MAX_NESTING: 0, or -1
 * after saying where it goes deeper (or where it is not YAML). The file
 * was opened, so its path is shorter than PATH_MAX; the line and reason
 * after it (libyaml's problems are short) must not be cut off. */
static int spec_depth(const char *path, const unsigned char *buf,
                      size_t len) {
    char err[PATH_MAX + 128];
    if (yaml_nesting_check(path, buf, len, SPEC_MAX_NESTING, err,
                           sizeof(err)) == 0)
        return 0;
    fprintf(stderr, "aegis submit: %s\n", err);
    return -1;
}

int spec_read_bytes(const char *path, unsigned char **buf, size_t *len) {
    *buf = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "aegis submit: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    int rc;
    bool sized = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    if (sized && st.st_size > (off_t)SPEC_MAX_BYTES) {
        char size[48];
        snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
        rc = spec_too_big(path, size);
    } else {
        rc = spec_slurp(path, f, sized ? (size_t)st.st_size + 1
                                       : SPEC_MAX_BYTES + 1, buf, len);
    }
    fclose(f);
    if (rc != 0) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int spec_read_file(const char *path, unsigned char **buf, size_t *len) {
    int rc = spec_read_bytes(path, buf, len);
    if (rc == 0 && spec_depth(path, *buf, *len) != 0) {
        free(*buf);
        *buf = NULL;
        rc = -1;
    }
    return rc;
}
