/* pdef.h -- a pipeline definition: which modules, in order, with which
 * parameters. Written as YAML on the ground (pdef_yaml.c), carried and
 * stored in a compact binary form (pdef_codec.c) that must fit one
 * 188-byte parameter. */
#ifndef DIPP_PDEF_H
#define DIPP_PDEF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dipp_module.h"

/* Modules a pipeline, as the flight DIPP (src/include/dipp_config.h,
 * MAX_MODULES 20): a pipeline the flight takes must not be refused here
 * (it was 8). The 188 bytes bound it too: 20 short names fit. */
#define PDEF_MAX_STEPS 20
#define PDEF_MAX_BYTES 188 /* the flight system's parameter size */
#define PDEF_PIPELINES 6   /* pipeline slots 1..6 */
#define PDEF_CONFIGS 20    /* module-configuration slots 1..20 */

typedef struct pdef_step {
    char name[DIPP_PARAM_NAME_MAX]; /* module name */
    dipp_params params;
    /* 0, or the module-configuration slot whose parameters this step
     * takes (its own params override them): a configuration change is
     * then one slot, not the pipeline. */
    uint32_t config;
} pdef_step;

typedef struct pdef {
    uint32_t id; /* its pipeline number, 1..PDEF_PIPELINES */
    uint32_t count;
    pdef_step step[PDEF_MAX_STEPS];
} pdef;

/* The longest YAML text of a definition, in bytes: one encodes to at
 * most PDEF_MAX_BYTES, so comments and all fit many times over, and
 * libyaml's time, which grows with the square of the flow nesting, stays
 * short. */
#define PDEF_YAML_MAX (16 * 1024)

/* Parses YAML text (path names it in errors): at most PDEF_YAML_MAX
 * bytes, one document, each key once in its mapping, no NUL in a value.
 * 0, or -1 with "path:line:column: field: why" in err. */
int pdef_from_yaml(const char *path, const char *text, size_t len, pdef *d,
                   char *err, size_t errlen);
/* The same, for a write into pipeline slot want (1..PDEF_PIPELINES): a
 * definition naming another pipeline is refused at its pipeline: line (a
 * signed write of it would land in a slot it does not name); one naming
 * none is pipeline want. */
int pdef_from_yaml_for(const char *path, const char *text, size_t len,
                       unsigned want, pdef *d, char *err, size_t errlen);
/* Encodes d into out (at most PDEF_MAX_BYTES). Bytes written, or -1 with
 * the reason in err (too big: by how much). */
int pdef_encode(const pdef *d, uint8_t *out, char *err, size_t errlen);
/* Decodes what pdef_encode wrote; anything else is refused (-1, err). */
int pdef_decode(const uint8_t *in, size_t len, pdef *d, char *err,
                size_t errlen);
/* Fills in the parameters of each step that names a configuration slot,
 * from the store dir (a slot holds a one-module definition of the same
 * module). 0, or -1 with "modules[N]: why" in err. */
int pdef_apply_configs(pdef *d, const char *dir, char *err, size_t errlen);
/* The definitions in dir's pipeline slots, in slot order, into defs (room
 * for PDEF_PIPELINES): how many. A corrupt slot or one whose configuration
 * slot is bad is told to warn (why, naming the slot) and skipped. */
int pdef_load_slots(const char *dir, pdef *defs,
                    void (*warn)(void *ctx, const char *why), void *ctx);
/* Writes d as YAML that pdef_from_yaml reads back to d: parameter names
 * and strings double-quoted, control bytes escaped. */
void pdef_print_yaml(const pdef *d, FILE *f);

#endif
