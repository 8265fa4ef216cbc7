/* mps.h -- the MPS control daemon of one GPU: started and stopped by
 * running the control program (nvidia-cuda-mps-control, or the test GPU's
 * aegis-fake-mps-control) as NVIDIA documents it.
 *
 *   start: CUDA_VISIBLE_DEVICES=<GPU UUID> CUDA_MPS_PIPE_DIRECTORY=<pipe>
 *          CUDA_MPS_LOG_DIRECTORY=<log> <program> -d
 *   stop:  echo quit | <same environment> <program>
 *
 * Each GPU gets its own control daemon, pipe folder and log folder, so a
 * GPU's mode can change without touching its neighbours. Both calls wait
 * for the program (it returns at once: -d daemonizes, quit only asks).
 */
#ifndef AEGIS_MPS_H
#define AEGIS_MPS_H

#include <stdbool.h>
#include <stddef.h>

/* What one GPU's control daemon is run with. */
typedef struct mps_target {
    const char *program;            /* the control program */
    const char *gpu_uuid;           /* CUDA_VISIBLE_DEVICES */
    const char *pipe_dir;           /* CUDA_MPS_PIPE_DIRECTORY */
    const char *log_dir;            /* CUDA_MPS_LOG_DIRECTORY */
} mps_target;

/* Whether a control daemon answers on pipe_dir's control socket: one a
 * previous aegisd started, which this one then keeps. */
bool mps_running(const char *pipe_dir);

/* Whether program can be run (a file path, or a name found on PATH as
 * execlp() finds it). Returns 0, or -1 with a message naming it. */
int mps_program_check(const char *program, char *err, size_t errlen);

/* Whether a folder on the way to the MPS folder dir (dir included) keeps
 * out users other than its owner and group: a job of another user must
 * reach its GPU's pipe folder to talk to the control daemon. True with the
 * first such folder in blocker and its mode in *mode. */
bool mps_dir_blocked(const char *dir, char *blocker, size_t len, int *mode);

/* Makes the pipe and log folders (mode 0755: jobs of any user connect)
 * and starts the control daemon. Returns 0, or -1 with a message naming
 * the program and what it printed. */
int mps_start(const mps_target *t, char *err, size_t errlen);

/* Sends quit to the control daemon. Returns 0, or -1 with a message. */
int mps_stop(const mps_target *t, char *err, size_t errlen);

#endif
