/* tel_syms.h -- the two helpers every file that loads a library shares:
 * a table-driven dlsym (nvml.c, mig.c, dcgm.c) and the message of a
 * failed NVML call (nvml.c, mig.c). Not public: only src/telemetry
 * includes it.
 *
 * They live apart from nvml.c so that dcgm.c and mig.c, which nvml.c
 * calls, do not call back into it: the telemetry files form no circle.
 */
#ifndef AEGIS_TEL_SYMS_H
#define AEGIS_TEL_SYMS_H

#include <stddef.h>

#include "tel.h"
#include "tel_nvml.h"

/* Names one symbol may have, newest first. */
#define TEL_SYM_NAMES 3

/* One symbol to look up: the first of its names the library has wins. */
typedef struct tel_sym {
    const char *names[TEL_SYM_NAMES];
    size_t slot;                    /* offsetof(the table, its pointer) */
    int optional;                   /* missing: NULL, not an error */
} tel_sym;

/* Fills the table of function pointers fns from lib, the library loaded
 * from path. Returns 0, or -1 with "<path>: dlsym <name>: not found
 * (<hint>)" in err for the first required symbol missing. */
int tel_syms_load(void *lib, const char *path, const tel_sym *syms,
                  size_t nsyms, void *fns, const char *hint, char *err,
                  size_t errlen);

/* Formats "<library>: <call> (GPU <gpu>): <NVML's message> (NVML error
 * <rc>)" into err; gpu < 0 leaves the GPU out. */
void tel_fail(const tel_state *tel, const char *call, int gpu,
              nvmlReturn_t rc, char *err, size_t errlen);

#endif
