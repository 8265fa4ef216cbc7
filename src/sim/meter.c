/* meter.c -- per-job split of a GPU's energy (see meter.h). */
#include "meter.h"

void meter_run(energy_meter *m, double power_w, double smact_sum, int njobs,
               double dt) {
    if (smact_sum > 0) m->per_smact += power_w / smact_sum * dt;
    else if (njobs > 0) m->per_job += power_w / njobs * dt;
}

double meter_mark(const energy_meter *m, double smact) {
    return smact > 0 ? m->per_smact : m->per_job;
}

double meter_energy_since(const energy_meter *m, double smact, double mark) {
    return smact > 0 ? smact * (m->per_smact - mark) : m->per_job - mark;
}
