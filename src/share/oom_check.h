/* oom_check.h -- whether a failed job's out-of-memory message is borne
 * out by its GPUs' memory. A framework's message in the tail of its
 * stderr (oom_text.h) is checked against the sizes the message states
 * (oom_numbers.h) and against the memory of the GPUs the job ran on, as
 * aegisd last read it with the job's processes on them: a reading taken
 * after the job ended shows them gone and their memory freed, so only
 * one from the job's life says how full the GPU was at its end. Pure:
 * the caller hands it the text and the readings.
 *
 * The message stands (an OOM, retried up the recovery ladder) when
 *  - its own numbers, taken as it failed, show the request larger than
 *    what was free, or under OOM_ROOM_FRACTION of the GPU free; or
 *  - none of the job's GPUs has a reading (no NVML, or the job ended
 *    before a reading showed it): the message is trusted; or
 *  - any of the job's GPUs, at its last reading, had less free than
 *    OOM_ROOM_FRACTION of its memory, or than the request the message
 *    states.
 * Otherwise every GPU of the job had room: the message is contradicted
 * (a script that prints the words, a failed host allocation, a limit
 * the job's framework set itself), and the job failed as any other.
 *
 * Why 30%: the last reading is up to a sampling period (1 s) older than
 * the failure, and a training step, or a neighbour, takes gigabytes in
 * less; and a framework that pools its memory runs out of its pool while
 * the GPU keeps the rest: JAX took 75% of the GPU up front (before its
 * "0.75+" policy), TensorFlow nearly all of it. A GPU that had 30% or
 * more free is past both; a retry with more room beside its neighbours
 * would not have cured a job that failed there.
 */
#ifndef AEGIS_OOM_CHECK_H
#define AEGIS_OOM_CHECK_H

#include <stddef.h>

#define OOM_ROOM_FRACTION 0.30

/* One GPU of the job at its last reading with the job on it. */
typedef struct oom_gpu_mem {
    int gpu;                /* its index, as `aegis gpus` numbers it */
    double used_mib;        /* in use by every process, and */
    double total_mib;       /*   in all (> 0) */
} oom_gpu_mem;

typedef enum oom_verdict {
    OOM_NOT_SAID,           /* no framework's OOM message in the text */
    OOM_TRUSTED,            /* a message, and nothing to check it by */
    OOM_CONFIRMED,          /* a message the numbers bear out */
    OOM_CONTRADICTED        /* a message while every GPU had room */
} oom_verdict;

/* The verdict on text[0..n) (a failed job's stderr tail, NUL bytes
 * allowed) given its ngpus GPUs' last readings (none: ngpus 0). Writes to
 * why what it rests on, one line: for OOM_CONTRADICTED the reason the job
 * fails with, less its exit status ("stderr says out of GPU memory
 * (\"CUDA out of memory\"), but GPU 0 had 30,000 of 40,960 MiB free at
 * its last sample: not retried as an OOM"). */
oom_verdict oom_check(const char *text, size_t n, const oom_gpu_mem *gpus,
                      int ngpus, char *why, size_t len);

#endif
