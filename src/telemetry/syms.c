/* syms.c -- tel_syms.h: looking up a loaded library's functions by table,
 * and the message of a failed NVML call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tel_state.h"
#include "tel_syms.h"

void tel_fail(const tel_state *tel, const char *call, int gpu,
              nvmlReturn_t rc, char *err, size_t errlen) {
    const char *why = tel->fn.error_string ? tel->fn.error_string(rc) : NULL;
    if (gpu >= 0)
        snprintf(err, errlen, "%s: %s (GPU %d): %s (NVML error %d)",
                 tel->path, call, gpu, why ? why : "?", rc);
    else
        snprintf(err, errlen, "%s: %s: %s (NVML error %d)", tel->path, call,
                 why ? why : "?", rc);
}

int tel_syms_load(void *lib, const char *path, const tel_sym *syms,
                  size_t nsyms, void *fns, const char *hint, char *err,
                  size_t errlen) {
    for (size_t i = 0; i < nsyms; i++) {
        const tel_sym *s = &syms[i];
        void *addr = NULL;
        for (int n = 0; n < TEL_SYM_NAMES && s->names[n] && !addr; n++)
            addr = dlsym(lib, s->names[n]);
        if (!addr && !s->optional) {
            snprintf(err, errlen, "%s: dlsym %s: not found (%s)", path,
                     s->names[0], hint);
            return -1;
        }
        /* POSIX guarantees data and function pointers convert via dlsym. */
        memcpy((char *)fns + s->slot, &addr, sizeof addr);
    }
    return 0;
}
