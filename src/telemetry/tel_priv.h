/* tel_priv.h -- what the NVML side of tel.h (nvml.c) asks of the DCGM side
 * (dcgm.c). Not public: only src/telemetry includes it.
 *
 * The one idea: DCGM never stands alone. A tel_state is NVML's; DCGM is an
 * optional part of it that only fills the profiling fields of a reading,
 * and whose failures take those fields back to CORE_UNKNOWN rather than
 * failing the reading.
 */
#ifndef AEGIS_TEL_PRIV_H
#define AEGIS_TEL_PRIV_H

#include <stddef.h>

#include "core.h"

typedef struct tel_dcgm tel_dcgm;

/* Loads DCGM (see tel_open_dcgm in tel.h) for NVML's ngpus GPUs. Returns a
 * handle to free with tel_dcgm_close(), or NULL with a message in err. */
tel_dcgm *tel_dcgm_open(const char *path, int ngpus, char *err,
                        size_t errlen);
void tel_dcgm_close(tel_dcgm *dc);

/* Sets r's smact, smocc and drama from DCGM's latest values for GPU gpu,
 * each CORE_UNKNOWN when DCGM has no fresh value for it. */
void tel_dcgm_read(tel_dcgm *dc, int gpu, core_reading *r);

/* Why the latest tel_dcgm_read() got nothing, or NULL when it worked. */
const char *tel_dcgm_last_error(const tel_dcgm *dc);

#endif
