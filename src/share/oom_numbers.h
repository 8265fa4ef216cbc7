/* oom_numbers.h -- the sizes a framework's out-of-memory message states:
 * what it tried to allocate and, where it says so, how much of its GPU
 * was free at that moment and the GPU's capacity. Pure, like oom_text.h.
 *
 * The messages read (their wording checked against the frameworks'
 * sources and users' reports):
 *   PyTorch 2.1 on   "Tried to allocate 2.00 GiB. GPU 0 has a total
 *                    capacity of 39.39 GiB of which 1.06 GiB is free."
 *   PyTorch to 2.0   "Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total
 *                    capacity; 130.35 MiB already allocated; 47.06 MiB
 *                    free; 188.00 MiB reserved in total by PyTorch)"
 *   JAX / XLA        "Out of memory while trying to allocate 33762398024
 *                    bytes." (or "8.00GiB")
 *   TensorFlow       "Allocator (GPU_0_bfc) ran out of memory trying to
 *                    allocate 1.25GiB"
 * PyTorch prints sizes in bytes, KiB, MiB or GiB with two decimals; XLA
 * and TensorFlow in bytes or with the unit right after the number.
 */
#ifndef AEGIS_OOM_NUMBERS_H
#define AEGIS_OOM_NUMBERS_H

#include <stddef.h>

typedef struct oom_numbers {
    double request_mib;     /* the allocation that failed; < 0: not said */
    double free_mib;        /* free on its GPU then, as the framework saw
                               it (cudaMemGetInfo); < 0: not said */
    double total_mib;       /* that GPU's capacity; < 0: not said */
} oom_numbers;

/* The numbers of the last message in text[0..n) that states a request
 * (the failure that ended the job comes last); each one not said is -1.
 * Its free and total come from the same line as its request. */
void oom_numbers_find(const char *text, size_t n, oom_numbers *out);

#endif
