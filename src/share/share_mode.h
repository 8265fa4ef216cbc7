/* share_mode.h -- the ways one GPU can be shared, by name.
 *
 * The daemon reads a mode per GPU from its config and the simulator takes
 * one per run; both spell them the same way through these two functions,
 * so a mode named in aegis.yaml means what `aegis sim --sharing` means.
 */
#ifndef AEGIS_SHARE_MODE_H
#define AEGIS_SHARE_MODE_H

typedef enum share_mode {
    SHARE_EXCLUSIVE,    /* one job per GPU */
    SHARE_NAIVE,        /* jobs time-slice the GPU (CUDA's default) */
    SHARE_MPS,          /* jobs run as clients of one MPS server */
    SHARE_MIG,          /* each job gets its own MIG instance */
    SHARE_AUTO,         /* MIG or MPS, chosen per job by mig_auto() */
    SHARE_NMODES
} share_mode;

/* The mode called `name` ("mps"), or -1 when there is none. */
int share_mode_parse(const char *name);

/* The name of mode m ("mps"); "?" for a value out of range. */
const char *share_mode_name(share_mode m);

/* "exclusive, naive, mps, mig, auto": for --help texts and errors. */
#define SHARE_MODE_LIST "exclusive, naive, mps, mig, auto"

#endif
