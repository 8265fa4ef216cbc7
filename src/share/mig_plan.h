/* mig_plan.h -- where a job goes on a MIG GPU, and whether it should use
 * MIG at all. Pure: the caller says what is on the GPU; nothing here calls
 * NVML.
 *
 * The one idea: the smallest profile whose memory holds the job's demand
 * wins, at the lowest free start slot. When none has a free slot, the
 * answer says why, because the fixes differ: FRAGMENTED means the free
 * slices would hold it but their positions do not (repartition once the
 * GPU is idle), FULL means wait for an instance to go, TOO_BIG means no
 * MIG profile of this GPU ever holds it (run it without MIG).
 */
#ifndef AEGIS_MIG_PLAN_H
#define AEGIS_MIG_PLAN_H

#include <stdbool.h>

#include "mig_profiles.h"

/* A GPU instance that exists: its profile and first memory slice. */
typedef struct mig_instance {
    const mig_profile *profile;
    int start;
} mig_instance;

typedef enum mig_verdict {
    MIG_PLACED,         /* profile and start are set */
    MIG_FULL,           /* too few free slices now; wait */
    MIG_FRAGMENTED,     /* enough free slices, no valid start among them */
    MIG_TOO_BIG         /* no profile of the model holds the demand */
} mig_verdict;

typedef struct mig_pick {
    mig_verdict verdict;
    const mig_profile *profile; /* MIG_PLACED: the one to create; else the
                                   smallest that fits (NULL: TOO_BIG) */
    int start;                  /* MIG_PLACED: its first memory slice */
} mig_pick;

/* Places a job needing demand_mib on a GPU of model m holding the n
 * instances in have (which the caller keeps valid: no overlaps). */
mig_pick mig_plan(const mig_model *m, const mig_instance *have, int n,
                  long demand_mib);

/* Whether inst may join the n instances in have: a valid start, no memory
 * slice shared, the compute slices and its profile's instance count within
 * bounds. For instances found running; mig_plan() chooses new ones. */
bool mig_fits(const mig_instance *have, int n, mig_instance inst);

/* MIG when the smallest profile that holds demand_mib has at most
 * max_waste x demand_mib of memory; else MPS. A MIG instance pins its
 * memory for the job's whole run, while under MPS memory the job does not
 * touch stays free for its neighbours. */
#define MIG_AUTO_MAX_WASTE 1.5  /* at most a third of the instance idle.
                                   Profiles double in size, so a demand
                                   just past one size wastes half the next
                                   one; 1.5 keeps the upper half of each
                                   range on MIG. On an A100-40GB: 4000 MiB
                                   -> 1g.5gb (4864), MIG; 6000 MiB ->
                                   1g.10gb (9856), 1.64x, MPS */

typedef enum mig_mode { MIG_MODE_MIG, MIG_MODE_MPS } mig_mode;

mig_mode mig_auto(const mig_model *m, long demand_mib, double max_waste);

/* Human-readable name of a verdict ("fragmented"), for messages. */
const char *mig_verdict_name(mig_verdict v);

#endif
