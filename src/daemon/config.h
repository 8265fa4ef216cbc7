/* config.h -- aegisd's configuration file: YAML, one key per core
 * parameter (core.h core_config), e.g.
 *
 *     policy: aegis
 *     smact_max: 0.50
 *
 * Every key goes through core_config_set(), so the file accepts exactly
 * the names `aegis sim --set` accepts, plus the daemon's own keys for
 * energy reports (grid_intensity_g_per_kwh, pue: acct.h), the sharing
 * modes (sharing, mps_control, mps_dir, mps_pin_memory: sharing.h), the
 * cap on each job log (log_max_mib) and Slurm's scontrol (slurm_scontrol),
 * and nothing else.
 */
#ifndef AEGIS_CONFIG_H
#define AEGIS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "acct.h"
#include "core.h"
#include "sharing.h"

/* Where aegisd looks when --config is not given: the build's
 * AEGIS_CONFIG_FILE (CMake), which is also where the example is installed
 * and where the systemd unit points. */
#define CONFIG_DEFAULT_PATH AEGIS_CONFIG_FILE

/* log_max_mib: the MiB each job log (its stdout, its stderr) keeps on
 * disk at most, the end of it. The least still holds the stderr tail the
 * OOM classification reads many times over. */
#define CONFIG_LOG_DEFAULT_MIB 1024.0
#define CONFIG_LOG_MIN_MIB 1.0
#define CONFIG_LOG_MAX_MIB 1048576.0

/* slurm_scontrol: the scontrol aegisd runs for Slurm's leases (found on
 * PATH when not a path). */
#define CONFIG_SCONTROL_DEFAULT "scontrol"

/* The daemon's own keys, besides the core's, the reports' and sharing's. */
typedef struct config_own {
    double log_max_mib;
    char slurm_scontrol[1024];
} config_own;

/* Fills cfg with the defaults, then the keys of the file at path. A missing
 * file is an error unless missing_ok. Returns 0, or -1 with "FILE:LINE:
 * message" in err; cfg is then unusable. */
int config_load(const char *path, bool missing_ok, core_config *cfg,
                char *err, size_t errlen);
/* The same, also filling acct with the report keys (defaults when absent);
 * config_load() checks those keys but keeps their values nowhere. */
int config_load_acct(const char *path, bool missing_ok, core_config *cfg,
                     acct_params *acct, char *err, size_t errlen);
/* The same, also filling share with the sharing keys and own with the
 * daemon's: all aegisd reads. */
int config_load_daemon(const char *path, bool missing_ok, core_config *cfg,
                       acct_params *acct, sharing_config *share,
                       config_own *own, char *err, size_t errlen);

#endif
