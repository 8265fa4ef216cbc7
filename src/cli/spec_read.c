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

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

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
 * after saying where it goes deeper (or where it is not YAML). */
static int spec_depth(const char *path, const unsigned char *buf,
                      size_t len) {
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, rc = 1;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, buf, len);
    while (rc > 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            fprintf(stderr, "aegis submit: %s:%d: %s\n", path,
                    (int)parser.problem_mark.line + 1, parser.problem);
            rc = -1;
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (ev.type == YAML_SEQUENCE_END_EVENT ||
                 ev.type == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > SPEC_MAX_NESTING) {
            fprintf(stderr, "aegis submit: %s:%d: lists and mappings nested "
                    "more than %d deep\n", path,
                    (int)ev.start_mark.line + 1, SPEC_MAX_NESTING);
            rc = -1;
        } else if (ev.type == YAML_STREAM_END_EVENT) {
            rc = 0;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int spec_read_bytes(const char *path, unsigned char **buf, size_t *len) {
    *buf = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
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
