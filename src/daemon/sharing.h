/* sharing.h -- aegisd's per-GPU sharing modes: the `sharing:` settings of
 * aegis.yaml, and what a mode asks of a job's environment.
 *
 *     sharing: mps                # every GPU
 *     sharing:                    # or a default and per-GPU overrides
 *       default: naive
 *       0: mig
 *       2: mps
 *     mps_control: /usr/bin/nvidia-cuda-mps-control
 *     mps_dir: /run/aegis-mps     # pipe and log folders, per GPU
 *     mps_pin_memory: 1           # cap each MPS job at its admitted floor
 *
 * Modes are share_mode.h's (exclusive, naive, mps, mig, auto); naive, the
 * default, is CUDA's own time slicing, what aegisd did before modes
 * existed. The MPS control daemon's lifecycle is in mps.h; MIG instances
 * are made through tel_mig.h.
 */
#ifndef AEGIS_SHARING_H
#define AEGIS_SHARING_H

#include <stdbool.h>
#include <stddef.h>

#include "core.h"
#include "share_mode.h"

/* The control program run when mps_control is not set: found on PATH. */
#define SHARING_MPS_CONTROL "nvidia-cuda-mps-control"

typedef struct sharing_config {
    share_mode dflt;                /* sharing: MODE, or its default: key */
    signed char gpu[CORE_MAX_GPUS]; /* per-GPU override (a share_mode), or
                                       -1 for the default */
    int line[CORE_MAX_GPUS];        /* the override's line, for errors */
    int dflt_line;                  /* the line that set dflt; 0: none */
    char mps_control[1024];         /* the control program */
    char mps_dir[1024];             /* "": STATE_DIR/mps */
    bool mps_pin_memory;            /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT */
} sharing_config;

void sharing_config_default(sharing_config *s);

/* Every GPU back to naive, no override: what a `sharing:` line does
 * before it sets its own modes, so that one given again replaces the
 * earlier line whole, as any key given again does (config.c). */
void sharing_config_clear_modes(sharing_config *s);

/* Sets a top-level key of the config file when it is one of the sharing
 * keys: 1 done, 0 not a sharing key, -1 with "key: why" in msg. The
 * mapping form of `sharing:` goes to sharing_config_set_gpu, one entry at
 * a time. */
int sharing_config_set(sharing_config *s, const char *key, const char *value,
                       char *msg, size_t msglen);

/* One entry of the `sharing:` mapping: `default` or a GPU index, at line
 * `line` of the file. Returns 0, or -1 with a message naming the entry. */
int sharing_config_set_gpu(sharing_config *s, const char *key,
                           const char *value, int line, char *msg,
                           size_t msglen);

/* The mode of GPU gpu. */
share_mode sharing_mode(const sharing_config *s, int gpu);
/* The line of the file that gave GPU gpu its mode; 0 when none did. */
int sharing_mode_line(const sharing_config *s, int gpu);

/* Checks the overrides against the GPUs found. Returns 0, or -1 with
 * "FILE:LINE: sharing: N: ..." in err. */
int sharing_check_gpus(const sharing_config *s, int ngpus, const char *path,
                       char *err, size_t errlen);

/* GPU gpu's MPS pipe and log folders under the MPS folder `dir`. */
void sharing_mps_dirs(const char *dir, int gpu, char *pipe_dir,
                      char *log_dir, size_t len);

#endif
