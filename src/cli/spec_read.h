/* spec_read.h -- a job spec's file read within its limits, before the
 * YAML is loaded (spec.c loads what it returns). */
#ifndef AEGIS_SPEC_READ_H
#define AEGIS_SPEC_READ_H

#include <stddef.h>

/* The most bytes a spec file may hold, and how deep its collections may
 * nest (mappings and lists, a flow [ ] or { } as a block one). */
#define SPEC_MAX_BYTES (16u << 20)
#define SPEC_MAX_NESTING 64

/* The file at path, whole, into *buf (malloc'd, NUL-terminated) and its
 * length into *len, once it is known to hold at most SPEC_MAX_BYTES (a
 * spec, or an --array file): 0, or -1 after saying on stderr why not,
 * naming the file. */
int spec_read_bytes(const char *path, unsigned char **buf, size_t *len);

/* spec_read_bytes(), and the nesting checked: 0, or -1 after saying on
 * stderr why not, naming the file (and the line). */
int spec_read_file(const char *path, unsigned char **buf, size_t *len);

#endif
