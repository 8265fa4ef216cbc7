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
 * cap on each job log (log_max_mib), the period of the jobs' histories
 * (history_period_s: history.h), the notifications at their ends
 * (notify, notify_timeout_s: notify.h), the Prometheus endpoint
 * (metrics_listen, metrics_cache_s, metrics_max_jobs: docs/metrics.md)
 * Slurm's scontrol (slurm_scontrol: docs/slurm.md) and who may connect
 * (socket_group), and nothing else.
 */
#ifndef AEGIS_CONFIG_H
#define AEGIS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "acct.h"
#include "core.h"
#include "history.h"
#include "notify.h"
#include "proto.h"
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

/* metrics_listen: "ADDRESS:PORT", an IPv4 address or a bracketed IPv6
 * one ("[::1]:9464"), where aegisd serves /metrics; "" (the default):
 * nowhere. No host names: aegisd resolves nothing. */
#define CONFIG_LISTEN_MAX 64

/* The socket address of a metrics_listen value: 0, or -1 with a message
 * naming the key and the value. */
int config_listen_addr(const char *text, struct sockaddr_storage *sa,
                       char *msg, size_t msglen);

/* metrics_cache_s: seconds one rendering of /metrics is served for, to
 * every client, before the next scrape renders it again. */
#define CONFIG_METRICS_CACHE_DEFAULT_S 1.0
#define CONFIG_METRICS_CACHE_MIN_S 0.1
#define CONFIG_METRICS_CACHE_MAX_S 3600.0
/* metrics_max_jobs: the unfinished jobs that get series of their own on
 * /metrics (running first, then the oldest); the others are counted by
 * user and state (metrics_jobs.h). */
#define CONFIG_METRICS_JOBS_DEFAULT 1000.0
#define CONFIG_METRICS_JOBS_MAX 1000000.0

/* slurm_scontrol: the scontrol aegisd runs for Slurm's leases (found on
 * PATH when not a path). */
#define CONFIG_SCONTROL_DEFAULT "scontrol"

/* socket_group: the group whose members (with root and aegisd's user)
 * may connect to the socket, made 0660; "" (the default): anyone, 0666.
 * A name, checked against the group database at a start
 * (config_group_check). */
#define CONFIG_GROUP_MAX 64
/* cgroup_root: where the cgroup hierarchies are mounted (cgroup.h); "":
 * no per-job cgroups, and a job asking for limits fails to start. */
#define CONFIG_CGROUP_ROOT_DEFAULT "/sys/fs/cgroup"
/* The most CPUs a job (or cpus_per_gpu) may ask. */
#define CONFIG_CPUS_MAX 4096.0

/* The daemon's own keys that are neither the core's, the reports' nor
 * the sharing modes'. */
typedef struct config_keys {
    double log_max_mib;
    double history_period_s;        /* seconds between a job's samples */
    double notify_timeout_s;        /* a notifier is killed after it */
    char notify[PROTO_MAX_NOTIFY + 1]; /* the notifier of the jobs that
                                       name none; "" for none */
    char metrics_listen[CONFIG_LISTEN_MAX]; /* "" (default): off */
    double metrics_cache_s;         /* a rendering of /metrics serves this
                                       long */
    double metrics_max_jobs;        /* jobs with series of their own (a
                                       whole number) */
    char slurm_scontrol[1024];      /* run for Slurm's leases (scontrol.c) */
    char socket_group[CONFIG_GROUP_MAX]; /* "" (default): a 0666 socket */
    int socket_group_line;          /* the file's line that set it; 0: none */
    char cgroup_root[256];          /* per-job cgroups under it (cgroup.h) */
    double history_days;            /* finished jobs are forgotten, with
                                       their logs, this long after their
                                       end; 0: kept for ever */
    double cpus_per_gpu;            /* a job's CPUs per GPU when it gives no
                                       --cpus; 0: no limit */
    double host_mem_per_gpu_mib;    /* its host RAM per GPU when it gives no
                                       --host-mem, MiB; 0: no limit */
    double job_session_nice;        /* what each job's session (and its
                                       watcher's) weighs as, where the kernel
                                       shares CPU by session (autogroup.h);
                                       0 to 19, a whole number */
} config_keys;

/* Fills cfg with the defaults, then the keys of the file at path. A missing
 * file is an error unless missing_ok. Returns 0, or -1 with every problem
 * of the file in err, one "FILE:LINE: message" a line (those that do not
 * fit whole counted in a last line, "... and N more problems, not
 * shown"); cfg is then unusable. */
int config_load(const char *path, bool missing_ok, core_config *cfg,
                char *err, size_t errlen);
/* The same, also filling acct with the report keys (defaults when absent);
 * config_load() checks those keys but keeps their values nowhere. */
int config_load_acct(const char *path, bool missing_ok, core_config *cfg,
                     acct_params *acct, char *err, size_t errlen);
/* The same, also filling share with the sharing keys and keys with the
 * daemon's own: all aegisd reads. */
int config_load_daemon(const char *path, bool missing_ok, core_config *cfg,
                       acct_params *acct, sharing_config *share,
                       config_keys *keys, char *err, size_t errlen);
/* Whether keys' socket_group ("" or a group of the group database) can
 * be used: 0, or -1 with "PATH:LINE: socket_group: ..." in err. aegisd's
 * start and --check-config refuse a file without it; a reload, which
 * leaves the socket as it is, only says so. */
int config_group_check(const char *path, const config_keys *keys, char *err,
                       size_t errlen);

#endif
