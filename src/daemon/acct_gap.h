/* acct_gap.h -- splitting the energy a GPU drew while aegisd was down
 * among the jobs that ran on it then (docs/daemon.md, "Energy").
 *
 * aegisd saves, with each tick's commit, every GPU's energy-counter
 * reading, when it was read, its power and each running job's share of
 * its energy. A restarted aegisd reads the counter again: its rise over
 * the outage [t0, t1] is split here among the jobs that ran on the GPU
 * then, those still running and those that ended meanwhile. The rule:
 *
 *   - a job's overlap o is the part of [t0, t1] its attempt ran; its
 *     share s is its saved one, renormalized over the jobs that ran in
 *     the outage (evenly where none was saved: it started after the save);
 *   - its estimate is s x P x o, P the GPU's power at t0 (the counter's
 *     mean power over the outage where that is unknown);
 *   - where some job ran at every moment of the outage, the whole rise is
 *     the jobs', split in proportion to the estimates (as a running aegisd
 *     splits each tick's rise); where the GPU had moments with no job,
 *     each job gets its estimate, scaled down so that they add up to no
 *     more than the rise: the rest is idle draw, nobody's.
 *
 * Pure arithmetic: no I/O, no clock. Invariants (checked by
 * acct_gap_split's callers' tests): every charge is >= 0 and the charges
 * add up to at most the rise.
 */
#ifndef AEGIS_ACCT_GAP_H
#define AEGIS_ACCT_GAP_H

/* The GPU over the outage. */
typedef struct acct_gap_gpu {
    double t0, t1;          /* the saved read and the first read after, s */
    double joules;          /* the counter's rise between them, >= 0 */
    double power_w;         /* its power at t0; < 0 unknown */
} acct_gap_gpu;

/* A job that was running on the GPU at t0, or started after it. */
typedef struct acct_gap_job {
    double start;           /* its attempt's start, s */
    double end;             /* its end; < 0 still running at t1 */
    double share;           /* its saved share of the GPU's energy, 0..1;
                               < 0 none saved */
    double charge;          /* out: joules charged to it */
} acct_gap_job;

/* Sets each job's charge by the rule above; returns their sum, which is
 * at most g->joules (the rest was drawn with no job on the GPU). */
double acct_gap_split(const acct_gap_gpu *g, acct_gap_job *jobs, int n);

#endif
