/* meter.h -- splits one GPU's energy among the jobs active on it, as the
 * simulation runs.
 *
 * At every moment a job's share of its GPU's power is its SMACT over the
 * sum of the active jobs' SMACT (evenly among the jobs when none has a
 * profiled SMACT), as aegisd splits measured energy. The meter keeps two
 * running integrals -- power per unit of SMACT while some job has SMACT,
 * power per job while none has -- so a job's energy is its SMACT times the
 * growth of the first over its run (or the growth of the second when its
 * SMACT is 0). That is O(1) per event however many jobs share the GPU, and
 * needs no sort of the run's events afterwards.
 */
#ifndef AEGIS_METER_H
#define AEGIS_METER_H

typedef struct energy_meter {
    double per_smact;       /* J per unit of SMACT, since the start */
    double per_job;         /* J per job while no job had SMACT */
} energy_meter;

/* dt seconds pass at power_w with these jobs active (smact_sum: their
 * SMACT summed; njobs: how many). */
void meter_run(energy_meter *m, double power_w, double smact_sum, int njobs,
               double dt);

/* What a job of this SMACT that becomes active now must remember... */
double meter_mark(const energy_meter *m, double smact);

/* ...to learn, when it leaves, the energy charged to it in between. */
double meter_energy_since(const energy_meter *m, double smact, double mark);

#endif
