/* model.h -- the modelled server: interference, power and job timing.
 *
 * Everything the simulator assumes about how jobs behave on a GPU lives in
 * one struct with one table of defaults (model.c), so calibrating it means
 * changing this module only, and `aegis sim --model NAME=VALUE` can try a
 * value without rebuilding.
 */
#ifndef AEGIS_MODEL_H
#define AEGIS_MODEL_H

#include <stddef.h>

typedef struct sim_model {
    double beta;                /* slowdown per unit of SMACT above threshold */
    double threshold;           /* SMACT sum a GPU absorbs without slowdown */
    double delta;               /* slowdown per unit of co-runners' DRAMA */
    double gamma;               /* slowdown per co-runner beyond the first */
    double idle_w;              /* GPU power with nothing running, W */
    double max_w;               /* GPU power at SMACT 1, W */
    double exec_factor;         /* end-to-end run / catalog solo time */
    double activation_delay_s;  /* launch to first GPU activity, s */
    double mps_excess;          /* MPS: share of the fitted (naive)
                                   slowdown above 1 that remains */
    double mig_sm_frac;         /* SMs a 7g MIG instance has, of the GPU's */
    double feed_share;          /* 1: the jobs of a feed share its loading
                                   (loaders.h) and the core sees their feed;
                                   0: each job loads its own data */
    /* An OOM's cost, launch to crash (sim_model_crash_s()): */
    double oom_crash_s;         /* of a job whose peak is up to the knee */
    double oom_knee_mib;        /* peak above which a job crashes later */
    double oom_s_per_gib;       /* later by this per GiB above the knee */
} sim_model;

void sim_model_default(sim_model *m);

/* Sets one parameter by name from text ("alpha", "1.2"). Returns 0, or -1
 * with a message naming the parameter in err. */
int sim_model_set(sim_model *m, const char *name, const char *value,
                  char *err, size_t errlen);

/* Writes the parameter table (name, default, meaning) for --help. */
void sim_model_describe(void (*line)(const char *text, void *ctx), void *ctx);

/* How many times slower than alone a job runs on a GPU whose active jobs
 * (itself included) sum to smact_sum SMACT, when its own SMACT is own_smact
 * and its co-runners sum to others_drama DRAMA. A job alone gets 1. */
double sim_model_slowdown(const sim_model *m, double smact_sum,
                          double own_smact, double others_drama, int n_others);

/* Seconds from launch to the crash of an attempt that runs out of
 * memory, for a job of that peak memory on GPUs of gpu_mem_mib: the
 * measured failed attempts' run time, start-up included (docs/model.md,
 * "What an OOM costs"). */
double sim_model_crash_s(const sim_model *m, double peak_mib,
                         double gpu_mem_mib);

/* Power draw of a GPU whose active jobs sum to smact_sum SMACT, W. */
double sim_model_power_w(const sim_model *m, double smact_sum);

#endif
