/* share_mode.c -- names of the GPU sharing modes (see share_mode.h). */
#include <string.h>

#include "share_mode.h"

static const char *const share_mode_names[SHARE_NMODES] = {
    [SHARE_EXCLUSIVE] = "exclusive",
    [SHARE_NAIVE] = "naive",
    [SHARE_MPS] = "mps",
    [SHARE_MIG] = "mig",
    [SHARE_AUTO] = "auto",
};

int share_mode_parse(const char *name) {
    for (int m = 0; m < SHARE_NMODES; m++)
        if (strcmp(name, share_mode_names[m]) == 0)
            return m;
    return -1;
}

const char *share_mode_name(share_mode m) {
    return (unsigned)m < SHARE_NMODES ? share_mode_names[m] : "?";
}
